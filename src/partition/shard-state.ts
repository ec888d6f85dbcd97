/**
 * A partition's state on a topic with a commit log (partition/shard-log.ts): its stored state,
 * folded through some entry of its shard's log, plus the entries after that, applied in order.
 * Every change to the state is an entry (`updatePartitionState` for the rare ones, shard-commit.ts
 * for appends); `foldShard` writes the resolved states and index entries back in bulk.
 */
import { KafkaError, type KafkaErrorName } from '../wire/errors.js';
import { ConditionFailedError, type MetadataStore, type MetaItem } from '../storage/ports.js';
import { holdsWrite, optimisticUpdate } from '../storage/optimistic-update.js';
import { indexSk, partitionPk, STATE_SK } from '../storage/key-layout.js';

/** Maintenance's per-partition segments (key-layout.ts `segmentPrefix`): an index entry of one is left alone. */
const SEGMENTS_PREFIX = 'segments/';
import type { TopicMeta } from '../topics/topics.js';
import { PRODUCER_CACHE_SIZE } from './producer-state.js';
import { indexItems, sameCommit } from './offset-index.js';
import { expandIndexItems, itemRange, packCommits, type StoredIndexValue } from './index-item.js';
import { readFeatureLevel } from '../storage/feature-level.js';
import { PACKED_INDEX_LEVEL } from '../storage/formats.js';
import { logEndOffset, type CommitRecord, type PartitionState } from './partition-state.js';
import { commitToken, nextState, readStoredState, stateFromItem, type StateRead } from './partition-commit.js';
import { partitionKey, perStore, shardKey } from './process-cache.js';
import { appendRecord, shardOf, ShardLog, touches, type ShardEntry, type Tail } from './shard-log.js';

/** A state as stored: without what readers resolved on top of it. */
export function storedState(s: PartitionState): PartitionState {
  const { pending: _, ...stored } = s;
  return stored;
}

/**
 * Applies one entry's change of `partition` to its state; answers the commit it appended, if any.
 * An append decided on another log end or epoch than the state's is a broken log (entries are
 * only ever decided on the state resolved before them): KAFKA_STORAGE_ERROR, never a guess.
 */
export function applyEntry(
  state: PartitionState,
  entry: ShardEntry,
  partition: number,
): { state: PartitionState; commit?: CommitRecord } {
  if (entry.topicId !== state.topicId) return { state };
  let next = state;
  let commit: CommitRecord | undefined;
  for (const c of entry.states) {
    if (c.partition !== partition) continue;
    next = { ...c.state, clog: next.clog };
    if (c.commit) commit = c.commit;
  }
  for (const c of entry.appends) {
    if (c.partition !== partition) continue;
    const record = appendRecord(entry, c);
    const plan = {
      pending: {
        objectKey: record.objectKey,
        start: c.start,
        end: c.end,
        recordCount: c.recordCount,
        maxTimestamp: c.maxTimestamp,
        ...(record.producer && { producer: record.producer }),
      },
      leaderEpoch: c.leaderEpoch,
      holders: c.holders,
      failedFollowers: c.failedFollowers ?? [],
    };
    const applied = nextState(
      next,
      state.topicId,
      plan,
      commitToken(plan.pending),
      entry.at,
      undefined,
      PRODUCER_CACHE_SIZE,
    ).next;
    const made = applied.lastCommit!;
    if (made.baseOffset !== c.baseOffset || next.leaderEpoch !== c.leaderEpoch)
      throw new KafkaError(
        'KAFKA_STORAGE_ERROR',
        `The commit log of partition ${partition} has an append at offset ${c.baseOffset} (epoch ${c.leaderEpoch}) where the log ends at ${logEndOffset(next)} (epoch ${next.leaderEpoch})`,
      );
    next = applied;
    commit = made;
  }
  return { state: next, ...(commit && { commit }) };
}

/** A resolved state: the commits past the index, each with the entry that made it. */
interface Resolved {
  state: PartitionState;
  pending: { n: number; commit: CommitRecord }[];
}

/** `from` with the entries of `tail` past `after` that touch `partition` applied, in order. */
function applyTail(from: Resolved, tail: Tail, after: number, partition: number): Resolved {
  let state = from.state;
  let pending = from.pending;
  for (const { n, entry } of tail.entries) {
    if (n <= after || !touches(entry, partition)) continue;
    const applied = applyEntry(state, entry, partition);
    state = applied.state;
    // A new state (an election) that truncated the log drops the commits above its log end.
    if (entry.states.some((c) => c.partition === partition))
      pending = pending.filter((c) => c.commit.baseOffset < logEndOffset(state));
    if (applied.commit) pending = [...pending, { n, commit: applied.commit }];
  }
  return { state, pending };
}

/** The state readers take: with the commits not in the index yet as `pending`. */
const asRead = (r: Resolved): PartitionState =>
  r.pending.length > 0 ? { ...r.state, pending: r.pending.map((c) => c.commit) } : r.state;

/** The state of `partition` with the entries of `tail` past `after` applied, and the commits they made. */
export function resolvePartition(base: PartitionState, tail: Tail, after: number, partition: number): PartitionState {
  return asRead(applyTail({ state: storedState(base), pending: [] }, tail, after, partition));
}

/**
 * What this process resolved last, per store and partition (topic incarnation and partition): the
 * state after entry `through`. Every change of a state is an entry, and an entry once written never
 * changes, so the state after entry n is the same whoever resolves it, folded or not: a read needs
 * only the entries after `through` (usually none or one), not the whole unfolded tail.
 */
const resolvedCache = perStore<Resolved & { through: number; read: StateRead }>(10_000);
/** The fold mark per shard as this process last read it (it only grows), and when (with a clock). */
const marks = perStore<{ through: number; at?: number }>(10_000);
/**
 * How long a fold mark this process read stays the one a reader of partitions it has not resolved
 * starts from, instead of reading the mark again (a GetItem before the items, in series). An older
 * mark is still correct (an item read after a mark is folded at least through it), but the Query
 * then reads every entry since it for the partitions no fold touched since: at most the entries of
 * these two seconds more than a fresh mark would, and usually none (the read's partitions were
 * folded since, and their items say so).
 */
export const MARK_KEPT_MS = 2_000;
/**
 * How long this process's resolutions are read forward from without a look at the fold mark: a
 * process that comes back to a shard after longer (a Lambda environment idle for minutes) would
 * otherwise Query every entry since its resolutions, which entries keep a week. Past this it reads
 * the mark first (one GetItem), and a resolution a fold or more behind it is read from its item.
 */
export const RESOLVED_UNCHECKED_MS = 10_000;

/** Past this many entries after the fold mark, the writer folds the shard before it answers. */
export const FOLD_AFTER_ENTRIES = 64;

/** The fold position of a stored state: its own, or the shard's mark if that is further. */
const foldedAt = (read: StateRead, mark: number) => Math.max(read.otherTopic ? 0 : (read.state.clog ?? 0), mark);

/**
 * A partition's resolved state: the stored item, the shard's fold mark and the log past them (one
 * Query). `now`: the reader's clock, as for `readShardPartitions` (without it, a process back after
 * a long while Queries every entry since its resolution).
 */
export async function readShardPartition(
  metadata: MetadataStore,
  topic: TopicMeta,
  partition: number,
  storeCount: number,
  now?: () => number,
): Promise<StateRead & { tail: Tail }> {
  const { reads, tail } = await readShardPartitions(
    metadata,
    topic,
    shardOf(topic, partition),
    [partition],
    storeCount,
    now,
  );
  return { ...reads.get(partition)!, tail };
}

/**
 * A partition's state as readers take it: the stored item, and on a topic with a commit log the
 * entries of its shard's log past it, resolved. A missing item, or one left by a deleted topic of
 * the same name, reads as the initial state (keeping the stale item's version). `now`: the reader's
 * clock (`readShardPartitions`).
 */
export function readPartitionState(
  metadata: MetadataStore,
  topic: TopicMeta,
  partition: number,
  storeCount: number,
  now?: () => number,
): Promise<StateRead> {
  return topic.clog
    ? readShardPartition(metadata, topic, partition, storeCount, now)
    : readStoredState(metadata, topic, partition, storeCount);
}

/**
 * Resolved states of some partitions of one shard: from this process's last resolution of each (one
 * Query of the entries since, which brings the fold mark too); those it has none of (or one a fold
 * or more behind) from their stored items, after the fold mark (read, or kept from a read within
 * `MARK_KEPT_MS`), the one Query then covering the entries past the oldest of them all. A state's
 * `pending` is the commits the index did not hold as of the read. `now`: the reader's clock, which
 * dates the marks it reads (without it a mark is read before any item).
 */
export async function readShardPartitions(
  metadata: MetadataStore,
  topic: TopicMeta,
  shard: number,
  partitions: number[],
  storeCount: number,
  now?: () => number,
): Promise<{ reads: Map<number, StateRead>; tail: Tail; mark: number }> {
  const log = new ShardLog(metadata);
  const cache = resolvedCache(metadata);
  const key = (p: number) => partitionKey(topic, p);
  const shardMarks = marks(metadata);
  const cachedMark = shardMarks.get(shardKey(topic, shard));
  // A resolution a fold or more behind a fold mark this process knows is read again from the item,
  // which the fold wrote: the Query from it would read a fold's worth of entries or more that the
  // item makes needless. One less behind is brought forward by the Query made anyway.
  const current = (k: ReturnType<typeof cache.get>, mark: number) =>
    k && k.through + FOLD_AFTER_ENTRIES > mark ? k : undefined;
  let known = partitions.map((p) => current(cache.get(key(p)), cachedMark?.through ?? 0));
  const checkedAt = now?.();
  // Long since this process read the shard: its resolutions may be far behind (see above).
  const idle =
    checkedAt !== undefined && (cachedMark?.at === undefined || checkedAt - cachedMark.at > RESOLVED_UNCHECKED_MS);
  let mark: number;
  let tail: Tail;
  // When the entries (and with them the fold mark) were read, on the reader's clock if it has one.
  let readAt: number | undefined;
  const readTail = (after: number) => {
    readAt = now?.();
    return log.tail(topic.name, shard, after);
  };
  let from: { resolved: Resolved; after: number; read: StateRead }[];
  if (!idle && known.every((k) => k !== undefined)) {
    const after = Math.min(...known.map((k) => k!.through));
    // The fold mark comes with the entries (`ShardLog.tail`): the commits left pending are those
    // the index did not hold as of this read, which is what lets a reader take them instead of
    // querying the index (`OffsetIndex.scan`).
    tail = await readTail(after);
    mark = Math.max(cachedMark?.through ?? 0, tail.folded ?? 0);
    from = known.map((k) => ({ resolved: k!, after: k!.through, read: k!.read }));
  } else {
    // The mark before the items, not beside them: a fold writes the states, then the mark, so an
    // item read after a mark is folded at least through it. Read together, a fold landing between
    // the two (an old item, the new mark) would skip the entries the old item lacks. A mark this
    // process read moments ago is such a mark too (`MARK_KEPT_MS`).
    const kept =
      cachedMark?.at !== undefined && checkedAt !== undefined && checkedAt - cachedMark.at <= MARK_KEPT_MS
        ? cachedMark.through
        : undefined;
    mark = kept ?? (await log.foldedThrough(topic.name, shard));
    known = known.map((k) => current(k, mark));
    // Only the partitions this process has not resolved are read from their items: the others'
    // resolutions stay true (an entry once written never changes), and the Query covers both.
    const items = await Promise.all(
      partitions.map((p, i) =>
        known[i] ? undefined : metadata.get<PartitionState>(partitionPk(topic.name, p), STATE_SK),
      ),
    );
    from = partitions.map((p, i) => {
      const k = known[i];
      if (k) return { resolved: k, after: k.through, read: k.read };
      const r = stateFromItem(items[i] as MetaItem<PartitionState> | undefined, topic, p, storeCount);
      return { resolved: { state: storedState(r.state), pending: [] }, after: foldedAt(r, mark), read: r };
    });
    tail = await readTail(Math.min(...from.map((f) => f.after)));
    // A fold since the mark's read: its commits are the index's too.
    mark = Math.max(mark, tail.folded ?? 0);
  }
  // Dated when read with the entries by a reader with a clock; else it keeps its older date.
  const dated = readAt;
  if (mark > (cachedMark?.through ?? -1) || dated !== undefined)
    shardMarks.set(shardKey(topic, shard), {
      through: mark,
      ...((dated ?? cachedMark?.at) !== undefined && { at: dated ?? cachedMark?.at }),
    });
  const reads = new Map<number, StateRead>();
  partitions.forEach((p, i) => {
    const applied = applyTail(from[i]!.resolved, tail, from[i]!.after, p);
    // Commits the fold has written into the index are the index's now.
    const resolved = { ...applied, pending: applied.pending.filter((c) => c.n > mark) };
    const read: StateRead = {
      ...from[i]!.read,
      // A partition with entries and no item yet has a state all the same (version 0: not stored).
      ...(from[i]!.read.version === undefined && tail.last > 0 && { version: 0 }),
      state: asRead(resolved),
    };
    cache.set(key(p), { ...resolved, through: Math.max(tail.last, from[i]!.after), read });
    reads.set(p, read);
  });
  return { reads, tail, mark };
}

export type StateDecision<R> = { write: PartitionState; answer: (s: PartitionState) => R } | { done: R };

export interface StateUpdate<R> {
  metadata: MetadataStore;
  topic: TopicMeta;
  partition: number;
  storeCount: number;
  now: number;
  /** Decides on the state as resolved (attempt 0: as read; later: after a lost race). */
  decide(state: PartitionState, attempt: number): StateDecision<R> | Promise<StateDecision<R>>;
  attempts?: number;
  giveUp: { errorName: KafkaErrorName; message: string };
  /** The scheduler's durable timer slot width: a commit-log entry arms a fold timer (fold-watch.ts). */
  timerSlotMs?: number | undefined;
}

/**
 * A read-modify-write of one partition's state other than an append (elections, ISR and replica
 * changes, the log start offset, the size): a conditional write of the state item, or on a topic
 * with a commit log an entry of its shard's log. `known`: the caller's read, for the first attempt
 * (per-partition commit only); `recogniseOwn`: a write found after an ambiguous outcome is taken
 * as applied when the item holds exactly the state written (a shard log entry carries its token).
 */
export async function updatePartitionState<R>(
  op: StateUpdate<R> & { known?: StateRead; recogniseOwn?: boolean },
): Promise<{ result: R; state: PartitionState }> {
  if (op.topic.clog) return updateShardPartition(op, op.known);
  const { topic, partition, storeCount, known } = op;
  const pk = partitionPk(topic.name, partition);
  const out = await optimisticUpdate<PartitionState, R>({
    metadata: op.metadata,
    pk,
    sk: STATE_SK,
    ...(known && {
      known: {
        item:
          known.version === undefined ? undefined : { pk, sk: STATE_SK, version: known.version, value: known.state },
      },
    }),
    attempts: op.attempts ?? 20,
    giveUp: op.giveUp,
    decide: async (item, attempt) => {
      const d = await op.decide(stateFromItem(item, topic, partition, storeCount).state, attempt);
      return 'done' in d ? d : { write: d.write, answer: (written) => d.answer(written.value) };
    },
    ...(op.recogniseOwn && {
      recognise: (found, attempted) =>
        holdsWrite(found, attempted) && 'write' in attempted ? attempted.answer(found) : undefined,
    }),
  });
  return { result: out.result, state: stateFromItem(out.item, topic, partition, storeCount).state };
}

/**
 * A read-modify-write of one partition's state on a topic with a commit log: the new state is an
 * entry of the shard's log, so it is ordered with the appends (an election's new epoch fences
 * every append decided after it). Recognised after an ambiguous write by a token of its own.
 */
export async function updateShardPartition<R>(
  op: StateUpdate<R>,
  known?: StateRead,
): Promise<{ result: R; state: PartitionState }> {
  const { metadata, topic, partition } = op;
  // Dated `op.now`, taken before the read: a mark dated older than its read errs towards reading it again.
  const read = await readShardPartition(metadata, topic, partition, op.storeCount, () => op.now);
  let state = read.state;
  const token = `s${op.now.toString(36)}${Math.random().toString(36).slice(2, 10)}`;
  let written: PartitionState | undefined;
  // A caller that decided on its own read (an election) decides again if the state moved since,
  // as a conditional write on that read's version would fail: a whole new state decided on an
  // older one would drop the appends committed in between.
  let attempt = known && JSON.stringify(known.state) !== JSON.stringify(state) ? 1 : 0;
  const { result } = await new ShardLog(metadata, op.timerSlotMs).append<R>(
    topic.name,
    shardOf(topic, partition),
    read.tail,
    token,
    async (news) => {
      for (const e of news) if (touches(e, partition)) state = applyEntry(storedState(state), e, partition).state;
      const d = await op.decide(state, attempt++);
      if ('done' in d) {
        written = state;
        return d;
      }
      const next = storedState(d.write);
      written = next;
      return {
        write: { topicId: topic.id, token, at: op.now, appends: [], states: [{ partition, state: next }] },
        answer: () => d.answer(next),
      };
    },
    { attempts: op.attempts ?? 20 },
  );
  return { result, state: written ?? state };
}

/** What a fold did. */
export interface FoldReport {
  through: number;
  partitions: number;
  /** Commits put into the index (each its own item, or packed: `indexItems`). */
  indexEntries: number;
  /** Index items written. */
  indexItems: number;
}

/**
 * Writes the shard's entries past its fold mark into the states of the partitions they touch
 * (one conditional write each, whatever the number of entries) and their commits into the index,
 * then moves the mark. From PACKED_INDEX_LEVEL the commits of a partition go into one packed item
 * (partition/index-item.ts), one write unit for a fold's worth; before it, an item each. Any
 * process may run it at any time, as often as it likes: a state write lost to another fold is that
 * fold's, index items already there are the same commits' (or a newer epoch's, or maintenance's
 * segment, left alone), and the mark never goes back.
 */
export async function foldShard(
  metadata: MetadataStore,
  topic: TopicMeta,
  shard: number,
  storeCount: number,
  level?: number,
): Promise<FoldReport> {
  const log = new ShardLog(metadata);
  const mark = await log.foldedThrough(topic.name, shard);
  const tail = await log.tail(topic.name, shard, mark);
  const own = tail.entries.filter((e) => e.entry.topicId === topic.id);
  if (tail.entries.length === 0) return { through: mark, partitions: 0, indexEntries: 0, indexItems: 0 };
  const packed = (level ?? (await readFeatureLevel(metadata))) >= PACKED_INDEX_LEVEL;
  // Every partition the entries touch, whatever `topic` says its count is: one added since it was
  // read has entries too, and the mark moves past them.
  const partitions = [
    ...new Set(own.flatMap(({ entry }) => [...entry.appends, ...entry.states].map((c) => c.partition))),
  ];
  const placed = await Promise.all(
    partitions.map((p) => foldPartition(metadata, topic, p, storeCount, mark, tail, packed)),
  );
  await log.markFolded(topic.name, shard, tail.last);
  // Known now, dated as the last read was (older than now: the kept mark errs towards reading again).
  const before = marks(metadata).get(shardKey(topic, shard));
  marks(metadata).set(shardKey(topic, shard), {
    through: Math.max(tail.last, before?.through ?? 0),
    ...(before?.at !== undefined && { at: before.at }),
  });
  return {
    through: tail.last,
    partitions: partitions.length,
    indexEntries: placed.reduce((a, b) => a + b.entries, 0),
    indexItems: placed.reduce((a, b) => a + b.items, 0),
  };
}

interface Placed {
  entries: number;
  items: number;
}

async function foldPartition(
  metadata: MetadataStore,
  topic: TopicMeta,
  partition: number,
  storeCount: number,
  mark: number,
  tail: Tail,
  packed: boolean,
): Promise<Placed> {
  const pk = partitionPk(topic.name, partition);
  const placed: Placed = { entries: 0, items: 0 };
  await optimisticUpdate<PartitionState, void>({
    metadata,
    pk,
    sk: STATE_SK,
    attempts: 20,
    giveUp: { errorName: 'KAFKA_STORAGE_ERROR', message: `Too much contention folding ${topic.name}-${partition}` },
    decide: async (item) => {
      const read = stateFromItem(item, topic, partition, storeCount);
      const after = foldedAt(read, mark);
      if (after >= tail.last) return { done: undefined };
      const resolved = resolvePartition(read.state, tail, after, partition);
      // The index first: a state folded past a commit is the only record of it left once the
      // entries expire, so its entry must be in place before.
      const commits = resolved.pending ?? [];
      if (packed) {
        const p = await placePacked(metadata, pk, topic.id, commits);
        placed.entries += p.entries;
        placed.items += p.items;
      } else {
        const each = await Promise.all(commits.map((c) => placeIndexEntry(metadata, pk, c)));
        placed.entries += each.filter(Boolean).length;
        placed.items += each.filter(Boolean).length;
      }
      return { write: { ...storedState(resolved), clog: tail.last }, answer: () => undefined };
    },
  });
  return placed;
}

/** Whether an index entry found where a commit goes leaves the commit out: the same commit, a newer epoch's, or a segment. */
const supersedes = (found: CommitRecord, commit: CommitRecord) =>
  sameCommit(found, commit) ||
  (found.topicId === commit.topicId &&
    (found.objectKey.startsWith(SEGMENTS_PREFIX) || found.leaderEpoch >= commit.leaderEpoch));

/**
 * Writes a commit's index entry unless its offset holds it already, a newer epoch's commit, or a
 * segment maintenance put there; over an entry of an older epoch (truncated by an election) it
 * goes. An ABORT marker's aborted-transaction item is not the fold's: its writer put it before
 * the entry (shard-commit.ts), and written again here it would come back after retention took it.
 */
async function placeIndexEntry(metadata: MetadataStore, pk: string, commit: CommitRecord): Promise<boolean> {
  const entry = indexItems(commit).at(-1)!;
  const sk = indexSk(commit.baseOffset);
  for (let found: MetaItem<StoredIndexValue> | undefined, attempt = 0; attempt < 4; attempt++) {
    try {
      await metadata.put(pk, sk, entry.value, found ? { ifVersion: found.version } : { ifAbsent: true });
      return true;
    } catch (e) {
      if (!(e instanceof ConditionFailedError)) throw e;
      found = e.current as MetaItem<StoredIndexValue> | undefined;
      if (found && supersedes(expandIndexItems([found])[0]!.value, commit)) return false;
    }
  }
  return false;
}

/**
 * Writes consecutive commits as one packed item at the first one's offset (ABORT markers' items
 * are their writers', as for `placeIndexEntry`), or as few as it takes: where an item is already there, the commits it holds from the
 * first on are left out (a write applied whose answer was lost, or another fold of the same
 * commits), a segment's or a newer epoch's entry leaves the commits it covers out, and an older
 * epoch's item (truncated by an election: everything in it from this offset on is) is written over.
 */
async function placePacked(
  metadata: MetadataStore,
  pk: string,
  topicId: string,
  commits: readonly CommitRecord[],
): Promise<Placed> {
  const placed: Placed = { entries: 0, items: 0 };
  let rest = commits;
  let over: number | undefined;
  for (let attempt = 0; rest.length > 0 && attempt < 8; attempt++) {
    try {
      await metadata.put(
        pk,
        indexSk(rest[0]!.baseOffset),
        packCommits(topicId, rest),
        over === undefined ? { ifAbsent: true } : { ifVersion: over },
      );
      placed.entries += rest.length;
      placed.items++;
      return placed;
    } catch (e) {
      if (!(e instanceof ConditionFailedError)) throw e;
      const found = e.current as MetaItem<StoredIndexValue> | undefined;
      over = undefined;
      if (!found) continue;
      const there = expandIndexItems([found]).map((i) => i.value);
      let k = 0;
      while (k < rest.length && k < there.length && sameCommit(there[k]!, rest[k]!)) k++;
      if (k > 0) {
        rest = rest.slice(k);
        continue;
      }
      const first = there[0]!;
      if (!supersedes(first, rest[0]!)) over = found.version;
      else if (first.objectKey.startsWith(SEGMENTS_PREFIX))
        rest = rest.filter((c) => c.baseOffset > itemRange(found.value).last);
      else return placed; // a newer epoch's: these commits were truncated
    }
  }
  return placed;
}
