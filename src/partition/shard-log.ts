/**
 * A topic's commit log per shard of partitions (docs/architecture.md, "One conditional write per
 * request"): the commit point of every change to the partitions of a shard, so a produce request
 * over many partitions commits with one conditional write, not one per partition.
 *
 * Entry n of a shard (pk `clog#{topic}#{shard}`, sk `e#{n}`) is written IF absent: whoever writes
 * it first has committed. A writer that loses the race learns the winner's entry from the failed
 * condition, decides again on top of it and tries n + 1, without another read. An entry says, per
 * partition it touches, either an append (packed: offsets, byte range, epoch, holders, sequence)
 * or the partition's whole new state (elections, ISR changes, DeleteRecords: rare writes whose
 * full state is one or two write units, as today's). A partition's state is its state item (which
 * says which entry it is folded through, `clogThrough`) plus the entries after that which touch
 * it, applied in order by `resolvePartition`; the fold (`foldShard`) writes that resolved state
 * and the index entries of its appends in bulk, later, and marks the shard folded.
 */
import type { CommitRecord, PartitionState, ProducerBatch } from './partition-state.js';
import { ConditionFailedError, type MetadataStore, type MetaItem } from '../storage/ports.js';
import { CLOG_ENTRY_PREFIX, CLOG_FOLDED_SK, clogEntrySk, clogPk } from '../storage/key-layout.js';
import { KafkaError } from '../wire/errors.js';
import { watchFold } from './fold-watch.js';

/** Partitions per shard: one shard's entry names at most this many partitions. */
export const SHARD_SIZE = 128;

/**
 * How a topic's partitions fall into shards, as stored with the topic (TopicMeta.shardGroups): the
 * partitions are dealt into `shardGroups` groups, partition p into group p mod shardGroups (at the
 * topic's creation, the partitions whose first leader is the same store: `assignReplicas`), and
 * each group is cut into shards of SHARD_SIZE in partition order. Absent (topics created before
 * feature level LEADER_SHARDS_LEVEL), one group: partition p is in shard floor(p / SHARD_SIZE).
 * A producer's request carries one leader's partitions, so with groups by leader its entry's
 * writers are that leader's producers only, not every producer of the topic.
 */
export interface ShardLayout {
  shardGroups?: number;
}

/** The shard of a partition: the one place for the rule (`ShardLayout`). */
export function shardOf(topic: ShardLayout, partition: number): number {
  const groups = topic.shardGroups ?? 1;
  return Math.floor(Math.floor(partition / groups) / SHARD_SIZE) * groups + (partition % groups);
}

/** Whether the partition is its shard's first (the one whose maintenance folds the shard). */
export const firstOfShard = (topic: ShardLayout, partition: number): boolean =>
  Math.floor(partition / (topic.shardGroups ?? 1)) % SHARD_SIZE === 0;

/** Every shard of a topic of `partitionCount` partitions, ascending. */
export function shardsOf(topic: ShardLayout & { partitionCount: number }): number[] {
  const shards = new Set<number>();
  for (let p = 0; p < topic.partitionCount; p++) if (firstOfShard(topic, p)) shards.add(shardOf(topic, p));
  return [...shards].sort((a, b) => a - b);
}

/** How long an entry is kept: the fold runs within minutes; the store deletes entries (unbilled TTL) after this. */
export const ENTRY_RETENTION_MS = 7 * 86_400_000;

/** One partition's append in an entry, as its writer decided it. */
export interface AppendChange {
  partition: number;
  /** The partition's log end when the entry was decided: the batch's first offset. */
  baseOffset: number;
  recordCount: number;
  /** Byte range of the partition's batches in the entry's object. */
  start: number;
  end: number;
  maxTimestamp: number;
  /** The leader epoch the writer committed in (an entry is only decided on the current epoch). */
  leaderEpoch: number;
  /** Replicas whose stores hold the object. */
  holders: number[];
  /** Followers whose copy failed: they leave the ISR with this entry. */
  failedFollowers?: number[];
  /** The producer's base sequence here (the producer is the entry's). */
  baseSequence?: number;
}

/** A partition's whole new state, with the commit record it appended if it appended one (a marker). */
export interface StateChange {
  partition: number;
  state: PartitionState;
  commit?: CommitRecord;
}

/** One entry of a shard's log, as its writer decided it. */
export interface ShardEntry {
  topicId: string;
  /** The writer's token: a repeat of a write that applied finds it (the object key, fresh per request). */
  token: string;
  /** The writer's clock when deciding (the replicas' catch-up times and the producers' `updatedAt`). */
  at: number;
  /** The request object the appends are in. */
  objectKey?: string;
  producer?: Omit<ProducerBatch, 'baseSequence' | 'lastSequence'>;
  appends: AppendChange[];
  states: StateChange[];
}

/**
 * An entry as stored: each append packed into one string of base-36 numbers (an entry at 100
 * partitions of a ~1 MB request stays near 3 KB, 12 partitions under 1 KB).
 */
interface StoredEntry {
  t: string;
  k: string;
  at: number;
  o?: string;
  pr?: [number, number, 0 | 1];
  /**
   * Per append, '.'-separated: partition, baseOffset, recordCount, start - the previous append's
   * end, end - start, at - maxTimestamp, leader epoch, holders (a bit mask), followers that failed
   * (a bit mask), base sequence ('' when none).
   */
  a: string[];
  s?: StateChange[];
}

const mask = (rs: readonly number[]) => rs.reduce((m, r) => m | (1 << r), 0);
const unmask = (m: number) => Array.from({ length: 31 }, (_, r) => r).filter((r) => (m & (1 << r)) !== 0);
const b36 = (n: number) => n.toString(36);

export function packEntry(e: ShardEntry): StoredEntry {
  let previousEnd = 0;
  return {
    t: e.topicId,
    k: e.token,
    at: e.at,
    ...(e.objectKey !== undefined && { o: e.objectKey }),
    ...(e.producer && {
      pr: [e.producer.producerId, e.producer.producerEpoch, e.producer.transactional ? 1 : 0] as [
        number,
        number,
        0 | 1,
      ],
    }),
    a: e.appends.map((c) => {
      const fields = [
        c.partition,
        c.baseOffset,
        c.recordCount,
        c.start - previousEnd,
        c.end - c.start,
        e.at - c.maxTimestamp,
        c.leaderEpoch,
        mask(c.holders),
        mask(c.failedFollowers ?? []),
      ].map(b36);
      previousEnd = c.end;
      if (c.baseSequence !== undefined) fields.push(b36(c.baseSequence));
      return fields.join('.');
    }),
    ...(e.states.length > 0 && { s: e.states }),
  };
}

export function unpackEntry(s: StoredEntry): ShardEntry {
  let previousEnd = 0;
  return {
    topicId: s.t,
    token: s.k,
    at: s.at,
    ...(s.o !== undefined && { objectKey: s.o }),
    ...(s.pr && {
      producer: { producerId: s.pr[0], producerEpoch: s.pr[1], ...(s.pr[2] === 1 && { transactional: true }) },
    }),
    appends: s.a.map((row) => {
      const [partition, baseOffset, recordCount, startDelta, length, age, leaderEpoch, holders, failed, seq] = row
        .split('.')
        .map((f) => Number.parseInt(f, 36)) as number[];
      const start = previousEnd + startDelta!;
      previousEnd = start + length!;
      return {
        partition: partition!,
        baseOffset: baseOffset!,
        recordCount: recordCount!,
        start,
        end: previousEnd,
        maxTimestamp: s.at - age!,
        leaderEpoch: leaderEpoch!,
        holders: unmask(holders!),
        ...(failed ? { failedFollowers: unmask(failed) } : {}),
        ...(seq !== undefined && { baseSequence: seq }),
      };
    }),
    states: s.s ?? [],
  };
}

/** The commit record of an append, as the index holds it. */
export function appendRecord(entry: ShardEntry, c: AppendChange): CommitRecord {
  const producer = entry.producer;
  return {
    topicId: entry.topicId,
    baseOffset: c.baseOffset,
    lastOffset: c.baseOffset + c.recordCount - 1,
    recordCount: c.recordCount,
    maxTimestamp: c.maxTimestamp,
    leaderEpoch: c.leaderEpoch,
    objectKey: entry.objectKey!,
    start: c.start,
    end: c.end,
    stores: c.holders,
    ...(producer &&
      c.baseSequence !== undefined && {
        producer: {
          ...producer,
          baseSequence: c.baseSequence,
          lastSequence: c.baseSequence + c.recordCount - 1,
        },
      }),
  };
}

/** Whether an entry touches a partition. */
export const touches = (e: ShardEntry, partition: number): boolean =>
  e.appends.some((c) => c.partition === partition) || e.states.some((c) => c.partition === partition);

/** Entries of a shard in order, numbered. */
export interface Tail {
  /** The number of the last entry known (0: none yet). */
  last: number;
  entries: { n: number; entry: ShardEntry }[];
  /** The shard's fold mark, where it was read with the entries (`ShardLog.tail`). */
  folded?: number;
}

/**
 * What a writer decides on the tail it knows: an entry to write, an answer without one, or (on a
 * tail that may be old) to read the entries since and decide again before answering.
 */
export type EntryDecision<R> = { write: ShardEntry; answer: (n: number) => R } | { done: R } | { catchUp: true };

export class ShardLog {
  /** `timerSlotMs`: the scheduler's (maintenance option), for the fold timer an entry write arms (fold-watch.ts). */
  constructor(
    private readonly metadata: MetadataStore,
    private readonly timerSlotMs?: number,
  ) {}

  /** The shard's fold mark: every entry up to it is in the states of the partitions it touches. */
  async foldedThrough(topic: string, shard: number): Promise<number> {
    const item = await this.metadata.get<{ through: number }>(clogPk(topic, shard), CLOG_FOLDED_SK);
    return item?.value.through ?? 0;
  }

  /**
   * Entries after `after`, and the fold mark: one Query (paged by the adapter), as the mark's item
   * (`folded`) sorts after every entry (`e#...`) of the shard. The mark costs the read a few bytes
   * and a reader no GetItem of its own: readers know what the index holds as of this read.
   */
  async tail(topic: string, shard: number, after: number): Promise<Tail> {
    const items = await this.metadata.query<StoredEntry | { through: number }>(clogPk(topic, shard), {
      gt: clogEntrySk(after),
    });
    const entries: Tail['entries'] = [];
    let folded = 0;
    for (const i of items) {
      if (i.sk === CLOG_FOLDED_SK) folded = (i.value as { through: number }).through;
      else if (i.sk.startsWith(CLOG_ENTRY_PREFIX))
        entries.push({ n: entryNumber(i), entry: unpackEntry(i.value as StoredEntry) });
    }
    return { last: entries.at(-1)?.n ?? after, entries, folded };
  }

  /**
   * Writes the next entry, deciding on `known` and every entry that turns up after it. `decide`
   * gets the entries after `known.last` the writer did not know (none on the first attempt) and
   * decides again on each lost race: the winner's entry is its new input. The entry a failed
   * condition returns with this writer's token is its own (the write applied, its answer was lost
   * and the SDK sent it again): answered as written.
   *
   * `stale`: `known` was read beside other work (the request's PUT), so entries may have been
   * written since. The first lost race then reads every entry since in one Query rather than
   * learning them one failed write at a time, and `decide` (told the tail may be old) may ask for
   * that read before it answers without writing. The conditional write decides either way.
   */
  async append<R>(
    topic: string,
    shard: number,
    known: Tail,
    token: string,
    decide: (news: ShardEntry[], n: number, stale: boolean) => EntryDecision<R> | Promise<EntryDecision<R>>,
    options: { attempts?: number; stale?: boolean } = {},
  ): Promise<{ result: R; n?: number; retries: number }> {
    const pk = clogPk(topic, shard);
    let n = known.last + 1;
    let news: ShardEntry[] = [];
    let stale = options.stale ?? false;
    const catchUp = async (found: ShardEntry[], after: number) => {
      const since = await this.tail(topic, shard, after);
      news = [...found, ...since.entries.map((e) => e.entry)];
      n = since.last + 1;
      stale = false;
    };
    const attempts = options.attempts ?? 64;
    for (let attempt = 0; attempt < attempts; attempt++) {
      const decision = await decide(news, n, stale);
      if ('done' in decision) return { result: decision.done, retries: attempt };
      if ('catchUp' in decision) {
        if (stale) await catchUp([], n - 1);
        else news = [];
        continue;
      }
      // The timer that folds the shard before the entry expires is in place before the entry.
      const { topicId, at } = decision.write;
      await watchFold(this.metadata, { name: topic, id: topicId }, shard, at, this.timerSlotMs);
      try {
        await this.metadata.put(
          pk,
          clogEntrySk(n),
          packEntry(decision.write),
          { ifAbsent: true },
          {
            expiresAt: decision.write.at + ENTRY_RETENTION_MS,
          },
        );
        return { result: decision.answer(n), n, retries: attempt };
      } catch (e) {
        if (!(e instanceof ConditionFailedError)) throw e;
        const found = e.current as MetaItem<StoredEntry> | undefined;
        // An ifAbsent put that failed found an item: ours (the answer was lost and the write sent
        // again), or the winner's.
        if (!found) throw e;
        const entry = unpackEntry(found.value);
        if (entry.token === token) return { result: decision.answer(n), n, retries: attempt };
        if (stale) await catchUp([entry], n);
        else {
          news = [entry];
          n++;
        }
      }
    }
    throw new KafkaError('KAFKA_STORAGE_ERROR', `Too much contention committing to ${topic} shard ${shard}; retry`);
  }

  /** Moves the shard's fold mark forward to `through` (never back). */
  async markFolded(topic: string, shard: number, through: number): Promise<void> {
    const pk = clogPk(topic, shard);
    for (let item = await this.metadata.get<{ through: number }>(pk, CLOG_FOLDED_SK); ; ) {
      if ((item?.value.through ?? 0) >= through) return;
      try {
        await this.metadata.put(
          pk,
          CLOG_FOLDED_SK,
          { through },
          item ? { ifVersion: item.version } : { ifAbsent: true },
        );
        return;
      } catch (e) {
        if (!(e instanceof ConditionFailedError)) throw e;
        item = e.current as MetaItem<{ through: number }> | undefined;
      }
    }
  }

  /** Removes a deleted topic incarnation's entries (a purge); entries otherwise leave by expiry. */
  async purge(topic: string, shard: number, topicId: string): Promise<void> {
    const pk = clogPk(topic, shard);
    for (let after = CLOG_ENTRY_PREFIX; ; ) {
      const items = await this.metadata.query<StoredEntry>(pk, {
        gt: after,
        beginsWith: CLOG_ENTRY_PREFIX,
        limit: 100,
      });
      await Promise.all(items.filter((i) => i.value.t === topicId).map((i) => this.metadata.delete(pk, i.sk)));
      if (items.length < 100) return;
      after = items.at(-1)!.sk;
    }
  }
}

const entryNumber = (item: { sk: string }) => Number(item.sk.slice(CLOG_ENTRY_PREFIX.length));
