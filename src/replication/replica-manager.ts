import type { Clock } from '../clock.js';
import { KafkaError } from '../wire/errors.js';
import { inLog, OffsetIndex } from '../partition/offset-index.js';
import type { Leadership, SyncReport } from '../partition/leadership.js';
import { readPartitionState, updatePartitionState } from '../partition/shard-state.js';
import { logEndOffset, type CommitRecord, type PartitionState } from '../partition/partition-state.js';
import type { TopicMeta } from '../topics/topics.js';
import type { MetadataStore, ObjectStore } from '../storage/ports.js';
import { DEFAULT_REPLICA_LAG_TIME_MAX_MS, followerReached, laggingFollowers, shrinkIsr } from '../partition/isr.js';
import { electLeader } from '../partition/leader-election.js';
import { noLogger, noMetrics, type Logger, type Metrics } from '../metrics.js';

export interface ReplicaDeps {
  metadata: MetadataStore;
  stores: ObjectStore[];
  clock: Clock;
  /** Kafka's replica.lag.time.max.ms (a broker config): how long a follower may stay behind (default DEFAULT_REPLICA_LAG_TIME_MAX_MS). */
  replicaLagTimeMaxMs?: number;
  /** Where elections and ISR changes are said (default: nowhere). */
  logger?: Logger;
  /** Where ISR shrinks are reported (default: nowhere). */
  metrics?: Metrics;
  /** The scheduler's durable timer slot width (maintenance option timerSlotMs): a state change arms a fold timer. */
  timerSlotMs?: number;
}

export type { SyncReport };

/**
 * Replicas are stores. This keeps their state honest: it moves followers in and out of the ISR,
 * copies what a follower is missing (the follower fetch of Kafka, run by the scheduler or on
 * demand), and elects a new leader when the leader's store fails. Every change is one conditional
 * write of the partition state, checked against the version (and so the leader epoch) it read.
 */
export class ReplicaManager implements Leadership {
  private readonly deps: Required<Omit<ReplicaDeps, 'timerSlotMs'>> &
    Pick<ReplicaDeps, 'timerSlotMs'> & { index: OffsetIndex };

  constructor(deps: ReplicaDeps) {
    this.deps = {
      replicaLagTimeMaxMs: DEFAULT_REPLICA_LAG_TIME_MAX_MS,
      logger: noLogger,
      metrics: noMetrics,
      ...deps,
      index: new OffsetIndex(deps.metadata),
    };
  }

  /** A store is live if it answers a HEAD; a missing key is an answer. */
  async isLive(replica: number): Promise<boolean> {
    const store = this.deps.stores[replica];
    if (!store) return false;
    return store.head('health/probe').then(
      () => true,
      () => false,
    );
  }

  /**
   * Elects a new leader if the current leader's store is down. Returns the state to continue with
   * (unchanged when the leader turned out to be live or someone else already moved on).
   */
  async electIfLeaderDown(topic: TopicMeta, partition: number, uncleanAllowed: boolean): Promise<PartitionState> {
    const { state, version } = await this.read(topic, partition);
    if (await this.isLive(state.leader)) return state;
    const live = new Map(await Promise.all(state.replicas.map(async (r) => [r, await this.isLive(r)] as const)));
    const election = electLeader(state, (r) => live.get(r) === true, uncleanAllowed);
    if (!election) {
      throw new KafkaError(
        'LEADER_NOT_AVAILABLE',
        `No live in-sync replica can lead ${topic.name}-${partition}; retry when a store is back`,
      );
    }
    // One write: if anything else changed the state meanwhile (another election, an append), the
    // decision is stale and the caller goes on with the state as it now is. Our own election, found
    // after an ambiguous outcome, is recognised by its content (the new epoch, leader and history).
    const elected = await updatePartitionState<PartitionState | undefined>({
      ...this.stateDeps(topic, partition),
      known: { state, ...(version !== undefined && { version }) },
      attempts: 2,
      giveUp: {
        errorName: 'LEADER_NOT_AVAILABLE',
        message: `${topic.name}-${partition} changed during the election; retry`,
      },
      decide: (_, attempt) =>
        attempt === 0 ? { write: election.state, answer: (written) => written } : { done: undefined },
      recogniseOwn: true,
    });
    if (elected.result === undefined) return elected.state;
    this.deps.logger[election.unclean ? 'warn' : 'info'](
      election.unclean ? 'unclean leader election: acknowledged records may be lost' : 'leader elected',
      {
        topic: topic.name,
        partition,
        leader: election.state.leader,
        previousLeader: state.leader,
        leaderEpoch: election.state.leaderEpoch,
        ...(election.lostFrom !== undefined
          ? { lostFromOffset: election.lostFrom, previousHighWatermark: state.highWatermark }
          : {}),
      },
    );
    return election.state;
  }

  /**
   * acks=0/1: the follower copies happen after the producer has its answer. A follower whose copy
   * fails leaves the ISR; one that succeeds advances its LEO (and so maybe the HW).
   */
  async replicateToFollowers(
    topic: TopicMeta,
    partition: number,
    entry: CommitRecord,
    body: Uint8Array,
    followers: number[],
  ): Promise<void> {
    const results = await Promise.all(
      followers.map((r) =>
        this.deps.stores[r]!.put(entry.objectKey, body).then(
          () => true,
          () => false,
        ),
      ),
    );
    const ok = followers.filter((_, i) => results[i]);
    const failed = followers.filter((_, i) => !results[i]);
    await this.update(topic, partition, entry.leaderEpoch, (s) => {
      let next = shrinkIsr(s, failed);
      for (const r of ok)
        if ((next.replicaLeo[String(r)] ?? 0) >= entry.baseOffset)
          next = followerReached(next, r, entry.lastOffset + 1, this.deps.clock.now());
      return next;
    });
    if (failed.length > 0) {
      this.deps.metrics.add('IsrShrinks', failed.length);
      this.deps.logger.warn('isr shrink', {
        reason: 'follower write failed',
        topic: topic.name,
        partition,
        replicas: failed,
      });
    }
  }

  /**
   * The catch-up step: for every follower, drop it from the ISR if its store is down or it lagged
   * longer than replica.lag.time.max.ms, else copy the objects it is missing (from the leader, in
   * offset order) and record its new LEO; it rejoins the ISR once it reaches the HW.
   */
  async sync(topic: TopicMeta, partition: number, uncleanAllowed: boolean): Promise<SyncReport> {
    const report: SyncReport = { copiedObjects: 0, caughtUp: [], removedFromIsr: [], addedToIsr: [] };
    let state = (await this.read(topic, partition)).state;
    if (!(await this.isLive(state.leader))) {
      state = await this.electIfLeaderDown(topic, partition, uncleanAllowed);
      report.elected = state.leader;
    }
    const now = this.deps.clock.now();
    const down: number[] = [];
    for (const r of state.replicas) if (r !== state.leader && !(await this.isLive(r))) down.push(r);
    const lagging = laggingFollowers(state, now, this.deps.replicaLagTimeMaxMs);
    const out = [...new Set([...down, ...lagging])].filter((r) => state.isr.includes(r));
    if (out.length > 0) {
      state = (await this.update(topic, partition, state.leaderEpoch, (s) => shrinkIsr(s, out))) ?? state;
      report.removedFromIsr.push(...out);
      this.deps.metrics.add('IsrShrinks', out.length);
      this.deps.logger.warn('isr shrink', {
        reason: down.length ? 'store down' : 'lagging',
        topic: topic.name,
        partition,
        replicas: out,
      });
    }

    const leo = logEndOffset(state);
    for (const r of state.replicas) {
      if (r === state.leader || down.includes(r)) continue;
      const from = state.replicaLeo[String(r)] ?? 0;
      if (from >= leo && state.isr.includes(r)) continue;
      try {
        report.copiedObjects += await this.copyRange(topic, partition, state, r, from, leo);
      } catch {
        continue; // the follower (or the leader) failed mid-copy: try again next round
      }
      const before = state.isr.includes(r);
      const next = await this.update(topic, partition, state.leaderEpoch, (s) =>
        followerReached(s, r, leo, this.deps.clock.now()),
      );
      if (next) {
        state = next;
        report.caughtUp.push(r);
        if (!before && next.isr.includes(r)) {
          report.addedToIsr.push(r);
          this.deps.logger.info('isr expand', {
            topic: topic.name,
            partition,
            replica: r,
            leaderEpoch: next.leaderEpoch,
          });
        }
      }
    }
    return report;
  }

  /** Copies the objects behind offsets [from, to) from the leader's store to replica r's. */
  private async copyRange(
    topic: TopicMeta,
    partition: number,
    state: PartitionState,
    r: number,
    from: number,
    to: number,
  ): Promise<number> {
    const leader = this.deps.stores[state.leader]!;
    const follower = this.deps.stores[r]!;
    const done = new Set<string>();
    let copied = 0;
    for await (const entry of this.deps.index.scan(
      topic.name,
      partition,
      topic.id,
      from,
      to,
      (e) => inLog(state, e),
      {},
      state.pending,
    )) {
      if (done.has(entry.objectKey)) continue;
      done.add(entry.objectKey);
      if (await follower.head(entry.objectKey)) continue;
      await follower.put(entry.objectKey, await leader.get(entry.objectKey));
      copied++;
    }
    const last = state.lastCommit;
    if (last && last.lastOffset >= from && !done.has(last.objectKey) && !(await follower.head(last.objectKey))) {
      await follower.put(last.objectKey, await leader.get(last.objectKey));
      copied++;
    }
    return copied;
  }

  private stateDeps(topic: TopicMeta, partition: number) {
    const { metadata, stores, clock, timerSlotMs } = this.deps;
    return { metadata, topic, partition, storeCount: stores.length, now: clock.now(), timerSlotMs };
  }

  private read(topic: TopicMeta, partition: number) {
    return readPartitionState(this.deps.metadata, topic, partition, this.deps.stores.length, () =>
      this.deps.clock.now(),
    );
  }

  /**
   * Read-modify-write of the partition state under the epoch the caller acted in: if the epoch
   * moved on, the change no longer applies and nothing is written (undefined).
   */
  private async update(
    topic: TopicMeta,
    partition: number,
    epoch: number,
    change: (s: PartitionState) => PartitionState,
  ): Promise<PartitionState | undefined> {
    const { result } = await updatePartitionState<PartitionState | undefined>({
      ...this.stateDeps(topic, partition),
      giveUp: { errorName: 'KAFKA_STORAGE_ERROR', message: `Too much contention updating ${topic.name}-${partition}` },
      decide: (state) => {
        if (state.leaderEpoch !== epoch) return { done: undefined };
        const next = change(state);
        if (next === state) return { done: state };
        return { write: next, answer: (written) => written };
      },
      // ISR and replica LEO changes are recomputed from the state found: redoing one is harmless.
    });
    return result;
  }
}
