/**
 * The stored form of a share-partition item: its in-flight records as runs. A receive locks its
 * records together (same member, lock end and delivery count) and acknowledgements move SPSO past
 * the front, so 200 records in flight are a handful of runs: the item is about a kilobyte instead
 * of twenty (one DynamoDB write unit or two instead of twenty, and twenty times less JSON for
 * every read and write of the local stores). ShareGroups sees the records one by one
 * (share-partition.ts); this decorator of its metadata store converts share-partition items only,
 * on the way in and out, failed conditions' items included.
 */
import { SHARE_PARTITION_PREFIX } from '../storage/key-layout.js';
import {
  ConditionFailedError,
  type AlongsideItem,
  type MetadataStore,
  type MetaItem,
  type PutOptions,
  type QueryOptions,
  type WriteCondition,
} from '../storage/ports.js';
import type { InFlightRecord, RecordState, SharePartitionState } from './share-partition.js';

const CODES: Record<RecordState, string> = {
  available: 'a',
  acquired: 'q',
  acknowledged: 'k',
  archiving: 'g',
  archived: 'x',
};
const STATES = Object.fromEntries(Object.entries(CODES).map(([k, v]) => [v, k])) as Record<string, RecordState>;

/**
 * [first offset, count, state code, deliveries, member, lock end] for records alike at consecutive
 * offsets; an archiving record alone, with [..., why, dead-letter sequence] after them.
 */
type Run = [number, number, string, number, string?, number?, string?, number?];

export type StoredSharePartition = Omit<SharePartitionState, 'records'> & { runs: Run[] };

export function encodeSharePartition(s: SharePartitionState): StoredSharePartition {
  const { records, ...rest } = s;
  const runs: Run[] = [];
  let last: InFlightRecord | undefined;
  for (const r of records) {
    const run = runs[runs.length - 1];
    if (
      run &&
      last &&
      r.state !== 'archiving' &&
      r.offset === last.offset + 1 &&
      r.state === last.state &&
      r.deliveries === last.deliveries &&
      r.member === last.member &&
      r.lockedUntil === last.lockedUntil
    )
      run[1]++;
    else {
      const next: Run = [r.offset, 1, CODES[r.state], r.deliveries];
      if (r.member !== undefined || r.lockedUntil !== undefined || r.state === 'archiving')
        next.push(r.member ?? '', r.lockedUntil ?? 0);
      if (r.state === 'archiving') next.push(r.why ?? 'rejected', r.dlqSeq ?? -1);
      runs.push(next);
    }
    last = r;
  }
  return { ...rest, runs };
}

export function decodeSharePartition(v: StoredSharePartition | SharePartitionState): SharePartitionState {
  // Items written before runs (never in a release) keep their records one by one.
  if ('records' in v) return { ...v, records: v.records.map((r) => ({ ...r })), recent: [...v.recent] };
  const { runs, ...rest } = v;
  const records: InFlightRecord[] = [];
  for (const [offset, count, code, deliveries, member, lockedUntil, why, dlqSeq] of runs) {
    const state = STATES[code]!;
    for (let i = 0; i < count; i++) {
      const r: InFlightRecord = { offset: offset + i, state, deliveries };
      if (state === 'acquired') {
        r.member = member!;
        r.lockedUntil = lockedUntil!;
      }
      if (state === 'archiving') {
        r.why = why as 'rejected' | 'limit';
        if (dlqSeq !== undefined && dlqSeq >= 0) r.dlqSeq = dlqSeq;
      }
      records.push(r);
    }
  }
  return { ...rest, recent: [...rest.recent], ...(rest.dlq ? { dlq: { ...rest.dlq } } : {}), records };
}

const isSharePartition = (sk: string) => sk.startsWith(SHARE_PARTITION_PREFIX);

function decodeItem<T>(item: MetaItem<unknown> | undefined): MetaItem<T> | undefined {
  if (!item || !isSharePartition(item.sk)) return item as MetaItem<T> | undefined;
  return { ...item, value: decodeSharePartition(item.value as StoredSharePartition) as T };
}

/** The metadata store with share-partition items in their stored form underneath. */
export class SharePartitionCodecStore implements MetadataStore {
  readonly putAll?: MetadataStore['putAll'];
  readonly changeStamp?: MetadataStore['changeStamp'];

  constructor(private readonly inner: MetadataStore) {
    if (inner.changeStamp) this.changeStamp = inner.changeStamp.bind(inner);
    if (inner.putAll) {
      const putAll = inner.putAll.bind(inner);
      this.putAll = <T>(pk: string, sk: string, value: T, c: WriteCondition | undefined, rest: AlongsideItem[]) =>
        this.converted(sk, async () => this.written(sk, value, await putAll(pk, sk, this.encode(sk, value), c, rest)));
    }
  }

  async get<T>(pk: string, sk: string): Promise<MetaItem<T> | undefined> {
    return decodeItem<T>(await this.inner.get(pk, sk));
  }

  async query<T>(pk: string, options?: QueryOptions): Promise<MetaItem<T>[]> {
    return (await this.inner.query(pk, options)).map((i) => decodeItem<T>(i)!);
  }

  put<T>(pk: string, sk: string, value: T, condition?: WriteCondition, options?: PutOptions): Promise<MetaItem<T>> {
    return this.converted(sk, async () =>
      this.written(sk, value, await this.inner.put(pk, sk, this.encode(sk, value), condition, options)),
    );
  }

  /**
   * The item as written: a share-partition's value is the state the caller wrote (the stored form
   * decodes to the same records), not the stored form decoded again: that was one of the two
   * decodes of every acknowledgement. The caller made the state for this write alone. Built field
   * by field: the stored value is not looked at (the SQLite store parses it only if it is).
   */
  private written<T>(sk: string, value: T, stored: MetaItem<unknown>): MetaItem<T> {
    return isSharePartition(sk)
      ? { pk: stored.pk, sk: stored.sk, version: stored.version, value }
      : (stored as MetaItem<T>);
  }

  delete(pk: string, sk: string, condition?: { ifVersion: number }): Promise<void> {
    return this.converted(sk, () => this.inner.delete(pk, sk, condition));
  }

  private encode<T>(sk: string, value: T): unknown {
    return isSharePartition(sk) ? encodeSharePartition(value as SharePartitionState) : value;
  }

  /** A failed condition carries the item found: decoded like any item read. */
  private async converted<R>(sk: string, write: () => Promise<R>): Promise<R> {
    try {
      return await write();
    } catch (e) {
      if (!(e instanceof ConditionFailedError) || !isSharePartition(sk)) throw e;
      throw new ConditionFailedError(e.pk, e.sk, decodeItem(e.current), e.retried);
    }
  }
}
