/**
 * Decorators over the storage ports that report every call: to the metrics of the current
 * invocation (observability.ts) and to any listener (the tests that check IAM policies against the
 * calls a function really makes). They speak the ports only, so src/ needs no change.
 */
import type { Storage } from '../src/compose.js';
import {
  ConditionFailedError,
  type ByteRange,
  type MetadataStore,
  type MetaItem,
  type ObjectInfo,
  type ObjectPage,
  type ObjectStore,
  type QueryOptions,
  type WriteCondition,
} from '../src/storage/ports.js';
import { addMetric } from './observability.js';

/** The port operations, named as the S3 and DynamoDB API calls the AWS adapters make for them. */
export type StorageCall =
  | { port: 'object'; op: 'PutObject'; store: number; key: string; bytes: number }
  | { port: 'object'; op: 'GetObject'; store: number; key: string; bytes: number }
  | { port: 'object'; op: 'HeadObject'; store: number; key: string }
  | { port: 'object'; op: 'ListObjectsV2'; store: number; prefix: string }
  | { port: 'object'; op: 'DeleteObjects'; store: number; keys: number }
  | { port: 'metadata'; op: 'GetItem'; pk: string; sk: string; itemBytes: number }
  | { port: 'metadata'; op: 'Query'; pk: string; items: number; itemBytes: number }
  | { port: 'metadata'; op: 'UpdateItem'; pk: string; sk: string; itemBytes: number; conditionFailed: boolean }
  | { port: 'metadata'; op: 'DeleteItem'; pk: string; sk: string; conditionFailed: boolean };

export type StorageListener = (call: StorageCall) => void;

/**
 * An item's size as DynamoDB bills it (attribute names plus values) for the layout of the DynamoDB
 * adapter: pk, sk, version (number) and value (the JSON string). Numbers are approximated at
 * their decimal length, which is within a byte or two of DynamoDB's encoding.
 */
export function dynamoItemBytes(item: MetaItem | { pk: string; sk: string; version: number; value: unknown }): number {
  const utf8 = (s: string) => Buffer.byteLength(s, 'utf8');
  return (
    utf8('pk') + utf8(item.pk) + utf8('sk') + utf8(item.sk) + utf8('version') + String(item.version).length + utf8('value') + utf8(JSON.stringify(item.value) ?? 'null')
  );
}

/** Wraps a storage so every call is counted in the current invocation's metrics and reported. */
export function instrumentStorage(storage: Storage, listener?: StorageListener): Storage {
  const report = (call: StorageCall) => {
    countCall(call);
    listener?.(call);
  };
  return {
    metadata: new InstrumentedMetadataStore(storage.metadata, report),
    stores: storage.stores.map((s, i) => new InstrumentedObjectStore(s, i, report)),
    close: () => storage.close(),
  };
}

function countCall(call: StorageCall): void {
  switch (call.op) {
    case 'PutObject':
      addMetric('S3WriteRequests');
      return;
    case 'ListObjectsV2':
    case 'DeleteObjects':
      addMetric('S3WriteRequests');
      return;
    case 'GetObject':
      addMetric('S3ReadRequests');
      return;
    case 'HeadObject':
      addMetric('S3ReadRequests');
      return;
    case 'GetItem':
    case 'Query':
      addMetric('DynamoDbReadRequests');
      return;
    case 'UpdateItem':
    case 'DeleteItem':
      addMetric('DynamoDbWriteRequests');
      // Commit retries are reported by the commit itself (src/metrics.ts).
      if (call.conditionFailed) addMetric('ConditionFailures');
      return;
  }
}

class InstrumentedObjectStore implements ObjectStore {
  readonly name: string;

  constructor(
    private readonly inner: ObjectStore,
    private readonly id: number,
    private readonly report: StorageListener,
  ) {
    this.name = inner.name;
  }

  // Each call is reported whether it succeeded or not: a failed request is still a request (and
  // still needs its IAM permission).
  async put(key: string, body: Uint8Array): Promise<void> {
    try {
      await this.inner.put(key, body);
    } finally {
      this.report({ port: 'object', op: 'PutObject', store: this.id, key, bytes: body.byteLength });
    }
  }

  async get(key: string, range?: ByteRange): Promise<Uint8Array> {
    let bytes = 0;
    try {
      const data = await this.inner.get(key, range);
      bytes = data.byteLength;
      return data;
    } finally {
      this.report({ port: 'object', op: 'GetObject', store: this.id, key, bytes });
    }
  }

  async head(key: string): Promise<ObjectInfo | undefined> {
    try {
      return await this.inner.head(key);
    } finally {
      this.report({ port: 'object', op: 'HeadObject', store: this.id, key });
    }
  }

  async list(prefix: string, page?: { startAfter?: string; limit?: number }): Promise<ObjectPage> {
    try {
      return await this.inner.list(prefix, page);
    } finally {
      this.report({ port: 'object', op: 'ListObjectsV2', store: this.id, prefix });
    }
  }

  async delete(keys: string[]): Promise<void> {
    try {
      await this.inner.delete(keys);
    } finally {
      // The S3 adapter sends nothing for an empty list.
      if (keys.length > 0) this.report({ port: 'object', op: 'DeleteObjects', store: this.id, keys: keys.length });
    }
  }
}

class InstrumentedMetadataStore implements MetadataStore {
  constructor(
    private readonly inner: MetadataStore,
    private readonly report: StorageListener,
  ) {}

  async get<T = unknown>(pk: string, sk: string): Promise<MetaItem<T> | undefined> {
    let itemBytes = 0;
    try {
      const item = await this.inner.get<T>(pk, sk);
      if (item) itemBytes = dynamoItemBytes(item);
      return item;
    } finally {
      this.report({ port: 'metadata', op: 'GetItem', pk, sk, itemBytes });
    }
  }

  async query<T = unknown>(pk: string, options?: QueryOptions): Promise<MetaItem<T>[]> {
    let items: MetaItem<T>[] = [];
    try {
      items = await this.inner.query<T>(pk, options);
      return items;
    } finally {
      const itemBytes = items.reduce((n, i) => n + dynamoItemBytes(i), 0);
      this.report({ port: 'metadata', op: 'Query', pk, items: items.length, itemBytes });
    }
  }

  async put<T>(pk: string, sk: string, value: T, condition?: WriteCondition): Promise<MetaItem<T>> {
    try {
      const item = await this.inner.put(pk, sk, value, condition);
      this.report({ port: 'metadata', op: 'UpdateItem', pk, sk, itemBytes: dynamoItemBytes(item), conditionFailed: false });
      return item;
    } catch (e) {
      const failed = e instanceof ConditionFailedError;
      const itemBytes = dynamoItemBytes({ pk, sk, version: (failed ? (e.current?.version ?? 0) : 0) + 1, value });
      this.report({ port: 'metadata', op: 'UpdateItem', pk, sk, itemBytes, conditionFailed: failed });
      throw e;
    }
  }

  async delete(pk: string, sk: string, condition?: { ifVersion: number }): Promise<void> {
    let conditionFailed = false;
    try {
      await this.inner.delete(pk, sk, condition);
    } catch (e) {
      conditionFailed = e instanceof ConditionFailedError;
      throw e;
    } finally {
      this.report({ port: 'metadata', op: 'DeleteItem', pk, sk, conditionFailed });
    }
  }
}
