/**
 * Consumer-group administration: what kafka-consumer-groups.sh does (list, describe with lag,
 * delete, reset offsets with a dry run) and kafkajs's listGroups/describeGroups/fetchOffsets/
 * setOffsets/resetOffsets, over the server's v3 consumer-group paths and extensions.
 */
import { resetBody, type ResetScope, type ResetStrategy } from './offset-reset.js';
import { enc, type Transport } from './transport.js';

export type Call = <T>(fn: () => Promise<T>) => Promise<T>;

export interface GroupListing {
  groupId: string;
  /** 'consumer', or '' for a group only used to store offsets. */
  protocolType: string;
  /** Kafka's state names: Empty, PreparingRebalance, CompletingRebalance, Stable, Dead. */
  state: string;
}

export interface GroupMember {
  memberId: string;
  clientId: string;
  memberEpoch: number;
  subscribedTopics: string[];
  assignment: { topic: string; partition: number }[];
}

export interface GroupOffsetLag {
  topic: string;
  partition: number;
  /** null when the group committed nothing for the partition. */
  committedOffset: number | null;
  logStartOffset: number;
  /** The high watermark. */
  logEndOffset: number;
  lag: number | null;
  consumerId: string | null;
  clientId: string | null;
}

export interface GroupDescription extends GroupListing {
  assignor: string;
  groupEpoch: number;
  members: GroupMember[];
  partitions: GroupOffsetLag[];
}

export interface ResetOffsetsOptions {
  groupId: string;
  /** Every partition the group has committed offsets for, or these topics (all or some partitions). */
  scope: ResetScope;
  strategy: ResetStrategy;
  /** Default true, as the tool: only show the plan; false writes it (--execute). */
  dryRun?: boolean;
}

export interface ResetPlanEntry {
  topic: string;
  partition: number;
  currentOffset: number | null;
  newOffset: number;
}

const STATES: Record<string, string> = {
  EMPTY: 'Empty',
  PREPARING_REBALANCE: 'PreparingRebalance',
  COMPLETING_REBALANCE: 'CompletingRebalance',
  STABLE: 'Stable',
  DEAD: 'Dead',
};

interface WireGroup {
  consumer_group_id: string;
  is_simple: boolean;
  partition_assignor: string;
  state: string;
  group_epoch?: number;
}

interface WireDescription extends WireGroup {
  members: {
    consumer_id: string;
    client_id: string;
    member_epoch: number;
    subscribed_topic_names: string[];
    assignment: { topic_name: string; partition_id: number }[];
  }[];
  partitions: {
    topic_name: string;
    partition_id: number;
    consumer_id: string | null;
    client_id: string | null;
    committed_offset: number | null;
    log_start_offset: number;
    log_end_offset: number;
    lag: number | null;
  }[];
}

const listing = (g: WireGroup): GroupListing => ({
  groupId: g.consumer_group_id,
  protocolType: g.is_simple ? '' : 'consumer',
  state: STATES[g.state] ?? g.state,
});

export class GroupAdmin {
  constructor(
    protected readonly transport: Transport,
    protected readonly call: Call,
  ) {}

  async listGroups(): Promise<{ groups: GroupListing[] }> {
    const res = await this.call(() => this.transport.request<{ data: WireGroup[] }>('GET', '/consumer-groups'));
    return {
      groups: res.body.data.map(listing).sort((a, b) => (a.groupId < b.groupId ? -1 : a.groupId > b.groupId ? 1 : 0)),
    };
  }

  async describeGroup(groupId: string): Promise<GroupDescription> {
    const res = await this.call(() =>
      this.transport.request<WireDescription>('GET', `/consumer-groups/${enc(groupId)}`),
    );
    const g = res.body;
    return {
      ...listing(g),
      assignor: g.partition_assignor,
      groupEpoch: g.group_epoch ?? 0,
      members: g.members.map((m) => ({
        memberId: m.consumer_id,
        clientId: m.client_id,
        memberEpoch: m.member_epoch,
        subscribedTopics: m.subscribed_topic_names,
        assignment: m.assignment.map((a) => ({ topic: a.topic_name, partition: a.partition_id })),
      })),
      partitions: g.partitions
        .map((p) => ({
          topic: p.topic_name,
          partition: p.partition_id,
          committedOffset: p.committed_offset,
          logStartOffset: p.log_start_offset,
          logEndOffset: p.log_end_offset,
          lag: p.lag,
          consumerId: p.consumer_id,
          clientId: p.client_id,
        }))
        .sort((a, b) => (a.topic < b.topic ? -1 : a.topic > b.topic ? 1 : a.partition - b.partition)),
    };
  }

  async describeGroups(groupIds: string[]): Promise<{ groups: GroupDescription[] }> {
    return { groups: await Promise.all(groupIds.map((g) => this.describeGroup(g))) };
  }

  /** Kafka's DeleteGroups: only groups without members (NON_EMPTY_GROUP otherwise). */
  async deleteGroups(groupIds: string[]): Promise<void> {
    for (const g of groupIds) await this.call(() => this.transport.request('DELETE', `/consumer-groups/${enc(g)}`));
  }

  /** Committed offsets of a group (of some topics). */
  async fetchOffsets(options: {
    groupId: string;
    topics?: string[];
  }): Promise<{ topic: string; partitions: { partition: number; offset: number; metadata: string | null }[] }[]> {
    const topics = options.topics ?? [undefined];
    const lists = await Promise.all(
      topics.map((t) =>
        this.call(() =>
          this.transport.request<{
            data: {
              topic_name: string;
              partition_id: number;
              committed_offset: number | null;
              offset_metadata: string | null;
            }[];
          }>('GET', `/consumer-groups/${enc(options.groupId)}/offsets`, { query: { topic_name: t } }),
        ),
      ),
    );
    const byTopic = new Map<string, { partition: number; offset: number; metadata: string | null }[]>();
    for (const o of lists.flatMap((l) => l.body.data)) {
      if (o.committed_offset === null) continue;
      byTopic.set(o.topic_name, [
        ...(byTopic.get(o.topic_name) ?? []),
        { partition: o.partition_id, offset: o.committed_offset, metadata: o.offset_metadata },
      ]);
    }
    return [...byTopic].map(([topic, partitions]) => ({
      topic,
      partitions: partitions.sort((a, b) => a.partition - b.partition),
    }));
  }

  /** Commits offsets for a group without members (kafkajs's setOffsets). */
  async setOffsets(options: {
    groupId: string;
    topic: string;
    partitions: { partition: number; offset: number }[];
  }): Promise<void> {
    await this.call(() =>
      this.transport.request('POST', `/consumer-groups/${enc(options.groupId)}/offsets:commit`, {
        body: {
          offsets: options.partitions.map((p) => ({
            topic_name: options.topic,
            partition_id: p.partition,
            offset: p.offset,
          })),
        },
      }),
    );
  }

  /** kafka-consumer-groups.sh --reset-offsets for an inactive group; returns the plan (written unless dryRun). */
  async resetGroupOffsets(options: ResetOffsetsOptions): Promise<ResetPlanEntry[]> {
    const res = await this.call(() =>
      this.transport.request<{
        data: { topic_name: string; partition_id: number; current_offset: number | null; new_offset: number }[];
      }>('POST', `/consumer-groups/${enc(options.groupId)}/offsets:reset`, {
        body: resetBody(options.strategy, options.scope, options.dryRun),
      }),
    );
    return res.body.data
      .map((e) => ({
        topic: e.topic_name,
        partition: e.partition_id,
        currentOffset: e.current_offset,
        newOffset: e.new_offset,
      }))
      .sort((a, b) => (a.topic < b.topic ? -1 : a.topic > b.topic ? 1 : a.partition - b.partition));
  }

  /** kafkajs's resetOffsets: a topic to its earliest or latest offsets, written. */
  async resetOffsets(options: { groupId: string; topic: string; earliest?: boolean }): Promise<void> {
    await this.resetGroupOffsets({
      groupId: options.groupId,
      scope: { topics: [{ topic: options.topic }] },
      strategy: options.earliest ? { toEarliest: true } : { toLatest: true },
      dryRun: false,
    });
  }
}
