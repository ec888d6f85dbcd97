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
} from './ports.js';

/**
 * Counting wrappers on the two storage ports: how many operations (and bytes) the domain asks of
 * its stores, which is what S3 and DynamoDB bill. The benchmark reads them to report requests per
 * GB; they change nothing about the calls they pass through.
 *
 * DynamoDB capacity units are estimated from the item as the DynamoDB adapter stores it (`pk`,
 * `sk`, a numeric `version`, the value as one JSON string), with DynamoDB's rounding: a write
 * costs ceil(size / 1 KB) write units (a failed conditional write costs the same), a strongly
 * consistent read ceil(size / 4 KB) read units with a minimum of one, and a query ceil(sum of its
 * items / 4 KB), also at least one. Both adapters read strongly consistently.
 */
export interface ObjectStoreCounts {
  put: number;
  putBytes: number;
  get: number;
  getBytes: number;
  head: number;
  list: number;
  /** `delete` calls (S3 DeleteObjects requests) and the keys they named. */
  delete: number;
  deletedKeys: number;
  errors: number;
}

export interface MetadataStoreCounts {
  get: number;
  /** Gets that found nothing. */
  getMisses: number;
  query: number;
  queryItems: number;
  put: number;
  /** Puts with a condition (`ifAbsent` or `ifVersion`); the rest of `put` were unconditional. */
  conditionalPut: number;
  delete: number;
  /** Conditional puts and deletes whose condition did not hold. */
  conditionFailed: number;
  errors: number;
  /** Estimated DynamoDB read request units (strongly consistent). */
  readUnits: number;
  /** Estimated DynamoDB write request units. */
  writeUnits: number;
}

export interface OperationCounts {
  objects: ObjectStoreCounts;
  /** The same counts per replica store, in replica-id order. */
  perStore: ObjectStoreCounts[];
  metadata: MetadataStoreCounts;
}

const zeroObjectCounts = (): ObjectStoreCounts => ({ put: 0, putBytes: 0, get: 0, getBytes: 0, head: 0, list: 0, delete: 0, deletedKeys: 0, errors: 0 });
const zeroMetadataCounts = (): MetadataStoreCounts => ({
  get: 0,
  getMisses: 0,
  query: 0,
  queryItems: 0,
  put: 0,
  conditionalPut: 0,
  delete: 0,
  conditionFailed: 0,
  errors: 0,
  readUnits: 0,
  writeUnits: 0,
});

/** Bytes DynamoDB would count for an item: attribute names plus values (numbers about 1 byte per 2 digits). */
export function dynamoItemBytes(pk: string, sk: string, version: number, valueJson: string): number {
  const numberBytes = Math.ceil(String(version).length / 2) + 1;
  return 2 + Buffer.byteLength(pk) + 2 + Buffer.byteLength(sk) + 7 + numberBytes + 5 + Buffer.byteLength(valueJson);
}

const itemBytes = (item: MetaItem): number => dynamoItemBytes(item.pk, item.sk, item.version, JSON.stringify(item.value) ?? 'null');
const writeUnits = (bytes: number) => Math.max(1, Math.ceil(bytes / 1024));
const readUnits = (bytes: number) => Math.max(1, Math.ceil(bytes / 4096));

export class CountingObjectStore implements ObjectStore {
  readonly counts = zeroObjectCounts();

  constructor(private readonly inner: ObjectStore) {}

  get name(): string {
    return this.inner.name;
  }

  async put(key: string, body: Uint8Array): Promise<void> {
    this.counts.put++;
    this.counts.putBytes += body.byteLength;
    return this.count(this.inner.put(key, body));
  }

  async get(key: string, range?: ByteRange): Promise<Uint8Array> {
    this.counts.get++;
    const bytes = await this.count(this.inner.get(key, range));
    this.counts.getBytes += bytes.byteLength;
    return bytes;
  }

  async head(key: string): Promise<ObjectInfo | undefined> {
    this.counts.head++;
    return this.count(this.inner.head(key));
  }

  async list(prefix: string, page?: { startAfter?: string; limit?: number }): Promise<ObjectPage> {
    this.counts.list++;
    return this.count(this.inner.list(prefix, page));
  }

  async delete(keys: string[]): Promise<void> {
    this.counts.delete++;
    this.counts.deletedKeys += keys.length;
    return this.count(this.inner.delete(keys));
  }

  private async count<T>(op: Promise<T>): Promise<T> {
    try {
      return await op;
    } catch (e) {
      this.counts.errors++;
      throw e;
    }
  }
}

export class CountingMetadataStore implements MetadataStore {
  readonly counts = zeroMetadataCounts();

  constructor(private readonly inner: MetadataStore) {}

  async get<T = unknown>(pk: string, sk: string): Promise<MetaItem<T> | undefined> {
    this.counts.get++;
    const item = await this.count(this.inner.get<T>(pk, sk));
    if (!item) this.counts.getMisses++;
    this.counts.readUnits += readUnits(item ? itemBytes(item) : 0);
    return item;
  }

  async query<T = unknown>(pk: string, options?: QueryOptions): Promise<MetaItem<T>[]> {
    this.counts.query++;
    const items = await this.count(this.inner.query<T>(pk, options));
    this.counts.queryItems += items.length;
    this.counts.readUnits += readUnits(items.reduce((n, i) => n + itemBytes(i), 0));
    return items;
  }

  async put<T>(pk: string, sk: string, value: T, condition?: WriteCondition): Promise<MetaItem<T>> {
    this.counts.put++;
    if (condition) this.counts.conditionalPut++;
    const json = JSON.stringify(value) ?? 'null';
    try {
      const written = await this.count(this.inner.put(pk, sk, value, condition));
      this.counts.writeUnits += writeUnits(dynamoItemBytes(pk, sk, written.version, json));
      return written;
    } catch (e) {
      if (e instanceof ConditionFailedError) {
        this.counts.conditionFailed++;
        this.counts.writeUnits += writeUnits(e.current ? itemBytes(e.current) : dynamoItemBytes(pk, sk, 1, json));
      }
      throw e;
    }
  }

  async delete(pk: string, sk: string, condition?: { ifVersion: number }): Promise<void> {
    this.counts.delete++;
    this.counts.writeUnits += 1; // the deleted item's size is not known here; most items are under 1 KB
    try {
      await this.count(this.inner.delete(pk, sk, condition));
    } catch (e) {
      if (e instanceof ConditionFailedError) this.counts.conditionFailed++;
      throw e;
    }
  }

  private async count<T>(op: Promise<T>): Promise<T> {
    try {
      return await op;
    } catch (e) {
      if (!(e instanceof ConditionFailedError)) this.counts.errors++;
      throw e;
    }
  }
}

/** Wraps a metadata store and replica stores; `snapshot()` reads every count at once. */
export function countOperations(metadata: MetadataStore, stores: ObjectStore[]) {
  const countingMetadata = new CountingMetadataStore(metadata);
  const countingStores = stores.map((s) => new CountingObjectStore(s));
  const snapshot = (): OperationCounts => {
    const objects = zeroObjectCounts();
    for (const s of countingStores) for (const k of Object.keys(objects) as (keyof ObjectStoreCounts)[]) objects[k] += s.counts[k];
    return { objects, perStore: countingStores.map((s) => ({ ...s.counts })), metadata: { ...countingMetadata.counts } };
  };
  return { metadata: countingMetadata as MetadataStore, stores: countingStores as ObjectStore[], snapshot };
}
