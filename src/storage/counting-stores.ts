import type { MetadataStore, ObjectStore } from './ports.js';
import { ObservedMetadataStore, observeStorage, type StorageCall } from './observed-stores.js';

/**
 * Operation counts over the storage ports, a listener of observed-stores.ts: how many operations
 * (and bytes) the domain asks of its stores, which is what S3 and DynamoDB bill. The benchmark
 * reads them to report requests per GB.
 *
 * DynamoDB capacity units are estimated from the item as the DynamoDB adapter stores it
 * (`itemBytes`), with DynamoDB's rounding: a write costs ceil(size / 1 KB) write units (a failed
 * conditional write costs the same), a strongly consistent read ceil(size / 4 KB) read units with a
 * minimum of one, and a query ceil(sum of its items / 4 KB), also at least one. Both adapters read
 * strongly consistently.
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

export const zeroObjectCounts = (): ObjectStoreCounts => ({
  put: 0,
  putBytes: 0,
  get: 0,
  getBytes: 0,
  head: 0,
  list: 0,
  delete: 0,
  deletedKeys: 0,
  errors: 0,
});
export const zeroMetadataCounts = (): MetadataStoreCounts => ({
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

const writeUnits = (bytes: number) => Math.max(1, Math.ceil(bytes / 1024));
const readUnits = (bytes: number) => Math.max(1, Math.ceil(bytes / 4096));

function countObjectCall(c: ObjectStoreCounts, call: StorageCall): void {
  if (call.failed) c.errors++;
  switch (call.op) {
    case 'PutObject':
      c.put++;
      c.putBytes += call.bytes;
      return;
    case 'GetObject':
      c.get++;
      c.getBytes += call.bytes;
      return;
    case 'HeadObject':
      c.head++;
      return;
    case 'ListObjectsV2':
      c.list++;
      return;
    case 'DeleteObjects':
      c.delete++;
      c.deletedKeys += call.keys;
      return;
  }
}

function countMetadataCall(c: MetadataStoreCounts, call: StorageCall): void {
  if (call.failed) c.errors++;
  switch (call.op) {
    case 'GetItem':
      c.get++;
      if (call.failed) return;
      if (!call.found) c.getMisses++;
      c.readUnits += readUnits(call.itemBytes);
      return;
    case 'Query':
      c.query++;
      if (call.failed) return;
      c.queryItems += call.items;
      c.readUnits += readUnits(call.itemBytes);
      return;
    case 'UpdateItem':
      c.put++;
      if (call.conditional) c.conditionalPut++;
      if (call.conditionFailed) c.conditionFailed++;
      if (!call.failed) c.writeUnits += writeUnits(call.itemBytes);
      return;
    case 'DeleteItem':
      c.delete++;
      c.writeUnits += 1; // the deleted item's size is not known here; most items are under 1 KB
      if (call.conditionFailed) c.conditionFailed++;
      return;
  }
}

/** A metadata store that counts what is asked of it (`counts`). */
export class CountingMetadataStore extends ObservedMetadataStore {
  readonly counts: MetadataStoreCounts;

  constructor(inner: MetadataStore) {
    const counts = zeroMetadataCounts();
    super(inner, (call) => countMetadataCall(counts, call));
    this.counts = counts;
  }
}

/** Wraps a metadata store and replica stores; `snapshot()` reads every count at once. */
export function countOperations(metadata: MetadataStore, stores: ObjectStore[]) {
  const meta = zeroMetadataCounts();
  const perStore = stores.map(zeroObjectCounts);
  const observed = observeStorage({ metadata, stores }, (call) => {
    if (call.port === 'object') countObjectCall(perStore[call.store]!, call);
    else countMetadataCall(meta, call);
  });
  const snapshot = (): OperationCounts => {
    const objects = zeroObjectCounts();
    for (const s of perStore) for (const k of Object.keys(objects) as (keyof ObjectStoreCounts)[]) objects[k] += s[k];
    return { objects, perStore: perStore.map((s) => ({ ...s })), metadata: { ...meta } };
  };
  return { metadata: observed.metadata, stores: observed.stores, snapshot };
}
