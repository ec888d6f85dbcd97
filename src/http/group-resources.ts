import { toPartitions, type Assignment } from '../groups/assignment.js';
import type { HeartbeatAnswer } from '../groups/coordinator.js';
import type { LagSummary, PartitionLag } from '../groups/group-admin.js';
import type { GroupRecord, GroupStateName, MemberRecord } from '../groups/group-state.js';
import type { OffsetRecord, Position } from '../groups/offsets.js';
import type { ResetPlanEntry } from '../groups/offset-reset.js';
import type { Resources } from './resources.js';
import * as z from 'zod';
import { dateTime, related, resourceMetadata } from './openapi-parts.js';

/** v3 spells Kafka's group states in upper snake case. */
const V3_STATE = {
  Empty: 'EMPTY',
  PreparingRebalance: 'PREPARING_REBALANCE',
  CompletingRebalance: 'COMPLETING_REBALANCE',
  Stable: 'STABLE',
  Dead: 'DEAD',
} as const satisfies Record<GroupStateName, string>;

// The answers' schemas: the builders below are typed by them, the OpenAPI document renders them.
const state = z.enum(V3_STATE);
const partitions = z.array(z.object({ topic_name: z.string(), partition_id: z.int() }));
export const groupSchema = z.object({
  kind: z.literal('KafkaConsumerGroup'),
  metadata: resourceMetadata,
  cluster_id: z.string(),
  consumer_group_id: z.string(),
  is_simple: z.boolean(),
  type: z.enum(['CONSUMER', 'CLASSIC']).meta({
    description:
      "Kafka's group type: CONSUMER for members of the server-side assignment (KIP-848), CLASSIC for a group with offsets only",
  }),
  is_mixed_consumer_group: z.boolean(),
  partition_assignor: z.string(),
  state,
  coordinator: related,
  consumers: related,
  lag_summary: related,
  group_epoch: z.int(),
  assignment_epoch: z.int(),
});
export const groupDescriptionSchema = groupSchema.extend({
  members: z
    .array(
      z.object({
        consumer_id: z.string(),
        client_id: z.string(),
        instance_id: z.null(),
        member_epoch: z.int(),
        subscribed_topic_names: z.array(z.string()),
        session_timeout_ms: z.int(),
        rebalance_timeout_ms: z.int(),
        last_heartbeat: dateTime,
        assignment: partitions,
        revoking: partitions,
        target_assignment: partitions,
      }),
    )
    .meta({ description: 'Single-group describe only' }),
  partitions: z
    .array(
      z.object({
        topic_name: z.string(),
        partition_id: z.int(),
        consumer_id: z.string().nullable(),
        client_id: z.string().nullable(),
        committed_offset: z.int().nullable(),
        log_start_offset: z.int(),
        log_end_offset: z.int().meta({ description: 'High watermark' }),
        lag: z.int().nullable(),
      }),
    )
    .meta({ description: 'Single-group describe only' }),
});
export const offsetSchema = z.object({
  kind: z.literal('KafkaConsumerGroupOffset'),
  metadata: resourceMetadata,
  cluster_id: z.string(),
  consumer_group_id: z.string(),
  topic_name: z.string(),
  partition_id: z.int(),
  committed_offset: z.int().nullable(),
  offset_metadata: z.string().nullable(),
  commit_timestamp: dateTime.nullable(),
  generation_id: z.int().nullable(),
  position: z.int().meta({ description: 'With auto_offset_reset only' }).optional(),
  position_source: z.enum(['COMMITTED', 'RESET']).optional(),
});
export const heartbeatAnswerSchema = z.object({
  kind: z.literal('KafkaConsumerGroupHeartbeat'),
  cluster_id: z.string(),
  consumer_group_id: z.string(),
  member_id: z.string(),
  member_epoch: z.int().meta({ description: 'The generation: send it back, and with commits as generation_id' }),
  generation_id: z.int(),
  group_epoch: z.int(),
  heartbeat_interval_ms: z.int(),
  assignment: partitions.meta({ description: 'Partitions the member may consume now' }),
  pending_assignment: partitions.meta({
    description: 'Partitions it receives once their previous owner released them',
  }),
  state,
});
export const resetPlanSchema = z.object({
  kind: z.literal('KafkaConsumerGroupOffsetReset'),
  cluster_id: z.string(),
  consumer_group_id: z.string(),
  strategy: z.string(),
  dry_run: z.boolean(),
  data: z.array(
    z.object({
      topic_name: z.string(),
      partition_id: z.int(),
      current_offset: z.int().nullable(),
      new_offset: z.int(),
    }),
  ),
});
type Answer<S extends z.ZodType> = z.input<S>;

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

  list<K extends string, T>(kind: K, self: string, data: T[], next: string | null = null) {
    return this.r.list(kind, self, data, next);
  }

  /** KafkaConsumerGroup, plus the group and assignment epochs. */
  /** `classic`: a group of Kafka's classic protocol (client-side assignment), with the protocol its members chose. */
  group(g: GroupRecord, classic?: { assignor: string }): Answer<typeof groupSchema> {
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
  description(
    g: GroupRecord,
    partitions: PartitionLag[],
    classic?: { assignor: string },
  ): Answer<typeof groupDescriptionSchema> {
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
  offset(
    groupId: string,
    topic: string,
    partition: number,
    r: OffsetRecord | undefined,
    position?: Position,
  ): Answer<typeof offsetSchema> {
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

  heartbeat(a: HeartbeatAnswer): Answer<typeof heartbeatAnswerSchema> {
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

  resetPlan(
    groupId: string,
    strategy: string,
    dryRun: boolean,
    plan: ResetPlanEntry[],
  ): Answer<typeof resetPlanSchema> {
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
