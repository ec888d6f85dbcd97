import { createHash, randomUUID } from 'node:crypto';
import type { Clock } from '../clock.js';
import { fetchedRecords } from '../log/fetched-records.js';
import { onlyPartition, type PartitionLog } from '../log/partition-log.js';
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
import {
  isShareGroupConfigName,
  parseShareGroupConfig,
  SHARE_GROUP_CONFIG_NAMES,
  SHARE_GROUP_DEFAULTS,
  showShareGroupConfig,
  type ShareGroupConfig,
} from './share-config.js';
import {
  acknowledge,
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
  type Limits,
  type RecordState,
  type SharePartitionState,
} from './share-partition.js';

export interface ShareGroupDeps {
  metadata: MetadataStore;
  clock: Clock;
  topics: TopicRegistry;
  log: PartitionLog;
  /** Broker-wide settings (defaults: Kafka's). */
  config?: Partial<ShareGroupConfig>;
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
  highWatermark: number;
  lag: number;
  inFlight: Record<RecordState, number>;
}

/** Bytes read from the log per partition and receive: the records a receive asks for are small. */
const READ_BYTES = 1024 * 1024;
/** Contended share-partitions are left to the next receive rather than waited on. */
const ACQUIRE_ATTEMPTS = 6;

/**
 * Share groups (KIP-932): any receiver takes records of any partition under a lock, and each
 * record is acknowledged on its own. One item per share-partition holds its state
 * (share-partition.ts); every change to it is one conditional write through the optimistic-update
 * helper, with a token per operation so that a write whose answer was lost is recognised rather
 * than applied twice.
 */
export class ShareGroups {
  private readonly settings: ShareGroupConfig;

  constructor(private readonly deps: ShareGroupDeps) {
    this.settings = { ...SHARE_GROUP_DEFAULTS, ...deps.config };
  }

  /** The group's settings: broker-wide ones with the group's overrides. */
  async config(group: string): Promise<ShareGroupConfig> {
    return { ...this.settings, ...(await this.overrides(group)) };
  }

  async describeConfigs(group: string) {
    return showShareGroupConfig(await this.overrides(group));
  }

  /** Sets (value) or removes (undefined) one group-level config; INVALID_CONFIG for a bad one. */
  async alterConfig(group: string, name: string, value: string | undefined): Promise<void> {
    if (!isShareGroupConfigName(name)) throw new KafkaError('INVALID_CONFIG', `Unknown share group config ${name}`);
    const change = value === undefined ? undefined : parseShareGroupConfig(name, value);
    const field = SHARE_GROUP_CONFIG_NAMES[name];
    await this.register(group);
    await optimisticUpdate<Partial<ShareGroupConfig>, boolean>({
      metadata: this.deps.metadata,
      pk: shareGroupPk(group),
      sk: SHARE_GROUP_CONFIG_SK,
      decide: (item) => {
        const next = { ...item?.value };
        if (change) Object.assign(next, change);
        else delete next[field];
        return { write: next, answer: () => true };
      },
      // The same settings found after an ambiguous write: it applied (or someone set the same).
      recognise: (found, attempted) => (holdsWrite(found, attempted) ? true : undefined),
      giveUp: { errorName: 'COORDINATOR_NOT_AVAILABLE', message: `Share group ${group}: configs contended` },
    });
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
      const hw = (await this.deps.log.state(topic, partition)).highWatermark;
      views.push({
        topic: topicName,
        partition,
        startOffset: s.spso,
        endOffset: s.speo,
        stateEpoch: s.stateEpoch,
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
   * one conditional write.
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
    const out: AcquiredRecord[] = [];
    for (let i = 0; i < partitions.length && out.length < maxRecords; i++) {
      const { topic, p } = partitions[(start + i) % partitions.length]!;
      try {
        out.push(...(await this.acquireFrom(group, topic, p, member, maxRecords - out.length, config)));
      } catch (e) {
        // A share-partition others are writing right now: the next partition instead.
        if (e instanceof KafkaError && e.errorName === 'COORDINATOR_NOT_AVAILABLE') continue;
        throw e;
      }
    }
    return out;
  }

  /** Acquisition on one share-partition: read its state and the log after SPEO, then one conditional write. */
  async acquireFrom(
    group: string,
    topic: TopicMeta,
    partition: number,
    member: string,
    maxRecords: number,
    config: ShareGroupConfig,
  ): Promise<AcquiredRecord[]> {
    const { metadata, log, clock } = this.deps;
    const pk = shareGroupPk(group);
    const sk = sharePartitionSk(topic.name, partition);
    const item = await metadata.get<SharePartitionState>(pk, sk);
    const current = item && item.value.topicId === topic.id ? item.value : undefined;
    const pstate = await log.state(topic, partition);
    const readFrom = Math.max(current?.speo ?? startOffset(config, pstate), pstate.logStartOffset);
    const read = (readFrom < pstate.highWatermark && (await readOrNone(log, topic, partition, readFrom))) || {
      records: [],
      nextOffset: readFrom,
    };
    const token = randomUUID();
    let taken: { offset: number; deliveries: number }[] = [];
    const outcome = await optimisticUpdate<SharePartitionState, boolean>({
      metadata,
      pk,
      sk,
      known: { item },
      attempts: ACQUIRE_ATTEMPTS,
      decide: (found) => {
        const now = clock.now();
        const s =
          found && found.value.topicId === topic.id
            ? copyState(found.value)
            : initialState(topic.id, startOffset(config, pstate));
        const expired = expireLocks(s, now, config);
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
        if (taken.length === 0 && !expired && found) return { done: true };
        remember(s, token);
        return { write: s, answer: () => true };
      },
      // Our own write, applied before its answer was lost: its records are ours (`taken` is its decision).
      recognise: (found, _attempted, retried) => (retried && found?.value.recent.includes(token) ? true : undefined),
      giveUp: {
        errorName: 'COORDINATOR_NOT_AVAILABLE',
        message: `Share-partition ${topic.name}-${partition} is contended`,
      },
    });
    if (taken.length === 0) return [];
    const written = outcome.item!.value;
    const lockedUntil = new Map(written.records.map((r) => [r.offset, r.lockedUntil ?? 0]));
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
      return [
        { topic: topic.name, partition, record, deliveries: t.deliveries, lockedUntil: lockedUntil.get(t.offset)! },
      ];
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
      const read = await readOrNone(this.deps.log, topic, partition, from);
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
    const token = requestId === undefined ? randomUUID() : requestToken(member, requestId);
    const byPartition = new Map<string, number[]>();
    acks.forEach((a, i) => {
      const key = `${a.topic}\u0000${a.partition}`;
      byPartition.set(key, [...(byPartition.get(key) ?? []), i]);
    });
    const results: (KafkaErrorName | undefined)[] = acks.map(() => undefined);
    await Promise.all(
      [...byPartition.values()].map(async (indexes) => {
        const first = acks[indexes[0]!]!;
        const errors = await this.acknowledgeOn(
          group,
          first.topic,
          first.partition,
          member,
          indexes.map((i) => acks[i]!),
          config,
          token,
        ).catch((e: unknown) => {
          if (e instanceof KafkaError) return indexes.map(() => e.errorName);
          throw e;
        });
        indexes.forEach((i, n) => (results[i] = errors[n]));
      }),
    );
    return results;
  }

  private async acknowledgeOn(
    group: string,
    topicName: string,
    partition: number,
    member: string,
    acks: readonly ShareAck[],
    limits: Limits,
    token: string,
  ): Promise<(KafkaErrorName | undefined)[]> {
    const topic = await this.deps.topics.get(topicName);
    if (partition >= topic.partitionCount) return acks.map(() => 'UNKNOWN_TOPIC_OR_PARTITION');
    const pk = shareGroupPk(group);
    const sk = sharePartitionSk(topicName, partition);
    const answered = (refused: readonly number[]) =>
      acks.map((_, i) => (refused.includes(i) ? ('INVALID_RECORD_STATE' as const) : undefined));
    const update = optimisticUpdate<SharePartitionState, (KafkaErrorName | undefined)[]>({
      metadata: this.deps.metadata,
      pk,
      sk,
      decide: (found) => {
        if (!found || found.value.topicId !== topic.id)
          return { done: acks.map(() => 'INVALID_RECORD_STATE' as const) };
        // A retry of a request that applied: answered as the first attempt was, not refused.
        const earlier = recall(found.value, token);
        if (earlier) return { done: answered(earlier) };
        const now = this.deps.clock.now();
        const s = copyState(found.value);
        expireLocks(s, now, limits);
        const errors = acknowledge(s, member, acks, now, limits);
        if (errors.every((e) => e !== undefined)) return { done: errors };
        advanceStart(s, -1);
        remember(
          s,
          token,
          errors.flatMap((e, i) => (e ? [i] : [])),
        );
        return { write: s, answer: () => errors };
      },
      recognise: (found, _attempted, retried) => {
        const earlier = retried && found ? recall(found.value, token) : undefined;
        return earlier && answered(earlier);
      },
      giveUp: {
        errorName: 'COORDINATOR_NOT_AVAILABLE',
        message: `Share-partition ${topicName}-${partition} is contended`,
      },
    });
    try {
      return (await update).result;
    } catch (e) {
      if (e instanceof KafkaError) throw e;
      // The store failed with the outcome unknown (it may have applied, then lost its answer): the
      // item says whether our write is in.
      const item = await this.deps.metadata.get<SharePartitionState>(pk, sk).catch(() => undefined);
      const earlier = item && recall(item.value, token);
      if (earlier) return answered(earlier);
      throw e;
    }
  }

  /** The registry item that lists the group: written once, on first use. */
  private async register(group: string): Promise<void> {
    const { metadata } = this.deps;
    const sk = shareGroupRegistrySk(group);
    if (this.registered.has(group)) return;
    try {
      await metadata.put(CLUSTER_PK, sk, { groupId: group }, { ifAbsent: true });
    } catch (e) {
      if (!(e instanceof ConditionFailedError)) throw e;
    }
    this.registered.add(group);
  }

  private readonly registered = new Set<string>();

  private async overrides(group: string): Promise<Partial<ShareGroupConfig>> {
    const item: MetaItem<Partial<ShareGroupConfig>> | undefined = await this.deps.metadata.get(
      shareGroupPk(group),
      SHARE_GROUP_CONFIG_SK,
    );
    return item?.value ?? {};
  }
}

/** The log's records from `offset`; undefined when retention moved the log's start past it meanwhile. */
function readOrNone(log: PartitionLog, topic: TopicMeta, partition: number, offset: number) {
  return log.reader.readBatchesMany([{ topic, partition, offset, maxBytes: READ_BYTES }], READ_BYTES).then(
    (outcomes) => fetchedRecords(onlyPartition(outcomes), offset, 'read_uncommitted'),
    (e: unknown) => {
      if (e instanceof KafkaError && e.errorName === 'OFFSET_OUT_OF_RANGE') return undefined;
      throw e;
    },
  );
}

/** share.auto.offset.reset: the log start (earliest) or the high watermark (latest) when the share-partition starts. */
function startOffset(config: ShareGroupConfig, p: { logStartOffset: number; highWatermark: number }): number {
  return config.autoOffsetReset === 'earliest' ? p.logStartOffset : p.highWatermark;
}

/** A short token of (member, request id): the item keeps 32 of them, and a member id may be long. */
function requestToken(member: string, requestId: string): string {
  return createHash('sha256').update(member).update('\u0000').update(requestId).digest('base64url').slice(0, 22);
}

function splitPartitionSk(sk: string): [string, number] {
  const rest = sk.slice(SHARE_PARTITION_PREFIX.length);
  const at = rest.lastIndexOf('#');
  return [rest.slice(0, at), Number(rest.slice(at + 1))];
}
