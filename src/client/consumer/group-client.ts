/**
 * The consumer-group calls on the wire (the server's group routes): member heartbeat (join, stay,
 * leave; KIP-848 style, the server assigns), offset commit and committed-offset fetch.
 */
import { KafkaClientError } from '../errors.js';
import { enc, type Transport } from '../transport.js';
import type { TopicPartition, TopicPartitionOffset } from './subscription-state.js';

export type Assignment = Record<string, number[]>;

export interface HeartbeatRequest {
  memberId: string;
  /** 0 joins, -1 leaves, else the epoch last received. */
  memberEpoch: number;
  clientId?: string;
  subscribedTopics?: string[];
  assignor?: string;
  sessionTimeoutMs?: number;
  rebalanceTimeoutMs?: number;
  ownedPartitions?: Assignment;
}

export interface HeartbeatResponse {
  memberId: string;
  memberEpoch: number;
  heartbeatIntervalMs: number;
  /** Partitions the member may consume now. */
  assignment: Assignment;
  /** Partitions it will get once their previous owners released them. */
  pending: Assignment;
}

type WireAssignment = { topic_name: string; partition_id: number }[];

const fromWire = (a: WireAssignment | undefined): Assignment => {
  const out: Assignment = {};
  for (const { topic_name, partition_id } of a ?? []) (out[topic_name] ??= []).push(partition_id);
  for (const t of Object.keys(out)) out[t]!.sort((x, y) => x - y);
  return out;
};
const toWire = (a: Assignment): WireAssignment =>
  Object.entries(a).flatMap(([topic_name, ps]) => ps.map((partition_id) => ({ topic_name, partition_id })));

interface WireOffset {
  topic_name: string;
  partition_id: number;
  committed_offset: number | null;
  offset_metadata: string | null;
  position?: number;
  position_source?: 'COMMITTED' | 'RESET';
}

export class GroupClient {
  constructor(
    private readonly transport: Transport,
    readonly groupId: string,
  ) {}

  private get path(): string {
    return `/consumer-groups/${enc(this.groupId)}`;
  }

  async heartbeat(req: HeartbeatRequest, signal?: AbortSignal): Promise<HeartbeatResponse> {
    const body: Record<string, unknown> = { member_id: req.memberId, member_epoch: req.memberEpoch };
    if (req.clientId !== undefined) body.client_id = req.clientId;
    if (req.subscribedTopics !== undefined) body.subscribed_topic_names = req.subscribedTopics;
    if (req.assignor !== undefined) body.assignor = req.assignor;
    if (req.sessionTimeoutMs !== undefined) body['session.timeout.ms'] = req.sessionTimeoutMs;
    if (req.rebalanceTimeoutMs !== undefined) body['max.poll.interval.ms'] = req.rebalanceTimeoutMs;
    if (req.ownedPartitions !== undefined) body.owned_partitions = toWire(req.ownedPartitions);
    const res = await this.transport.heartbeatRequest<{
      member_id: string;
      member_epoch: number;
      heartbeat_interval_ms: number;
      assignment?: WireAssignment;
      pending_assignment?: WireAssignment;
    }>('POST', `${this.path}/consumers:heartbeat`, { body, ...(signal ? { signal } : {}) });
    return {
      memberId: res.body.member_id,
      memberEpoch: res.body.member_epoch,
      heartbeatIntervalMs: res.body.heartbeat_interval_ms,
      assignment: fromWire(res.body.assignment),
      pending: fromWire(res.body.pending_assignment),
    };
  }

  async commit(
    memberId: string | undefined,
    generation: number | undefined,
    offsets: TopicPartitionOffset[],
  ): Promise<void> {
    const body: Record<string, unknown> = {
      offsets: offsets.map((o) => ({
        topic_name: o.topic,
        partition_id: o.partition,
        offset: o.offset,
        ...(o.metadata !== undefined ? { metadata: o.metadata } : {}),
      })),
    };
    if (memberId) {
      body.member_id = memberId;
      body.generation_id = generation;
    }
    await this.transport.request('POST', `${this.path}/offsets:commit`, { body });
  }

  /**
   * Committed offsets (all, or of some partitions); a partition without one is left out. With
   * `requireStable`, UNSTABLE_OFFSET_COMMIT while a transaction holds one of the topics' offsets.
   */
  async committed(partitions?: TopicPartition[], requireStable = false): Promise<TopicPartitionOffset[]> {
    let data: WireOffset[];
    try {
      const topics = partitions ? [...new Set(partitions.map((p) => p.topic))] : [undefined];
      const lists = await Promise.all(
        topics.map((t) =>
          this.transport.request<{ data: WireOffset[] }>('GET', `${this.path}/offsets`, {
            query: { topic_name: t, ...(requireStable ? { require_stable: true } : {}) },
          }),
        ),
      );
      data = lists.flatMap((l) => l.body.data);
    } catch (e) {
      if (e instanceof KafkaClientError && e.type === 'GROUP_ID_NOT_FOUND') return [];
      throw e;
    }
    const want = partitions ? new Set(partitions.map((p) => `${p.topic}\u0000${p.partition}`)) : undefined;
    return data
      .filter((o) => o.committed_offset !== null && (!want || want.has(`${o.topic_name}\u0000${o.partition_id}`)))
      .map((o) => ({
        topic: o.topic_name,
        partition: o.partition_id,
        offset: o.committed_offset!,
        ...(o.offset_metadata ? { metadata: o.offset_metadata } : {}),
      }));
  }

  /**
   * Where a consumer of the group starts on each partition of a topic: the committed offset when it
   * is within the log, else by auto.offset.reset (the server decides, in one call per topic).
   */
  async positions(
    topic: string,
    reset: 'earliest' | 'latest' | 'none',
    partition?: number,
    readCommitted = false,
  ): Promise<{ partition: number; offset: number; committed: number | null }[]> {
    const res = await this.transport.request<{ data: WireOffset[] }>('GET', `${this.path}/offsets`, {
      query: {
        topic_name: topic,
        auto_offset_reset: reset,
        partition_id: partition,
        // KIP-447: a read_committed consumer does not start from an offset a transaction is about
        // to move: the server answers UNSTABLE_OFFSET_COMMIT until it ends.
        ...(readCommitted ? { isolation_level: 'read_committed', require_stable: true } : {}),
      },
      topic,
    });
    return res.body.data.map((o) => ({
      partition: o.partition_id,
      offset: o.position!,
      committed: o.committed_offset,
    }));
  }
}
