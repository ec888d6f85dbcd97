import { randomUUID } from 'node:crypto';
import type { Clock } from '../clock.js';
import { KafkaError, isKafkaError } from '../wire/errors.js';
import { onlyPartition, type PartitionLog } from '../log/partition-log.js';
import { fetchedRecords } from '../log/fetched-records.js';
import type { DecodedRecord } from '../wire/record-batch.js';
import type { Topic, TopicRegistry } from '../topics/topics.js';
import { holdsWrite, optimisticUpdate } from '../storage/optimistic-update.js';
import type { MetadataStore, MetaItem } from '../storage/ports.js';
import {
  assignmentKeys,
  minus,
  owns,
  parseTpKey,
  toPartitions,
  tpKey,
  type Assignment,
  type TopicPartition,
} from './assignment.js';
import type { GroupCoordinator, HeartbeatAnswer } from './coordinator.js';
import { validateGroupId } from './group-id.js';
import type { AutoOffsetReset, GroupOffsets, OffsetRecord } from './offsets.js';
import { groupPk, instanceSk } from '../storage/key-layout.js';
import { partitionWatchKey } from '../timer/delayed-fetch.js';

export type InstanceFormat = 'binary' | 'json';

/** A REST Proxy v2 consumer instance (pk `group#{id}`, sk `inst#{name}`): a group member plus its positions. */
export interface InstanceRecord {
  groupId: string;
  name: string;
  format: InstanceFormat;
  autoOffsetReset: AutoOffsetReset;
  autoCommit: boolean;
  /** consumer.request.timeout.ms: the default long-poll wait of a records request. */
  requestTimeoutMs: number;
  memberId: string;
  memberEpoch: number;
  subscription: string[];
  /** What the member held after its last heartbeat. */
  assignment: Assignment;
  /** Next offset to fetch, by `topic#partition`. */
  positions: Record<string, number>;
  /** What auto-commit last wrote, so unchanged positions are not committed again. */
  committedPositions: Record<string, number>;
  /** Rotates the partition a poll starts with, so one busy partition cannot starve the others. */
  nextPartition: number;
  createdAt: number;
}

export interface CreateInstanceOptions {
  name?: string;
  format?: InstanceFormat;
  autoOffsetReset?: AutoOffsetReset;
  autoCommit?: boolean;
  requestTimeoutMs?: number;
}

export interface PolledRecord extends DecodedRecord {
  topic: string;
  partition: number;
}

/** Waits until `check()` holds or `timeoutMs` passes; woken early by appends to `keys` when it can be. */
export type AwaitCondition = (options: {
  keys: string[];
  timeoutMs: number;
  check: () => Promise<boolean>;
}) => Promise<boolean>;

export interface InstanceDeps {
  metadata: MetadataStore;
  clock: Clock;
  topics: TopicRegistry;
  log: PartitionLog;
  coordinator: GroupCoordinator;
  offsets: GroupOffsets;
  awaitCondition: AwaitCondition;
  /** consumer.instance.timeout.ms: an instance idle this long expires (its member's session timeout). */
  instanceTimeoutMs: number;
  /** Upper bound of one records request's wait. */
  maxPollWaitMs: number;
}

const notFound = (groupId: string, name: string) =>
  new KafkaError('UNKNOWN_MEMBER_ID', `Consumer instance ${name} of group ${groupId} not found (it may have expired)`);

/**
 * REST Proxy v2's stateful consumer, with its state in the metadata store instead of one process's
 * memory, so any server can serve any call. Each instance is a group member (session timeout =
 * consumer.instance.timeout.ms) that heartbeats on every call it receives: an idle instance expires
 * exactly like a member whose session timed out, and its item is then deleted. Revocations are
 * handled server-side: positions of revoked partitions are committed (with auto-commit) and dropped,
 * then acknowledged by a second heartbeat listing what the instance still owns.
 */
/** What a platform lets one poll answer be (Lambda: 6 MB), and what a record takes of it as shown. */
export interface AnswerBudget {
  limitBytes: number;
  sizeOf: (r: PolledRecord, format: InstanceFormat) => number;
}

export class ConsumerInstances {
  constructor(private readonly deps: InstanceDeps) {
    deps.coordinator.onMembersRemoved(async (groupId, members) => {
      await Promise.all(
        members
          .filter((m) => m.instanceName !== undefined)
          .map((m) => this.deps.metadata.delete(groupPk(groupId), instanceSk(m.instanceName!))),
      );
    });
  }

  async create(groupId: string, options: CreateInstanceOptions): Promise<InstanceRecord> {
    validateGroupId(groupId);
    const name = options.name ?? `rest-consumer-${randomUUID()}`;
    if (!/^[A-Za-z0-9._-]{1,255}$/.test(name))
      throw new KafkaError('INVALID_REQUEST', 'The consumer name may hold 1 to 255 of A-Z a-z 0-9 . _ -');
    const exists = () =>
      new KafkaError('CONSUMER_ALREADY_EXISTS', `Consumer ${name} already exists in group ${groupId}`);
    if (await this.deps.metadata.get(groupPk(groupId), instanceSk(name))) throw exists();
    const answer = await this.deps.coordinator.heartbeat(groupId, {
      memberId: '',
      memberEpoch: 0,
      clientId: name,
      instanceName: name,
      subscribedTopics: [],
      sessionTimeoutMs: this.deps.instanceTimeoutMs,
    });
    const record: InstanceRecord = {
      groupId,
      name,
      format: options.format ?? 'binary',
      autoOffsetReset: options.autoOffsetReset ?? 'latest',
      autoCommit: options.autoCommit ?? true,
      requestTimeoutMs: options.requestTimeoutMs ?? 1000,
      memberId: answer.memberId,
      memberEpoch: answer.memberEpoch,
      subscription: [],
      assignment: answer.assignment,
      positions: {},
      committedPositions: {},
      nextPartition: 0,
      createdAt: this.deps.clock.now(),
    };
    try {
      // The member id is this call's token: a create whose answer was lost finds its own instance.
      await optimisticUpdate<InstanceRecord, true>({
        metadata: this.deps.metadata,
        pk: groupPk(groupId),
        sk: instanceSk(name),
        known: { item: undefined },
        attempts: 1,
        giveUp: { errorName: 'CONSUMER_ALREADY_EXISTS', message: exists().message },
        decide: () => ({ write: record, answer: () => true as const }),
        recognise: (found) => (found?.value.memberId === record.memberId ? (true as const) : undefined),
      });
    } catch (e) {
      await this.deps.coordinator.leave(groupId, answer.memberId).catch(() => {});
      throw e;
    }
    return record;
  }

  async delete(groupId: string, name: string): Promise<void> {
    const item = await this.load(groupId, name);
    const inst = item.value;
    if (inst.autoCommit) await this.commitPositions(inst, inst.positions).catch(() => {});
    await this.deps.coordinator.leave(groupId, inst.memberId).catch((e: unknown) => {
      if (!isKafkaError(e, 'UNKNOWN_MEMBER_ID')) throw e;
    });
    await this.deps.metadata.delete(groupPk(groupId), instanceSk(name));
  }

  async subscribe(groupId: string, name: string, topics: string[]): Promise<void> {
    await this.update(groupId, name, async (inst) => {
      inst.subscription = [...new Set(topics)].sort();
      await this.sync(inst);
    });
  }

  async subscription(groupId: string, name: string): Promise<string[]> {
    return (await this.load(groupId, name)).value.subscription;
  }

  async unsubscribe(groupId: string, name: string): Promise<void> {
    await this.subscribe(groupId, name, []);
  }

  async assignments(groupId: string, name: string): Promise<TopicPartition[]> {
    return toPartitions(
      await this.update(groupId, name, async (inst) => {
        await this.sync(inst);
        return inst.assignment;
      }),
    );
  }

  /**
   * Fetches records from the instance's partitions from its positions, about `maxBytes` in all;
   * with nothing to return it waits up to `timeoutMs` for an append (long poll).
   */
  async poll(
    groupId: string,
    name: string,
    options: { timeoutMs?: number; maxBytes: number; answer?: AnswerBudget },
  ): Promise<{ format: InstanceFormat; records: PolledRecord[] }> {
    const started = Date.now();
    let format: InstanceFormat = 'binary';
    const records = await this.update(groupId, name, async (inst) => {
      format = inst.format;
      if (inst.autoCommit) await this.commitPositions(inst, inst.positions);
      await this.sync(inst);
      const parts = toPartitions(inst.assignment);
      const topics = await this.topicsOf(parts);
      for (const tp of parts) {
        const key = tpKey(tp.topic, tp.partition);
        if (inst.positions[key] === undefined) {
          inst.positions[key] = (
            await this.deps.offsets.position(groupId, topics.get(tp.topic)!, tp.partition, inst.autoOffsetReset)
          ).offset;
        }
      }
      const timeoutMs = Math.min(options.timeoutMs ?? inst.requestTimeoutMs, this.deps.maxPollWaitMs);
      let out = await this.read(inst, parts, topics, options.maxBytes, options.answer);
      const left = timeoutMs - (Date.now() - started);
      if (out.length === 0 && parts.length > 0 && left > 0) {
        const hasData = async () => {
          for (const tp of parts) {
            const state = await this.deps.log.state(topics.get(tp.topic)!, tp.partition);
            if (state.highWatermark > inst.positions[tpKey(tp.topic, tp.partition)]!) return true;
          }
          return false;
        };
        if (
          await this.deps.awaitCondition({
            keys: parts.map((tp) => partitionWatchKey(tp.topic, tp.partition)),
            timeoutMs: left,
            check: hasData,
          })
        ) {
          out = await this.read(inst, parts, topics, options.maxBytes, options.answer);
        }
      }
      inst.nextPartition = (inst.nextPartition + 1) % Math.max(1, parts.length);
      return out;
    });
    return { format, records };
  }

  /** Commits explicit offsets (REST Proxy v2 commits offset + 1: the offsets sent are the last consumed). */
  async commit(
    groupId: string,
    name: string,
    offsets?: { topic: string; partition: number; offset: number; metadata?: string }[],
  ): Promise<void> {
    const inst = (await this.load(groupId, name)).value;
    if (offsets === undefined || offsets.length === 0) {
      await this.update(groupId, name, async (i) => {
        await this.commitPositions(i, i.positions, true);
      });
      return;
    }
    await this.deps.offsets.commit(groupId, {
      memberId: inst.memberId,
      generation: inst.memberEpoch,
      offsets: offsets.map((o) => ({
        topic: o.topic,
        partition: o.partition,
        offset: o.offset + 1,
        ...(o.metadata === undefined ? {} : { metadata: o.metadata }),
      })),
    });
  }

  async committed(groupId: string, name: string, partitions: TopicPartition[]): Promise<OffsetRecord[]> {
    await this.load(groupId, name);
    const out: OffsetRecord[] = [];
    for (const tp of partitions) {
      const r = await this.deps.offsets.committedOffset(groupId, await this.deps.topics.get(tp.topic), tp.partition);
      if (r) out.push(r);
    }
    return out;
  }

  /** Seeks: explicit offsets, or the beginning / end of the given partitions (all assigned ones when empty). */
  async seek(
    groupId: string,
    name: string,
    to:
      | { offsets: { topic: string; partition: number; offset: number }[] }
      | { partitions: TopicPartition[]; end: boolean },
  ): Promise<void> {
    await this.update(groupId, name, async (inst) => {
      const check = (tp: TopicPartition) => {
        if (!owns(inst.assignment, tp.topic, tp.partition))
          throw new KafkaError('INVALID_REQUEST', `No current assignment for partition ${tp.topic}-${tp.partition}`);
      };
      if ('offsets' in to) {
        for (const o of to.offsets) {
          check(o);
          if (!Number.isSafeInteger(o.offset) || o.offset < 0)
            throw new KafkaError('INVALID_REQUEST', 'offset must be a non-negative integer');
          inst.positions[tpKey(o.topic, o.partition)] = o.offset;
        }
        return;
      }
      const parts = to.partitions.length > 0 ? to.partitions : toPartitions(inst.assignment);
      for (const tp of parts) {
        check(tp);
        const { offset } = await this.deps.log.reader.listOffset(
          await this.deps.topics.get(tp.topic),
          tp.partition,
          to.end ? 'latest' : 'earliest',
        );
        inst.positions[tpKey(tp.topic, tp.partition)] = offset;
      }
    });
  }

  private async load(groupId: string, name: string): Promise<MetaItem<InstanceRecord>> {
    validateGroupId(groupId);
    const item = await this.deps.metadata.get<InstanceRecord>(groupPk(groupId), instanceSk(name));
    if (!item) throw notFound(groupId, name);
    return item;
  }

  /**
   * Read-modify-write of the instance item: `change` mutates a copy; it is written back with
   * `ifVersion` when it changed. Two calls racing on one instance both run, the loser again.
   */
  private async update<T>(groupId: string, name: string, change: (inst: InstanceRecord) => Promise<T>): Promise<T> {
    validateGroupId(groupId);
    const { result } = await optimisticUpdate<InstanceRecord, { value: T }>({
      metadata: this.deps.metadata,
      pk: groupPk(groupId),
      sk: instanceSk(name),
      attempts: 6,
      giveUp: { errorName: 'COORDINATOR_NOT_AVAILABLE', message: `Concurrent requests to consumer ${name}; retry` },
      decide: async (item) => {
        if (!item) throw notFound(groupId, name);
        const inst = structuredClone(item.value);
        let value: T;
        try {
          value = await change(inst);
        } catch (e) {
          if (isKafkaError(e, 'UNKNOWN_MEMBER_ID') && !(await this.memberExists(inst))) {
            await this.deps.metadata.delete(groupPk(groupId), instanceSk(name)).catch(() => {});
            throw notFound(groupId, name);
          }
          throw e;
        }
        if (JSON.stringify(inst) === JSON.stringify(item.value)) return { done: { value } };
        return { write: inst, answer: () => ({ value }) };
      },
      // The same instance as this call left it: its write applied (a repeat found it).
      recognise: (found, attempted) =>
        holdsWrite(found, attempted) && 'answer' in attempted ? attempted.answer(found) : undefined,
    });
    return result.value;
  }

  private async memberExists(inst: InstanceRecord): Promise<boolean> {
    const snap = await this.deps.coordinator.findMember(inst.groupId, inst.memberId);
    return snap?.group.members[inst.memberId] !== undefined;
  }

  /**
   * Heartbeats the instance's member and applies the answer: revoked partitions are committed (with
   * auto-commit) and forgotten, then released by a second heartbeat. A fenced member rejoins.
   */
  private async sync(inst: InstanceRecord): Promise<void> {
    const beat = (epoch: number): Promise<HeartbeatAnswer> =>
      this.deps.coordinator.heartbeat(inst.groupId, {
        memberId: inst.memberId,
        memberEpoch: epoch,
        clientId: inst.name,
        instanceName: inst.name,
        subscribedTopics: inst.subscription,
        sessionTimeoutMs: this.deps.instanceTimeoutMs,
        ownedPartitions: inst.assignment,
      });
    let answer: HeartbeatAnswer;
    try {
      answer = await beat(inst.memberEpoch);
    } catch (e) {
      if (!isKafkaError(e, 'FENCED_MEMBER_EPOCH')) throw e;
      inst.assignment = {};
      inst.positions = {};
      answer = await beat(0);
    }
    for (let round = 0; round < 2; round++) {
      const revoked = minus(inst.assignment, answer.assignment);
      if (assignmentKeys(revoked).size > 0) {
        const keys = assignmentKeys(revoked);
        if (inst.autoCommit) {
          await this.commitPositions(
            inst,
            Object.fromEntries(Object.entries(inst.positions).filter(([k]) => keys.has(k))),
          ).catch(() => {});
        }
        for (const k of keys) {
          delete inst.positions[k];
          delete inst.committedPositions[k];
        }
      }
      inst.assignment = answer.assignment;
      inst.memberEpoch = answer.memberEpoch;
      if (assignmentKeys(revoked).size === 0) break;
      answer = await beat(inst.memberEpoch); // acknowledges the revocation; may bring new partitions
    }
    inst.assignment = answer.assignment;
    inst.memberEpoch = answer.memberEpoch;
    for (const k of Object.keys(inst.positions)) if (!assignmentKeys(inst.assignment).has(k)) delete inst.positions[k];
  }

  /** Commits positions that differ from what was last committed (all of them when `force`). */
  private async commitPositions(inst: InstanceRecord, positions: Record<string, number>, force = false): Promise<void> {
    const changed = Object.entries(positions).filter(([k, v]) => force || inst.committedPositions[k] !== v);
    if (changed.length === 0) return;
    await this.deps.offsets.commit(inst.groupId, {
      memberId: inst.memberId,
      generation: inst.memberEpoch,
      offsets: changed.map(([k, offset]) => ({ ...parseTpKey(k), offset })),
    });
    for (const [k, v] of changed) inst.committedPositions[k] = v;
  }

  private async topicsOf(parts: TopicPartition[]): Promise<Map<string, Topic>> {
    const out = new Map<string, Topic>();
    for (const name of new Set(parts.map((p) => p.topic))) out.set(name, await this.deps.topics.get(name));
    return out;
  }

  private async read(
    inst: InstanceRecord,
    parts: TopicPartition[],
    topics: Map<string, Topic>,
    maxBytes: number,
    answer?: AnswerBudget,
  ): Promise<PolledRecord[]> {
    const out: PolledRecord[] = [];
    let bytes = 0;
    let answerBytes = 0;
    const start = parts.length === 0 ? 0 : inst.nextPartition % parts.length;
    for (const tp of [...parts.slice(start), ...parts.slice(0, start)]) {
      if (bytes >= maxBytes) break;
      const key = tpKey(tp.topic, tp.partition);
      const topic = topics.get(tp.topic)!;
      let result;
      try {
        const from = inst.positions[key]!;
        const room = maxBytes - bytes;
        const read = await this.deps.log.reader.readBatchesMany(
          [{ topic, partition: tp.partition, offset: from, maxBytes: room }],
          room,
        );
        result = fetchedRecords(onlyPartition(read), from, 'read_uncommitted');
      } catch (e) {
        if (!isKafkaError(e, 'OFFSET_OUT_OF_RANGE') || inst.autoOffsetReset === 'none') throw e;
        // The position fell out of the log (retention): auto.offset.reset applies, as in Kafka.
        const state = await this.deps.log.state(topic, tp.partition);
        inst.positions[key] = inst.autoOffsetReset === 'earliest' ? state.logStartOffset : state.highWatermark;
        continue;
      }
      bytes += result.bytes;
      inst.positions[key] = result.nextOffset;
      for (const decoded of result.records) {
        const r = { ...decoded, topic: tp.topic, partition: tp.partition };
        if (answer) {
          answerBytes += answer.sizeOf(r, inst.format);
          if (answerBytes > answer.limitBytes) {
            if (out.length === 0)
              throw new KafkaError(
                'MESSAGE_TOO_LARGE',
                `The record at offset ${r.offset} of ${tp.topic}-${tp.partition} takes more than this deployment can answer (${answer.limitBytes} bytes)`,
              );
            // The answer is full: this record and the rest come with the next poll.
            inst.positions[key] = r.offset;
            return out;
          }
        }
        out.push(r);
      }
    }
    return out;
  }
}
