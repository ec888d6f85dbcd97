import { KafkaError } from '../wire/errors.js';
import { UnknownFormatError } from '../storage/formats.js';
import type { ObjectStore } from '../storage/ports.js';
import { checkCurrentLeaderEpoch } from '../partition/epoch-history.js';
import { inLog, isAborted, type AbortedTransaction, type OffsetIndex } from '../partition/offset-index.js';
import { lastStableOffset, type CommitRecord, type PartitionState } from '../partition/partition-state.js';
import {
  CONTROL_FLAG_MASK,
  decodeRecordBatches,
  readBatchHeader,
  setBaseOffset,
  setPartitionLeaderEpoch,
  TRANSACTIONAL_FLAG_MASK,
  type DecodedRecord,
} from '../wire/record-batch.js';
import { mapBounded } from '../topics/partition-scan.js';
import { requirePartition, type TopicMeta, unknownPartition } from '../topics/topics.js';
import { type AbortedRoom, endBefore, fitAnswer, fitInOrder } from './aborted-room.js';
import { joinViews, selectBatches, spans, type SelectedBatch } from './batch-selection.js';

/** read_uncommitted reads up to the high watermark; read_committed up to the last stable offset, without aborted records. */
export type IsolationLevel = 'read_uncommitted' | 'read_committed';

/** A fetch answered with stored batches (Kafka's Fetch response records field). */
export interface BatchFetchResult {
  /** Whole v2 batches with absolute offsets; empty when nothing below the HW is left from the offset. */
  batches: Uint8Array;
  /** Records in those batches (the first may start before the offset asked for). */
  recordCount: number;
  nextOffset: number;
  highWatermark: number;
  logStartOffset: number;
  lastStableOffset: number;
  /**
   * read_committed only: the aborted transactions with records among the batches (Kafka's
   * FetchResponse aborted_transactions, with the marker offset too), for the consumer to filter.
   */
  abortedTransactions?: AbortedTransaction[];
}

/** One partition of a multi-partition fetch. */
export interface PartitionFetch {
  topic: TopicMeta;
  partition: number;
  offset: number;
  /** Kafka's partition_max_bytes. */
  maxBytes: number;
  /** Kafka's current_leader_epoch: a client behind the partition's epoch is answered FENCED_LEADER_EPOCH (-1: not checked). */
  currentLeaderEpoch?: number;
  /** The partition's state when the caller has just read it (a long poll's check): not read again. */
  state?: PartitionState;
}

export type PartitionFetchOutcome =
  | ({ ok: true } & BatchFetchResult & { bytes: number })
  | { ok: false; error: KafkaError };

export type OffsetSpec = 'earliest' | 'latest' | { timestamp: number };

/** What the read path needs of the log: the partition state, the offset index and the replica stores. */
export interface ReaderDeps {
  index: OffsetIndex;
  /** The partition's state (UNKNOWN_TOPIC_OR_PARTITION for a partition the topic does not have). */
  state: (topic: TopicMeta, partition: number) => Promise<PartitionState>;
  /**
   * Optional: the states of several partitions of a topic (all of them the topic's) read together
   * where that is cheaper; those it leaves out are read with `state`.
   */
  states?: (topic: TopicMeta, partitions: number[]) => Promise<Map<number, PartitionState>>;
  /** Replica store `id` (KAFKA_STORAGE_ERROR when it is not configured). */
  store: (id: number) => ObjectStore;
}

/**
 * The read path of the partitioned log: reads by offset (index to byte ranges to batches), Kafka's
 * Fetch over many partitions, list-offsets. PartitionLog delegates its reads here.
 */
export class PartitionReader {
  constructor(private readonly deps: ReaderDeps) {}

  /**
   * Kafka's Fetch, the one read path: each partition's records from its `offset` (the first one at
   * or after it) up to the high watermark, as Kafka's Fetch sends them: the stored batches, whole
   * and not decoded, in one buffer, with absolute base offsets and their leader epochs set, from the
   * batch holding `offset` (the consumer skips the records of it below the offset). Offsets outside
   * [logStartOffset, HW] are OFFSET_OUT_OF_RANGE, as in Kafka; offset = HW answers empty. JSON
   * callers decode the answer (fetched-records.ts); a caller of one partition takes its answer with
   * {@link onlyPartition}. CRCs are not checked here: the consumer checks them, as Kafka's consumer
   * does.
   *
   * Each partition is read within its own `maxBytes` and, across partitions in the order given, the
   * request's `maxBytes` (only the first partition with data may exceed it, by one batch, so a
   * consumer always progresses, as in Kafka); never past `limitBytes` in all: a hard bound (what a
   * platform can answer, e.g. Lambda's 6 MB after base64), a first batch over it is
   * MESSAGE_TOO_LARGE rather than an answer the platform would drop. The index lookups run in
   * parallel, and the byte ranges are read per object: an object holding several of the partitions
   * (one produce request) is read once. A partition's error (unknown partition, offset out of range,
   * a fenced leader epoch) is its answer alone. The partitions must be distinct (the batches are
   * patched in place). read_committed reads each partition up to its last stable offset and answers
   * the aborted transactions with records among its batches (Kafka's FetchResponse
   * aborted_transactions, with the marker offset too); with `abortedCost` (what one listed
   * transaction takes, in batch bytes) the lists count against `limitBytes` too, and the last
   * partitions give back whole batches until the answer fits (aborted-room.ts); with `abortedRoom`
   * instead, each partition's list has a room of its own apart from the batches (a header), and the
   * partition answers fewer batches when its list would not fit it.
   */
  async readBatchesMany(
    fetches: PartitionFetch[],
    maxBytes: number,
    limitBytes = Infinity,
    isolation: IsolationLevel = 'read_uncommitted',
    abortedCost?: (a: AbortedTransaction) => number,
    abortedRoom?: AbortedRoom,
  ): Promise<PartitionFetchOutcome[]> {
    const ahead = await this.statesAhead(fetches);
    const planned = await Promise.all(
      fetches.map(async (f, i) => {
        try {
          requirePartition(f.topic, f.partition);
          return {
            ok: true as const,
            ...(await this.entriesAt(
              f.topic,
              f.partition,
              f.offset,
              Math.max(1, Math.min(f.maxBytes, maxBytes)),
              isolation,
              f.currentLeaderEpoch,
              f.state ?? ahead[i],
            )),
          };
        } catch (e) {
          return { ok: false as const, error: asKafkaError(e) };
        }
      }),
    );
    // The answer fills max_bytes partition by partition in the order asked (below): entries that
    // start past what is left of it are not read. They were, only to be dropped: twelve
    // partitions asked for 4 MiB each read 48 MiB of objects for an 8 MiB answer. The entry that
    // crosses the end is read (its first batches may fit), so at most one entry more is read than
    // the answer holds. An entry counts whole, batches below the fetch offset included, so an
    // answer may come out a little shorter than before, never longer.
    let room = Math.min(maxBytes, limitBytes);
    for (const p of planned) {
      if (!p.ok) continue;
      let keep = 0;
      for (const e of p.entries) {
        if (room <= 0) break;
        room -= e.end - e.start;
        keep++;
      }
      if (keep < p.entries.length) p.entries = p.entries.slice(0, keep);
    }
    const loaded = await this.loadShared(
      planned.map((p) => (p.ok ? { state: p.state, entries: p.entries } : undefined)),
    );
    let used = 0;
    const chosen = planned.map((p, i): ChosenAnswer | { ok: false; error: KafkaError } => {
      if (!p.ok) return p;
      const f = fetches[i]!;
      const first = used === 0;
      const budget = Math.max(0, Math.min(f.maxBytes, maxBytes - used));
      if (!first && budget === 0) return { ok: true, state: p.state, batches: [], nextOffset: f.offset };
      try {
        const selected = selectBatches(loaded[i]!, f.offset, p.upper, budget, limitBytes - used, first);
        used += selected.bytes;
        return { ok: true, state: p.state, batches: selected.batches, nextOffset: selected.nextOffset };
      } catch (e) {
        return { ok: false, error: asKafkaError(e) };
      }
    });
    if (isolation === 'read_committed') {
      // As Kafka's read_committed fetch: the aborted transactions with records among each
      // partition's batches, for the consumer to leave out (the partitions' lookups in parallel).
      await Promise.all(
        chosen.map(async (c, i) => {
          if (!c.ok) return;
          const f = fetches[i]!;
          try {
            c.aborted = [];
            if (c.nextOffset <= f.offset) return;
            const { aborted, completeBelow } = await this.deps.index.abortedTransactionsRead(
              f.topic.name,
              f.partition,
              c.state,
              f.offset,
              c.nextOffset,
            );
            // Never past where the list read is whole: the next fetch goes on from there.
            const whole = endBefore({ batches: c.batches, nextOffset: c.nextOffset, aborted }, f.offset, completeBelow);
            c.batches = whole.batches;
            c.nextOffset = whole.nextOffset;
            c.aborted = whole.aborted;
          } catch (e) {
            chosen[i] = { ok: false, error: asKafkaError(e) };
          }
        }),
      );
      if (abortedRoom) {
        // Each list has a room of its own: the batches cost it nothing, only the list they make.
        chosen.forEach((c, i) => {
          if (!c.ok) return;
          const fitted = fitAnswer(
            { batches: c.batches, nextOffset: c.nextOffset, aborted: c.aborted ?? [] },
            fetches[i]!.offset,
            abortedRoom.bytes,
            { batch: () => 0, aborted: abortedRoom.cost },
            true,
          );
          c.batches = fitted.batches;
          c.nextOffset = fitted.nextOffset;
          c.aborted = fitted.aborted;
        });
      } else if (abortedCost) {
        // The lists count against the same room as the batches (aborted-room.ts).
        const fitted = fitInOrder(
          chosen.map((c, i) =>
            c.ok
              ? {
                  fetchOffset: fetches[i]!.offset,
                  answer: { batches: c.batches, nextOffset: c.nextOffset, aborted: c.aborted ?? [] },
                }
              : undefined,
          ),
          limitBytes,
          { batch: (b) => b.size, aborted: abortedCost },
        );
        chosen.forEach((c, i) => {
          const f = fitted[i];
          if (!c.ok || !f) return;
          c.batches = f.batches;
          c.nextOffset = f.nextOffset;
          c.aborted = f.aborted;
        });
      }
    }
    return chosen.map((c): PartitionFetchOutcome => {
      if (!c.ok) return c;
      for (const b of c.batches) {
        setBaseOffset(b.data, b.at, b.base);
        setPartitionLeaderEpoch(b.data, b.at, b.entry.leaderEpoch);
      }
      const { state } = c;
      return {
        ok: true,
        highWatermark: state.highWatermark,
        logStartOffset: state.logStartOffset,
        lastStableOffset: lastStableOffset(state),
        batches: joinViews(spans(c.batches)),
        recordCount: c.batches.reduce((n, b) => n + readBatchHeader(b.data, b.at).recordCount, 0),
        nextOffset: c.nextOffset,
        bytes: c.batches.reduce((n, b) => n + b.size, 0),
        ...(c.aborted && { abortedTransactions: c.aborted }),
      };
    });
  }

  /**
   * The states of some partitions of a topic (all of them the topic's), read together where the log
   * can (`ReaderDeps.states`: one Query of each shard's log on a topic with a commit log, not one
   * per partition), the rest one by one. Rejects if a partition's state cannot be read.
   */
  async statesOf(topic: TopicMeta, partitions: number[]): Promise<Map<number, PartitionState>> {
    const distinct = [...new Set(partitions)];
    const together =
      this.deps.states && distinct.length > 1
        ? await this.deps.states(topic, distinct)
        : new Map<number, PartitionState>();
    const out = new Map<number, PartitionState>();
    await Promise.all(
      distinct.map(async (p) => {
        out.set(p, together.get(p) ?? (await this.deps.state(topic, p)));
      }),
    );
    return out;
  }

  /**
   * The states of the fetches that have none, read per topic together (`ReaderDeps.states`) where
   * a topic has several; undefined where a partition is read alone (then its errors are its own).
   */
  private async statesAhead(fetches: PartitionFetch[]): Promise<(PartitionState | undefined)[]> {
    const out: (PartitionState | undefined)[] = fetches.map(() => undefined);
    const states = this.deps.states;
    if (!states) return out;
    const byTopic = new Map<TopicMeta, number[]>();
    fetches.forEach((f, i) => {
      if (f.state || unknownPartition(f.topic, f.partition)) return;
      byTopic.set(f.topic, [...(byTopic.get(f.topic) ?? []), i]);
    });
    await Promise.all(
      [...byTopic].map(async ([topic, at]) => {
        if (at.length < 2) return;
        const read = await states(
          topic,
          at.map((i) => fetches[i]!.partition),
        ).catch(() => new Map<number, PartitionState>());
        for (const i of at) out[i] = read.get(fetches[i]!.partition);
      }),
    );
    return out;
  }

  /** The partition's state and the index entries a fetch from `offset` reads; OFFSET_OUT_OF_RANGE outside [logStartOffset, HW]. */
  private async entriesAt(
    topic: TopicMeta,
    partition: number,
    offset: number,
    maxBytes: number,
    isolation: IsolationLevel = 'read_uncommitted',
    currentLeaderEpoch = -1,
    known?: PartitionState,
  ) {
    const state = known ?? (await this.deps.state(topic, partition));
    // The client's leader epoch first, as Kafka: a stale client refreshes its metadata before its offsets mean anything.
    checkCurrentLeaderEpoch(currentLeaderEpoch, state.leaderEpoch, `${topic.name}-${partition}`);
    const hw = state.highWatermark;
    // read_committed stops at the LSO; an offset between the LSO and the HW is valid and answers empty, as in Kafka.
    const upper = isolation === 'read_committed' ? lastStableOffset(state) : hw;
    if (!Number.isSafeInteger(offset) || offset < state.logStartOffset || offset > hw) {
      throw new KafkaError(
        'OFFSET_OUT_OF_RANGE',
        `Offset ${offset} is out of range for ${topic.name}-${partition}: the log holds [${state.logStartOffset}, ${hw})`,
      );
    }
    const entries =
      offset >= upper ? [] : await this.deps.index.entriesFrom(topic.name, partition, state, offset, upper, maxBytes);
    return { state, entries, upper };
  }

  /**
   * The bytes of several partitions' entries, one GET per object and run of ranges close together
   * (a produce request lays its partitions end to end in one object), each entry a view into it.
   */
  private async loadShared(
    plans: ({ state: PartitionState; entries: CommitRecord[] } | undefined)[],
  ): Promise<{ entry: CommitRecord; data: Uint8Array }[][]> {
    const byKey = new Map<string, SharedRun[]>();
    plans.forEach((plan, i) => {
      if (!plan) return;
      const { state, entries } = plan;
      const sources = replicasHolding(state, entries);
      entries.forEach((entry, k) => {
        let runs = byKey.get(entry.objectKey);
        if (!runs) {
          runs = [];
          byKey.set(entry.objectKey, runs);
        }
        runs.push({ start: entry.start, end: entry.end, sources, users: [{ plan: i, k, entry }] });
      });
    });
    const out = plans.map((p) => new Array<{ entry: CommitRecord; data: Uint8Array }>(p?.entries.length ?? 0));
    const reads: { key: string; run: SharedRun }[] = [];
    for (const [key, ranges] of byKey) {
      ranges.sort((a, b) => a.start - b.start);
      const merged: typeof ranges = [];
      for (const r of ranges) {
        const last = merged.at(-1);
        // Close ranges are read as one: a GET costs more than the bytes between them.
        if (last && r.start <= last.end + SHARED_READ_GAP) {
          last.end = Math.max(last.end, r.end);
          last.users.push(...r.users);
        } else merged.push({ ...r, users: [...r.users] });
      }
      for (const run of merged) reads.push({ key, run });
    }
    await mapBounded(
      reads,
      async ({ key, run }) => {
        const bytes = await this.getFromAny(run.sources, key, { start: run.start, end: run.end });
        // Entries of distinct partitions (or one partition's successive entries) never share
        // bytes, so each view is patched by one partition only.
        for (const u of run.users)
          out[u.plan]![u.k] = {
            entry: u.entry,
            data: bytes.subarray(u.entry.start - run.start, u.entry.end - run.start),
          };
      },
      READ_GETS,
    );
    return out;
  }

  /**
   * Kafka's ListOffsets: earliest = log start offset, latest = high watermark, by timestamp = the
   * first offset whose timestamp is >= t (offset -1 when there is none, as Kafka answers).
   */
  async listOffset(
    topic: TopicMeta,
    partition: number,
    spec: OffsetSpec,
    isolation: IsolationLevel = 'read_uncommitted',
  ): Promise<{ offset: number; timestamp: number }> {
    const state = await this.deps.state(topic, partition);
    if (spec === 'earliest') return { offset: state.logStartOffset, timestamp: -1 };
    if (spec === 'latest')
      return { offset: isolation === 'read_committed' ? lastStableOffset(state) : state.highWatermark, timestamp: -1 };
    const t = spec.timestamp;
    for await (const entry of this.deps.index.scan(
      topic.name,
      partition,
      topic.id,
      state.logStartOffset,
      state.highWatermark,
      (e) => inLog(state, e),
      {},
      state.pending,
    )) {
      if (entry.maxTimestamp < t) continue;
      const [loaded] = await this.load(state, [entry]);
      for (const r of decodeEntry(entry, loaded!.data)) {
        if (r.timestamp >= t && r.offset >= state.logStartOffset && r.offset < state.highWatermark)
          return { offset: r.offset, timestamp: r.timestamp };
      }
    }
    return { offset: -1, timestamp: -1 };
  }

  /**
   * Reads the byte ranges of index entries, one GET per run of adjacent ranges in one object, from
   * the leader's store, or from an in-sync follower that holds them if the leader's store fails.
   */
  private async load(
    state: PartitionState,
    entries: CommitRecord[],
  ): Promise<{ entry: CommitRecord; data: Uint8Array }[]> {
    const runs: { key: string; start: number; end: number; entries: CommitRecord[] }[] = [];
    for (const e of entries) {
      const run = runs.at(-1);
      if (run && run.key === e.objectKey && run.end === e.start) {
        run.end = e.end;
        run.entries.push(e);
      } else runs.push({ key: e.objectKey, start: e.start, end: e.end, entries: [e] });
    }
    const sources = replicasHolding(state, entries);
    const loaded = await mapBounded(
      runs,
      (r) => this.getFromAny(sources, r.key, { start: r.start, end: r.end }),
      READ_GETS,
    );
    return runs.flatMap((r, i) =>
      r.entries.map((entry) => ({ entry, data: loaded[i]!.subarray(entry.start - r.start, entry.end - r.start) })),
    );
  }

  private async getFromAny(sources: number[], key: string, range: { start: number; end: number }): Promise<Uint8Array> {
    let lastError: unknown;
    for (const r of sources) {
      try {
        return await this.deps.store(r).get(key, range);
      } catch (e) {
        // Every replica holds the same format: a newer one than this code reads is the answer.
        if (e instanceof UnknownFormatError) throw e;
        lastError = e;
      }
    }
    throw new KafkaError('KAFKA_STORAGE_ERROR', 'No replica store could serve the read; retry later', {
      cause: lastError,
    });
  }
}

/**
 * The answer of a fetch of one partition, its error thrown: for callers whose request names one
 * partition and answers its error as the request's.
 */
export function onlyPartition(outcomes: PartitionFetchOutcome[]): BatchFetchResult & { bytes: number } {
  const [outcome] = outcomes;
  if (!outcome || outcomes.length > 1) throw new Error('onlyPartition: expected the answer of one partition');
  if (!outcome.ok) throw outcome.error;
  const { ok: _, ...result } = outcome;
  return result;
}

/** A byte range of one object that one GET reads, and the entries of the partitions it serves. */
interface SharedRun {
  start: number;
  end: number;
  sources: number[];
  users: { plan: number; k: number; entry: CommitRecord }[];
}

/** A partition's answer of a multi-partition fetch, before its batches are patched and joined. */
interface ChosenAnswer {
  ok: true;
  state: PartitionState;
  batches: SelectedBatch[];
  nextOffset: number;
  aborted?: AbortedTransaction[];
}

/**
 * The replicas a read of `entries` may be served from, in the order tried: the leader, then the
 * in-sync followers whose log end is past the last of them.
 */
function replicasHolding(state: PartitionState, entries: CommitRecord[]): number[] {
  const lastOffset = entries.at(-1)?.lastOffset ?? 0;
  return [
    state.leader,
    ...state.isr.filter((r) => r !== state.leader && (state.replicaLeo[String(r)] ?? 0) > lastOffset),
  ];
}

/** Reads of one object closer than this are merged into one GET. */
const SHARED_READ_GAP = 256 * 1024;

/**
 * GETs one read has in flight at most. A large fetch reads thousands of ranges: sent at once they
 * would only queue for the client's sockets (the AWS SDK opens 50 by default), each one's request
 * timeout (storage/sdk-timeouts.ts) running while it waits, and a local store would take them all.
 */
export const READ_GETS = 32;

/**
 * A committed run's records with absolute offsets (batches carry offsets relative to the run).
 * Control batches (transaction markers) are never records to a reader; the batches of `aborted`
 * transactions are left out (read_committed).
 */
function decodeEntry(entry: CommitRecord, data: Uint8Array, aborted: AbortedTransaction[] = []): DecodedRecord[] {
  const out: DecodedRecord[] = [];
  for (const batch of decodeRecordBatches(data)) {
    const { attributes, producerId } = batch.header;
    if (attributes & CONTROL_FLAG_MASK) continue;
    const base = entry.baseOffset + batch.header.baseOffset;
    if (aborted.length > 0 && attributes & TRANSACTIONAL_FLAG_MASK && isAborted(aborted, producerId, base)) continue;
    for (const r of batch.records) out.push({ ...r, offset: entry.baseOffset + r.offset });
  }
  return out;
}

export function asKafkaError(e: unknown): KafkaError {
  if (e instanceof KafkaError) return e;
  return new KafkaError('KAFKA_STORAGE_ERROR', 'The storage layer failed; the request may be retried', { cause: e });
}
