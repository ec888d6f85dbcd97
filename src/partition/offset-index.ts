import { KafkaError } from '../wire/errors.js';
import { withinEpoch } from './epoch-history.js';
import { ConditionFailedError, type AlongsideItem, type MetadataStore, type MetaItem } from '../storage/ports.js';
import { logEndOffset, type CommitRecord, type PartitionState, type ProducerBatch } from './partition-state.js';
import { ABORT_PREFIX, abortSk, INDEX_PREFIX, indexSk, partitionPk } from '../storage/key-layout.js';
import {
  expandIndexItems,
  itemCommits,
  itemRange,
  packCommits,
  type ItemCommits,
  type PackedRows,
  type StoredIndexValue,
} from './index-item.js';
import { perStore } from './process-cache.js';

/**
 * The offset index: one item per commit (sk `idx#{baseOffset, 20 digits}`), the equivalent of
 * Kafka's sparse offset index with one entry per append, or on a topic with a commit log one packed
 * item per fold holding its commits (partition/index-item.ts, where items become entries). Zero
 * padding keeps sort order = offset order.
 */

/**
 * The aborted-transactions index (Kafka's .txnindex): one item per ABORT marker (sk
 * `abort#{marker offset}`), holding the producer, the transaction's first offset and the last
 * stable offset once it was aborted. A read_committed fetch of [from, to) needs the aborted
 * transactions whose range meets it: markers at or after `from` whose first offset is below `to`,
 * so one query from `from` on.
 */
export interface AbortedTransaction {
  topicId: string;
  producerId: number;
  firstOffset: number;
  /** The offset of the ABORT marker. */
  lastOffset: number;
}

/** An abort item's value. */
interface AbortItem extends AbortedTransaction {
  /** The ABORT marker's `lastStableOffset` (TransactionMarkerInfo); absent on items written before it was kept. */
  lastStableOffset?: number;
  /** The leader epoch the marker was committed in; absent on items written before it was kept. */
  leaderEpoch?: number;
}

/** Whether a transactional batch of `producerId` starting at `offset` belongs to an aborted transaction. */
export function isAborted(aborted: readonly AbortedTransaction[], producerId: number, offset: number): boolean {
  return aborted.some((a) => a.producerId === producerId && offset >= a.firstOffset && offset <= a.lastOffset);
}

/** Aborted transactions one fetch reads at most (a bound on the query; Kafka's is the segment's txn index). */
const MAX_ABORTED_PER_FETCH = 1000;

/**
 * How `scan` pages the index. A query reads (and DynamoDB bills, per 4 KB) every entry of its
 * page, so a fetch should not read 64 entries when two hold the bytes it asked for.
 */
export interface ScanPaging {
  /** Bytes of batches the caller expects to take (a fetch's max bytes): sizes the pages. */
  maxBytes?: number;
  /** What one entry is expected to hold, e.g. the last commit's bytes; estimated from the entries read once known. */
  entryBytes?: number;
  /**
   * The partition's items may each hold many entries (a topic with a commit log, whose folds pack
   * a partition's commits into one item, partition/index-item.ts): pages are counted in items, so
   * the first is the fewest, and the next ones are sized by the entries per item read.
   */
  packed?: boolean;
}

/**
 * The items `OffsetIndex.put` writes for a commit, in its order (an ABORT marker's
 * aborted-transaction item first), in the partition's key: what a commit writes alongside the
 * partition state where the store writes both at once.
 */
export function indexItems(entry: CommitRecord): AlongsideItem[] {
  const entryItem = { sk: indexSk(entry.baseOffset), value: entry };
  return entry.control?.type === 'ABORT'
    ? [{ sk: abortSk(entry.baseOffset), value: abortedOf(entry) }, entryItem]
    : [entryItem];
}

/** The same commit: incarnation, epoch, object, range and offsets (a segment rewrite is another commit). */
export const sameCommit = (a: CommitRecord, b: CommitRecord) =>
  a.topicId === b.topicId &&
  a.leaderEpoch === b.leaderEpoch &&
  a.objectKey === b.objectKey &&
  a.start === b.start &&
  a.end === b.end &&
  a.baseOffset === b.baseOffset;

/**
 * Whether an index entry is part of the log as `state` has it: this incarnation's, within its
 * leader epoch, below the log end, and, at the last commit's offset, that commit itself. A commit
 * writes its entry beside its conditional state write (from INDEX_BESIDE_COMMIT_LEVEL), so an
 * entry may land for a write that then lost its race, or failed: at the offset the winner took
 * (the last commit's, until the winner's own entry replaces it, which every later commit makes sure
 * of before it moves `lastCommit` on), or at the log end, where nothing committed yet.
 */
export function inLog(state: PartitionState, e: CommitRecord): boolean {
  const last = state.lastCommit;
  return (
    e.topicId === state.topicId &&
    withinEpoch(state.epochHistory, e) &&
    e.baseOffset < logEndOffset(state) &&
    (last === undefined || e.baseOffset !== last.baseOffset || sameCommit(e, last))
  );
}

/**
 * Before a packed item (partition/index-item.ts) is written over or deleted with only its commits
 * up to `last` replaced (a segment swap, retention across it), its commits with records past `last`
 * go into a packed item of their own at the first one's offset. Until the old item goes they are in both,
 * which readers take as one (an entry already covered is skipped). False if something else holds
 * that offset, or every commit of the item is past `last`: the caller leaves the item as it is.
 */
export async function keepCommitsPast(
  metadata: MetadataStore,
  item: MetaItem<StoredIndexValue>,
  last: number,
): Promise<boolean> {
  const past = expandIndexItems([item])
    .map((e) => e.value)
    .filter((c) => c.lastOffset > last);
  if (past.length === 0) return true;
  // Nothing before them to drop: the item is what it would be written as.
  if (past[0]!.baseOffset <= itemRange(item.value).first) return false;
  try {
    await metadata.put(item.pk, indexSk(past[0]!.baseOffset), packCommits(itemRange(item.value).topicId, past), {
      ifAbsent: true,
    });
    return true;
  } catch (e) {
    if (!(e instanceof ConditionFailedError)) throw e;
    // Written before (by a pass that died before it went on, or a write whose answer was lost).
    const found = e.current as MetaItem<StoredIndexValue> | undefined;
    const there = found ? expandIndexItems([found]).map((i) => i.value) : [];
    return there.length === past.length && there.every((c, k) => sameCommit(c, past[k]!));
  }
}

/** Entries below a scan's start searched for its own floor entry when the nearest is not. */
const FLOOR_LOOKBACK = 4;
/** Page size of a scan with no byte budget (it reads on until the caller stops). */
const UNBUDGETED_PAGE = 64;
/** Bounds of a budgeted scan's pages; the first is the budget over the expected entry size. */
const MIN_PAGE = 2;
const FIRST_PAGE_UNKNOWN_SIZE = 8;
const MAX_PAGE = 256;
/**
 * Packed index items this process keeps decoded as far as it read them, per metadata store: a fold's
 * item of 64 commits decoded whole is about 47 KB of heap, so at most 12 MB. A 64-commit item costs
 * 100-170 µs of CPU to decode whole (load ~10), which every read of it paid before.
 */
const decodedItems = perStore<PackedRows>(256);
/**
 * Entries an older duplicate's original is looked for in, newest first. Kafka keeps five batches
 * per producer; an idempotent producer has at most five in flight, so its original is among the
 * last commits unless hundreds of other commits landed between it and its retry.
 */
const DUPLICATE_LOOKBACK = 256;
const DUPLICATE_PAGE = 32;

export class OffsetIndex {
  /** This process's packed items decoded, so reads of one item one after another decode each row once. */
  private readonly decoded;

  constructor(private readonly metadata: MetadataStore) {
    this.decoded = decodedItems(metadata);
  }

  /**
   * Idempotent: the same commit always writes the same entry, so repair and retry are harmless. An
   * ABORT marker's aborted-transaction item is written first: an index entry that exists implies
   * its abort item does, so repairing a missing entry (from `lastCommit`) repairs both.
   */
  async put(topic: string, partition: number, entry: CommitRecord): Promise<void> {
    const pk = partitionPk(topic, partition);
    for (const item of indexItems(entry)) await this.metadata.put(pk, item.sk, item.value);
  }

  /**
   * The entry written beside the commit's state write, before the commit is known to apply: only
   * where no entry is (IF absent), so an entry that turns out not to be committed never replaces
   * one that is. Resolves to whether this commit's entry is in place: false when another entry
   * holds the offset (a lost race's, or a failed write's), or the write failed; the committed
   * writer then puts its entry over it.
   */
  async putBeside(topic: string, partition: number, entry: CommitRecord): Promise<boolean> {
    const pk = partitionPk(topic, partition);
    try {
      await this.metadata.put(pk, indexSk(entry.baseOffset), entry, { ifAbsent: true });
      return true;
    } catch (e) {
      // A repeat of a put that applied finds its own entry.
      const found = e instanceof ConditionFailedError ? (e.current as MetaItem<CommitRecord> | undefined) : undefined;
      return found !== undefined && sameCommit(found.value, entry);
    }
  }

  /**
   * The aborted transactions whose records may lie in [from, to), in first-offset order: the abort
   * items from `from` on, and the last commit if it is an ABORT whose items may not have landed yet.
   * Items are read MAX_ABORTED_PER_FETCH at a time in marker order, and the list is known whole only
   * below `completeBelow`: `to` once the items end. Past a full page, a transaction aborted later
   * began after the last item's marker or was still open then, so it starts at or after that item's
   * last stable offset (Kafka bounds its transaction-index scan the same way); the list is whole
   * below it (below the marker + 1 for items written before the offset was kept, which misses a
   * transaction left open across a page of later aborts). A transaction open since before `from`
   * holds that bound back, so pages are read until it passes `from`: the batch holding `from` then
   * starts below it, and every answer progresses. A reader answers no further than `completeBelow`
   * and goes on from there; a rewrite reads {@link collectAbortedTransactions}.
   */
  async abortedTransactionsRead(
    topic: string,
    partition: number,
    state: PartitionState,
    from: number,
    to: number,
  ): Promise<{ aborted: AbortedTransaction[]; completeBelow: number }> {
    return this.readAborted(topic, partition, state, from, to, (completeBelow) => completeBelow > from);
  }

  /**
   * Every aborted transaction whose records may lie in [from, to), whole: the abort items are read
   * MAX_ABORTED_PER_FETCH at a time until the last page (Kafka's collectAbortedTransactions, which
   * its cleaner calls over the whole range it cleans). For a rewrite of [from, to), which has no
   * `completeBelow` to stop at: a transaction missing from its list would be taken for committed.
   * Holds one item per aborted transaction from `from` on.
   */
  async collectAbortedTransactions(
    topic: string,
    partition: number,
    state: PartitionState,
    from: number,
    to: number,
  ): Promise<AbortedTransaction[]> {
    return (await this.readAborted(topic, partition, state, from, to, () => false)).aborted;
  }

  /**
   * The abort items from `from` on that overlap [from, to), with the pending abort, page by page
   * until the items end or `enough` takes where the list read so far is known whole.
   */
  private async readAborted(
    topic: string,
    partition: number,
    state: PartitionState,
    from: number,
    to: number,
    enough: (completeBelow: number) => boolean,
  ): Promise<{ aborted: AbortedTransaction[]; completeBelow: number }> {
    const out: AbortedTransaction[] = [];
    for (let after: { gte: string } | { gt: string } = { gte: abortSk(from) }; ; ) {
      const items = await this.abortItems(topic, partition, after);
      for (const i of items) if (overlaps(state, i.value, to)) out.push(i.value);
      const ended = items.length < MAX_ABORTED_PER_FETCH;
      const completeBelow = ended ? to : Math.min(to, wholeBelow(state, items.at(-1)!.value));
      if (ended || enough(completeBelow)) return { aborted: withPendingAbort(state, out, from, to), completeBelow };
      after = { gt: items.at(-1)!.sk };
    }
  }

  /** One page of abort items in marker order, from a sort-key bound on. */
  private abortItems(topic: string, partition: number, from: { gte: string } | { gt: string }) {
    return this.metadata.query<AbortItem>(partitionPk(topic, partition), {
      ...from,
      lt: `${ABORT_PREFIX}~`,
      limit: MAX_ABORTED_PER_FETCH,
    });
  }

  /**
   * The offsets of an idempotent producer's batch already in the log (a retry of an older batch
   * than its last): the index entries carry each commit's producer and sequence range, so the
   * newest entries of the current epoch are searched, back to the producer's previous batch (the
   * original is not older than that) or DUPLICATE_LOOKBACK entries. Undefined when not found: the
   * caller answers DUPLICATE_SEQUENCE_NUMBER (appended before, offsets unknown), as Kafka does
   * past its five batches. Reads only: this is what lets a commit write no producer item.
   */
  async findProducerBatch(
    topic: string,
    partition: number,
    state: PartitionState,
    batch: ProducerBatch,
  ): Promise<{ baseOffset: number; lastOffset: number } | undefined> {
    const pk = partitionPk(topic, partition);
    const own = (e: CommitRecord) => inLog(state, e);
    /** 'found', 'past' (an earlier batch of the producer: stop) or undefined (go on). */
    const look = (e: CommitRecord) => {
      const p = e.producer;
      if (!p || p.producerId !== batch.producerId || !own(e)) return undefined;
      if (
        p.producerEpoch === batch.producerEpoch &&
        p.baseSequence === batch.baseSequence &&
        p.lastSequence === batch.lastSequence
      )
        return 'found';
      return p.producerEpoch < batch.producerEpoch || p.lastSequence < batch.baseSequence ? 'past' : undefined;
    };
    const found = (e: CommitRecord) => ({ baseOffset: e.baseOffset, lastOffset: e.lastOffset });
    const last = state.lastCommit;
    if (last && look(last) === 'found') return found(last);
    // The commits not in the index yet (a topic with a commit log), newest first.
    for (const e of [...(state.pending ?? [])].reverse()) {
      const seenAs = look(e);
      if (seenAs === 'found') return found(e);
      if (seenAs === 'past') return undefined;
    }
    let below = indexSk(logEndOffset(state));
    for (let seen = 0; seen < DUPLICATE_LOOKBACK; ) {
      const page = await this.metadata.query<StoredIndexValue>(pk, {
        lt: below,
        gte: INDEX_PREFIX,
        reverse: true,
        limit: DUPLICATE_PAGE,
      });
      for (const item of expandIndexItems(page, true)) {
        const seenAs = look(item.value);
        if (seenAs === 'found') return found(item.value);
        if (seenAs === 'past') return undefined;
      }
      if (page.length < DUPLICATE_PAGE) return undefined;
      below = page.at(-1)!.sk;
      seen += page.length;
    }
    return undefined;
  }

  /**
   * Whether the entry at this commit's base offset is this very commit. An entry of an older leader
   * epoch at the same base offset (truncated by an election) is not: the commit still needs its own.
   */
  async holds(topic: string, partition: number, entry: CommitRecord): Promise<boolean> {
    const found = await this.metadata.get<StoredIndexValue>(partitionPk(topic, partition), indexSk(entry.baseOffset));
    return found !== undefined && expandIndexItems([found]).some((e) => sameCommit(e.value, entry));
  }

  /**
   * Entries covering offsets [from, to) in order, starting with the one that contains `from`, as
   * many whole entries as fit in `maxBytes` (at least one, as Kafka returns at least one batch so a
   * consumer always progresses, however large). The last commit of `state` fills the tail if
   * its index write has not landed yet, and is written back (the repair of the commit protocol's
   * step 4, docs/architecture.md). A missing entry below `to` that the last commit cannot fill is KAFKA_STORAGE_ERROR
   * when nothing before it can be answered: never an empty answer below the high watermark.
   */
  async entriesFrom(
    topic: string,
    partition: number,
    state: PartitionState,
    from: number,
    to: number,
    maxBytes: number,
  ): Promise<CommitRecord[]> {
    const out: CommitRecord[] = [];
    let next = from;
    let bytes = 0;
    const last = state.lastCommit;
    const paging: ScanPaging = {
      maxBytes,
      ...(last && last.end > last.start && { entryBytes: last.end - last.start }),
      ...(state.clog !== undefined && { packed: true }),
    };
    for await (const e of this.scan(
      topic,
      partition,
      state.topicId,
      from,
      to,
      (e) => inLog(state, e),
      paging,
      state.pending,
    )) {
      if (e.lastOffset < next) continue; // covered already (e.g. old entries a segment swap replaced)
      if (e.baseOffset > next) break; // a gap: only the last commit may be missing, handled below
      if (out.length > 0 && bytes + (e.end - e.start) > maxBytes) return out; // whole entries within the budget, past it only the first
      out.push(e);
      bytes += e.end - e.start;
      next = e.lastOffset + 1;
      if (next >= to || bytes >= maxBytes) return out;
    }
    const lastFills = last && last.topicId === state.topicId && last.baseOffset <= next && last.lastOffset >= next;
    if (next < to && lastFills && (out.length === 0 || bytes + (last.end - last.start) <= maxBytes)) {
      await this.put(topic, partition, last);
      out.push(last);
    }
    if (out.length === 0 && next < to) {
      // Below the HW every offset was committed, so its entry must exist: an answer with nothing
      // would stall every consumer here for ever. Only the last commit can be rebuilt (from the
      // state); anything else is an error the operator has to see.
      throw new KafkaError(
        'KAFKA_STORAGE_ERROR',
        `The index of ${topic}-${partition} has no entry for offset ${next}, below the high watermark ${to}; the log is damaged there`,
      );
    }
    return out;
  }

  /**
   * Index entries of one topic incarnation in offset order, from the entry containing `from` up to
   * (not including) entries starting at `to`. The floor lookup and the first page run in parallel.
   * `accept` filters further (e.g. entries truncated by a leader change).
   *
   * Without a byte budget, pages are 64 entries. With one (`paging.maxBytes`), the first page is
   * the budget over the expected entry size (2 entries for 1 MiB of 512 KiB commits, plus the
   * floor), and each next page is the budget left over the average entry read so far, at least
   * twice the previous page: few entries are read past what the caller takes, and a wrong guess
   * (entries far smaller than expected, or filtered out) costs a logarithmic number of queries.
   * Pages are counted in items: where items are packed (`paging.packed`), the first page is 2 and
   * the next the entries wanted over the entries per item read (a 1 MiB fetch of 1 KiB commits
   * read 256 items of 64 commits, 16 times the 16 it took).
   */
  async *scan(
    topic: string,
    partition: number,
    topicId: string,
    from: number,
    to: number,
    accept: (e: CommitRecord) => boolean = () => true,
    paging: ScanPaging = {},
    pending: readonly CommitRecord[] = [],
  ): AsyncGenerator<CommitRecord> {
    // `pending` holds every commit the index did not hold when the state was read, in offset
    // order (shard-state.ts): a scan that starts within them (a consumer near the log end) reads
    // them alone, with no query of the index.
    const recent = pending.filter((e) => e.topicId === topicId && accept(e));
    if (recent.length > 0 && recent[0]!.baseOffset <= from) {
      for (const e of recent) if (e.lastOffset >= from && e.baseOffset < to) yield e;
      return;
    }
    let end = -1;
    for await (const e of this.scanStored(topic, partition, topicId, from, to, accept, paging)) {
      end = Math.max(end, e.lastOffset);
      yield e;
    }
    // Commits of the shard log not folded into the index yet (`PartitionState.pending`): above every
    // entry in it, unless a fold wrote them since the state was read (then they were just yielded).
    for (const e of pending)
      if (e.topicId === topicId && e.baseOffset > end && e.lastOffset >= from && e.baseOffset < to && accept(e))
        yield e;
  }

  private async *scanStored(
    topic: string,
    partition: number,
    topicId: string,
    from: number,
    to: number,
    accept: (e: CommitRecord) => boolean,
    paging: ScanPaging,
  ): AsyncGenerator<CommitRecord> {
    const pk = partitionPk(topic, partition);
    const own = (e: CommitRecord) => e.topicId === topicId && accept(e);
    const sizer = pageSizer(paging);
    let limit = sizer.first;
    const floorQuery = (n: number) =>
      this.metadata.query<StoredIndexValue>(pk, { lte: indexSk(from), gte: INDEX_PREFIX, reverse: true, limit: n });
    const [nearest, first] = await Promise.all([
      floorQuery(1),
      this.metadata.query<StoredIndexValue>(pk, { gt: indexSk(from), lt: indexSk(to), limit }),
    ]);
    // The nearest item is nearly always this incarnation's own; if not (an older incarnation's or
    // a truncated epoch's), the own one is looked for among the nearest few. A packed item holds
    // the entry containing `from` and those after it up to the next item. Its rows are decoded up to
    // `from`'s and then as the caller reads on, not whole (partition/index-item.ts, `ItemCommits`).
    const ownFloor = (items: typeof nearest) => {
      for (const item of items) {
        const commits = itemCommits(item, this.decoded);
        const k = commits.seek(from);
        // Whether any commit of the item is own: looked for from `from`'s on first, where a read
        // nearly always finds one at once.
        for (let i = k, e = commits.at(i); e !== undefined; e = commits.at(++i)) if (own(e)) return { commits, k };
        for (let i = 0; i < k; i++) if (own(commits.at(i)!)) return { commits, k };
      }
      return undefined;
    };
    const near = nearest[0];
    const floor =
      ownFloor(nearest) ??
      (near &&
        ownFloor((await floorQuery(FLOOR_LOOKBACK)).filter((i) => !(i.sk === near.sk && i.version === near.version))));
    /** The own commits of an item from position `k` on, below `to` (an item's commits are in offset order). */
    function* ownFrom(commits: ItemCommits, k: number) {
      let n = 0;
      for (let e = commits.at(k); e !== undefined && e.baseOffset < to; e = commits.at(++k)) {
        if (!own(e) || e.lastOffset < from) continue;
        sizer.saw(e);
        n++;
        yield e;
      }
      return n;
    }
    if (floor) yield* ownFrom(floor.commits, floor.k);
    let page = first;
    for (;;) {
      for (const item of page) sizer.item(yield* ownFrom(itemCommits(item, this.decoded), 0));
      if (page.length < limit) return;
      limit = sizer.next(limit);
      page = await this.metadata.query<StoredIndexValue>(pk, { gt: page.at(-1)!.sk, lt: indexSk(to), limit });
    }
  }
}

/** The page sizes of one scan, in items; see `OffsetIndex.scan`. */
function pageSizer({ maxBytes, entryBytes, packed }: ScanPaging) {
  if (maxBytes === undefined)
    return {
      first: UNBUDGETED_PAGE,
      saw: (_: CommitRecord) => {},
      item: (_: number) => {},
      next: () => UNBUDGETED_PAGE,
    };
  const clamp = (n: number) => Math.min(Math.max(Math.ceil(n), MIN_PAGE), MAX_PAGE);
  let entries = 0;
  let bytes = 0;
  // The items of the pages read and their entries (the floor item's are only those from the scan's start).
  let pageItems = 0;
  let pageEntries = 0;
  return {
    first: packed
      ? MIN_PAGE
      : entryBytes !== undefined && entryBytes > 0
        ? clamp(maxBytes / entryBytes)
        : FIRST_PAGE_UNKNOWN_SIZE,
    saw(e: CommitRecord) {
      entries++;
      bytes += Math.max(e.end - e.start, 0);
    },
    item(entriesOfItem: number) {
      pageItems++;
      pageEntries += entriesOfItem;
    },
    next(previous: number) {
      const average = entries > 0 ? bytes / entries : 0;
      const perItem = pageItems > 0 ? Math.max(pageEntries / pageItems, 1) : 1;
      const wanted = average > 0 ? Math.max(maxBytes - bytes, 0) / average / perItem : 0;
      return clamp(Math.max(previous * 2, wanted));
    },
  };
}

function abortedOf(entry: CommitRecord): AbortItem {
  const { producerId, firstOffset, lastStableOffset } = entry.control!;
  return {
    topicId: entry.topicId,
    producerId,
    firstOffset,
    lastOffset: entry.baseOffset,
    ...(lastStableOffset !== undefined && { lastStableOffset }),
    leaderEpoch: entry.leaderEpoch,
  };
}

/**
 * Below which offset every transaction aborted after the item `last` (read in marker order) starts.
 * Another topic incarnation's item (left by an unfinished purge) says nothing of this one's.
 */
function wholeBelow(state: PartitionState, last: AbortItem): number {
  return last.topicId === state.topicId && last.lastStableOffset !== undefined
    ? last.lastStableOffset
    : last.lastOffset + 1;
}

/**
 * Whether an abort item read from a fetch's offset on may cover records below `to`, in this
 * incarnation and epoch. A marker its epoch's truncation removed stays out even once the log has
 * grown past its offset again (with other records, maybe the same producer's next transaction);
 * an item without its epoch can only be checked against the log end.
 */
function overlaps(state: PartitionState, a: AbortItem, to: number): boolean {
  if (a.topicId !== state.topicId || a.firstOffset >= to || !withinEpochOffset(state, a.lastOffset)) return false;
  return (
    a.leaderEpoch === undefined ||
    withinEpoch(state.epochHistory, { leaderEpoch: a.leaderEpoch, lastOffset: a.lastOffset })
  );
}

/**
 * `listed` (abort items from `from` on) with the last commit if it is an ABORT whose item may not
 * have landed yet, in first-offset order.
 */
function withPendingAbort(
  state: PartitionState,
  listed: AbortedTransaction[],
  from: number,
  to: number,
): AbortedTransaction[] {
  // The last commit, and on a topic with a commit log the commits not folded into the index yet.
  for (const last of [...(state.pending ?? []), ...(state.lastCommit ? [state.lastCommit] : [])]) {
    if (
      last.control?.type === 'ABORT' &&
      last.topicId === state.topicId &&
      last.baseOffset >= from &&
      last.control.firstOffset < to &&
      !listed.some((a) => a.lastOffset === last.baseOffset)
    ) {
      listed.push(abortedOf(last));
    }
  }
  return listed.sort((a, b) => a.firstOffset - b.firstOffset);
}

/** An abort item above the log end (left by a truncated leader epoch) no longer applies. */
function withinEpochOffset(state: PartitionState, offset: number): boolean {
  return offset < (state.replicaLeo[String(state.leader)] ?? 0);
}
