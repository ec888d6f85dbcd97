import { isKafkaError } from '../wire/errors.js';
import type { PartitionLog } from '../log/partition-log.js';
import type { Topic, TopicRegistry } from '../topics/topics.js';
import type { MetadataStore } from '../storage/ports.js';
import { assignmentKeys, parseTpKey, tpKey } from './assignment.js';
import type { GroupCoordinator } from './coordinator.js';
import { ownerOf, type GroupRecord, type MemberRecord } from './group-state.js';
import type { GroupOffsets, OffsetRecord } from './offsets.js';
import { hasPosition } from './offset-record.js';
import { groupPk, INSTANCE_PREFIX, OFFSET_PREFIX } from '../storage/key-layout.js';
import type { ClassicGroup } from './classic-group.js';
import { classicGroupView } from './classic-view.js';

/** One partition of a group as kafka-consumer-groups.sh --describe shows it. */
export interface PartitionLag {
  topic: string;
  partition: number;
  /** The member holding the partition now, if any. */
  owner?: MemberRecord;
  committed?: OffsetRecord;
  logStartOffset: number;
  /** The high watermark: the end of what consumers can read. */
  logEndOffset: number;
  /** logEndOffset - committed offset; null without a committed offset. */
  lag: number | null;
}

export interface GroupDescription {
  group: GroupRecord;
  /** Partitions of the subscribed topics and partitions with committed offsets, in order. */
  partitions: PartitionLag[];
  /** Set for a group of Kafka's classic protocol (its members joined through the Kafka listener). */
  classic?: { assignor: string };
}

/** The largest and the total lag of some partitions' lags. */
export function summarizeLags(lags: PartitionLag[]): LagSummary {
  let maxLag: PartitionLag | undefined;
  let totalLag = 0;
  for (const l of lags) {
    totalLag += l.lag ?? 0;
    if (l.lag !== null && (!maxLag || l.lag > maxLag.lag!)) maxLag = l;
  }
  return { maxLag, totalLag };
}

export interface LagSummary {
  maxLag: PartitionLag | undefined;
  totalLag: number;
}

export interface AdminDeps {
  metadata: MetadataStore;
  topics: TopicRegistry;
  log: PartitionLog;
  coordinator: GroupCoordinator;
  offsets: GroupOffsets;
  /** The classic protocol's groups (classic-coordinator.ts), described in their own terms. */
  classic?: {
    describe(groupId: string): Promise<ClassicGroup | undefined>;
    list(): Promise<ClassicGroup[]>;
  };
}

/** Read-mostly administration of groups: describe with lag, lags, delete. */
export class GroupAdmin {
  constructor(private readonly deps: AdminDeps) {}

  /** Every group; one of the classic protocol with members is shown from its classic item, as `describe` does. */
  async list(): Promise<Pick<GroupDescription, 'group' | 'classic'>[]> {
    const [groups, classic] = await Promise.all([this.deps.coordinator.list(), this.deps.classic?.list() ?? []]);
    const withMembers = new Map(classic.filter((g) => Object.keys(g.members).length > 0).map((g) => [g.groupId, g]));
    return groups.map((group) => {
      const c = withMembers.get(group.groupId);
      if (!c) return { group };
      const view = classicGroupView(c);
      return { group: view.group, classic: { assignor: view.assignor } };
    });
  }

  async describe(groupId: string): Promise<GroupDescription> {
    // A classic group's members are in its classic item; its KIP-848 item stays empty.
    const classic = await this.deps.classic?.describe(groupId);
    if (classic && Object.keys(classic.members).length > 0) {
      const { group, assignor } = classicGroupView(classic);
      const committed = await this.deps.offsets.committed(groupId);
      const keys = new Set(committed.map((r) => tpKey(r.topic, r.partition)));
      for (const m of Object.values(group.members)) for (const k of assignmentKeys(m.assigned)) keys.add(k);
      return { group, partitions: await this.lagsOf(group, [...keys], committed), classic: { assignor } };
    }
    const group = await this.deps.coordinator.get(groupId);
    const committed = await this.deps.offsets.committed(groupId);
    const keys = new Set(committed.map((r) => tpKey(r.topic, r.partition)));
    for (const [topic, count] of Object.entries(group.topicPartitions))
      for (let p = 0; p < count; p++) keys.add(tpKey(topic, p));
    for (const m of Object.values(group.members))
      for (const k of [...assignmentKeys(m.assigned), ...assignmentKeys(m.revoking)]) keys.add(k);
    return { group, partitions: await this.lagsOf(group, [...keys], committed) };
  }

  /** Confluent v3's lags: the partitions the group has committed offsets for. */
  async lags(groupId: string): Promise<PartitionLag[]> {
    const group = await this.deps.coordinator.get(groupId);
    const committed = await this.deps.offsets.committed(groupId);
    return this.lagsOf(
      group,
      committed.map((r) => tpKey(r.topic, r.partition)),
      committed,
    );
  }

  async lagSummary(groupId: string): Promise<LagSummary> {
    return summarizeLags(await this.lags(groupId));
  }

  /** Kafka's DeleteGroups: an Empty group and its committed offsets (NON_EMPTY_GROUP otherwise). */
  async delete(groupId: string): Promise<void> {
    const { registryVersion } = await this.deps.coordinator.beginDelete(groupId);
    const pk = groupPk(groupId);
    for (const prefix of [OFFSET_PREFIX, INSTANCE_PREFIX]) {
      for (;;) {
        const items = await this.deps.metadata.query(pk, { beginsWith: prefix, limit: 100 });
        await Promise.all(items.map((i) => this.deps.metadata.delete(pk, i.sk)));
        if (items.length < 100) break;
      }
    }
    await this.deps.coordinator.finishDelete(groupId, registryVersion);
  }

  private async lagsOf(group: GroupRecord, keys: string[], committed: OffsetRecord[]): Promise<PartitionLag[]> {
    const byKey = new Map(committed.map((r) => [tpKey(r.topic, r.partition), r]));
    const topics = new Map<string, Topic | undefined>();
    for (const name of new Set(keys.map((k) => parseTpKey(k).topic))) {
      topics.set(
        name,
        await this.deps.topics
          .get(name)
          .catch((e: unknown) => (isKafkaError(e, 'UNKNOWN_TOPIC_OR_PARTITION') ? undefined : Promise.reject(e))),
      );
    }
    const rows = await Promise.all(
      keys.map(async (key): Promise<PartitionLag | undefined> => {
        const { topic, partition } = parseTpKey(key);
        const t = topics.get(topic);
        if (!t || partition >= t.partitionCount) return undefined;
        const state = await this.deps.log.state(t, partition);
        const c = byKey.get(key);
        const owner = ownerOf(group, topic, partition);
        return {
          topic,
          partition,
          ...(owner ? { owner } : {}),
          ...(c ? { committed: c } : {}),
          logStartOffset: state.logStartOffset,
          logEndOffset: state.highWatermark,
          lag: hasPosition(c) ? Math.max(0, state.highWatermark - c.offset) : null,
        };
      }),
    );
    return rows
      .filter((r): r is PartitionLag => r !== undefined)
      .sort((a, b) => (a.topic < b.topic ? -1 : a.topic > b.topic ? 1 : a.partition - b.partition));
  }
}
