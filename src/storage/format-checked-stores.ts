/**
 * The readers' side of src/storage/formats.ts, in one place for every backend: a decorator over
 * the storage ports that refuses an item or object in a format newer than this code reads, with
 * `UnknownFormatError`, before any domain code can misread it. The composition root wraps every
 * storage it opens; the check is a field lookup per item and a suffix test per object key, and it
 * changes no bytes (fetch's record batches pass through as they are).
 */
import { checkItem, checkObjectKey } from './formats.js';
import {
  ConditionFailedError,
  type AlongsideItem,
  type ByteRange,
  type MetadataStore,
  type MetaItem,
  type ObjectInfo,
  type ObjectPage,
  type ObjectStore,
  type PutOptions,
  type QueryOptions,
  type WriteCondition,
} from './ports.js';

/** A failed condition hands the item it found to the caller, which reads it: checked like a read. */
async function checkedWrite<T>(write: () => Promise<T>): Promise<T> {
  try {
    return await write();
  } catch (e) {
    if (e instanceof ConditionFailedError && e.current) checkItem(e.current);
    throw e;
  }
}

export class FormatCheckedMetadataStore implements MetadataStore {
  readonly putAll?: MetadataStore['putAll'];
  readonly changeStamp?: MetadataStore['changeStamp'];

  constructor(private readonly inner: MetadataStore) {
    const putAll = inner.putAll?.bind(inner);
    if (putAll)
      this.putAll = <T>(
        pk: string,
        sk: string,
        value: T,
        condition: WriteCondition | undefined,
        alongside: AlongsideItem[],
      ) => checkedWrite(() => putAll(pk, sk, value, condition, alongside));
    const changeStamp = inner.changeStamp?.bind(inner);
    if (changeStamp) this.changeStamp = changeStamp;
  }

  async get<T = unknown>(pk: string, sk: string): Promise<MetaItem<T> | undefined> {
    const item = await this.inner.get<T>(pk, sk);
    return item && checkItem(item);
  }

  async query<T = unknown>(pk: string, options?: QueryOptions): Promise<MetaItem<T>[]> {
    const items = await this.inner.query<T>(pk, options);
    for (const item of items) checkItem(item);
    return items;
  }

  put<T>(pk: string, sk: string, value: T, condition?: WriteCondition, options?: PutOptions): Promise<MetaItem<T>> {
    return checkedWrite(() => this.inner.put(pk, sk, value, condition, options));
  }

  delete(pk: string, sk: string, condition?: { ifVersion: number }): Promise<void> {
    return checkedWrite(() => this.inner.delete(pk, sk, condition));
  }
}

export class FormatCheckedObjectStore implements ObjectStore {
  readonly name: string;
  constructor(private readonly inner: ObjectStore) {
    this.name = inner.name;
  }
  put(key: string, body: Uint8Array): Promise<void> {
    return this.inner.put(key, body);
  }
  get(key: string, range?: ByteRange): Promise<Uint8Array> {
    checkObjectKey(key);
    return this.inner.get(key, range);
  }
  head(key: string): Promise<ObjectInfo | undefined> {
    return this.inner.head(key);
  }
  list(prefix: string, page?: { startAfter?: string; limit?: number }): Promise<ObjectPage> {
    return this.inner.list(prefix, page);
  }
  delete(keys: string[]): Promise<void> {
    return this.inner.delete(keys);
  }
}
