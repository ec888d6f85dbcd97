import { toPartitions, type Assignment } from '../groups/assignment.js';
import type { HeartbeatAnswer } from '../groups/coordinator.js';
import type { LagSummary, PartitionLag } from '../groups/group-admin.js';
import type { GroupRecord, GroupStateName, MemberRecord } from '../groups/group-state.js';
import type { OffsetRecord, Position } from '../groups/offsets.js';
import type { ResetPlanEntry } from '../groups/offset-reset.js';
import type { Resources } from './resources.js';

/** v3 spells Kafka's group states in upper snake case. */
const V3_STATE: Record<GroupStateName, string> = {
  Empty: 'EMPTY',
  PreparingRebalance: 'PREPARING_REBALANCE',
  CompletingRebalance: 'COMPLETING_REBALANCE',
  Stable: 'STABLE',
  Dead: 'DEAD',
};

const partitionList = (a: Assignment) =>
  toPartitions(a).map((tp) => ({ topic_name: tp.topic, partition_id: tp.partition }));
const iso = (t: number) => new Date(t).toISOString();

/** Builders of Confluent v3 consumer-group shapes (and this API's extensions, in the same style). */
export class GroupResources {
  constructor(private readonly r: Resources) {}

  private crn(path: string): string {
    return `crn:///kafka=${this.r.clusterId}${path}`;
  }

  groupUrl(groupId: string): string {
    return `${this.r.base}/consumer-groups/${encodeURIComponent(groupId)}`;
  }

  list<T>(kind: string, self: string, data: T[], next: string | null = null) {
    return this.r.list(kind, self, data, next);
  }

  /** KafkaConsumerGroup, plus the group and assignment epochs. */
  /** `classic`: a group of Kafka's classic protocol (client-side assignment), with the protocol its members chose. */
  group(g: GroupRecord, classic?: { assignor: string }) {
    const self = this.groupUrl(g.groupId);
    return {
      kind: 'KafkaConsumerGroup',
      metadata: { self, resource_name: this.crn(`/consumer-group=${g.groupId}`) },
      cluster_id: this.r.clusterId,
      consumer_group_id: g.groupId,
      is_simple: g.protocolType === '',
      // Kafka's group types: members here use the server-side assignment of KIP-848 ('CONSUMER');
      // a group with offsets only (no protocol), or of the classic protocol, is a 'CLASSIC' one.
      type: g.protocolType === '' || classic ? 'CLASSIC' : 'CONSUMER',
      is_mixed_consumer_group: false,
      partition_assignor: classic ? classic.assignor : g.protocolType === '' ? '' : g.assignor,
      state: V3_STATE[g.state],
      coordinator: { related: `${this.r.base}/brokers/0` },
      consumers: { related: `${self}/consumers` },
      lag_summary: { related: `${self}/lag-summary` },
      group_epoch: g.groupEpoch,
      assignment_epoch: g.assignmentEpoch,
    };
  }

  /** Extension of a single group's description: members and per-partition offsets, HW and lag. */
  description(g: GroupRecord, partitions: PartitionLag[], classic?: { assignor: string }) {
    return {
      ...this.group(g, classic),
      members: Object.values(g.members).map((m) => ({
        consumer_id: m.memberId,
        client_id: m.clientId,
        instance_id: null,
        member_epoch: m.memberEpoch,
        subscribed_topic_names: m.subscribedTopics,
        session_timeout_ms: m.sessionTimeoutMs,
        rebalance_timeout_ms: m.rebalanceTimeoutMs,
        last_heartbeat: iso(m.lastHeartbeat),
        assignment: partitionList(m.assigned),
        revoking: partitionList(m.revoking),
        target_assignment: partitionList(g.target[m.memberId] ?? {}),
      })),
      partitions: partitions.map((p) => ({
        topic_name: p.topic,
        partition_id: p.partition,
        consumer_id: p.owner?.memberId ?? null,
        client_id: p.owner?.clientId ?? null,
        committed_offset: p.committed?.offset ?? null,
        log_start_offset: p.logStartOffset,
        log_end_offset: p.logEndOffset,
        lag: p.lag,
      })),
    };
  }

  consumer(g: GroupRecord, m: MemberRecord) {
    const self = `${this.groupUrl(g.groupId)}/consumers/${encodeURIComponent(m.memberId)}`;
    return {
      kind: 'KafkaConsumer',
      metadata: { self, resource_name: this.crn(`/consumer-group=${g.groupId}/consumer=${m.memberId}`) },
      cluster_id: this.r.clusterId,
      consumer_group_id: g.groupId,
      consumer_id: m.memberId,
      instance_id: null,
      client_id: m.clientId,
      assignments: { related: `${self}/assignments` },
      member_epoch: m.memberEpoch,
    };
  }

  assignment(g: GroupRecord, m: MemberRecord, topic: string, partition: number) {
    const self = `${this.groupUrl(g.groupId)}/consumers/${encodeURIComponent(m.memberId)}/assignments/${topic}/partitions/${partition}`;
    return {
      kind: 'KafkaConsumerAssignment',
      metadata: {
        self,
        resource_name: this.crn(
          `/consumer-group=${g.groupId}/consumer=${m.memberId}/assignment=${topic}/partition=${partition}`,
        ),
      },
      cluster_id: this.r.clusterId,
      consumer_group_id: g.groupId,
      consumer_id: m.memberId,
      topic_name: topic,
      partition_id: partition,
      partition: { related: `${this.r.base}/topics/${topic}/partitions/${partition}` },
      lag: { related: `${this.groupUrl(g.groupId)}/lags/${topic}/partitions/${partition}` },
    };
  }

  lag(g: GroupRecord, l: PartitionLag) {
    return {
      kind: 'KafkaConsumerLag',
      metadata: {
        self: `${this.groupUrl(g.groupId)}/lags/${l.topic}/partitions/${l.partition}`,
        resource_name: this.crn(`/consumer-group=${g.groupId}/lag=${l.topic}/partition=${l.partition}`),
      },
      cluster_id: this.r.clusterId,
      consumer_group_id: g.groupId,
      topic_name: l.topic,
      partition_id: l.partition,
      current_offset: l.committed?.offset ?? null,
      log_end_offset: l.logEndOffset,
      lag: l.lag,
      consumer_id: l.owner?.memberId ?? '',
      instance_id: '',
      client_id: l.owner?.clientId ?? '',
    };
  }

  lagSummary(g: GroupRecord, s: LagSummary) {
    const self = this.groupUrl(g.groupId);
    const max = s.maxLag;
    return {
      kind: 'KafkaConsumerGroupLagSummary',
      metadata: { self: `${self}/lag-summary`, resource_name: this.crn(`/consumer-group=${g.groupId}/lag-summary`) },
      cluster_id: this.r.clusterId,
      consumer_group_id: g.groupId,
      max_lag_consumer_id: max?.owner?.memberId ?? '',
      max_lag_instance_id: '',
      max_lag_client_id: max?.owner?.clientId ?? '',
      max_lag_topic_name: max?.topic ?? '',
      max_lag_partition_id: max?.partition ?? 0,
      max_lag: max?.lag ?? 0,
      total_lag: s.totalLag,
      max_lag_consumer: max?.owner ? { related: `${self}/consumers/${encodeURIComponent(max.owner.memberId)}` } : null,
      max_lag_partition: max ? { related: `${this.r.base}/topics/${max.topic}/partitions/${max.partition}` } : null,
    };
  }

  /** Extension: a committed offset (and, when asked with auto_offset_reset, the start position). */
  offset(groupId: string, topic: string, partition: number, r: OffsetRecord | undefined, position?: Position) {
    return {
      kind: 'KafkaConsumerGroupOffset',
      metadata: {
        self: `${this.groupUrl(groupId)}/offsets/${topic}/partitions/${partition}`,
        resource_name: this.crn(`/consumer-group=${groupId}/offset=${topic}/partition=${partition}`),
      },
      cluster_id: this.r.clusterId,
      consumer_group_id: groupId,
      topic_name: topic,
      partition_id: partition,
      committed_offset: r?.offset ?? null,
      offset_metadata: r?.metadata ?? null,
      commit_timestamp: r ? iso(r.commitTimestamp) : null,
      generation_id: r?.generation ?? null,
      ...(position
        ? { position: position.offset, position_source: position.source === 'committed' ? 'COMMITTED' : 'RESET' }
        : {}),
    };
  }

  heartbeat(a: HeartbeatAnswer) {
    return {
      kind: 'KafkaConsumerGroupHeartbeat',
      cluster_id: this.r.clusterId,
      consumer_group_id: a.groupId,
      member_id: a.memberId,
      member_epoch: a.memberEpoch,
      generation_id: a.memberEpoch,
      group_epoch: a.groupEpoch,
      heartbeat_interval_ms: a.heartbeatIntervalMs,
      assignment: partitionList(a.assignment),
      pending_assignment: partitionList(a.pending),
      state: V3_STATE[a.state],
    };
  }

  resetPlan(groupId: string, strategy: string, dryRun: boolean, plan: ResetPlanEntry[]) {
    return {
      kind: 'KafkaConsumerGroupOffsetReset',
      cluster_id: this.r.clusterId,
      consumer_group_id: groupId,
      strategy,
      dry_run: dryRun,
      data: plan.map((e) => ({
        topic_name: e.topic,
        partition_id: e.partition,
        current_offset: e.currentOffset,
        new_offset: e.newOffset,
      })),
    };
  }
}
