/**
 * The two storage ports every engine implements (memory, local filesystem + SQLite, S3 + DynamoDB).
 * Domain code depends on these types only; adapters translate them to an engine and back.
 */

/** Byte range, `start` inclusive and `end` exclusive (unlike HTTP's inclusive Range header). */
export interface ByteRange {
  start: number;
  end: number;
}

export interface ObjectInfo {
  key: string;
  size: number;
  /** Epoch milliseconds of the write. */
  lastModified: number;
}

export interface ObjectPage {
  objects: ObjectInfo[];
  /**
   * Pass as `startAfter` to read the next page; absent on the last page. Usually the page's last
   * key; an S3 Express directory bucket's is a cursor of its own (s3-object-store.ts).
   */
  nextStartAfter?: string;
}

/**
 * Immutable objects addressed by key. Callers only ever `put` keys they generated fresh, so no
 * adapter needs to guard against overwrites; objects are never modified, only deleted.
 */
export interface ObjectStore {
  /** A short name for logs and metrics (bucket name, directory, "memory"). */
  readonly name: string;
  put(key: string, body: Uint8Array): Promise<void>;
  /**
   * Throws `ObjectNotFoundError` when the key does not exist. A range past the end is clipped. The
   * bytes are the caller's own (never a view of a cache or of the stored object): readers patch them in place.
   */
  get(key: string, range?: ByteRange): Promise<Uint8Array>;
  head(key: string): Promise<ObjectInfo | undefined>;
  /**
   * Keys in S3's order (UTF-8 bytes, see `compareKeys`; S3 Express directory buckets answer in no
   * order, so callers must not rely on it), `limit` (default 1000) at most, after `startAfter` when given. A limit of 0 answers an empty last page, as S3's MaxKeys=0 does; a
   * negative or fractional limit throws a RangeError (see `listLimit`).
   */
  list(prefix: string, page?: { startAfter?: string; limit?: number }): Promise<ObjectPage>;
  /** Deleting a missing key is not an error. */
  delete(keys: string[]): Promise<void>;
}

/** One metadata item; `version` starts at 1 and grows by one on every write to the item. */
export interface MetaItem<T = unknown> {
  pk: string;
  sk: string;
  version: number;
  value: T;
}

/** A write condition: the item must not exist, or must exist at exactly this version. */
export type WriteCondition = { ifAbsent: true } | { ifVersion: number };

/** An item written with another one by `MetadataStore.putAll`, in the same partition key. */
export interface AlongsideItem {
  sk: string;
  value: unknown;
}

export interface PutOptions {
  /**
   * Epoch ms after which the item is of no use: the store may delete it any time after (DynamoDB's
   * TTL, on the table's `ttl` attribute, within days; the other adapters keep it). Readers must
   * ignore an expired item themselves. A put without it clears an earlier one.
   */
  expiresAt?: number;
}

export interface QueryOptions {
  /** Sort-key bounds, all inclusive/exclusive as named; combine freely. */
  gte?: string;
  gt?: string;
  lte?: string;
  lt?: string;
  beginsWith?: string;
  limit?: number;
  /** Descending sort-key order. */
  reverse?: boolean;
}

/**
 * Items addressed by (pk, sk). Every state change in the product is one (usually conditional)
 * write to one item; there are no multi-item transactions.
 */
export interface MetadataStore {
  /** Strongly consistent read. */
  get<T = unknown>(pk: string, sk: string): Promise<MetaItem<T> | undefined>;
  /** Items of one partition key in sort-key order; the adapter pages internally up to `limit`. */
  query<T = unknown>(pk: string, options?: QueryOptions): Promise<MetaItem<T>[]>;
  /**
   * Writes the value and returns the stored item with its new version. Without a condition the
   * write is unconditional (the version still increments). A failed condition throws
   * `ConditionFailedError` carrying the item as found, so callers can retry without a re-read.
   */
  put<T>(pk: string, sk: string, value: T, condition?: WriteCondition, options?: PutOptions): Promise<MetaItem<T>>;
  /** Deleting a missing item without a condition is not an error. */
  delete(pk: string, sk: string, condition?: { ifVersion: number }): Promise<void>;
  /**
   * Optional: `put` of one item under its condition and, only if that applies, of `alongside`
   * items of the same partition key (unconditional, no expiry), as one atomic write: all or
   * nothing. Answers the first item as `put` does. The SQLite adapter has it (one transaction
   * instead of several); DynamoDB leaves it out (TransactWriteItems costs twice the write units),
   * as does the memory store that stands in for it in tests, and callers then write the items one
   * by one.
   */
  putAll?<T>(
    pk: string,
    sk: string,
    value: T,
    condition: WriteCondition | undefined,
    alongside: AlongsideItem[],
  ): Promise<MetaItem<T>>;
  /**
   * Optional: a stamp of the items of `pk` that moves whenever one of them may have been written or
   * deleted since it was taken, by anyone (another caller of this instance, another connection,
   * another process). Equal stamps taken at two moments mean no such change landed in between, so
   * a caller may keep what it read of `pk` meanwhile (it may also move with no change: that costs a
   * read, never a stale answer). Take it *before* the read it guards. Undefined, or left out by
   * adapters that cannot tell cheaply (DynamoDB, and the memory store that stands in for it in
   * tests): the caller reads every time.
   */
  changeStamp?(pk: string): string | undefined;
}

export class ConditionFailedError extends Error {
  constructor(
    readonly pk: string,
    readonly sk: string,
    /** The item as the store found it (undefined when it does not exist). */
    readonly current: MetaItem | undefined,
    /**
     * The request was sent more than once (the SDK retried it): an earlier attempt may have applied,
     * and this failure may be against that very write. False: the write certainly did not apply.
     */
    readonly retried = false,
  ) {
    super(`condition failed on ${pk} / ${sk}`);
    this.name = 'ConditionFailedError';
  }
}

export class ObjectNotFoundError extends Error {
  constructor(readonly key: string) {
    super(`object not found: ${key}`);
    this.name = 'ObjectNotFoundError';
  }
}

/** The `limit` of an ObjectStore `list` page, checked: a whole number, 0 or more (default 1000). */
export function listLimit(limit: number | undefined): number {
  if (limit === undefined) return 1000;
  if (!Number.isInteger(limit) || limit < 0)
    throw new RangeError(`list limit must be a whole number >= 0, got ${limit}`);
  return limit;
}

/** Checks a condition against the current item; shared by the adapters that evaluate it in-process. */
export function conditionHolds(
  current: MetaItem | undefined,
  condition?: WriteCondition | { ifVersion: number },
): boolean {
  if (!condition) return true;
  if ('ifAbsent' in condition) return current === undefined;
  return current !== undefined && current.version === condition.ifVersion;
}

/** Applies QueryOptions' sort-key bounds; shared by the in-process adapters. */
export function skMatches(sk: string, o: QueryOptions): boolean {
  if (o.gte !== undefined && sk < o.gte) return false;
  if (o.gt !== undefined && sk <= o.gt) return false;
  if (o.lte !== undefined && sk > o.lte) return false;
  if (o.lt !== undefined && sk >= o.lt) return false;
  if (o.beginsWith !== undefined && !sk.startsWith(o.beginsWith)) return false;
  return true;
}
