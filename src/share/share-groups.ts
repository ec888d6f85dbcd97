import { createHash, randomBytes } from 'node:crypto';
import type { Clock } from '../clock.js';
import { lastStableOffset, type PartitionLog } from '../log/partition-log.js';
import { Turns } from '../log/turns.js';
import {
  CLUSTER_PK,
  SHARE_GROUP_CONFIG_SK,
  SHARE_GROUP_REGISTRY_PREFIX,
  SHARE_PARTITION_PREFIX,
  shareGroupPk,
  shareGroupRegistrySk,
  sharePartitionSk,
} from '../storage/key-layout.js';
import { holdsWrite, optimisticUpdate } from '../storage/optimistic-update.js';
import { ConditionFailedError, type MetadataStore, type MetaItem } from '../storage/ports.js';
import type { TopicMeta, TopicRegistry } from '../topics/topics.js';
import type { DecodedRecord } from '../wire/record-batch.js';
import { KafkaError, type KafkaErrorName } from '../wire/errors.js';
import { newDeadLetterProducer, produceDeadLetters, type ProducerIdSource } from './dead-letter.js';
import {
  isShareGroupConfigName,
  parseIsoDuration,
  parseShareGroupConfig,
  SHARE_GROUP_CONFIG_NAMES,
  SHARE_GROUP_DEFAULTS,
  showShareGroupConfig,
  type ShareConfigChange,
  type ShareGroupConfig,
} from './share-config.js';
import {
  acknowledge,
  acquirable,
  acquire,
  advanceStart,
  copyState,
  countByState,
  expireLocks,
  initialState,
  lag,
  recall,
  remember,
  type AcknowledgeType,
  needsSequence,
  sequenceArchiving,
  type ShownState,
  releaseMember,
  type SharePartitionState,
} from './share-partition.js';
import { EmptyLooks } from './empty-looks.js';
import { ShareMembers, type ShareMemberLimits } from './share-members.js';
import { SharePartitionCodecStore } from './share-partition-codec.js';
import { recognisedBy, updateSharePartition } from './share-partition-update.js';
import { readShareRecords } from './share-reads.js';

export interface ShareGroupDeps {
  metadata: MetadataStore;
  clock: Clock;
  topics: TopicRegistry;
  log: PartitionLog;
  /** Broker-wide settings (defaults: Kafka's). */
  config?: Partial<ShareGroupConfig>;
  /** Producer ids for the share-partitions' dead-letter copies (dead-letter.ts). */
  producerIds: ProducerIdSource;
  /** Membership settings of Kafka share consumers (defaults: Kafka's). */
  memberLimits?: Partial<ShareMemberLimits>;
}

/** kafka-share-groups.sh --reset-offsets strategies. */
export type ShareResetStrategy =
  | { kind: 'to-earliest' }
  | { kind: 'to-latest' }
  | { kind: 'to-offset'; offset: number }
  | { kind: 'to-datetime'; timestamp: number }
  | { kind: 'by-duration'; durationMs: number };

/** Every share-partition the group has state for, or these topics (all or some partitions). */
export type ShareResetScope = { allTopics: true } | { topics: { topic: string; partitions?: number[] }[] };

export interface ShareOffsetChange {
  topic: string;
  partition: number;
  /** SPSO before the change; null where the group has no state for the partition. */
  currentOffset: number | null;
  /** The new SPSO (an offset asked for, clamped into the log's [start, high watermark]). */
  newOffset: number;
  /** Why this partition was not changed. */
  error?: KafkaErrorName;
}

export interface AcquiredRecord {
  topic: string;
  partition: number;
  record: DecodedRecord;
  /** Kafka's delivery count: 1 on the first delivery. */
  deliveries: number;
  lockedUntil: number;
}

export interface ShareAck {
  topic: string;
  partition: number;
  offset: number;
  type: AcknowledgeType;
  deliveries?: number;
}

export interface SharePartitionView {
  topic: string;
  partition: number;
  startOffset: number;
  endOffset: number;
  stateEpoch: number;
  /** The partition's current leader epoch (Kafka's DescribeShareGroupOffsets answers one). */
  leaderEpoch: number;
  highWatermark: number;
  lag: number;
  inFlight: Record<ShownState, number>;
}

/** The purgatory key receives of a group wait on besides their partitions' (a colon is in no topic name). */
export const shareWatchKey = (group: string): string => `share:${group}`;

/** What `wakeWaitersIn` needs of a purgatory. */
export interface ShareWaiters {
  checkAndComplete(key: string): Promise<unknown>;
}

/** One request's acknowledgements of one share-partition, answered by `settle` (errors, or the failure). */
interface AckPart {
  member: string;
  acks: readonly ShareAck[];
  /** The request's write token (`remember`). */
  token: string;
  settle(errors: (KafkaErrorName | undefined)[] | undefined, failure?: unknown): void;
}

/** Contended share-partitions are left to the next receive rather than waited on. */
const ACQUIRE_ATTEMPTS = 6;
/**
 * How long a process uses a group's configs as it last read them. Every receive and acknowledgement
 * needs them, and reading the item each time was a read per request; a change made here is seen at
 * once, one made by another process (another Lambda) within this long.
 */
export const SHARE_CONFIG_CACHE_MS = 1000;
const CACHED_CONFIG_GROUPS = 1024;

/**
 * Share groups (KIP-932): any receiver takes records of any partition under a lock, and each
 * record is acknowledged on its own. One item per share-partition holds its state
 * (share-partition.ts); every change to it is one conditional write through the optimistic-update
 * helper, with a token per operation so that a write whose answer was lost is recognised rather
 * than applied twice.
 */
export class ShareGroups {
  private readonly settings: ShareGroupConfig;
  /** Kafka share consumers' membership (ShareGroupHeartbeat); HTTP receivers need none. */
  readonly members: ShareMembers;

  private readonly deps: ShareGroupDeps;

  constructor(deps: ShareGroupDeps) {
    // Share-partition items are stored as runs of records (share-partition-codec.ts).
    this.deps = { ...deps, metadata: new SharePartitionCodecStore(deps.metadata) };
    this.settings = { ...SHARE_GROUP_DEFAULTS, ...deps.config };
    this.members = new ShareMembers({ ...deps, limits: deps.memberLimits, register: (g) => this.register(g, true) });
    this.looks = new EmptyLooks(() => deps.clock.now());
    deps.log.onAppend((topic, partition) => this.looks.changed(topic, partition));
  }

  /** Share-partitions where this process's receives found nothing to take (empty-looks.ts). */
  private readonly looks: EmptyLooks;

  private readonly waiting = new Set<ShareWaiters>();

  /** This process's writers of each share-partition, in turn. */
  private readonly writers = new Turns();

  /**
   * Runs `work` (a read-modify-write of the share-partition) once this process's earlier writers
   * of it are done. Concurrent requests of one process on one share-partition otherwise read the
   * same version and all but one lose their conditional write, after reading the log for nothing
   * (about one write in six under 20 receivers in one process). Writers of other processes are
   * still met by the conditional write; this only orders this process's own.
   */
  private exclusive<R>(group: string, topic: string, partition: number, work: () => Promise<R>): Promise<R> {
    return this.writers.run(writerKey(group, topic, partition), work);
  }

  /**
   * Where receives of this process wait (the fetch purgatory, on `shareWatchKey(group)`): this
   * process's writes that make records of a group acquirable again (released, a lock ended, or
   * room under the in-flight bound where there was none) re-check them at once instead of at their
   * next back-off look. Writes of other processes tell nobody here; the back-off finds them.
   * Idempotent: each door calls it before it waits.
   */
  wakeWaitersIn(purgatory: ShareWaiters): void {
    this.waiting.add(purgatory);
  }

  private available(group: string): void {
    for (const purgatory of this.waiting) void purgatory.checkAndComplete(shareWatchKey(group));
  }

  /** The group's settings: broker-wide ones with the group's overrides. */
  async config(group: string): Promise<ShareGroupConfig> {
    return { ...this.settings, ...(await this.overrides(group)) };
  }

  async describeConfigs(group: string) {
    return showShareGroupConfig(await this.overrides(group, true));
  }

  /**
   * Sets (a string) or removes (null) group-level configs, in their order, in one conditional write
   * of the group's config item: all of them are stored or none (a failure, or an ambiguous write
   * found not to have applied, leaves the configs as they were). Every change is checked first:
   * INVALID_CONFIG for a bad one, and nothing stored; `validateOnly` stops there.
   */
  async alterConfigs(group: string, changes: readonly ShareConfigChange[], validateOnly = false): Promise<void> {
    const parsed = changes.map(({ name, value }) => {
      if (!isShareGroupConfigName(name)) throw new KafkaError('INVALID_CONFIG', `Unknown share group config ${name}`);
      return {
        field: SHARE_GROUP_CONFIG_NAMES[name],
        set: value === null ? undefined : parseShareGroupConfig(name, value),
      };
    });
    if (validateOnly) return;
    await this.register(group, true);
    this.forgetConfig(group);
    // The configs decide what a look may take (a delivery count limit, where a share-partition
    // starts): what a look of this process found empty is looked at again.
    this.looks.forgetGroup(group);
    await optimisticUpdate<Partial<ShareGroupConfig>, boolean>({
      metadata: this.deps.metadata,
      pk: shareGroupPk(group),
      sk: SHARE_GROUP_CONFIG_SK,
      decide: (item) => {
        const next = { ...item?.value };
        for (const { field, set } of parsed) {
          if (set) Object.assign(next, set);
          else delete next[field];
        }
        return { write: next, answer: () => true };
      },
      // The same settings found after an ambiguous write: it applied (or someone set the same).
      recognise: (found, attempted) => (holdsWrite(found, attempted) ? true : undefined),
      giveUp: { errorName: 'COORDINATOR_NOT_AVAILABLE', message: `Share group ${group}: configs contended` },
    }).finally(() => this.forgetConfig(group));
  }

  /** Share groups, by id (their registry items). */
  async list(): Promise<string[]> {
    const items = await this.deps.metadata.query(CLUSTER_PK, { beginsWith: SHARE_GROUP_REGISTRY_PREFIX });
    return items.map((i) => i.sk.slice(SHARE_GROUP_REGISTRY_PREFIX.length));
  }

  /** GROUP_ID_NOT_FOUND unless the group was ever used. */
  async requireGroup(group: string): Promise<void> {
    if (!(await this.deps.metadata.get(CLUSTER_PK, shareGroupRegistrySk(group))))
      throw new KafkaError('GROUP_ID_NOT_FOUND', `Share group ${group} does not exist`);
  }

  /** The group's share-partitions with SPSO, SPEO, in-flight counts and lag. */
  async describe(group: string): Promise<SharePartitionView[]> {
    await this.requireGroup(group);
    const items = await this.deps.metadata.query<SharePartitionState>(shareGroupPk(group), {
      beginsWith: SHARE_PARTITION_PREFIX,
    });
    const now = this.deps.clock.now();
    const limits = await this.config(group);
    const views: SharePartitionView[] = [];
    for (const item of items) {
      const [topicName, partition] = splitPartitionSk(item.sk);
      const topic = await this.deps.topics.get(topicName).catch(() => undefined);
      if (!topic || topic.id !== item.value.topicId) continue;
      const s = copyState(item.value);
      // As the next writer would see it: locks that ended are already free.
      expireLocks(s, now, limits);
      advanceStart(s, -1);
      const { highWatermark: hw, leaderEpoch } = await this.deps.log.state(topic, partition);
      views.push({
        topic: topicName,
        partition,
        startOffset: s.spso,
        endOffset: s.speo,
        stateEpoch: s.stateEpoch,
        leaderEpoch,
        highWatermark: hw,
        lag: lag(s, hw),
        inFlight: countByState(s),
      });
    }
    return views;
  }

  /**
   * Acquires up to `maxRecords` records of the topics' partitions for `member`, starting at a
   * random partition so that concurrent receivers spread over them. Each partition taken from is
   * one conditional write. Share-partitions where a look of this process found nothing to take
   * are passed by while that cannot have changed (`acquireFrom`), and looked at after the others
   * for SHARE_EMPTY_HINT_MS (empty-looks.ts): under many receivers most visits were to
   * share-partitions drained to the high watermark or full of locked records.
   */
  async acquire(
    group: string,
    topicNames: readonly string[],
    member: string,
    maxRecords: number,
  ): Promise<AcquiredRecord[]> {
    const topics = await Promise.all(topicNames.map((t) => this.deps.topics.get(t)));
    await this.register(group);
    const config = await this.config(group);
    const partitions = topics.flatMap((topic) =>
      Array.from({ length: topic.partitionCount }, (_, p) => ({ topic, p })),
    );
    const start = Math.floor(Math.random() * partitions.length);
    const now = this.deps.clock.now();
    const rotated = partitions.map((_, i) => partitions[(start + i) % partitions.length]!);
    const empty = (x: { topic: TopicMeta; p: number }) => this.looks.seemsEmpty(group, x.topic.name, x.p, now);
    const visits = [...rotated.filter((x) => !empty(x)), ...rotated.filter(empty)];
    const out: AcquiredRecord[] = [];
    // A share-partition another request of this process is writing is visited after the others:
    // taking it now would wait for that writer (or, without the wait, lose the race to it after
    // reading the log for nothing).
    const queue = [...visits];
    for (let i = 0; i < queue.length && out.length < maxRecords; i++) {
      const x = queue[i]!;
      if (i < visits.length && this.writers.busy(writerKey(group, x.topic.name, x.p))) {
        queue.push(x);
        continue;
      }
      try {
        out.push(...(await this.acquireFrom(group, x.topic, x.p, member, maxRecords - out.length, config)));
      } catch (e) {
        // A share-partition others are writing right now: the next partition instead.
        if (e instanceof KafkaError && e.errorName === 'COORDINATOR_NOT_AVAILABLE') continue;
        throw e;
      }
    }
    return out;
  }

  /**
   * Acquisition on one share-partition: read its state and the log after SPEO, then one conditional
   * write. After this process's other writers of the share-partition (`exclusive`). None where a
   * look of this process found nothing moments ago and nothing it knows of changed since
   * (empty-looks.ts): no storage read.
   */
  acquireFrom(
    group: string,
    topic: TopicMeta,
    partition: number,
    member: string,
    maxRecords: number,
    config: ShareGroupConfig,
  ): Promise<AcquiredRecord[]> {
    if (this.looks.skip(group, topic.name, partition)) return Promise.resolve([]);
    return this.exclusive(group, topic.name, partition, () =>
      this.acquireNow(group, topic, partition, member, maxRecords, config),
    );
  }

  private async acquireNow(
    ...[group, topic, partition, member, maxRecords, config]: Parameters<ShareGroups['acquireFrom']>
  ): Promise<AcquiredRecord[]> {
    const { metadata, log, clock } = this.deps;
    const pk = shareGroupPk(group);
    const sk = sharePartitionSk(topic.name, partition);
    const look = this.looks.begin(topic.name, partition);
    const item = await metadata.get<SharePartitionState>(pk, sk);
    const current = item && item.value.topicId === topic.id ? item.value : undefined;
    const can = current && acquirable(current, clock.now(), config);
    const nothing = (s: SharePartitionState) => {
      this.looks.nothing(group, topic.name, partition, look, firstLockEnd(s));
      return [];
    };
    // Full of records others hold: passed by on the item alone (no log read, no write).
    if (current && can?.busy) return nothing(current);
    const pstate = await log.state(topic, partition);
    // What the group may take up to: the high watermark, or (share.isolation.level=read_committed)
    // the last stable offset, below which every transaction is decided.
    const end = config.isolationLevel === 'read_committed' ? lastStableOffset(pstate) : pstate.highWatermark;
    let initial: Promise<number> | undefined;
    const start = () =>
      (initial ??= this.startOffset(config, topic, partition, { logStartOffset: pstate.logStartOffset, end }));
    const readFrom = Math.max(current?.speo ?? (await start()), pstate.logStartOffset);
    // New records are taken only for what redeliveries leave of maxRecords, and only into the room.
    const want = Math.min(maxRecords - (can?.available ?? 0), can?.room ?? config.maxRecordLocks);
    const read = (want > 0 &&
      readFrom < end &&
      (await readShareRecords(log, topic, partition, readFrom, {
        want,
        enough: (records) => records.length >= want,
        state: pstate,
        isolation: config.isolationLevel,
      }))) || { records: [], nextOffset: readFrom };
    // Nothing available, nothing new in the log and no dead-letter copy owed: the write's decision
    // on this very item would be to write nothing.
    if (current && can && !can.available && !can.archiving && !read.records.length && read.nextOffset === readFrom)
      return readFrom >= end ? nothing(current) : [];
    const token = writeToken();
    let taken: ReturnType<typeof acquire> = [];
    let created = false;
    const outcome = await updateSharePartition<boolean>(metadata, group, topic.name, partition, {
      known: { item },
      attempts: ACQUIRE_ATTEMPTS,
      decide: async (found) => {
        const now = clock.now();
        created = !(found && found.value.topicId === topic.id);
        const s = created ? initialState(topic.id, await start()) : copyState(found!.value);
        const expired = await this.sequenceDeadLetters(s, expireLocks(s, now, config));
        advanceStart(s, pstate.logStartOffset);
        taken = acquire(
          s,
          {
            member,
            now,
            maxRecords,
            readFrom,
            fresh: read.records.map((r) => r.offset),
            readEnd: read.nextOffset,
          },
          config,
        );
        advanceStart(s, pstate.logStartOffset);
        // Nothing taken may still move SPEO: past transaction markers (control records) at the log's
        // tail, which no receiver takes and which a reader would otherwise read again every time.
        const moved = found !== undefined && (s.speo !== found.value.speo || s.spso !== found.value.spso);
        if (taken.length === 0 && !expired && !moved && found) return { done: true };
        remember(s, token);
        return { write: s, answer: () => true };
      },
      // Our own write, applied before its answer was lost: its records are ours (`taken` is its decision).
      recognise: recognisedBy(token, true),
    });
    // The group may have been deleted since this process listed it (deleteGroup).
    if (created && outcome.how !== 'unchanged') await this.register(group, true);
    await this.deadLetters(group, topic, partition, outcome.item?.value, config);
    const after = outcome.item?.value;
    if (taken.length > 0 || !after || !nothingFor(after, clock.now(), config, end))
      this.looks.took(group, topic.name, partition);
    // Such as the look that made the item: it left nothing to take.
    else return nothing(after);
    if (taken.length === 0) return [];
    const records = await this.readOffsets(
      topic,
      partition,
      taken.map((t) => t.offset),
      read.records,
    );
    return taken.flatMap((t) => {
      const record = records.get(t.offset);
      // A record the log no longer holds (retention moved past it meanwhile) is not delivered.
      if (!record) return [];
      return [{ topic: topic.name, partition, record, deliveries: t.deliveries, lockedUntil: t.lockedUntil }];
    });
  }

  /** The records at these offsets: from the read already made, the rest read from the log. */
  private async readOffsets(
    topic: TopicMeta,
    partition: number,
    offsets: number[],
    known: readonly DecodedRecord[],
  ): Promise<Map<number, DecodedRecord>> {
    const wanted = new Set(offsets);
    const found = new Map<number, DecodedRecord>();
    for (const r of known) if (wanted.has(r.offset)) found.set(r.offset, r);
    let missing = offsets.filter((o) => !found.has(o)).sort((a, b) => a - b);
    while (missing.length > 0) {
      const from = missing[0]!;
      const last = missing[missing.length - 1]!;
      const read = await readShareRecords(this.deps.log, topic, partition, from, {
        want: missing.length,
        enough: (records) => records.length > 0 && records[records.length - 1]!.offset >= last,
      });
      if (!read || read.nextOffset <= from) break;
      for (const r of read.records) if (wanted.has(r.offset)) found.set(r.offset, r);
      missing = missing.filter((o) => !found.has(o) && o >= read.nextOffset);
    }
    return found;
  }

  /**
   * Acknowledges records `member` holds, one conditional write per share-partition. Per
   * acknowledgement: undefined (applied) or the Kafka error name of why not.
   */
  async acknowledge(
    group: string,
    member: string,
    acks: readonly ShareAck[],
    requestId?: string,
  ): Promise<(KafkaErrorName | undefined)[]> {
    const config = await this.config(group);
    // A caller's request id makes the token: its retry (the answer was lost) is the same operation.
    const token = requestId === undefined ? writeToken() : requestToken(member, requestId);
    const byPartition = new Map<string, number[]>();
    acks.forEach((a, i) => {
      const key = `${a.topic}\u0000${a.partition}`;
      const indexes = byPartition.get(key);
      if (indexes) indexes.push(i);
      else byPartition.set(key, [i]);
    });
    const results: (KafkaErrorName | undefined)[] = acks.map(() => undefined);
    await Promise.all(
      [...byPartition.values()].map(async (indexes) => {
        const first = acks[indexes[0]!]!;
        const part = { member, acks: indexes.map((i) => acks[i]!), token };
        const errors = await this.acknowledgeTogether(group, first.topic, first.partition, part, config).catch(
          (e: unknown) => {
            if (e instanceof KafkaError) return indexes.map(() => e.errorName);
            throw e;
          },
        );
        indexes.forEach((i, n) => (results[i] = errors[n]));
      }),
    );
    return results;
  }

  /** By share-partition: the acknowledgements waiting for this process's writer of it, to be written together. */
  private readonly waitingAcks = new Map<string, AckPart[]>();

  /**
   * Acknowledgements of one share-partition that arrive while this process is writing it wait
   * for that writer and are then written together: one conditional write (one read, one decode
   * and one encode of the item) for all of them instead of one each, applied in their order of
   * arrival, each with its own token, as they would have been one after another.
   */
  private acknowledgeTogether(
    group: string,
    topic: string,
    partition: number,
    part: Omit<AckPart, 'settle'>,
    config: ShareGroupConfig,
  ): Promise<(KafkaErrorName | undefined)[]> {
    const key = writerKey(group, topic, partition);
    return new Promise((resolve, reject) => {
      const settle = (errors: (KafkaErrorName | undefined)[] | undefined, e?: unknown) =>
        errors ? resolve(errors) : reject(e);
      const waiting = this.waitingAcks.get(key);
      if (waiting) return void waiting.push({ ...part, settle });
      const parts: AckPart[] = [{ ...part, settle }];
      this.waitingAcks.set(key, parts);
      void this.exclusive(group, topic, partition, async () => {
        // Its turn: acknowledgements arriving from now on wait for the next.
        this.waitingAcks.delete(key);
        try {
          const answers = await this.acknowledgeOn(group, topic, partition, parts, config);
          parts.forEach((p, i) => p.settle(answers[i]));
        } catch (e) {
          for (const p of parts) p.settle(undefined, e);
        }
      });
    });
  }

  private async acknowledgeOn(
    group: string,
    topicName: string,
    partition: number,
    parts: readonly AckPart[],
    limits: ShareGroupConfig,
  ): Promise<(KafkaErrorName | undefined)[][]> {
    const topic = await this.deps.topics.get(topicName);
    const all = (error: KafkaErrorName) => parts.map((p) => p.acks.map(() => error));
    if (partition >= topic.partitionCount) return all('UNKNOWN_TOPIC_OR_PARTITION');
    const answered = (p: AckPart, refused: readonly number[]) =>
      p.acks.map((_, i) => (refused.includes(i) ? ('INVALID_RECORD_STATE' as const) : undefined));
    let freed = false;
    // The last decision's answers and the token of a request it applied (all of its tokens are in
    // the write or none): found in the item after an ambiguous outcome, the write applied.
    let decided: { answers: (KafkaErrorName | undefined)[][]; token?: string } = { answers: [] };
    const applied = (found: SharePartitionState | undefined) =>
      decided.token !== undefined && found !== undefined && recall(found, decided.token) !== undefined;
    const update = updateSharePartition<(KafkaErrorName | undefined)[][]>(
      this.deps.metadata,
      group,
      topicName,
      partition,
      {
        decide: async (found) => {
          decided = { answers: [] };
          if (!found || found.value.topicId !== topic.id) return { done: all('INVALID_RECORD_STATE') };
          const now = this.deps.clock.now();
          const s = copyState(found.value);
          const expired = expireLocks(s, now, limits);
          let released = false;
          for (const p of parts) {
            // A retry of a request that applied: answered as the first attempt was, not refused.
            const earlier = recall(s, p.token);
            if (earlier) {
              decided.answers.push(answered(p, earlier));
              continue;
            }
            const errors = acknowledge(s, p.member, p.acks, now, limits);
            decided.answers.push(errors);
            if (errors.every((e) => e !== undefined)) continue;
            released ||= p.acks.some((a, i) => a.type === 'release' && !errors[i]);
            remember(
              s,
              p.token,
              errors.flatMap((e, i) => (e ? [i] : [])),
            );
            decided.token ??= p.token;
          }
          await this.sequenceDeadLetters(s, expired);
          const { answers } = decided;
          if (decided.token === undefined) return { done: answers };
          advanceStart(s, -1);
          // Waiting receivers are woken only when this makes records acquirable: some available again,
          // or room under the in-flight bound where there was none (SPSO moving within room changes
          // nothing for them, and waking every waiting receive on every accept cost more than it took).
          freed =
            expired ||
            released ||
            (found.value.records.length >= limits.maxRecordLocks && s.records.length < limits.maxRecordLocks);
          return { write: s, answer: () => answers };
        },
        recognise: (found, _attempted, retried) => (retried && applied(found?.value) ? decided.answers : undefined),
      },
    );
    try {
      const { result, item, how } = await update;
      if (how === 'written' && freed) {
        this.looks.changed(topicName, partition, group);
        this.available(group);
      }
      await this.deadLetters(group, topic, partition, item?.value, limits);
      return result;
    } catch (e) {
      if (e instanceof KafkaError) throw e;
      // The store failed with the outcome unknown (it may have applied, then lost its answer): the
      // item says whether our write is in.
      const item = await this.deps.metadata
        .get<SharePartitionState>(shareGroupPk(group), sharePartitionSk(topicName, partition))
        .catch(() => undefined);
      if (applied(item?.value)) return decided.answers;
      throw e;
    }
  }

  /**
   * share.auto.offset.reset, where a share-partition starts: the log start (earliest), the end
   * (latest: the high watermark, or under read_committed the last stable offset, so that an open
   * transaction's records are taken once it commits), or the first record at or after now minus
   * the duration (by_duration; the end when there is none).
   */
  private async startOffset(
    config: ShareGroupConfig,
    topic: TopicMeta,
    partition: number,
    p: { logStartOffset: number; end: number },
  ): Promise<number> {
    if (config.autoOffsetReset === 'earliest') return p.logStartOffset;
    if (config.autoOffsetReset === 'latest') return p.end;
    const ms = parseIsoDuration(config.autoOffsetReset.slice('by_duration:'.length)) ?? 0;
    return this.offsetAt(topic, partition, this.deps.clock.now() - ms, p.end);
  }

  /** The first offset with a timestamp at or after `timestamp`, else `otherwise`. */
  private async offsetAt(topic: TopicMeta, partition: number, timestamp: number, otherwise: number): Promise<number> {
    const found = await this.deps.log.reader.listOffset(topic, partition, { timestamp });
    return found.offset >= 0 ? found.offset : otherwise;
  }

  /**
   * NON_EMPTY_GROUP unless the group is empty, as Kafka requires of an offset change: no member of
   * the Kafka protocol and, for HTTP receivers (which have no membership), no record under an
   * unexpired lock in any of its share-partitions.
   */
  async requireEmpty(group: string): Promise<void> {
    const busy = await this.inUse(group);
    if (busy) throw new KafkaError('NON_EMPTY_GROUP', `Share group ${group} has ${busy}`);
  }

  /** Kafka's share group state: STABLE while in use (members, or records under unexpired locks), else EMPTY. */
  async state(group: string): Promise<'EMPTY' | 'STABLE'> {
    return (await this.inUse(group)) ? 'STABLE' : 'EMPTY';
  }

  /** What keeps the group from being empty, or undefined. */
  private async inUse(group: string): Promise<string | undefined> {
    if ((await this.members.list(group)).length > 0) return 'active members';
    const items = await this.deps.metadata.query<SharePartitionState>(shareGroupPk(group), {
      beginsWith: SHARE_PARTITION_PREFIX,
    });
    const now = this.deps.clock.now();
    const held = items.find((i) => holdsLocks(i.value, now));
    return held && `records locked by receivers (${splitPartitionSk(held.sk).join('-')})`;
  }

  /**
   * kafka-share-groups.sh --reset-offsets: the new SPSO of each partition in scope by the strategy;
   * written (AlterShareGroupOffsets) unless `dryRun`. Refused while the group is not empty.
   */
  async resetOffsets(
    group: string,
    scope: ShareResetScope,
    strategy: ShareResetStrategy,
    dryRun: boolean,
  ): Promise<ShareOffsetChange[]> {
    if (!dryRun) await this.requireEmpty(group);
    const current = new Map((await this.describe(group).catch(() => [])).map((v) => [`${v.topic}#${v.partition}`, v]));
    const targets: { topic: TopicMeta; partition: number }[] = [];
    if ('allTopics' in scope) {
      for (const v of current.values()) {
        const topic = await this.deps.topics.get(v.topic);
        targets.push({ topic, partition: v.partition });
      }
    } else {
      for (const t of scope.topics) {
        const topic = await this.deps.topics.get(t.topic);
        for (const p of t.partitions ?? Array.from({ length: topic.partitionCount }, (_, i) => i)) {
          if (p >= topic.partitionCount)
            throw new KafkaError('UNKNOWN_TOPIC_OR_PARTITION', `Partition ${t.topic}-${p} does not exist`);
          targets.push({ topic, partition: p });
        }
      }
    }
    const now = this.deps.clock.now();
    const plan = await Promise.all(
      targets.map(async ({ topic, partition }) => {
        const p = await this.deps.log.state(topic, partition);
        let offset: number;
        switch (strategy.kind) {
          case 'to-earliest':
            offset = p.logStartOffset;
            break;
          case 'to-latest':
            offset = p.highWatermark;
            break;
          case 'to-offset':
            offset = strategy.offset;
            break;
          case 'to-datetime':
            offset = await this.offsetAt(topic, partition, strategy.timestamp, p.highWatermark);
            break;
          case 'by-duration':
            offset = await this.offsetAt(topic, partition, now - strategy.durationMs, p.highWatermark);
            break;
        }
        return { topic: topic.name, partition, offset };
      }),
    );
    if (!dryRun) return this.alterOffsets(group, plan, false);
    return Promise.all(
      plan.map(async (e) => {
        const p = await this.deps.log.state(await this.deps.topics.get(e.topic), e.partition);
        return {
          topic: e.topic,
          partition: e.partition,
          currentOffset: current.get(`${e.topic}#${e.partition}`)?.startOffset ?? null,
          newOffset: clampOffset(e.offset, p),
        };
      }),
    );
  }

  /**
   * Kafka's AlterShareGroupOffsets: each share-partition starts afresh at the offset (clamped into
   * the log's [start, high watermark]), its in-flight records forgotten and its state epoch bumped;
   * one conditional write each. Refused (NON_EMPTY_GROUP) while the group is not empty, for the
   * whole request, and per partition where a receiver took a lock meanwhile.
   */
  async alterOffsets(
    group: string,
    entries: readonly { topic: string; partition: number; offset: number }[],
    check = true,
  ): Promise<ShareOffsetChange[]> {
    if (check) await this.requireEmpty(group);
    await this.register(group, true);
    return Promise.all(
      entries.map(async ({ topic: name, partition, offset }): Promise<ShareOffsetChange> => {
        const topic = await this.deps.topics.get(name).catch(() => undefined);
        if (!topic || partition >= topic.partitionCount)
          return {
            topic: name,
            partition,
            currentOffset: null,
            newOffset: offset,
            error: 'UNKNOWN_TOPIC_OR_PARTITION',
          };
        const newOffset = clampOffset(offset, await this.deps.log.state(topic, partition));
        const token = writeToken();
        let currentOffset: number | null = null;
        const { result } = await updateSharePartition<KafkaErrorName | null>(
          this.deps.metadata,
          group,
          name,
          partition,
          {
            decide: (found) => {
              const mine = found && found.value.topicId === topic.id ? found.value : undefined;
              currentOffset = mine?.spso ?? null;
              if (mine && holdsLocks(mine, this.deps.clock.now())) return { done: 'NON_EMPTY_GROUP' };
              const s = initialState(topic.id, newOffset);
              s.stateEpoch = (mine?.stateEpoch ?? 0) + 1;
              s.recent = [...(mine?.recent ?? [])];
              remember(s, token);
              return { write: s, answer: () => null };
            },
            recognise: recognisedBy(token, null),
          },
        );
        // SPEO moved (back, maybe): records where a look found none.
        this.looks.changed(name, partition, group);
        return { topic: name, partition, currentOffset, newOffset, ...(result ? { error: result } : {}) };
      }),
    );
  }

  /**
   * Kafka's DeleteShareGroupOffsets: the group's state for these topics is removed, so their
   * share-partitions start again by share.auto.offset.reset. Per topic, undefined or the error.
   */
  async deleteOffsets(group: string, topicNames: readonly string[]): Promise<(KafkaErrorName | undefined)[]> {
    await this.requireGroup(group);
    await this.requireEmpty(group);
    return Promise.all(
      topicNames.map(async (name): Promise<KafkaErrorName | undefined> => {
        const topic = await this.deps.topics.get(name).catch(() => undefined);
        if (!topic) return 'UNKNOWN_TOPIC_OR_PARTITION';
        const errors = await Promise.all(
          Array.from({ length: topic.partitionCount }, async (_, partition) => {
            const { result } = await updateSharePartition<KafkaErrorName | null>(
              this.deps.metadata,
              group,
              name,
              partition,
              {
                decide: (found) => {
                  if (!found) return { done: null };
                  if (found.value.topicId === topic.id && holdsLocks(found.value, this.deps.clock.now()))
                    return { done: 'NON_EMPTY_GROUP' };
                  return { remove: true, answer: () => null };
                },
                // A removal sent twice finds the item gone: it applied.
                recognise: (found, _attempted, retried) => (retried && !found ? null : undefined),
              },
            );
            this.looks.changed(name, partition, group);
            return result;
          }),
        );
        return errors.find((e) => e !== null) ?? undefined;
      }),
    );
  }

  /**
   * Kafka's DeleteGroups of a share group (Admin.deleteShareGroups): GROUP_ID_NOT_FOUND for a group
   * never used (or deleted), NON_EMPTY_GROUP unless the group is empty (`requireEmpty`: no Kafka
   * member, no record under an unexpired lock). Every share-partition item goes, each by a
   * conditional removal that refuses (NON_EMPTY_GROUP) where a receiver took a lock since the
   * check, and the registry item last: a deletion that stops midway (refused, a failed write, the
   * process gone) leaves the group listed, with some share-partitions started afresh, and deleting
   * it again finishes. The group's configs stay: they are set by group name (as Kafka keeps a
   * group's dynamic configs apart from the group), and a group of the same name used again reads
   * them, share.auto.offset.reset first.
   */
  async deleteGroup(group: string): Promise<void> {
    const { metadata } = this.deps;
    const registry = await metadata.get(CLUSTER_PK, shareGroupRegistrySk(group));
    if (!registry) throw new KafkaError('GROUP_ID_NOT_FOUND', `Share group ${group} does not exist`);
    await this.requireEmpty(group);
    const config = await this.config(group);
    const items = await metadata.query<SharePartitionState>(shareGroupPk(group), {
      beginsWith: SHARE_PARTITION_PREFIX,
    });
    const refused = await Promise.all(
      items.map((item) => {
        const [topicName, partition] = splitPartitionSk(item.sk);
        return this.exclusive(group, topicName, partition, () => this.removeSharePartition(group, item, config));
      }),
    );
    if (refused.some((r) => r))
      throw new KafkaError('NON_EMPTY_GROUP', `Share group ${group} has records locked by receivers`);
    this.registered.delete(group);
    this.looks.forgetGroup(group);
    await metadata.delete(CLUSTER_PK, shareGroupRegistrySk(group), { ifVersion: registry.version }).catch((e) => {
      // Gone already (this delete applied and its answer was lost, or another deletion), or made again.
      if (!(e instanceof ConditionFailedError)) throw e;
    });
    // A receive that started a share-partition after its removal (the group used again at once):
    // the group is listed again with it, so that its state is not left under a group nobody lists.
    const after = await metadata.query(shareGroupPk(group), { beginsWith: SHARE_PARTITION_PREFIX, limit: 1 });
    if (after.length > 0) await this.register(group, true);
  }

  /**
   * Removes one share-partition item of a group being deleted: true (refused) where a receiver
   * holds a record under an unexpired lock. The dead-letter copies it owes are produced first.
   */
  private async removeSharePartition(
    group: string,
    item: MetaItem<SharePartitionState>,
    config: ShareGroupConfig,
  ): Promise<boolean> {
    const [topicName, partition] = splitPartitionSk(item.sk);
    const topic = await this.deps.topics.get(topicName).catch(() => undefined);
    const mine = (s: SharePartitionState) => topic !== undefined && s.topicId === topic.id;
    if (topic && mine(item.value)) await this.deadLetters(group, topic, partition, item.value, config);
    const { result } = await updateSharePartition<boolean>(this.deps.metadata, group, topicName, partition, {
      decide: (found) => {
        if (!found) return { done: false };
        if (mine(found.value)) {
          if (holdsLocks(found.value, this.deps.clock.now())) return { done: true };
          // A dead-letter copy still owed (its production failed just now): kept, for a retry.
          if (found.value.records.some((r) => r.state === 'archiving'))
            throw new KafkaError(
              'COORDINATOR_NOT_AVAILABLE',
              `Share-partition ${topicName}-${partition}: dead-letter copies owed`,
            );
        }
        return { remove: true, answer: () => false };
      },
      // A removal sent twice finds the item gone: it applied.
      recognise: (found, _attempted, retried) => (retried && !found ? false : undefined),
    });
    this.looks.changed(topicName, partition, group);
    return result;
  }

  /**
   * Gives the records archived by this change their dead-letter sequences (a producer first, if
   * the share-partition has none). Resolves to whether the state changed, `changed` included.
   */
  private async sequenceDeadLetters(s: SharePartitionState, changed: boolean): Promise<boolean> {
    if (!needsSequence(s)) return changed;
    s.dlq ??= await newDeadLetterProducer(this.deps.producerIds);
    return sequenceArchiving(s) || changed;
  }

  /** Produces the dead-letter copies the item (as written or found) still owes, then marks them archived. */
  private async deadLetters(
    group: string,
    topic: TopicMeta,
    partition: number,
    state: SharePartitionState | undefined,
    config: ShareGroupConfig,
  ): Promise<void> {
    if (!state?.records.some((r) => r.state === 'archiving')) return;
    // The change that archived them is written and answered as such: a copy that fails here stays
    // archiving, and the next writer of the share-partition produces it.
    await produceDeadLetters(this.deps, group, topic, partition, state, config, (offsets) =>
      this.readOffsets(topic, partition, offsets, []),
    ).catch(() => undefined);
  }

  /**
   * Releases the records `member` holds on these share-partitions (its share session closed): they
   * are available again at once rather than when their locks end (archived, and dead-lettered,
   * past the delivery count limit). One conditional write per share-partition where the member
   * holds something; none elsewhere.
   */
  async release(
    group: string,
    member: string,
    partitions: readonly { topic: TopicMeta; partition: number }[],
  ): Promise<void> {
    const limits = await this.config(group);
    await Promise.all(
      partitions.map(({ topic, partition }) =>
        this.exclusive(group, topic.name, partition, async () => {
          const token = writeToken();
          const { item, how } = await updateSharePartition<boolean>(this.deps.metadata, group, topic.name, partition, {
            decide: async (found) => {
              if (!found || found.value.topicId !== topic.id) return { done: false };
              const s = copyState(found.value);
              expireLocks(s, this.deps.clock.now(), limits);
              if (releaseMember(s, member, limits) === 0) return { done: false };
              await this.sequenceDeadLetters(s, true);
              advanceStart(s, -1);
              remember(s, token);
              return { write: s, answer: () => true };
            },
            recognise: recognisedBy(token, true),
          });
          if (how === 'written') {
            this.looks.changed(topic.name, partition, group);
            this.available(group);
          }
          await this.deadLetters(group, topic, partition, item?.value, limits);
        }),
      ),
    );
  }

  /**
   * The registry item that lists the group: written on first use, and again (`again`) where a group
   * may have been deleted since this process wrote it (a share-partition or a member made afresh,
   * configs set: each rare), as the deletion removes it.
   */
  private async register(group: string, again = false): Promise<void> {
    const { metadata } = this.deps;
    const sk = shareGroupRegistrySk(group);
    if (this.registered.has(group) && !again) return;
    // Listed already, as it nearly always is: a read, where a refused conditional put costs a write.
    // The deletion removes the registry item before it looks for share-partitions made meanwhile,
    // so one made before this read is found by it if this read saw the item.
    if (again && (await metadata.get(CLUSTER_PK, sk))) return void this.registered.add(group);
    try {
      await metadata.put(CLUSTER_PK, sk, { groupId: group }, { ifAbsent: true });
    } catch (e) {
      if (!(e instanceof ConditionFailedError)) throw e;
    }
    this.registered.add(group);
  }

  private readonly registered = new Set<string>();

  private readonly cachedConfigs = new Map<string, { overrides: Partial<ShareGroupConfig>; until: number }>();
  /** Moves with every change made here: a read begun before a change does not keep what it read. */
  private configChanges = 0;

  private forgetConfig(group: string): void {
    this.configChanges++;
    this.cachedConfigs.delete(group);
  }

  /**
   * Reads of a group's configs under way, with `configChanges` as they began: the receives and
   * acknowledgements that find the cached copy too old together share one read instead of each
   * making its own (20 receivers did 20 reads of the item each time it expired).
   */
  private readonly configReads = new Map<string, { changes: number; read: Promise<Partial<ShareGroupConfig>> }>();

  /** The group's overrides: as read within SHARE_CONFIG_CACHE_MS, unless `fresh` (describing them reads the item). */
  private overrides(group: string, fresh = false): Promise<Partial<ShareGroupConfig>> {
    const cached = this.cachedConfigs.get(group);
    if (cached && cached.until > this.deps.clock.now() && !fresh) return Promise.resolve(cached.overrides);
    const pending = this.configReads.get(group);
    if (pending && pending.changes === this.configChanges && !fresh) return pending.read;
    const changes = this.configChanges;
    const read = this.readOverrides(group, changes);
    if (fresh) return read;
    this.configReads.set(group, { changes, read });
    const done = () => {
      if (this.configReads.get(group)?.read === read) this.configReads.delete(group);
    };
    read.then(done, done);
    return read;
  }

  private async readOverrides(group: string, changes: number): Promise<Partial<ShareGroupConfig>> {
    const now = this.deps.clock.now();
    const item: MetaItem<Partial<ShareGroupConfig>> | undefined = await this.deps.metadata.get(
      shareGroupPk(group),
      SHARE_GROUP_CONFIG_SK,
    );
    const overrides = item?.value ?? {};
    if (changes !== this.configChanges) return overrides;
    // Bounded: a process serving many groups keeps the ones in use (the oldest entry goes first).
    if (this.cachedConfigs.size >= CACHED_CONFIG_GROUPS)
      this.cachedConfigs.delete(this.cachedConfigs.keys().next().value!);
    this.cachedConfigs.set(group, { overrides, until: now + SHARE_CONFIG_CACHE_MS });
    return overrides;
  }
}

/**
 * A token of one write, for the item's `recent` list: 96 random bits in 16 characters. The item
 * keeps 32 of them, and every read and write of it carries them: as UUIDs (36 characters) they
 * were most of its bytes, over one DynamoDB write unit by themselves.
 */
const writeToken = () => randomBytes(12).toString('base64url');

/** A short token of (member, request id): the item keeps 32 of them, and a member id may be long. */
function requestToken(member: string, requestId: string): string {
  return createHash('sha256').update(`${member}\u0000${requestId}`).digest('base64url').slice(0, 22);
}

/** Whether a receiver holds a record of it under a lock that has not ended. */
function holdsLocks(s: SharePartitionState, now: number): boolean {
  return s.records.some((r) => r.state === 'acquired' && (r.lockedUntil ?? 0) > now);
}

/**
 * Whether a look at the share-partition now would find nothing to take (`end`: the log's high
 * watermark as read, or its last stable offset under read_committed).
 */
function nothingFor(s: SharePartitionState, now: number, config: ShareGroupConfig, end: number): boolean {
  const can = acquirable(s, now, config);
  return can.busy || (!can.available && !can.archiving && s.speo >= end);
}

/** When the first lock of the item ends: a look can find a record available from then on. */
function firstLockEnd(s: SharePartitionState): number {
  let end = Number.POSITIVE_INFINITY;
  for (const r of s.records)
    if (r.state === 'acquired' && r.lockedUntil !== undefined) end = Math.min(end, r.lockedUntil);
  return end;
}
const writerKey = (group: string, topic: string, partition: number) => `${group}\u0000${topic}\u0000${partition}`;

function clampOffset(offset: number, p: { logStartOffset: number; highWatermark: number }): number {
  return Math.min(Math.max(offset, p.logStartOffset), p.highWatermark);
}

function splitPartitionSk(sk: string): [string, number] {
  const rest = sk.slice(SHARE_PARTITION_PREFIX.length);
  const at = rest.lastIndexOf('#');
  return [rest.slice(0, at), Number(rest.slice(at + 1))];
}
