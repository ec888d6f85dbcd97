import { itemRange, type StoredIndexValue } from '../partition/index-item.js';
import { Turns } from './turns.js';
import type { Clock } from '../clock.js';
import type { Acks } from '../wire/protocol.js';
import { KafkaError } from '../wire/errors.js';
import { checkSequence, SequenceGap, type ProducerSequence } from '../partition/producer-state.js';
import { setTimeout as sleep } from 'node:timers/promises';
import { producerEntry } from '../partition/producer-items.js';
import type { Leadership, SyncReport } from '../partition/leadership.js';
import { FeatureLevels } from '../storage/feature-level.js';
import { writeVersion } from '../storage/formats.js';
import { ConditionFailedError, type MetadataStore, type ObjectStore } from '../storage/ports.js';
import { inLog, OffsetIndex } from '../partition/offset-index.js';
import {
  commitIdentity,
  commitToPartition,
  type CommitPlan,
  type CommitResult,
  type StateRead,
} from '../partition/partition-commit.js';
import {
  initialPartitionState,
  type CommitRecord,
  type PartitionState,
  type ProducerBatch,
} from '../partition/partition-state.js';
import { encodeMarkerBatch } from '../wire/control-batch.js';
import {
  buildRequestObject,
  joinRequestObjects,
  type PartitionAppend,
  type PartitionRun,
  type RequestObject,
} from './request-object.js';
import { AppendGroups } from './append-groups.js';
import { committedRun, type CommittedRun } from './committed-run.js';
import { requirePartition, type Topic, type TopicMeta } from '../topics/topics.js';
import {
  ABORT_PREFIX,
  dataPrefix,
  INDEX_PREFIX,
  PRODUCER_ENTRY_PREFIX,
  newRequestObjectKey,
  partitionPk,
  PRODUCER_META_SK,
  producerPk,
  segmentPrefix,
  STATE_SK,
} from '../storage/key-layout.js';
import { noLogger, noMetrics, type Logger, type Metrics } from '../metrics.js';
import { asKafkaError, PartitionReader } from './partition-reader.js';
import { commitToShard, prefetchShard, RequestCommit } from '../partition/shard-commit.js';
import { readPartitionState, readShardPartitions, updatePartitionState } from '../partition/shard-state.js';
import { shardOf, shardsOf, ShardLog } from '../partition/shard-log.js';

export type { PartitionAppend } from './request-object.js';
export type { CommittedRun } from './committed-run.js';

type AppendListener = (topic: string, partition: number, committed?: CommittedRun) => void;
export type { FetchResult } from './fetched-records.js';
export type {
  BatchFetchResult,
  IsolationLevel,
  OffsetSpec,
  PartitionFetch,
  PartitionFetchOutcome,
} from './partition-reader.js';
export { asKafkaError, onlyPartition } from './partition-reader.js';
// What a read_committed reader reads up to, and the batches it leaves out (the share groups' reads too).
export { lastStableOffset } from '../partition/partition-state.js';
export { skipsBatch } from './fetched-records.js';

/** Bytes of request objects work outliving its answer may hold, unless MAX_BACKGROUND_BYTES says otherwise. */
export const DEFAULT_MAX_BACKGROUND_BYTES = 64 * 1024 * 1024;

export interface AppendOptions {
  acks?: Acks;
  /**
   * Set by idempotent producers: one base sequence per partition of the request. A transactional
   * producer's batches open a transaction in each partition (the caller has checked with the
   * transaction coordinator that the partitions are in its ongoing transaction).
   */
  producer?: { producerId: number; producerEpoch: number; baseSequences: Map<number, number>; transactional?: boolean };
  /**
   * Memory the caller no longer needs once the records are encoded (a JSON produce's body): the
   * request object is laid out in it (request-object.ts), not in new memory.
   */
  spare?: Uint8Array;
}

/** What a transaction marker says (Kafka's WriteTxnMarkers entry for one partition). */
export interface MarkerRequest {
  type: 'COMMIT' | 'ABORT';
  producerId: number;
  producerEpoch: number;
  coordinatorEpoch: number;
}

/** Kafka's LogAppendInfo, reduced to what a producer is told. */
export interface AppendInfo {
  partition: number;
  /** -1 with acks=0: the answer comes before the offsets are known. */
  baseOffset: number;
  lastOffset: number;
  /** The broker's append time when the topic uses LogAppendTime, else -1 (as Kafka answers). */
  logAppendTime: number;
  logStartOffset: number;
  /** True when this was a retry of an idempotent batch already appended: nothing was written. */
  duplicate?: boolean;
  /**
   * Where the partition's appends go as of this one (KIP-951's current leader, with the ISR, which
   * acks=all writes to): a leader elected inside the request shows here, not as an error. Unset
   * with acks=0 (answered before the append).
   */
  placement?: { leader: number; leaderEpoch: number; isr: number[] };
}

export type AppendOutcome = { ok: true; info: AppendInfo } | { ok: false; error: KafkaError };

export interface LogDeps {
  metadata: MetadataStore;
  /** The replica stores; a partition's replicas are indexes into this list. */
  stores: ObjectStore[];
  clock: Clock;
  /** Replication as the log needs it (a ReplicaManager), handed in by the composition root. */
  leadership: Leadership;
  /** Where appends report records, bytes, commit retries and ISR shrinks (default: nowhere). */
  metrics?: Metrics;
  /** Where the log says what happened (ISR shrinks, failed background work; default: nowhere). */
  logger?: Logger;
  /**
   * Bytes of request objects held by work that outlives its answer (acks=0 appends, acks=1
   * follower copies). Past it an acks=0 answer waits for room and an acks=1 answer waits for its
   * copies, as a Kafka broker stops reading a connection whose requests pile up: a slow follower
   * store or a fast acks=0 producer cannot grow the process without bound. Default
   * {@link DEFAULT_MAX_BACKGROUND_BYTES}.
   */
  maxBackgroundBytes?: number;
  /**
   * The cluster's feature level, which says the codecs a batch may be stored in (the composition
   * root's cached FeatureLevels.current; default: a cache of this log's own).
   */
  featureLevel?: (now: number) => Promise<number>;
  /**
   * The scheduler's durable timer slot width (maintenance option timerSlotMs): a commit-log entry
   * arms the timer that folds its shard (partition/fold-watch.ts). Default: the timers' default.
   */
  timerSlotMs?: number;
}

/** A request's object PUT to a store, begun once and shared by its runs; `settled` waits for every PUT begun. */
type PutOnce = ((store: number) => Promise<boolean>) & { settled(): Promise<void> };

/** Leadership can move while an append is in flight; it is retried this often within one request. */
const LEADERSHIP_RETRIES = 3;
/**
 * The pauses before an idempotent batch refused for a sequence gap (SequenceGap) is decided again
 * on a fresh read of the partition state. On AWS each produce request is its own Lambda's, so a
 * producer's up to five requests in flight (max.in.flight.requests.per.connection) race, and a
 * later batch often reaches its commit while the one before it is still in its object PUT; refused
 * at once, it costs the client a resend with another PUT, invocation and round of latency. About
 * 300 ms in all covers a PUT's p99 (150 ms on S3 Standard) twice over; a gap still open after it
 * is a batch that is lost, not late, and is refused as before. Taken outside the partition's
 * commit queue, so a predecessor of this process queued behind the waiter commits meanwhile.
 * Even steps (20 ms after a first 10): the gap fills whenever the request before commits, and a
 * waiter learns of it within a step. Doubling steps (10 ... 160) left a waiter up to its last step
 * behind the commit it waited for, and a chain of waiters (at P=1 every request in flight waits
 * for the one before) added those up: bench:aws at 1,000 records/s, s3-standard, P=1, RF 3,
 * alternating on a quiet machine: 1.3 waits asking 57-63 ms a request -> 0.4-0.7 asking 7-12 ms,
 * server p99 464-489 -> 231-298 ms, 4 requests refused out of order after 310 ms -> none. Each
 * step is one Query (a read unit costs about 9 ms of a 1 GB function's billed time).
 */
export const SEQUENCE_GAP_WAITS_MS = [10, ...Array<number>(15).fill(20)];

/**
 * Bounds of a group commit. A group waits for its partition's previous group to finish, object
 * write included (an S3 PUT takes tens of milliseconds), so a request of 64 KiB or more, whose own
 * object write and commit are already well shared by its records, commits at once, its object
 * written alongside the others' as without groups. Small requests gather behind a slow one.
 */
const GROUP_BOUNDS = { maxBytes: 64 * 1024, maxMembers: 256 };

/** A single-partition append without a producer, waiting to commit with others of its partition. */
interface GroupMember {
  topic: Topic;
  request: RequestObject;
  acks: 1 | 'all';
  now: number;
}

/**
 * The partitioned log: appends (the commit protocol of docs/architecture.md, with Kafka's acks over replica
 * stores); reads by offset and list-offsets are a PartitionReader's (partition-reader.ts), `reader`. One
 * produce request becomes one object (written to each store that needs it) holding every touched
 * partition's batches, or, for a single-partition append without a producer, a share of one
 * group's object (append-groups.ts).
 */
/** What a purge needs of a deleted topic. */
export type PurgedTopic = Pick<TopicMeta, 'id' | 'name' | 'partitionCount' | 'shardGroups'>;

/** How far a purge went: done, or the partition to resume at (the partition count: the objects are left). */
export interface PurgeProgress {
  done: boolean;
  nextPartition: number;
}

export class PartitionLog {
  readonly index: OffsetIndex;
  readonly replicas: Leadership;
  /** Per-partition tail of in-process commits, so this process's writers queue instead of racing. */
  private readonly commitQueues = new Turns();
  /** The partition state this process last wrote, per partition. */
  private readonly lastWritten = new Map<string, StateRead>();
  /**
   * The newest commit per partition whose index entry this process wrote, by `commitIdentity`
   * (epoch, object, range, offset): a base offset alone is reused after an election truncates the
   * log, and a note of the old epoch must not stand for the new commit there.
   */
  private readonly indexed = new Map<string, string>();
  private readonly listeners = new Set<AppendListener>();
  private readonly startListeners = new Set<(topic: string) => void>();
  /** Work that outlives the request (acks=0 appends, acks=1 follower copies). */
  private readonly background = new Set<Promise<unknown>>();
  /** Bytes of request objects that work holds (each task counts the whole object it writes). */
  private backgroundBytes = 0;
  private readonly featureLevel: (now: number) => Promise<number>;
  private readonly maxBackgroundBytes: number;

  private readonly metrics: Metrics;
  private readonly logger: Logger;
  /** The read path (reads by offset, Fetch over many partitions, list-offsets): callers read through it. */
  readonly reader: PartitionReader;
  private readonly groups = new AppendGroups<GroupMember, AppendOutcome>(
    GROUP_BOUNDS,
    (m) => m.request.body.byteLength,
    (members) => this.commitGroup(members),
  );

  constructor(private readonly deps: LogDeps) {
    this.metrics = deps.metrics ?? noMetrics;
    this.logger = deps.logger ?? noLogger;
    this.maxBackgroundBytes = deps.maxBackgroundBytes ?? DEFAULT_MAX_BACKGROUND_BYTES;
    this.featureLevel = deps.featureLevel ?? new FeatureLevels(deps.metadata).current;
    this.index = new OffsetIndex(deps.metadata);
    this.replicas = deps.leadership;
    this.reader = new PartitionReader({
      index: this.index,
      state: (topic, partition) => this.state(topic, partition),
      states: (topic, partitions) => this.shardStates(topic, partitions),
      store: (id) => this.store(id),
    });
  }

  /**
   * States of some partitions of a topic with a commit log, one read of each shard's log for all
   * of its partitions (a fetch of twelve partitions of one shard: one Query of the log, not twelve).
   * Empty for a topic without one: its partitions are read one by one.
   */
  private async shardStates(topic: TopicMeta, partitions: number[]): Promise<Map<number, PartitionState>> {
    const states = new Map<number, PartitionState>();
    if (!topic.clog) return states;
    const byShard = new Map<number, number[]>();
    for (const p of partitions) byShard.set(shardOf(topic, p), [...(byShard.get(shardOf(topic, p)) ?? []), p]);
    await Promise.all(
      [...byShard].map(async ([shard, ps]) => {
        const { reads } = await readShardPartitions(this.deps.metadata, topic, shard, ps, this.deps.stores.length, () =>
          this.deps.clock.now(),
        );
        for (const [p, r] of reads) states.set(p, r.state);
      }),
    );
    return states;
  }

  /**
   * Called after every successful append (the purgatory's checkAndComplete hook), with what it
   * committed; without it when only the high watermark moved (follower copies).
   */
  onAppend(listener: AppendListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /**
   * Called as an append of the topic begins, before its storage calls: work that only needs the
   * topic (the push subscriptions' read) runs beside the append's own calls, not after its commit.
   */
  onAppendStart(listener: (topic: string) => void): () => void {
    this.startListeners.add(listener);
    return () => this.startListeners.delete(listener);
  }

  /** Resolves once the work started after earlier answers (acks=0 appends, follower copies) is done. */
  async idle(): Promise<void> {
    while (this.background.size > 0) await Promise.allSettled([...this.background]);
  }

  async state(topic: TopicMeta, partition: number): Promise<PartitionState> {
    requirePartition(topic, partition);
    return (await this.readState(topic, partition)).state;
  }

  /**
   * Appends each partition's records, answering per partition (Kafka's produce answers per
   * partition; one partition failing does not fail the others).
   */
  async append(
    topic: Topic,
    appends: PartitionAppend[],
    options: AppendOptions = {},
  ): Promise<Map<number, AppendOutcome>> {
    const acks = options.acks ?? 'all';
    for (const l of this.startListeners) l(topic.name);
    const now = this.deps.clock.now();
    const request = buildRequestObject(
      topic,
      appends,
      now,
      await this.featureLevel(now),
      options.producer?.transactional ? options.producer : undefined,
      options.spare,
    );
    const outcomes = new Map<number, AppendOutcome>(
      [...request.rejected].map(([p, error]) => [p, { ok: false, error }]),
    );
    if (request.runs.length === 0) return outcomes;

    if (acks === 0) {
      // Answer first, append after (acks=0 promises nothing, as Kafka's), unless the work already
      // held is at its bound: then the answer waits for room. The Lambda entries finish this work
      // before their handler returns (settleBackgroundWork in src/compose.ts).
      await this.backgroundRoom();
      this.track(this.appendRuns(topic, request, 1, options.producer, now), request.body.byteLength);
      for (const run of request.runs) {
        outcomes.set(run.partition, {
          ok: true,
          info: { partition: run.partition, baseOffset: -1, lastOffset: -1, logAppendTime: -1, logStartOffset: -1 },
        });
      }
      return outcomes;
    }
    for (const [p, o] of await this.appendRuns(topic, request, acks, options.producer, now)) outcomes.set(p, o);
    return outcomes;
  }

  private async appendRuns(
    topic: Topic,
    request: RequestObject,
    acks: 1 | 'all',
    producer: AppendOptions['producer'],
    now: number,
  ): Promise<Map<number, AppendOutcome>> {
    // Group commit: only single-partition appends without a producer for now. The state records
    // one producer batch per commit, and a multi-partition request is already one object.
    if (!producer && request.runs.length === 1) {
      const { partition } = request.runs[0]!;
      // The group commits under its first member's topic: members must share its configs (the
      // version changes with them), or one would be answered, and stamped, by another's.
      const key = `${partitionPk(topic.name, partition)}|${topic.id}|${topic.version}|${acks}`;
      return new Map([[partition, await this.groups.join(key, { topic, request, acks, now })]]);
    }
    const putOnce = this.putOncePerStore(request);
    // The fencing check reads the producer's epoch while the runs read their partitions' states and
    // write the object (a round trip off the critical path); no run goes past its state read
    // before the check passed.
    const fenced = producer && !producer.transactional ? this.fencedBy(producer) : undefined;
    const gate = fenced?.then((error) => {
      if (error) throw error;
    });
    gate?.catch(() => {}); // answered below, from `fenced`
    const outcomes = new Map<number, AppendOutcome>();
    // On a topic with a commit log the runs commit together: one entry per shard of the request.
    const shared = this.requestCommit(
      topic,
      request.key,
      request.runs.map((r) => r.partition),
    );
    await Promise.all(
      request.runs.map(async (run) => {
        try {
          const batch = producer && this.producerBatch(producer, run);
          outcomes.set(
            run.partition,
            await this.appendRun(
              topic,
              request,
              run,
              acks,
              { ...(batch ? { batch } : {}), gate, ...(shared && { shared }) },
              putOnce,
              now,
            ),
          );
        } catch (e) {
          outcomes.set(run.partition, { ok: false, error: asKafkaError(e) });
        }
      }),
    );
    // A refused request may have left its object's PUTs running (begun beside the reads): they end
    // before the answer, as a Lambda is frozen once it has answered.
    await putOnce.settled();
    // An unknown producer id (or a failed read) fails the request; a fenced epoch answers every partition.
    const error = await fenced;
    if (error) return new Map(request.runs.map((r) => [r.partition, { ok: false, error }]));
    return outcomes;
  }

  /**
   * INVALID_PRODUCER_EPOCH when a newer epoch of the producer exists. A strongly consistent read on
   * every request (one read unit, beside the PUT and the state reads, off the critical path), not a
   * cached or eventually consistent one: Kafka's leader checks the epoch against its own partition's
   * producer state only, which the commit here does too (producer-state.ts `checkSequence`), but
   * a partition the newer epoch has not written to yet would then take an older epoch's batch, and
   * here an older epoch's request can still be running in another Lambda after the epoch moved on
   * (the client's view of "in flight" ends with its request timeout, a Lambda's does not): this
   * read is what fences it on every partition. A cached or eventually consistent epoch could be
   * the one before the bump. The conditional write that follows cannot check the producer's item
   * instead without a transaction, which bills twice the write units of every item in it.
   */
  private async fencedBy(producer: NonNullable<AppendOptions['producer']>): Promise<KafkaError | undefined> {
    const current = await this.producerEpochOf(producer.producerId);
    if (producer.producerEpoch >= current) return undefined;
    return new KafkaError(
      'INVALID_PRODUCER_EPOCH',
      `Producer ${producer.producerId} epoch ${producer.producerEpoch} is fenced by epoch ${current}`,
    );
  }

  private async appendRun(
    topic: Topic,
    request: RequestObject,
    run: PartitionRun,
    acks: 1 | 'all',
    kind: { batch?: ProducerBatch; marker?: MarkerRequest; gate?: Promise<void> | undefined; shared?: RequestCommit },
    putOnce: PutOnce,
    now: number,
  ): Promise<AppendOutcome> {
    const shared = kind.shared ?? this.requestCommit(topic, request.key, [run.partition]);
    try {
      return await this.appendRunOnce(topic, request, run, acks, kind, putOnce, now, shared);
    } finally {
      shared?.done(run.partition);
    }
  }

  private async appendRunOnce(
    topic: Topic,
    request: RequestObject,
    run: PartitionRun,
    acks: 1 | 'all',
    kind: { batch?: ProducerBatch; marker?: MarkerRequest; gate?: Promise<void> | undefined },
    putOnce: PutOnce,
    now: number,
    shared: RequestCommit | undefined,
  ): Promise<AppendOutcome> {
    const { batch, marker, gate } = kind;
    const p = run.partition;
    const pk = partitionPk(topic.name, p);
    const info = (baseOffset: number, lastOffset: number, state: PartitionState, duplicate = false): AppendOutcome => ({
      ok: true,
      info: {
        partition: p,
        baseOffset,
        lastOffset,
        logAppendTime: topic.config.logAppendTime ? now : -1,
        logStartOffset: state.logStartOffset,
        ...(duplicate ? { duplicate } : {}),
        placement: { leader: state.leader, leaderEpoch: state.leaderEpoch, isr: state.isr },
      },
    });
    // The PUT starts now, beside the state read and the producer's epoch read: the checks after
    // them (fencing, sequence, ISR) decide whether anything is committed, and a refused request's
    // object is an orphan no commit names, which the sweep deletes after the orphan grace.
    this.prewrite(topic, p, acks, putOnce);
    for (let attempt = 0, gapWaits = 0, first = true; ; first = false) {
      // On a commit log, the read its commit will decide on (one Query for the request's shard):
      // the one begun beside the PUT, then (deciding anew) one after it.
      const read = (await (first ? shared?.readAhead(p) : shared?.readAgain(p))) || (await this.readState(topic, p));
      // Before anything that answers or writes: a fenced producer learns nothing else.
      await gate;
      const { state } = read;
      if (state.isr.length === 0)
        throw new KafkaError('LEADER_NOT_AVAILABLE', `${topic.name}-${p} has no in-sync replica`);
      const guard = batch
        ? this.sequenceGuard(topic, p, batch)
        : marker
          ? markerGuard(marker, (s) =>
              producerEntry(this.deps.metadata, pk, s, marker.producerId, this.deps.clock.now()),
            )
          : undefined;
      const early = guard && (await guard.resolve(state));
      if (early) return info(early.baseOffset, early.lastOffset, state, true);
      if (acks === 'all' && state.isr.length < topic.config.minInsyncReplicas) {
        throw new KafkaError(
          'NOT_ENOUGH_REPLICAS',
          `${topic.name}-${p} has ${state.isr.length} in-sync replicas, fewer than min.insync.replicas (${topic.config.minInsyncReplicas}); nothing was appended`,
        );
      }
      const targets = acks === 'all' ? state.isr : [state.leader];
      const written = await Promise.all(targets.map(putOnce));
      if (!written[targets.indexOf(state.leader)]) {
        if (attempt >= LEADERSHIP_RETRIES)
          throw new KafkaError(
            'NOT_LEADER_OR_FOLLOWER',
            `The leader store of ${topic.name}-${p} is not accepting writes`,
          );
        await this.replicas.electIfLeaderDown(topic, p, topic.config.uncleanLeaderElectionEnable);
        attempt++;
        continue;
      }
      const plan: CommitPlan = {
        pending: {
          objectKey: request.key,
          start: run.start,
          end: run.end,
          recordCount: run.recordCount,
          maxTimestamp: run.maxTimestamp,
          ...(batch ? { producer: batch } : {}),
          ...(marker
            ? { marker: { type: marker.type, producerId: marker.producerId, producerEpoch: marker.producerEpoch } }
            : {}),
        },
        leaderEpoch: state.leaderEpoch,
        holders: targets.filter((_, i) => written[i]),
        failedFollowers: targets.filter((_, i) => !written[i]),
        ...(guard ? { guard: guard.check } : {}),
      };
      let result: CommitResult;
      try {
        result = shared
          ? await this.commitShared(shared, pk, p, plan)
          : await this.serialized(pk, async () => {
              // A commit queued behind this process's own earlier one starts from the state it left.
              const mine = this.lastWritten.get(pk);
              const start =
                mine && mine.state.topicId === topic.id && (read.version === undefined || mine.version! > read.version)
                  ? mine
                  : read;
              const r = await commitToPartition(this.commitDeps, topic, p, plan, start);
              // Noted before the queue moves on, so the next commit in it starts from this state, and
              // knows this entry is written (else it would read the index to see whether to repair it).
              if (r.kind === 'committed') {
                this.lastWritten.set(pk, { state: r.state, version: r.version });
                if (r.indexed) this.indexed.set(pk, commitIdentity(r.entry));
              }
              return r;
            });
      } catch (e) {
        if (e instanceof KafkaError && e.errorName === 'FENCED_LEADER_EPOCH' && attempt < LEADERSHIP_RETRIES) {
          attempt++;
          continue;
        }
        // Nothing was written for this batch: after a pause the loop reads the state again and decides anew.
        if (e instanceof SequenceGap && gapWaits < SEQUENCE_GAP_WAITS_MS.length) {
          await sleep(SEQUENCE_GAP_WAITS_MS[gapWaits++]!);
          continue;
        }
        throw e;
      }
      if (result.kind === 'duplicate') return info(result.baseOffset, result.lastOffset, result.state, true);
      const { entry } = result;
      this.notifyAppend(topic.name, p, committedRun(entry, result.state, request.body));
      this.metrics.add('ProduceRecords', run.recordCount);
      this.metrics.add('ProduceBytes', run.end - run.start);
      if (result.retries > 0) this.metrics.add('CommitRetries', result.retries);
      if (plan.failedFollowers.length > 0) {
        this.metrics.add('IsrShrinks', plan.failedFollowers.length);
        this.logger.warn('isr shrink', {
          reason: 'follower write failed',
          topic: topic.name,
          partition: p,
          replicas: plan.failedFollowers,
        });
      }
      if (acks === 1) {
        const followers = result.state.replicas.filter((r) => r !== result.state.leader);
        // The follower copies may move the HW: tell the listeners again (long polls wait on the HW).
        if (followers.length > 0) {
          const copies = this.replicas
            .replicateToFollowers(topic, p, entry, request.body, followers)
            .then(() => this.notifyAppend(topic.name, p));
          // Past the bound the answer waits for its copies (a failed copy is the follower's, not the append's).
          if (this.backgroundBytes >= this.maxBackgroundBytes) await this.settled(copies);
          else this.track(copies, request.body.byteLength);
        }
      } else if (result.state.isr.length < topic.config.minInsyncReplicas) {
        throw new KafkaError(
          'NOT_ENOUGH_REPLICAS_AFTER_APPEND',
          `${topic.name}-${p}: the records were appended at offsets ${entry.baseOffset}..${entry.lastOffset}, but only ${result.state.isr.length} replicas are in sync (min.insync.replicas=${topic.config.minInsyncReplicas})`,
        );
      } else if (result.state.highWatermark <= entry.lastOffset) {
        await this.awaitHighWatermark(topic, p, entry);
      }
      return info(entry.baseOffset, entry.lastOffset, result.state);
    }
  }

  /**
   * One commit for a group of appends to one partition (same topic incarnation and configs, same
   * acks): one object, one conditional state write, one index entry. Each member is answered with
   * its own offsets within the group's; a failure of the group fails every member alike, as a
   * failed log append fails every batch of it in Kafka.
   */
  private async commitGroup(members: GroupMember[]): Promise<AppendOutcome[]> {
    const [{ topic, acks, now }] = members as [GroupMember];
    const { object, firstOffsets } =
      members.length === 1
        ? { object: members[0]!.request, firstOffsets: [0] }
        : joinRequestObjects(
            topic.id,
            members.map((m) => m.request),
            now,
          );
    const run = object.runs[0]!;
    let outcome: AppendOutcome;
    const putOnce = this.putOncePerStore(object);
    try {
      outcome = await this.appendRun(topic, object, run, acks, {}, putOnce, now);
    } catch (e) {
      outcome = { ok: false, error: asKafkaError(e) };
    }
    await putOnce.settled();
    if (!outcome.ok) return members.map(() => outcome);
    const { info } = outcome;
    return members.map((m, i) => {
      const baseOffset = info.baseOffset + firstOffsets[i]!;
      return {
        ok: true,
        info: {
          ...info,
          baseOffset,
          lastOffset: baseOffset + m.request.runs[0]!.recordCount - 1,
          // Each member's batches were stamped with its own time (request-object.ts).
          logAppendTime: topic.config.logAppendTime ? m.now : -1,
        },
      };
    });
  }

  /**
   * Kafka's WriteTxnMarkers for one partition: appends a COMMIT or ABORT control batch that closes
   * the producer's open transaction here, in the same conditional write that moves the LSO. It is
   * idempotent: with no open transaction of that producer (the marker landed before, its answer
   * lost; or the producer never wrote here) nothing is appended and the answer says so.
   */
  async writeMarker(
    topic: Topic,
    partition: number,
    marker: MarkerRequest,
  ): Promise<{ written: boolean; offset: number }> {
    requirePartition(topic, partition);
    const now = this.deps.clock.now();
    const body = encodeMarkerBatch(marker, now);
    const request: RequestObject = {
      key: newRequestObjectKey(topic.id, now, writeVersion('request-object', await this.featureLevel(now))),
      body,
      runs: [{ partition, start: 0, end: body.byteLength, recordCount: 1, maxTimestamp: now }],
      rejected: new Map(),
    };
    const putOnce = this.putOncePerStore(request);
    const outcome = await this.appendRun(topic, request, request.runs[0]!, 'all', { marker }, putOnce, now).finally(
      putOnce.settled,
    );
    if (!outcome.ok) throw outcome.error;
    return { written: !outcome.info.duplicate, offset: outcome.info.baseOffset };
  }

  /**
   * acks=all is answered only once the high watermark covers the records, as Kafka's is. Every ISR
   * member took this commit's object, but a follower whose log has a hole below it (an acks=1 copy
   * lost with its process, or a failed put the ISR has not shrunk for yet) did not advance, so the
   * HW stays behind: the catch-up step copies what it misses, as a Kafka follower would fetch it,
   * or drops it from the ISR if it cannot. If the HW still does not cover the records, the answer
   * is Kafka's REQUEST_TIMED_OUT: appended, but not known to be on every in-sync replica.
   */
  private async awaitHighWatermark(topic: Topic, partition: number, entry: CommitRecord): Promise<void> {
    await this.replicas.sync(topic, partition, topic.config.uncleanLeaderElectionEnable);
    const { state } = await this.readState(topic, partition);
    if (state.highWatermark > entry.lastOffset && state.leaderEpoch === entry.leaderEpoch) return;
    throw new KafkaError(
      'REQUEST_TIMED_OUT',
      `${topic.name}-${partition}: the records were appended at offsets ${entry.baseOffset}..${entry.lastOffset}, but the high watermark (${state.highWatermark}) does not cover them: in-sync replica(s) ${state.isr.filter((r) => (state.replicaLeo[String(r)] ?? 0) <= entry.lastOffset).join(', ')} have not caught up`,
    );
  }

  /** The replica catch-up step for every partition of a topic (the scheduler runs it too). */
  async syncReplicas(topic: Topic): Promise<(SyncReport & { partition: number })[]> {
    const reports = [];
    for (let p = 0; p < topic.partitionCount; p++) {
      reports.push({ partition: p, ...(await this.replicas.sync(topic, p, topic.config.uncleanLeaderElectionEnable)) });
    }
    return reports;
  }

  /**
   * Removes a deleted topic's partition states, index entries and objects: the scheduler's
   * background work after a delete (src/maintenance/topic-purge.ts). Readers already ignore them
   * (they carry the old topic id), so this may be interrupted and redone at any time: it starts at
   * partition `from`, and between steps stops once `stop()` says so, answering where to resume.
   * A step that fails throws, so the caller keeps the purge and runs it again later.
   */
  async purge(topic: PurgedTopic, options: { from?: number; stop?: () => boolean } = {}): Promise<PurgeProgress> {
    const PAGE = 100;
    const stop = options.stop ?? (() => false);
    for (let p = options.from ?? 0; p < topic.partitionCount; p++) {
      if (stop()) return { done: false, nextPartition: p };
      const pk = partitionPk(topic.name, p);
      for (const prefix of [INDEX_PREFIX, ABORT_PREFIX, PRODUCER_ENTRY_PREFIX]) {
        for (let after = prefix; ; ) {
          const items = await this.deps.metadata.query<StoredIndexValue>(pk, {
            gt: after,
            beginsWith: prefix,
            limit: PAGE,
          });
          // Every kind holds its topic id as an entry does, but a packed index item.
          const own = items.filter((i) => itemRange(i.value).topicId === topic.id);
          await Promise.all(own.map((i) => this.deps.metadata.delete(pk, i.sk)));
          if (items.length < PAGE) break;
          after = items.at(-1)!.sk;
        }
      }
      const state = await this.deps.metadata.get<PartitionState>(pk, STATE_SK);
      if (state?.value.topicId === topic.id)
        await this.deps.metadata.delete(pk, STATE_SK, { ifVersion: state.version }).catch((e: unknown) => {
          // Written since (a late append of the old incarnation): the next run reads it again.
          if (!(e instanceof ConditionFailedError)) throw e;
          throw new KafkaError('KAFKA_STORAGE_ERROR', `${topic.name}-${p}: its state changed while being purged`);
        });
      this.indexed.delete(pk);
      this.lastWritten.delete(pk);
    }
    // A commit log's entries (a topic created without one has none: one empty Query per shard).
    for (const shard of shardsOf(topic)) await new ShardLog(this.deps.metadata).purge(topic.name, shard, topic.id);
    // Request objects, and the per-partition segments maintenance rewrites them into.
    for (const store of this.deps.stores) {
      for (const prefix of [dataPrefix(topic.id), segmentPrefix(topic.id)]) {
        for (let previous: string | undefined; ; ) {
          if (stop()) return { done: false, nextPartition: topic.partitionCount };
          // Always the first page: what was deleted is gone, so this moves on (and resumes) by itself.
          const page = await store.list(prefix);
          const first = page.objects[0]?.key;
          if (first === undefined) break;
          if (first === previous)
            throw new KafkaError('KAFKA_STORAGE_ERROR', `${store.name}: ${first} is still listed after its delete`);
          previous = first;
          await store.delete(page.objects.map((o) => o.key));
        }
      }
    }
    return { done: true, nextPartition: topic.partitionCount };
  }

  /**
   * Kafka's DeleteRecords (and the retention step): moves the log start offset up to `offset`
   * with one conditional write of the partition state, re-read and retried when it loses a race
   * with an append. `offset` may not pass the high watermark (OFFSET_OUT_OF_RANGE); at or below
   * the current log start offset nothing changes. sizeInBytes drops by the entries that fall
   * wholly below the new start; the entries and their objects are removed later by maintenance.
   */
  async advanceLogStartOffset(
    topic: TopicMeta,
    partition: number,
    offset: number,
  ): Promise<{ logStartOffset: number; previous: number; bytesRemoved: number }> {
    requirePartition(topic, partition);
    type Moved = { logStartOffset: number; previous: number; bytesRemoved: number };
    const { result } = await updatePartitionState<Moved>({
      metadata: this.deps.metadata,
      topic,
      partition,
      storeCount: this.deps.stores.length,
      now: this.deps.clock.now(),
      timerSlotMs: this.deps.timerSlotMs,
      giveUp: {
        errorName: 'KAFKA_STORAGE_ERROR',
        message: `Too much contention moving the log start offset of ${topic.name}-${partition}; retry`,
      },
      decide: async (state) => {
        if (!Number.isSafeInteger(offset) || offset < 0 || offset > state.highWatermark) {
          throw new KafkaError(
            'OFFSET_OUT_OF_RANGE',
            `Cannot delete records of ${topic.name}-${partition} before offset ${offset}: the log holds [${state.logStartOffset}, ${state.highWatermark})`,
          );
        }
        const previous = state.logStartOffset;
        if (offset <= previous) return { done: { logStartOffset: previous, previous, bytesRemoved: 0 } };
        let bytesRemoved = 0;
        let next = previous;
        for await (const e of this.index.scan(
          topic.name,
          partition,
          topic.id,
          previous,
          offset,
          (e) => inLog(state, e),
          {},
          state.pending,
        )) {
          if (e.lastOffset < next) continue; // covered by an entry counted already
          if (e.lastOffset >= offset) break;
          bytesRemoved += e.end - e.start;
          next = e.lastOffset + 1;
        }
        const last = state.lastCommit;
        if (last && last.topicId === topic.id && last.baseOffset >= next && last.lastOffset < offset)
          bytesRemoved += last.end - last.start;
        const moved = { logStartOffset: offset, previous, bytesRemoved };
        return {
          write: { ...state, logStartOffset: offset, sizeInBytes: Math.max(0, state.sizeInBytes - bytesRemoved) },
          answer: () => moved,
        };
      },
      // A repeat that applied leaves the log start offset where this call put it: the decision,
      // re-made on the item found, answers "nothing to do" with the same start offset.
    });
    return result;
  }

  /** One PUT per store per request, shared by every partition that needs that store; resolves to whether it landed. */
  /**
   * Starts the object's PUTs beside the partition's state read, to the stores its state is
   * expected to name (this process's last commit of it, else the partition's initial assignment),
   * so the PUT, the longest step of an append, no longer waits a DynamoDB round trip for the read.
   * The read still decides: the commit names only the stores its state asks for (`putOnce` writes
   * once per store, so the same PUT serves them), and a PUT the read shows was not needed (an
   * election moved the partition, or the batch was a duplicate or refused) leaves an orphan object
   * no commit names, which the maintenance sweep deletes like any other uncommitted object.
   */
  private prewrite(topic: TopicMeta, p: number, acks: 1 | 'all', putOnce: PutOnce): void {
    const known = this.lastWritten.get(partitionPk(topic.name, p));
    const state =
      known && known.state.topicId === topic.id
        ? known.state
        : initialPartitionState(topic.id, p, topic.replicationFactor, this.deps.stores.length);
    for (const r of acks === 'all' ? state.isr : [state.leader]) void putOnce(r);
  }

  private putOncePerStore(request: RequestObject): PutOnce {
    const puts = new Map<number, Promise<boolean>>();
    const putOnce = (r: number): Promise<boolean> => {
      let put = puts.get(r);
      if (!put) {
        put = this.store(r)
          .put(request.key, request.body)
          .then(
            () => true,
            () => false,
          );
        puts.set(r, put);
      }
      return put;
    };
    return Object.assign(putOnce, { settled: async () => void (await Promise.all(puts.values())) });
  }

  /** The commit the runs of a request share on a topic with a commit log (undefined: per-partition commits). */
  private requestCommit(topic: Topic, _objectKey: string, partitions: number[]): RequestCommit | undefined {
    if (!topic.clog) return undefined;
    const deps = {
      metadata: this.deps.metadata,
      storeCount: this.deps.stores.length,
      now: () => this.deps.clock.now(),
      timerSlotMs: this.deps.timerSlotMs,
    };
    // This process's commits to a shard queue, so they do not race each other for its next entry.
    // The commit's read starts now, beside the object's PUT, not after it.
    return new RequestCommit(
      (appends, prefetch) =>
        this.serialized(`clog|${topic.name}|${shardOf(topic, appends[0]!.partition)}`, () =>
          commitToShard(deps, topic, appends, prefetch),
        ),
      partitions,
      (p) => shardOf(topic, p),
      (shard, ps, afterPut) => prefetchShard(deps, topic, shard, ps, afterPut),
    );
  }

  private async commitShared(
    shared: RequestCommit,
    pk: string,
    partition: number,
    plan: CommitPlan,
  ): Promise<CommitResult> {
    const outcome = await shared.submit(partition, plan);
    if (outcome.kind === 'refused') throw outcome.error;
    if (outcome.kind === 'committed') this.lastWritten.set(pk, { state: outcome.state, version: outcome.version });
    return outcome;
  }

  private get commitDeps() {
    return {
      metadata: this.deps.metadata,
      index: this.index,
      storeCount: this.deps.stores.length,
      now: () => this.deps.clock.now(),
      isIndexed: (pk: string, entry: CommitRecord) => this.indexed.get(pk) === commitIdentity(entry),
      featureLevel: this.featureLevel,
    };
  }

  private readState(topic: TopicMeta, partition: number): Promise<StateRead> {
    return readPartitionState(this.deps.metadata, topic, partition, this.deps.stores.length, () =>
      this.deps.clock.now(),
    );
  }

  private producerBatch(producer: NonNullable<AppendOptions['producer']>, run: PartitionRun): ProducerBatch {
    const baseSequence = producer.baseSequences.get(run.partition);
    if (baseSequence === undefined)
      throw new KafkaError(
        'INVALID_REQUEST',
        `An idempotent request needs a base sequence for partition ${run.partition}`,
      );
    return {
      producerId: producer.producerId,
      producerEpoch: producer.producerEpoch,
      baseSequence,
      lastSequence: baseSequence + run.recordCount - 1,
      ...(producer.transactional ? { transactional: true } : {}),
    };
  }

  private async producerEpochOf(producerId: number): Promise<number> {
    const item = await this.deps.metadata.get<{ epoch: number }>(producerPk(producerId), PRODUCER_META_SK);
    if (!item)
      throw new KafkaError('UNKNOWN_PRODUCER_ID', `Producer id ${producerId} is unknown; call producers:init first`);
    return item.value.epoch;
  }

  /**
   * The idempotence check as two steps: `resolve` may search the index for an older duplicate's
   * offsets; `check` runs inside the commit against each state it writes over.
   */
  private sequenceGuard(topic: TopicMeta, partition: number, batch: ProducerBatch) {
    const check = (_s: PartitionState, producer: ProducerSequence | undefined) => {
      const c = checkSequence(producer, batch);
      if (c.kind === 'duplicate') return c;
      if (c.kind === 'older')
        throw new KafkaError(
          'DUPLICATE_SEQUENCE_NUMBER',
          `Batch ${batch.baseSequence}..${batch.lastSequence} of producer ${batch.producerId} was already appended`,
        );
      return undefined;
    };
    // Before the commit, on a state read moments ago: a duplicate is known for sure (sequences only
    // move on), a gap is not (the batch before may be committing right now), so that is left to
    // the check inside the commit.
    const resolve = async (s: PartitionState) => {
      const pk = partitionPk(topic.name, partition);
      const producer = await producerEntry(this.deps.metadata, pk, s, batch.producerId, this.deps.clock.now());
      let c: ReturnType<typeof checkSequence>;
      try {
        c = checkSequence(producer, batch);
      } catch (e) {
        if (e instanceof KafkaError && e.errorName === 'OUT_OF_ORDER_SEQUENCE_NUMBER') return undefined;
        throw e;
      }
      if (c.kind === 'duplicate') return c;
      if (c.kind === 'older') {
        const found = await this.index.findProducerBatch(topic.name, partition, s, batch);
        if (found) return found;
        check(s, producer); // throws DUPLICATE_SEQUENCE_NUMBER
      }
      return undefined;
    };
    return { check, resolve };
  }

  private store(id: number): ObjectStore {
    const s = this.deps.stores[id];
    if (!s) throw new KafkaError('KAFKA_STORAGE_ERROR', `Replica store ${id} is not configured`);
    return s;
  }

  private notifyAppend(topic: string, partition: number, committed?: CommittedRun): void {
    for (const l of this.listeners) l(topic, partition, committed);
  }

  /** Bytes of request objects held by work that outlived its answer (at most about the bound plus one request). */
  get heldBackgroundBytes(): number {
    return this.backgroundBytes;
  }

  private settled(p: Promise<unknown>): Promise<void> {
    return p.then(
      () => {},
      (e) => this.logger.error('background work failed', { error: String(e) }),
    );
  }

  private track(p: Promise<unknown>, bytes: number): void {
    const t = this.settled(p);
    this.background.add(t);
    this.backgroundBytes += bytes;
    void t.finally(() => {
      this.background.delete(t);
      this.backgroundBytes -= bytes;
    });
  }

  /** Waits while the work held is at its bound. */
  private async backgroundRoom(): Promise<void> {
    while (this.backgroundBytes >= this.maxBackgroundBytes && this.background.size > 0)
      await Promise.race(this.background);
  }

  private serialized<T>(key: string, fn: () => Promise<T>): Promise<T> {
    return this.commitQueues.run(key, fn);
  }
}

/**
 * A marker's guard: nothing to write when the producer has no open transaction of the marker's
 * epoch or older here, unless it is an ABORT of a newer epoch than any the partition knows of the
 * producer (a fenced or timed-out producer's). That one is written all the same, as Kafka appends
 * every marker: it moves the producer's epoch here, so a zombie's append verified before the abort
 * and committed after it is fenced, instead of opening a transaction that the next epoch's COMMIT
 * would take in whole.
 */
function markerGuard(marker: MarkerRequest, producerOf: (s: PartitionState) => Promise<ProducerSequence | undefined>) {
  const check = (s: PartitionState, producer: ProducerSequence | undefined) => {
    const open = s.openTxns?.[String(marker.producerId)];
    const nothing = open
      ? open.producerEpoch > marker.producerEpoch
      : marker.type === 'COMMIT' || (producer !== undefined && producer.producerEpoch >= marker.producerEpoch);
    return nothing ? { baseOffset: -1, lastOffset: -1 } : undefined;
  };
  return { check, resolve: async (s: PartitionState) => check(s, await producerOf(s)) };
}
