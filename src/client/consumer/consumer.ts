/**
 * The consumer: Kafka's KafkaConsumer (subscribe/assign, poll, commitSync/commitAsync, seek,
 * pause/resume, position) with kafkajs's run({eachMessage | eachBatch}) on top. Group membership
 * heartbeats in the background; a rebalance is applied inside poll(), between batches, so that the
 * rebalance listener runs while no records of the revoked partitions are being processed.
 *
 * Delivery is at least once: auto commit (enable.auto.commit) commits the positions of records that
 * earlier poll()s returned, every auto.commit.interval.ms, before a revocation and on close.
 */
import type { ConsumerRecord } from '../codec.js';
import { KafkaClientError, KafkaConfigError, KafkaTimeoutError } from '../errors.js';
import { backoffMs, retry, sleep } from '../retry.js';
import { enc, type Transport } from '../transport.js';
import { checkWireFormat, type WireFormat } from '../wire-formats.js';
import { Fetcher } from './fetcher.js';
import { createIdleBackoff } from './idle-backoff.js';
import { GroupClient, type Assignment } from './group-client.js';
import { GroupMembership } from './group-membership.js';
import { runLoop, type ConsumerRunConfig } from './run-loop.js';
import {
  SubscriptionState,
  tpKey,
  type TopicPartitionState,
  type TopicPartition,
  type TopicPartitionOffset,
} from './subscription-state.js';

export type { TopicPartition, TopicPartitionOffset } from './subscription-state.js';
export type { Batch, ConsumerRunConfig, EachBatchPayload, EachMessagePayload } from './run-loop.js';

/** Kafka's consumer configs under camelCase names; what an unset one is: {@link CONSUMER_DEFAULTS}. */
export interface ConsumerConfig {
  /** The consumer group; without one, only assign() is possible and nothing is committed. */
  groupId?: string;
  clientId?: string;
  /** Kafka's session.timeout.ms. */
  sessionTimeoutMs?: number;
  /** max.poll.interval.ms: the rebalance timeout. */
  maxPollIntervalMs?: number;
  /** Caps the server's heartbeat interval (which is used when this is unset). */
  heartbeatIntervalMs?: number;
  /** Kafka's enable.auto.commit. */
  enableAutoCommit?: boolean;
  /** Kafka's auto.commit.interval.ms. */
  autoCommitIntervalMs?: number;
  /** Where to start without a committed offset, or when it is out of range. */
  autoOffsetReset?: 'earliest' | 'latest' | 'none';
  /** Records per poll(). */
  maxPollRecords?: number;
  /** Kafka's fetch.min.bytes. */
  fetchMinBytes?: number;
  /** Kafka's fetch.max.wait.ms. */
  fetchMaxWaitMs?: number;
  /** Kafka's max.partition.fetch.bytes (its default is 1 MiB; ours is four times that, see {@link CONSUMER_DEFAULTS}). */
  maxPartitionFetchBytes?: number;
  /** Polling while idle: consecutive empty fetches back off from fetchMaxWaitMs up to this. */
  fetchIdleBackoffMaxMs?: number;
  /** Wait for records on the connection's push URL instead of polling. */
  push?: boolean;
  /** With push: how often the partitions waiting on the socket are checked again, for lost notifications. */
  pushRecheckIntervalMs?: number;
  /** With push: how long a caught-up partition waits for a notification before it is fetched anyway. */
  pushFallbackPollMs?: number;
  /** Kafka's fetch.max.bytes: the whole answer of one fetch over all partitions (default: the server's bound, MAX_FETCH_BYTES). */
  fetchMaxBytes?: number;
  /**
   * How fetched records travel: 'record-batch' (RecordBatch v2 bytes, CRCs checked here), 'json', or
   * 'auto' (record batches unless the server lacks that API). Default: the connection's `format`.
   */
  format?: WireFormat;
  /**
   * Kafka's isolation.level: 'read_committed' reads up to the last stable offset and never returns
   * records of aborted transactions; 'read_uncommitted' reads up to the HW.
   */
  isolationLevel?: 'read_uncommitted' | 'read_committed';
  /** Server-side assignor: range, roundrobin or sticky (the server's choice when unset). */
  groupRemoteAssignor?: string;
  retryBackoffMs?: number;
  retryBackoffMaxMs?: number;
  requestTimeoutMs?: number;
  /** Where errors of background work are reported (unset: console.error, one JSON line each). */
  logger?: (level: 'warn' | 'error', message: string, extra?: Record<string, unknown>) => void;
}

/** Called inside poll() when partitions are revoked, assigned or lost (Kafka's rebalance listener). */
export interface RebalanceListener {
  onPartitionsRevoked?(partitions: TopicPartition[]): void | Promise<void>;
  onPartitionsAssigned?(partitions: TopicPartition[]): void | Promise<void>;
  /** Lost without a chance to commit (membership fenced); defaults to onPartitionsRevoked. */
  onPartitionsLost?(partitions: TopicPartition[]): void | Promise<void>;
}

/**
 * What an unset consumer config is, each in this one place (the constructor and the docs refer here).
 * Kafka's values unless a comment says why not.
 */
export const CONSUMER_DEFAULTS = {
  clientId: 'consumer',
  sessionTimeoutMs: 45_000,
  maxPollIntervalMs: 300_000,
  enableAutoCommit: true,
  autoCommitIntervalMs: 5000,
  autoOffsetReset: 'latest',
  maxPollRecords: 500,
  fetchMinBytes: 1,
  fetchMaxWaitMs: 500,
  /**
   * Four times Kafka's: each fetch is an HTTP request (a Lambda invocation on AWS), and a partition
   * read 1 MiB at a time waits a round trip per MiB (perf consume P=1 read 193-220k records/s at
   * 1 MiB, 274-476k at 4 MiB in the same runs). fetchMaxBytes still bounds the whole answer, and on
   * Lambda the server keeps it within the 6 MB response limit.
   */
  maxPartitionFetchBytes: 4 * 1024 * 1024,
  fetchIdleBackoffMaxMs: 2000,
  push: true,
  /** Within API Gateway's 10-minute idle timeout, and at 2.5 times the cost of an idle member's waiting when it was 120000. */
  pushRecheckIntervalMs: 300_000,
  pushFallbackPollMs: 600_000,
  /** As Java's. */
  isolationLevel: 'read_uncommitted',
  retryBackoffMs: 100,
  retryBackoffMaxMs: 1000,
} as const satisfies ConsumerConfig;

/** max.partition.fetch.bytes unset (the bench names it). */
export const DEFAULT_MAX_PARTITION_FETCH_BYTES = CONSUMER_DEFAULTS.maxPartitionFetchBytes;

const LOG = (level: 'warn' | 'error', message: string, extra?: Record<string, unknown>) =>
  console.error(JSON.stringify({ level, msg: message, ...extra }));

const toAssignment = (tps: TopicPartition[]): Assignment => {
  const out: Assignment = {};
  for (const { topic, partition } of tps) (out[topic] ??= []).push(partition);
  for (const t of Object.keys(out)) out[t]!.sort((a, b) => a - b);
  return out;
};
const fromAssignment = (a: Assignment): TopicPartition[] =>
  Object.entries(a).flatMap(([topic, ps]) => ps.map((partition) => ({ topic, partition })));

export class Consumer {
  private readonly subs = new SubscriptionState();
  private readonly fetcher: Fetcher;
  private readonly idle: ReturnType<typeof createIdleBackoff>;
  private readonly group: GroupClient | undefined;
  private readonly membership: GroupMembership | undefined;
  private readonly c: Required<
    Omit<
      ConsumerConfig,
      'groupId' | 'heartbeatIntervalMs' | 'groupRemoteAssignor' | 'logger' | 'format' | 'fetchMaxBytes'
    >
  > &
    Pick<ConsumerConfig, 'heartbeatIntervalMs' | 'groupRemoteAssignor' | 'format' | 'fetchMaxBytes'>;
  private readonly log: NonNullable<ConsumerConfig['logger']>;
  private mode: 'none' | 'subscribe' | 'assign' = 'none';
  private listener: RebalanceListener = {};
  private resetOverride: 'earliest' | 'latest' | undefined;
  private nextAutoCommit = 0;
  private commitChain: Promise<unknown> = Promise.resolve();
  private running = false;
  private runLoop: Promise<void> | undefined;
  private closed = false;
  private polling = false;
  /** Until when group positions are not asked for again: the last answer was UNSTABLE_OFFSET_COMMIT. */
  private unstableUntil = 0;

  constructor(
    private readonly transport: Transport,
    config: ConsumerConfig = {},
  ) {
    this.c = {
      clientId: config.clientId ?? CONSUMER_DEFAULTS.clientId,
      sessionTimeoutMs: config.sessionTimeoutMs ?? CONSUMER_DEFAULTS.sessionTimeoutMs,
      maxPollIntervalMs: config.maxPollIntervalMs ?? CONSUMER_DEFAULTS.maxPollIntervalMs,
      heartbeatIntervalMs: config.heartbeatIntervalMs,
      enableAutoCommit: config.enableAutoCommit ?? CONSUMER_DEFAULTS.enableAutoCommit,
      autoCommitIntervalMs: config.autoCommitIntervalMs ?? CONSUMER_DEFAULTS.autoCommitIntervalMs,
      autoOffsetReset: config.autoOffsetReset ?? CONSUMER_DEFAULTS.autoOffsetReset,
      maxPollRecords: config.maxPollRecords ?? CONSUMER_DEFAULTS.maxPollRecords,
      fetchMinBytes: config.fetchMinBytes ?? CONSUMER_DEFAULTS.fetchMinBytes,
      fetchMaxWaitMs: config.fetchMaxWaitMs ?? CONSUMER_DEFAULTS.fetchMaxWaitMs,
      maxPartitionFetchBytes: config.maxPartitionFetchBytes ?? CONSUMER_DEFAULTS.maxPartitionFetchBytes,
      fetchIdleBackoffMaxMs: config.fetchIdleBackoffMaxMs ?? CONSUMER_DEFAULTS.fetchIdleBackoffMaxMs,
      push: config.push ?? CONSUMER_DEFAULTS.push,
      pushRecheckIntervalMs: config.pushRecheckIntervalMs ?? CONSUMER_DEFAULTS.pushRecheckIntervalMs,
      pushFallbackPollMs: config.pushFallbackPollMs ?? CONSUMER_DEFAULTS.pushFallbackPollMs,
      fetchMaxBytes: config.fetchMaxBytes,
      groupRemoteAssignor: config.groupRemoteAssignor,
      format: config.format,
      isolationLevel: config.isolationLevel ?? CONSUMER_DEFAULTS.isolationLevel,
      retryBackoffMs: config.retryBackoffMs ?? CONSUMER_DEFAULTS.retryBackoffMs,
      retryBackoffMaxMs: config.retryBackoffMaxMs ?? CONSUMER_DEFAULTS.retryBackoffMaxMs,
      requestTimeoutMs: config.requestTimeoutMs ?? transport.requestTimeoutMs,
    };
    if (this.c.maxPollRecords < 1) throw new KafkaConfigError('maxPollRecords must be at least 1');
    checkWireFormat(this.c.format);
    this.log = config.logger ?? LOG;
    this.idle = createIdleBackoff(transport, this.subs, this.c, () => this.fetcher.notify(), this.log);
    this.fetcher = new Fetcher(
      transport,
      this.subs,
      { ...this.c, requestTimeoutMs: this.c.requestTimeoutMs },
      (s, e) => this.outOfRange(s, e),
      this.idle.idle,
    );
    if (config.groupId !== undefined) {
      if (config.groupId === '') throw new KafkaConfigError('groupId must not be empty');
      this.group = new GroupClient(transport, config.groupId);
      this.membership = new GroupMembership(
        this.group,
        {
          clientId: this.c.clientId,
          sessionTimeoutMs: this.c.sessionTimeoutMs,
          rebalanceTimeoutMs: this.c.maxPollIntervalMs,
          heartbeatIntervalMs: this.c.heartbeatIntervalMs,
          assignor: this.c.groupRemoteAssignor,
          retryBackoffMs: this.c.retryBackoffMs,
          retryBackoffMaxMs: this.c.retryBackoffMaxMs,
        },
        () => toAssignment(this.subs.list()),
        () => this.fetcher.notify(),
      );
    }
  }

  get groupId(): string | undefined {
    return this.group?.groupId;
  }

  /** The member id the group gave this consumer (empty before joining). */
  get memberId(): string {
    return this.membership?.memberId ?? '';
  }

  /** Java's groupMetadata(): what a transactional producer's sendOffsets passes for KIP-447's check. */
  groupMetadata(): { groupId: string | undefined; memberId: string; generationId: number } {
    return {
      groupId: this.group?.groupId,
      memberId: this.membership?.memberId ?? '',
      generationId: this.membership?.memberEpoch ?? -1,
    };
  }

  /** kafkajs compatibility: nothing to open over HTTP. */
  async connect(): Promise<void> {}

  /**
   * Joins the group subscribed to `topics` (kafkajs: `{ topics, fromBeginning }`; fromBeginning
   * means auto.offset.reset=earliest). The assignment arrives in a later poll().
   */
  async subscribe(options: {
    topics?: string[];
    topic?: string;
    fromBeginning?: boolean;
    listener?: RebalanceListener;
  }): Promise<void> {
    this.assertOpen();
    if (!this.membership) throw new KafkaConfigError('subscribe() needs a groupId; use assign() without one');
    if (this.mode === 'assign')
      throw new KafkaClientError(
        'ILLEGAL_STATE',
        'Subscription to topics and manual assignment are mutually exclusive',
      );
    const topics = [...(options.topics ?? []), ...(options.topic ? [options.topic] : [])];
    if (topics.length === 0) throw new KafkaConfigError('subscribe() needs at least one topic');
    this.mode = 'subscribe';
    if (options.fromBeginning !== undefined) this.resetOverride = options.fromBeginning ? 'earliest' : 'latest';
    if (options.listener) this.listener = options.listener;
    this.nextAutoCommit = Date.now() + this.c.autoCommitIntervalMs;
    this.membership.subscribe(topics);
  }

  /** Takes these partitions, outside any group membership (a group id, if set, is used for commits). */
  assign(partitions: TopicPartition[]): void {
    this.assertOpen();
    if (this.mode === 'subscribe')
      throw new KafkaClientError(
        'ILLEGAL_STATE',
        'Subscription to topics and manual assignment are mutually exclusive',
      );
    this.mode = 'assign';
    const keep = new Set(partitions.map((p) => tpKey(p.topic, p.partition)));
    for (const tp of this.subs.list()) if (!keep.has(tpKey(tp.topic, tp.partition))) this.subs.remove(tp);
    for (const tp of partitions) this.subs.add(tp);
    this.nextAutoCommit = Date.now() + this.c.autoCommitIntervalMs;
  }

  assignment(): TopicPartition[] {
    return this.subs.list();
  }

  /**
   * Where the next poll() continues on a partition (initialising it first if needed; waiting, up to
   * request.timeout.ms, while a transaction is about to commit its offset).
   */
  async position(tp: TopicPartition): Promise<number> {
    const s = this.subs.require(tp.topic, tp.partition);
    const deadline = Date.now() + this.c.requestTimeoutMs;
    while (s.reset !== undefined) {
      await this.initPositions([s]);
      if (s.reset === undefined) break;
      if (Date.now() >= deadline)
        throw new KafkaTimeoutError(
          `No stable position for ${tp.topic}-${tp.partition} in ${this.c.requestTimeoutMs} ms`,
        );
      await sleep(this.c.retryBackoffMs);
    }
    return s.position!;
  }

  seek(tpo: TopicPartitionOffset): void {
    if (!Number.isSafeInteger(tpo.offset) || tpo.offset < 0) throw new KafkaConfigError(`Cannot seek to ${tpo.offset}`);
    this.subs.require(tpo.topic, tpo.partition).seek(tpo.offset);
    this.fetcher.notify();
  }

  seekToBeginning(tps: TopicPartition[] = this.subs.list()): void {
    for (const tp of tps) this.subs.require(tp.topic, tp.partition).requestReset('earliest');
  }

  seekToEnd(tps: TopicPartition[] = this.subs.list()): void {
    for (const tp of tps) this.subs.require(tp.topic, tp.partition).requestReset('latest');
  }

  /** Stops fetching from partitions (kafkajs: `[{ topic, partitions? }]`; all of a topic without partitions). */
  pause(topics: { topic: string; partitions?: number[] }[]): void {
    for (const s of this.matching(topics)) s.paused = true;
  }

  resume(topics: { topic: string; partitions?: number[] }[]): void {
    for (const s of this.matching(topics)) {
      s.paused = false;
      s.nextFetchAt = 0;
    }
    this.fetcher.notify();
  }

  paused(): TopicPartition[] {
    return this.subs
      .states()
      .filter((s) => s.paused)
      .map((s) => ({ topic: s.topic, partition: s.partition }));
  }

  private matching(topics: { topic: string; partitions?: number[] }[]): TopicPartitionState[] {
    return this.subs
      .states()
      .filter((s) =>
        topics.some((t) => t.topic === s.topic && (t.partitions === undefined || t.partitions.includes(s.partition))),
      );
  }

  /**
   * Returns up to max.poll.records records, waiting up to `timeoutMs` for some. Applies rebalances,
   * commits when auto commit is due, and raises errors of background work.
   */
  async poll(options: { timeoutMs?: number } = {}): Promise<ConsumerRecord[]> {
    this.assertOpen();
    if (this.polling)
      throw new KafkaClientError(
        'ILLEGAL_STATE',
        'poll() is already running (the consumer is not safe for concurrent polls)',
      );
    this.polling = true;
    try {
      const deadline = Date.now() + (options.timeoutMs ?? 1000);
      for (;;) {
        await this.reconcile();
        await this.maybeAutoCommit();
        const uninitialised = this.subs.states().filter((s) => s.reset !== undefined);
        if (uninitialised.length > 0 && Date.now() >= this.unstableUntil) await this.initPositions(uninitialised);
        const e = this.fetcher.pendingError ?? this.membership?.error;
        if (e) {
          this.fetcher.pendingError = undefined;
          if (this.membership) this.membership.error = undefined;
          throw e;
        }
        await this.fetcher.flushSent(); // sent when an answer arrived: out before this one is decoded
        const records = this.fetcher.drain(this.c.maxPollRecords);
        const nextBackoff = this.fetcher.sendFetches();
        await this.fetcher.flushSent(); // out before the application works through these records
        if (records.length > 0) return records;
        if (this.fetcher.pendingError) continue; // found while decoding: raised above
        const now = Date.now();
        if (now >= deadline || this.closed || (!this.running && this.runLoop !== undefined)) return [];
        const retryPositions = this.unstableUntil > now ? this.unstableUntil : Infinity;
        await this.fetcher.waitForActivity(Math.min(deadline, nextBackoff, retryPositions) - now);
      }
    } finally {
      this.polling = false;
    }
  }

  /** Moves the consumer to the group's latest assignment: revoke (commit first), then assign. */
  private async reconcile(): Promise<void> {
    const m = this.membership;
    if (!m || this.mode !== 'subscribe') return;
    if (m.lost) {
      const lost = this.subs.list();
      for (const tp of lost) this.subs.remove(tp);
      if (lost.length > 0)
        await this.callListener(this.listener.onPartitionsLost ? 'onPartitionsLost' : 'onPartitionsRevoked', lost);
      m.rejoin();
      return;
    }
    if (m.target === undefined) return;
    const target = new Set(fromAssignment(m.target).map((tp) => tpKey(tp.topic, tp.partition)));
    const revoked = this.subs.list().filter((tp) => !target.has(tpKey(tp.topic, tp.partition)));
    if (revoked.length > 0) {
      if (this.c.enableAutoCommit)
        await this.commitPositions(revoked).catch((e: unknown) =>
          this.log('warn', 'commit before revocation failed', { error: String(e) }),
        );
      for (const tp of revoked) this.subs.remove(tp);
      await this.callListener('onPartitionsRevoked', revoked);
      m.heartbeatNow(); // tells the coordinator they are released
    }
    const added = fromAssignment(m.target).filter((tp) => !this.subs.get(tp.topic, tp.partition));
    if (added.length > 0) {
      for (const tp of added) this.subs.add(tp);
      await this.initPositions(added.map((tp) => this.subs.get(tp.topic, tp.partition)!)).catch((e: unknown) => {
        this.log('warn', 'could not initialise positions yet', { error: String(e) });
      });
      await this.callListener('onPartitionsAssigned', added);
    }
  }

  private async callListener(which: keyof RebalanceListener, tps: TopicPartition[]): Promise<void> {
    try {
      await this.listener[which]?.(tps);
    } catch (e) {
      this.log('error', `rebalance listener ${which} failed`, { error: String(e) });
    }
  }

  /**
   * Positions from committed offsets, else auto.offset.reset (the server applies it for a group, in
   * one call per topic), or where a pending seekToBeginning/seekToEnd points.
   */
  private async initPositions(states: TopicPartitionState[]): Promise<void> {
    const policy = this.resetOverride ?? this.c.autoOffsetReset;
    const readCommitted = this.c.isolationLevel === 'read_committed';
    const fromGroup = this.group ? states.filter((s) => s.reset === 'committed') : [];
    const byTopic = new Map<string, TopicPartitionState[]>();
    for (const s of fromGroup) byTopic.set(s.topic, [...(byTopic.get(s.topic) ?? []), s]);
    const tasks: Promise<void>[] = [];
    for (const [topic, list] of byTopic) {
      const epochs = new Map(list.map((s) => [s, s.epoch]));
      const apply = (rows: { partition: number; offset: number; committed: number | null }[]) => {
        for (const row of rows) {
          const s = list.find((x) => x.partition === row.partition);
          if (!s || s.epoch !== epochs.get(s) || s.reset !== 'committed') continue;
          s.seek(row.offset);
          if (row.committed !== null) s.committed = row.committed;
        }
      };
      // A transaction is about to commit offsets of these partitions (KIP-447): poll() asks again
      // after retry.backoff.ms, their positions still unset, as Kafka's consumer does.
      const unstable = (e: unknown) => {
        if (!isUnstable(e)) throw e;
        this.unstableUntil = Date.now() + this.c.retryBackoffMs;
      };
      // With `none`, only our partitions may fail for lack of an offset: ask partition by partition.
      if (policy === 'none' || list.length === 1) {
        for (const s of list)
          tasks.push(this.group!.positions(topic, policy, s.partition, readCommitted).then(apply, unstable));
      } else tasks.push(this.group!.positions(topic, policy, undefined, readCommitted).then(apply, unstable));
    }
    for (const s of states) {
      if (s.reset === undefined || (this.group && s.reset === 'committed')) continue;
      const how = s.reset === 'committed' ? policy : s.reset;
      if (how === 'none') {
        throw new KafkaClientError(
          'NO_OFFSET_FOR_PARTITION',
          `No position for ${s.topic}-${s.partition} and auto.offset.reset is none`,
          { topic: s.topic, partition: s.partition },
        );
      }
      const epoch = s.epoch;
      tasks.push(
        this.transport
          .request<{ offset: number }>('GET', `/topics/${enc(s.topic)}/partitions/${s.partition}/offset`, {
            query: {
              offset_type: how,
              ...(this.c.isolationLevel === 'read_committed' ? { isolation_level: 'read_committed' } : {}),
            },
            topic: s.topic,
            partition: s.partition,
          })
          .then((res) => {
            if (s.epoch === epoch && s.reset !== undefined) s.seek(res.body.offset);
          }),
      );
    }
    const results = await Promise.allSettled(tasks);
    const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failed) throw failed.reason;
  }

  private outOfRange(s: TopicPartitionState, e: KafkaClientError): void {
    const policy = this.c.autoOffsetReset === 'none' ? this.resetOverride : this.c.autoOffsetReset;
    if (policy === undefined) {
      this.fetcher.pendingError = e;
      return;
    }
    this.log(
      'warn',
      `fetch position ${s.position} is out of range for ${s.topic}-${s.partition}; resetting to ${policy}`,
    );
    s.requestReset(policy);
  }

  /** The consumed positions of assigned partitions (what auto commit commits). */
  private positions(tps?: TopicPartition[]): TopicPartitionOffset[] {
    const states = tps
      ? tps.map((tp) => this.subs.get(tp.topic, tp.partition)).filter((s): s is TopicPartitionState => s !== undefined)
      : this.subs.states();
    return states
      .filter((s) => s.position !== undefined && s.reset === undefined && s.position !== s.committed)
      .map((s) => ({ topic: s.topic, partition: s.partition, offset: s.position! }));
  }

  private commitPositions(tps?: TopicPartition[]): Promise<void> {
    const offsets = this.positions(tps);
    return offsets.length === 0 ? Promise.resolve() : this.commit(offsets);
  }

  private async maybeAutoCommit(): Promise<void> {
    if (!this.group || !this.c.enableAutoCommit || this.mode === 'none' || Date.now() < this.nextAutoCommit) return;
    this.nextAutoCommit = Date.now() + this.c.autoCommitIntervalMs;
    this.commitAsync(undefined, (e) => {
      if (e) this.log('warn', 'auto commit failed', { error: String(e) });
    });
  }

  /** Commits one after another, so that a late answer never moves a committed offset back. */
  private commit(offsets: TopicPartitionOffset[]): Promise<void> {
    if (!this.group) return Promise.reject(new KafkaConfigError('Committing offsets needs a groupId'));
    const group = this.group;
    const run = async () => {
      const member = this.mode === 'subscribe' && this.membership ? this.membership : undefined;
      // A heartbeat may move the member's epoch while a commit is on its way (KIP-848's
      // STALE_MEMBER_EPOCH): retry at the new epoch; retry retriable failures with back-off.
      for (let attempt = 0; ; attempt++) {
        const epoch = member?.memberEpoch;
        try {
          await group.commit(member?.memberId, epoch, offsets);
          break;
        } catch (e) {
          let stale = false;
          if (e instanceof KafkaClientError && e.type === 'ILLEGAL_GENERATION' && member?.active) {
            if (member.memberEpoch === epoch) await member.refresh();
            stale = member.memberEpoch !== epoch;
          }
          if (attempt >= 5 || !(stale || (e instanceof KafkaClientError && e.retriable))) throw e;
          if (!stale) await sleep(backoffMs(attempt, this.c.retryBackoffMs, this.c.retryBackoffMaxMs));
        }
      }
      for (const o of offsets) {
        const s = this.subs.get(o.topic, o.partition);
        if (s) s.committed = o.offset;
      }
    };
    const p = this.commitChain.then(run, run);
    this.commitChain = p.catch(() => {});
    return p;
  }

  /** Commits `offsets` (next offsets to consume), or the positions of every assigned partition; waits. */
  async commitSync(offsets?: TopicPartitionOffset[]): Promise<void> {
    this.assertOpen();
    await (offsets ? this.commit(offsets) : this.commitPositions());
  }

  /** Like commitSync without waiting; the callback gets the outcome. */
  commitAsync(
    offsets?: TopicPartitionOffset[],
    callback?: (e: Error | undefined, offsets: TopicPartitionOffset[]) => void,
  ): void {
    const list = offsets ?? this.positions();
    if (list.length === 0) return callback?.(undefined, list);
    this.commit(list).then(
      () => callback?.(undefined, list),
      (e: Error) => callback?.(e, list),
    );
  }

  /** kafkajs's name: commits the given offsets. */
  commitOffsets(offsets: TopicPartitionOffset[]): Promise<void> {
    return this.commitSync(offsets);
  }

  /**
   * The group's committed offsets for these partitions (the assigned ones by default). A
   * read_committed consumer asks for stable ones (KIP-447), as Kafka's does: while a transaction
   * holds one of them, it asks again every retryBackoffMs, up to requestTimeoutMs.
   */
  async committed(tps: TopicPartition[] = this.subs.list()): Promise<TopicPartitionOffset[]> {
    const group = this.group;
    if (!group) throw new KafkaConfigError('Committed offsets need a groupId');
    if (this.c.isolationLevel !== 'read_committed') return group.committed(tps);
    return retry(() => group.committed(tps, true), {
      retries: Number.MAX_SAFE_INTEGER,
      initialBackoffMs: this.c.retryBackoffMs,
      maxBackoffMs: this.c.retryBackoffMs,
      deadline: Date.now() + this.c.requestTimeoutMs,
      retryIf: isUnstable,
    });
  }

  /**
   * kafkajs's run(): polls in the background and hands records to eachMessage or eachBatch.
   * Resolves once started. A handler that throws has its record redelivered after a back-off.
   */
  async run(config: ConsumerRunConfig): Promise<void> {
    this.assertOpen();
    if (this.runLoop) throw new KafkaClientError('ILLEGAL_STATE', 'run() was already called');
    if (!config.eachMessage && !config.eachBatch) throw new KafkaConfigError('run() needs eachMessage or eachBatch');
    this.running = true;
    this.runLoop = runLoop(
      {
        poll: () => this.poll({ timeoutMs: 1000 }),
        isRunning: () => this.running,
        stopRunning: () => void (this.running = false),
        partition: (topic, partition) => this.subs.get(topic, partition),
        pause: (topic, partition) => this.pause([{ topic, partitions: [partition] }]),
        resume: (topic, partition) => this.resume([{ topic, partitions: [partition] }]),
        heartbeat: async () => this.membership?.heartbeatNow(),
        commitIfDue: () => this.maybeAutoCommit(),
        log: this.log,
        backoff: (attempt) => backoffMs(attempt, this.c.retryBackoffMs, this.c.retryBackoffMaxMs),
      },
      config,
    );
  }

  /** Stops run() after the record in hand (kafkajs's stop()); the consumer stays usable with poll(). */
  async stop(): Promise<void> {
    this.running = false;
    this.fetcher.notify();
    await this.runLoop;
    this.runLoop = undefined;
  }

  /**
   * Graceful close: stops run(), commits consumed positions (with auto commit), tells the listener
   * its partitions are revoked, and leaves the group so the others take over at once.
   */
  async close(): Promise<void> {
    if (this.closed) return;
    await this.stop();
    if (this.group && this.c.enableAutoCommit && this.mode !== 'none') {
      await this.commitPositions().catch((e: unknown) => this.log('warn', 'final commit failed', { error: String(e) }));
    }
    await this.commitChain;
    this.closed = true;
    const owned = this.subs.list();
    if (this.mode === 'subscribe' && owned.length > 0) await this.callListener('onPartitionsRevoked', owned);
    for (const tp of owned) this.subs.remove(tp);
    await this.membership?.leave();
    this.membership?.stop();
    this.idle.close();
    this.fetcher.close();
  }

  /** kafkajs's name for close(). */
  disconnect(): Promise<void> {
    return this.close();
  }

  private assertOpen(): void {
    if (this.closed) throw new KafkaClientError('ILLEGAL_STATE', 'The consumer is closed');
  }
}

/** KIP-447: a transaction is about to commit the offset asked for; asking again later gets it. */
const isUnstable = (e: unknown): boolean => e instanceof KafkaClientError && e.type === 'UNSTABLE_OFFSET_COMMIT';
