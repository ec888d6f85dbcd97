/**
 * One decorator over the storage ports that reports every call, named as the S3 and DynamoDB API
 * call the AWS adapters make for it, whether it succeeded or not (a failed request is still a
 * request, and still needs its IAM permission). Listeners: the benchmark's operation counts
 * (counting-stores.ts), the Lambda metrics and the IAM tests (functions/instrumented-storage.ts).
 * It changes nothing about the calls it passes through.
 */
import {
  ConditionFailedError,
  type AlongsideItem,
  type ByteRange,
  type MetadataStore,
  type MetaItem,
  type ObjectInfo,
  type ObjectPage,
  type ObjectStore,
  type QueryOptions,
  type PutOptions,
  type WriteCondition,
} from './ports.js';

/** `failed`: the call threw something other than a failed condition. */
export type StorageCall =
  | { port: 'object'; op: 'PutObject'; store: number; key: string; bytes: number; failed: boolean }
  | { port: 'object'; op: 'GetObject'; store: number; key: string; bytes: number; failed: boolean }
  | { port: 'object'; op: 'HeadObject'; store: number; key: string; failed: boolean }
  | { port: 'object'; op: 'ListObjectsV2'; store: number; prefix: string; failed: boolean }
  | { port: 'object'; op: 'DeleteObjects'; store: number; keys: number; failed: boolean }
  | { port: 'metadata'; op: 'GetItem'; pk: string; sk: string; found: boolean; itemBytes: number; failed: boolean }
  | { port: 'metadata'; op: 'Query'; pk: string; items: number; itemBytes: number; failed: boolean }
  | {
      port: 'metadata';
      op: 'UpdateItem';
      pk: string;
      sk: string;
      /** The item written, or on a failed condition the item found (else the one attempted). */
      itemBytes: number;
      conditional: boolean;
      conditionFailed: boolean;
      failed: boolean;
    }
  | { port: 'metadata'; op: 'DeleteItem'; pk: string; sk: string; conditionFailed: boolean; failed: boolean };

export type StorageListener = (call: StorageCall) => void;

/**
 * An item's size as DynamoDB bills it, for the layout of the DynamoDB adapter: attribute names
 * (`pk`, `sk`, `version`, `value`) plus values, the value being one JSON string and the version a
 * number (about one byte per two digits, plus one).
 */
export function itemBytes(pk: string, sk: string, version: number, value: unknown): number {
  const numberBytes = Math.ceil(String(version).length / 2) + 1;
  return (
    2 +
    Buffer.byteLength(pk) +
    2 +
    Buffer.byteLength(sk) +
    7 +
    numberBytes +
    5 +
    Buffer.byteLength(JSON.stringify(value) ?? 'null')
  );
}

const sizeOf = (item: MetaItem): number => itemBytes(item.pk, item.sk, item.version, item.value);
const isFailure = (e: unknown) => !(e instanceof ConditionFailedError);

/** Wraps a metadata store and replica stores so that every call is reported to `listener`. */
export function observeStorage<S extends { metadata: MetadataStore; stores: ObjectStore[] }>(
  storage: S,
  listener: StorageListener,
): S {
  return {
    ...storage,
    metadata: new ObservedMetadataStore(storage.metadata, listener),
    stores: storage.stores.map((s, i) => new ObservedObjectStore(s, i, listener)),
  };
}

export class ObservedObjectStore implements ObjectStore {
  readonly name: string;

  constructor(
    private readonly inner: ObjectStore,
    private readonly id: number,
    private readonly report: StorageListener,
  ) {
    this.name = inner.name;
  }

  async put(key: string, body: Uint8Array): Promise<void> {
    let failed = true;
    try {
      await this.inner.put(key, body);
      failed = false;
    } finally {
      this.report({ port: 'object', op: 'PutObject', store: this.id, key, bytes: body.byteLength, failed });
    }
  }

  async get(key: string, range?: ByteRange): Promise<Uint8Array> {
    let bytes = 0;
    let failed = true;
    try {
      const data = await this.inner.get(key, range);
      bytes = data.byteLength;
      failed = false;
      return data;
    } finally {
      this.report({ port: 'object', op: 'GetObject', store: this.id, key, bytes, failed });
    }
  }

  async head(key: string): Promise<ObjectInfo | undefined> {
    let failed = true;
    try {
      const info = await this.inner.head(key);
      failed = false;
      return info;
    } finally {
      this.report({ port: 'object', op: 'HeadObject', store: this.id, key, failed });
    }
  }

  async list(prefix: string, page?: { startAfter?: string; limit?: number }): Promise<ObjectPage> {
    let failed = true;
    try {
      const result = await this.inner.list(prefix, page);
      failed = false;
      return result;
    } finally {
      this.report({ port: 'object', op: 'ListObjectsV2', store: this.id, prefix, failed });
    }
  }

  async delete(keys: string[]): Promise<void> {
    let failed = true;
    try {
      await this.inner.delete(keys);
      failed = false;
    } finally {
      this.report({ port: 'object', op: 'DeleteObjects', store: this.id, keys: keys.length, failed });
    }
  }
}

export class ObservedMetadataStore implements MetadataStore {
  /** Present when the inner store has it: each item is reported as the write it would be alone. */
  readonly putAll?: MetadataStore['putAll'];

  constructor(
    private readonly inner: MetadataStore,
    private readonly report: StorageListener,
  ) {
    const putAll = inner.putAll?.bind(inner);
    if (putAll) {
      this.putAll = async <T>(
        pk: string,
        sk: string,
        value: T,
        condition: WriteCondition | undefined,
        alongside: AlongsideItem[],
      ): Promise<MetaItem<T>> => {
        const item = await this.observePut(pk, sk, value, condition, () => putAll(pk, sk, value, condition, alongside));
        for (const a of alongside) {
          this.report({
            port: 'metadata',
            op: 'UpdateItem',
            pk,
            sk: a.sk,
            itemBytes: itemBytes(pk, a.sk, 1, a.value),
            conditional: false,
            conditionFailed: false,
            failed: false,
          });
        }
        return item;
      };
    }
  }

  async get<T = unknown>(pk: string, sk: string): Promise<MetaItem<T> | undefined> {
    try {
      const item = await this.inner.get<T>(pk, sk);
      this.report({
        port: 'metadata',
        op: 'GetItem',
        pk,
        sk,
        found: item !== undefined,
        itemBytes: item ? sizeOf(item) : 0,
        failed: false,
      });
      return item;
    } catch (e) {
      this.report({ port: 'metadata', op: 'GetItem', pk, sk, found: false, itemBytes: 0, failed: isFailure(e) });
      throw e;
    }
  }

  /** Not a storage request: nothing to report. */
  changeStamp(pk: string): string | undefined {
    return this.inner.changeStamp?.(pk);
  }

  async query<T = unknown>(pk: string, options?: QueryOptions): Promise<MetaItem<T>[]> {
    try {
      const items = await this.inner.query<T>(pk, options);
      this.report({
        port: 'metadata',
        op: 'Query',
        pk,
        items: items.length,
        itemBytes: items.reduce((n, i) => n + sizeOf(i), 0),
        failed: false,
      });
      return items;
    } catch (e) {
      this.report({ port: 'metadata', op: 'Query', pk, items: 0, itemBytes: 0, failed: isFailure(e) });
      throw e;
    }
  }

  async put<T>(
    pk: string,
    sk: string,
    value: T,
    condition?: WriteCondition,
    options?: PutOptions,
  ): Promise<MetaItem<T>> {
    return this.observePut(pk, sk, value, condition, () => this.inner.put(pk, sk, value, condition, options));
  }

  private async observePut<T>(
    pk: string,
    sk: string,
    value: T,
    condition: WriteCondition | undefined,
    write: () => Promise<MetaItem<T>>,
  ): Promise<MetaItem<T>> {
    const conditional = condition !== undefined;
    try {
      const item = await write();
      this.report({
        port: 'metadata',
        op: 'UpdateItem',
        pk,
        sk,
        itemBytes: sizeOf(item),
        conditional,
        conditionFailed: false,
        failed: false,
      });
      return item;
    } catch (e) {
      const conditionFailed = e instanceof ConditionFailedError;
      const current = conditionFailed ? e.current : undefined;
      const bytes = current ? sizeOf(current) : itemBytes(pk, sk, 1, value);
      this.report({
        port: 'metadata',
        op: 'UpdateItem',
        pk,
        sk,
        itemBytes: bytes,
        conditional,
        conditionFailed,
        failed: !conditionFailed,
      });
      throw e;
    }
  }

  async delete(pk: string, sk: string, condition?: { ifVersion: number }): Promise<void> {
    let conditionFailed = false;
    let failed = false;
    try {
      await this.inner.delete(pk, sk, condition);
    } catch (e) {
      conditionFailed = e instanceof ConditionFailedError;
      failed = !conditionFailed;
      throw e;
    } finally {
      this.report({ port: 'metadata', op: 'DeleteItem', pk, sk, conditionFailed, failed });
    }
  }
}
