/**
 * The offset index's items as stored, and the one place they become index entries (`CommitRecord`)
 * for readers. Format 1: one item per commit, its value the commit record. Format 2 (from
 * PACKED_INDEX_LEVEL, written by a topic's commit-log fold, partition/shard-state.ts): one item per
 * partition per fold, holding the fold's commits packed, at the sort key of the first one. A
 * commit packed is about 13 bytes where its record is about 250, so a fold of 64 commits is one
 * write unit, not 64 (docs/architecture.md, "One conditional write per request").
 *
 * Readers query `idx#` items as before and expand them here: an entry keeps the coordinates of the
 * item it came from (sk, version) and the item's offset range, so whoever replaces or deletes items
 * (maintenance's swaps, retention) replaces a packed item whole, never a part of it.
 */
import type { MetaItem } from '../storage/ports.js';
import type { CommitRecord } from './partition-state.js';

/** A packed item's value (format 2). */
export interface PackedIndexItem {
  fv: 2;
  /** The topic incarnation of every commit in it. */
  t: string;
  /** The first commit's base offset and the last one's last offset. */
  b: number;
  l: number;
  /** The commits, one row each, separated by a space (see `packRow`). */
  c: string;
}

export type StoredIndexValue = CommitRecord | PackedIndexItem;

export const isPacked = (v: StoredIndexValue): v is PackedIndexItem =>
  (v as PackedIndexItem).fv === 2 && typeof (v as PackedIndexItem).c === 'string';

/** An index entry as readers take it, with the item it is stored in. */
export interface IndexEntry extends MetaItem<CommitRecord> {
  /** The offsets the stored item holds: the entry's own, or a packed item's whole range. */
  itemFirst: number;
  itemLast: number;
}

/** The offsets a stored item holds and its topic incarnation. */
export function itemRange(v: StoredIndexValue): { topicId: string; first: number; last: number } {
  return isPacked(v)
    ? { topicId: v.t, first: v.b, last: v.l }
    : { topicId: v.topicId, first: v.baseOffset, last: v.lastOffset };
}

/** The entries of stored items in the order given (`reverse`: a reverse query's, newest first). */
export function expandIndexItems(items: readonly MetaItem<StoredIndexValue>[], reverse = false): IndexEntry[] {
  const out: IndexEntry[] = [];
  for (const item of items) {
    const v = item.value;
    if (!isPacked(v)) {
      out.push({ ...(item as MetaItem<CommitRecord>), itemFirst: v.baseOffset, itemLast: v.lastOffset });
      continue;
    }
    const commits = unpackCommits(v);
    if (reverse) commits.reverse();
    for (const value of commits)
      out.push({ pk: item.pk, sk: item.sk, version: item.version, value, itemFirst: v.b, itemLast: v.l });
  }
  return out;
}

/**
 * What a row is read against: the previous commit of the item (its offsets, sizes and time, the
 * epoch, stores and producer it had), so a row names only what changed.
 */
interface Previous {
  last: number;
  count: number;
  start: number;
  length: number;
  timestamp: number;
  epoch: number;
  stores: number;
  producer?: { id: number; epoch: number; transactional: boolean; nextSequence: number };
}

/** A number as a row's field: base 36 (a '-' before a negative change), empty when 0. */
const field = (n: number) => (n === 0 ? '' : n.toString(36));
const num = (s: string | undefined) => (s === undefined || s === '' ? 0 : Number.parseInt(s, 36));
const mask = (rs: readonly number[]) => rs.reduce((m, r) => m | (1 << r), 0);
function unmask(m: number): number[] {
  const out: number[] = [];
  for (let r = 0; m >>> r !== 0 && r < 31; r++) if ((m & (1 << r)) !== 0) out.push(r);
  return out;
}

/** A request object's key (`data/{topicId}/{shard}/{ms}-{12 hex}.v2`): its time and random part. */
const REQUEST_KEY = /^data\/([^/]+)\/([0-9a-f])\/(\d{13})-([0-9a-f]{12})\.v2$/;
/** The random part's 6 bytes as 8 URL-safe base64 characters. */
const RANDOM_CHARS = 8;

/**
 * A commit as one row, '.'-separated, empty fields meaning "as before" (trailing ones left out):
 * the object (its random part, then its time less the commit's max timestamp, when its key has the
 * request-object form of this topic incarnation), max timestamp - the previous one, length and
 * start - the previous ones, record count (empty: the previous count), base offset - the previous
 * last offset - 1, leader epoch and stores (a bit mask; empty: unchanged), producer id ('~': none),
 * producer epoch, transactional (1) and base sequence (empty: the producer's next). Anything else
 * (a marker, another key, another incarnation) is the record as URI-encoded JSON.
 */
function packRow(topicId: string, c: CommitRecord, p: Previous): string {
  const key = REQUEST_KEY.exec(c.objectKey);
  const producerOk = !c.producer || c.producer.lastSequence === c.producer.baseSequence + c.recordCount - 1;
  if (!key || key[1] !== topicId || key[2] !== key[4]![0] || c.topicId !== topicId || c.control || !producerOk)
    return encodeURIComponent(JSON.stringify(c));
  const random = Buffer.from(key[4]!, 'hex').toString('base64url');
  const pr = c.producer;
  const pp = p.producer;
  const sameProducer =
    pr && pp && pr.producerId === pp.id && pr.producerEpoch === pp.epoch && !!pr.transactional === pp.transactional;
  const fields = [
    random + field(Number(key[3]) - c.maxTimestamp),
    field(c.maxTimestamp - p.timestamp),
    field(c.end - c.start - p.length),
    field(c.start - p.start),
    c.recordCount === p.count ? '' : c.recordCount.toString(36),
    field(c.baseOffset - p.last - 1),
    c.leaderEpoch === p.epoch ? '' : c.leaderEpoch.toString(36),
    mask(c.stores) === p.stores ? '' : mask(c.stores).toString(36),
    !pr ? (pp ? '~' : '') : sameProducer ? '' : pr.producerId.toString(36),
    !pr || sameProducer ? '' : pr.producerEpoch.toString(36),
    !pr || sameProducer ? '' : pr.transactional ? '1' : '0',
    !pr || (sameProducer && pr.baseSequence === pp.nextSequence) ? '' : `s${field(pr.baseSequence)}`,
  ];
  while (fields.at(-1) === '') fields.pop();
  return fields.join('.');
}

function unpackRow(topicId: string, row: string, p: Previous): CommitRecord {
  if (row.startsWith('%7B')) return JSON.parse(decodeURIComponent(row)) as CommitRecord;
  const f = row.split('.');
  const keyField = f[0]!;
  const random = Buffer.from(keyField.slice(0, RANDOM_CHARS), 'base64url').toString('hex');
  const maxTimestamp = p.timestamp + num(f[1]);
  const start = p.start + num(f[3]);
  const end = start + p.length + num(f[2]);
  const recordCount = f[4] ? num(f[4]) : p.count;
  const baseOffset = p.last + 1 + num(f[5]);
  const leaderEpoch = f[6] ? num(f[6]) : p.epoch;
  const stores = f[7] ? num(f[7]) : p.stores;
  let producer: CommitRecord['producer'];
  if (f[8] !== '~') {
    const pp = p.producer;
    const changed = f[8] !== undefined && f[8] !== '';
    const id = changed ? num(f[8]) : pp?.id;
    if (id !== undefined) {
      const epoch = changed ? num(f[9]) : pp!.epoch;
      const transactional = changed ? f[10] === '1' : pp!.transactional;
      const baseSequence = f[11]?.startsWith('s') ? num(f[11].slice(1)) : pp!.nextSequence;
      producer = {
        producerId: id,
        producerEpoch: epoch,
        baseSequence,
        lastSequence: baseSequence + recordCount - 1,
        ...(transactional && { transactional: true }),
      };
    }
  }
  return {
    topicId,
    baseOffset,
    lastOffset: baseOffset + recordCount - 1,
    recordCount,
    maxTimestamp,
    leaderEpoch,
    objectKey: `data/${topicId}/${random[0]}/${String(maxTimestamp + num(keyField.slice(RANDOM_CHARS))).padStart(13, '0')}-${random}.v2`,
    start,
    end,
    stores: unmask(stores),
    ...(producer && { producer }),
  };
}

const initial = (first: number): Previous => ({
  last: first - 1,
  count: 0,
  start: 0,
  length: 0,
  timestamp: 0,
  epoch: 0,
  stores: 0,
});

function advance(c: CommitRecord): Previous {
  const pr = c.producer;
  return {
    last: c.lastOffset,
    count: c.recordCount,
    start: c.start,
    length: c.end - c.start,
    timestamp: c.maxTimestamp,
    epoch: c.leaderEpoch,
    stores: mask(c.stores),
    ...(pr && {
      producer: {
        id: pr.producerId,
        epoch: pr.producerEpoch,
        transactional: !!pr.transactional,
        nextSequence: pr.lastSequence + 1,
      },
    }),
  };
}

/** One packed item of consecutive commits of one topic incarnation, in offset order. */
export function packCommits(topicId: string, commits: readonly CommitRecord[]): PackedIndexItem {
  const first = commits[0]!.baseOffset;
  let p = initial(first);
  const rows = commits.map((c) => {
    const row = packRow(topicId, c, p);
    p = advance(c);
    return row;
  });
  return { fv: 2, t: topicId, b: first, l: commits.at(-1)!.lastOffset, c: rows.join(' ') };
}

export function unpackCommits(v: PackedIndexItem): CommitRecord[] {
  return new PackedRows(v).all();
}

/** Rows of packed items decoded in this process: the seam a test counts reads' decoding by. */
let rowsDecoded = 0;
export const packedRowsDecoded = () => rowsDecoded;

/**
 * An index item's commits, decoded row by row as far as a reader goes. A row is read against the
 * one before it, so there is no reading from the middle: a read at offset o decodes the item's rows
 * up to o's once, and what it reads on from there as it goes. Kept per process (`OffsetIndex`), so
 * the consumer that reads an item's commits one fetch at a time decodes each row once, not the whole
 * item per fetch. The commits are shared by every reader of the item: never changed.
 */
export interface ItemCommits {
  /** The commit at position `k` (decoding the rows up to it), undefined past the item's last. */
  at(k: number): CommitRecord | undefined;
  /** The position of the first commit that reaches `offset` (its last offset at or past it); past the last if none. */
  seek(offset: number): number;
}

/** The one commit of an item of format 1. */
class SingleCommit implements ItemCommits {
  constructor(private readonly commit: CommitRecord) {}
  at(k: number) {
    return k === 0 ? this.commit : undefined;
  }
  seek(offset: number) {
    return this.commit.lastOffset >= offset ? 0 : 1;
  }
}

/** A packed item's commits, `decoded` the rows read so far. */
export class PackedRows implements ItemCommits {
  readonly decoded: CommitRecord[] = [];
  private previous: Previous;
  /** Where the next row starts in `value.c`; past its end once every row is decoded. */
  private position = 0;

  constructor(readonly value: PackedIndexItem) {
    this.previous = initial(value.b);
  }

  at(k: number): CommitRecord | undefined {
    const { c, t } = this.value;
    while (this.decoded.length <= k && this.position <= c.length) {
      let end = c.indexOf(' ', this.position);
      if (end < 0) end = c.length;
      const commit = unpackRow(t, c.slice(this.position, end), this.previous);
      rowsDecoded++;
      this.previous = advance(commit);
      this.position = end + 1;
      this.decoded.push(commit);
    }
    return this.decoded[k];
  }

  /** Every commit of the item. */
  all(): CommitRecord[] {
    this.at(Number.POSITIVE_INFINITY);
    return this.decoded;
  }

  seek(offset: number): number {
    const d = this.decoded;
    // Rows are in offset order: past the rows decoded, decode on to the one that reaches `offset`.
    if (d.length === 0 || d.at(-1)!.lastOffset < offset) {
      for (let k = d.length; ; k++) {
        const commit = this.at(k);
        if (commit === undefined || commit.lastOffset >= offset) return k;
      }
    }
    let low = 0;
    let high = d.length - 1;
    while (low < high) {
      const mid = (low + high) >>> 1;
      if (d[mid]!.lastOffset >= offset) high = mid;
      else low = mid + 1;
    }
    return low;
  }

  /** Whether this holds the commits of `value`: a decode is a function of the value alone. */
  holds(value: PackedIndexItem): boolean {
    const v = this.value;
    return v === value || (v.c === value.c && v.t === value.t && v.b === value.b && v.l === value.l);
  }
}

/**
 * The commits of a stored item, through `cache` (keyed by the item's key, checked against its
 * value: an item written over or made again at its key holds other commits).
 */
export function itemCommits(
  item: MetaItem<StoredIndexValue>,
  cache?: { get(key: string): PackedRows | undefined; set(key: string, value: PackedRows): void },
): ItemCommits {
  const v = item.value;
  if (!isPacked(v)) return new SingleCommit(v);
  if (!cache) return new PackedRows(v);
  const key = `${item.pk}|${item.sk}`;
  const kept = cache.get(key);
  if (kept?.holds(v)) return kept;
  const rows = new PackedRows(v);
  cache.set(key, rows);
  return rows;
}
