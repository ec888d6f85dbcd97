/** The admin calls of share groups (KIP-932), as Java's Admin names them, over the HTTP API. */
import type { ShareGroupJson } from '../wire/share-group-json.js';
import { resetBody, type ResetScope, type ShareResetStrategy } from './offset-reset.js';
import { enc, type Transport } from './transport.js';

export interface SharePartitionDescription {
  topic: string;
  partition: number;
  /** SPSO: every record below it is acknowledged or archived. */
  startOffset: number;
  /** SPEO: records from it on were never delivered. */
  endOffset: number;
  highWatermark: number;
  /** Records from SPSO to the high watermark not yet acknowledged or archived. */
  lag: number;
  inFlight: { available: number; acquired: number; acknowledged: number; archived: number };
}

/** A Kafka-protocol member (ShareGroupHeartbeat); HTTP receivers have no membership. */
export interface ShareMemberDescription {
  memberId: string;
  memberEpoch: number;
  clientId: string;
  clientHost: string;
  rackId: string | null;
  subscribedTopics: string[];
  assignment: { topic: string; partitions: number[] }[];
}

export interface ShareGroupDescription {
  groupId: string;
  /** STABLE while members or receivers hold records under unexpired locks, else EMPTY. */
  state: 'EMPTY' | 'STABLE';
  lag: number;
  members: ShareMemberDescription[];
  partitions: SharePartitionDescription[];
}

type Call = <T>(fn: () => Promise<T>) => Promise<T>;

export async function listShareGroups(transport: Transport, call: Call): Promise<string[]> {
  const res = await call(() => transport.request<{ data: { group_id: string }[] }>('GET', '/share-groups'));
  return res.body.data.map((g) => g.group_id).sort();
}

export async function describeShareGroup(
  transport: Transport,
  call: Call,
  groupId: string,
): Promise<ShareGroupDescription> {
  const res = await call(() => transport.request<ShareGroupJson>('GET', `/share-groups/${enc(groupId)}`));
  const g = res.body;
  return {
    groupId: g.group_id,
    state: g.state,
    lag: g.lag,
    members: g.members.map((m) => ({
      memberId: m.member_id,
      memberEpoch: m.member_epoch,
      clientId: m.client_id,
      clientHost: m.client_host,
      rackId: m.rack_id,
      subscribedTopics: m.subscribed_topic_names,
      assignment: m.assignment.map((a) => ({ topic: a.topic_name, partitions: a.partition_ids })),
    })),
    partitions: g.partitions
      .map((p) => ({
        topic: p.topic_name,
        partition: p.partition_id,
        startOffset: p.start_offset,
        endOffset: p.end_offset,
        highWatermark: p.high_watermark,
        lag: p.lag,
        inFlight: p.in_flight,
      }))
      .sort((a, b) => (a.topic < b.topic ? -1 : a.topic > b.topic ? 1 : a.partition - b.partition)),
  };
}

/**
 * Sets (a string) or resets (null) share group configs (share.auto.offset.reset,
 * share.record.lock.duration.ms, share.delivery.count.limit, ...): all of them or none.
 */
export async function alterShareGroupConfigs(
  transport: Transport,
  call: Call,
  groupId: string,
  configs: Record<string, string | null>,
): Promise<void> {
  const data = Object.entries(configs).map(([name, value]) =>
    value === null ? { name, operation: 'DELETE' as const } : { name, value, operation: 'SET' as const },
  );
  if (data.length === 0) return;
  await call(() => transport.request('POST', `/share-groups/${enc(groupId)}/configs:alter`, { body: { data } }));
}

export interface ShareResetOptions {
  groupId: string;
  /** Every share-partition the group has state for, or these topics (all or some partitions). */
  scope: ResetScope;
  strategy: ShareResetStrategy;
  /** Default true, as the tool: only show the plan; false writes it (--execute). */
  dryRun?: boolean;
}

export interface ShareOffsetChange {
  topic: string;
  partition: number;
  /** SPSO before; null where the group had no state for the partition. */
  currentOffset: number | null;
  newOffset: number;
  /** The Kafka error name of why this partition was not changed, or null. */
  error: string | null;
}

interface WireChange {
  topic_name: string;
  partition_id: number;
  current_offset: number | null;
  new_offset: number;
  error: string | null;
}

/** Resets share-partition start offsets (AlterShareGroupOffsets by a strategy); NON_EMPTY_GROUP while the group is in use. */
export async function resetShareGroupOffsets(
  transport: Transport,
  call: Call,
  options: ShareResetOptions,
): Promise<ShareOffsetChange[]> {
  const res = await call(() =>
    transport.request<{ data: WireChange[] }>('POST', `/share-groups/${enc(options.groupId)}/offsets:reset`, {
      body: resetBody(options.strategy, options.scope, options.dryRun),
    }),
  );
  return res.body.data.map((d) => ({
    topic: d.topic_name,
    partition: d.partition_id,
    currentOffset: d.current_offset,
    newOffset: d.new_offset,
    error: d.error,
  }));
}

/** Java's Admin.alterShareGroupOffsets: these start offsets, one request per distinct offset. */
export async function alterShareGroupOffsets(
  transport: Transport,
  call: Call,
  groupId: string,
  offsets: readonly { topic: string; partition: number; offset: number }[],
): Promise<ShareOffsetChange[]> {
  const byOffset = new Map<number, Map<string, number[]>>();
  for (const o of offsets) {
    const topics = byOffset.get(o.offset) ?? new Map<string, number[]>();
    topics.set(o.topic, [...(topics.get(o.topic) ?? []), o.partition]);
    byOffset.set(o.offset, topics);
  }
  const out: ShareOffsetChange[] = [];
  for (const [offset, topics] of byOffset)
    out.push(
      ...(await resetShareGroupOffsets(transport, call, {
        groupId,
        scope: { topics: [...topics].map(([topic, partitions]) => ({ topic, partitions })) },
        strategy: { toOffset: offset },
        dryRun: false,
      })),
    );
  return out;
}

/** Java's Admin.deleteShareGroupOffsets: per topic, null or the Kafka error name. */
export async function deleteShareGroupOffsets(
  transport: Transport,
  call: Call,
  groupId: string,
  topics: readonly string[],
): Promise<Map<string, string | null>> {
  const res = await call(() =>
    transport.request<{ data: { topic_name: string; error: string | null }[] }>(
      'POST',
      `/share-groups/${enc(groupId)}/offsets:delete`,
      { body: { topics } },
    ),
  );
  return new Map(res.body.data.map((d) => [d.topic_name, d.error]));
}

/**
 * Java's Admin.deleteShareGroups: each group with its share-partitions' state, one request each;
 * rejects with the first refusal (GROUP_ID_NOT_FOUND, NON_EMPTY_GROUP), the groups before it deleted.
 */
export async function deleteShareGroups(transport: Transport, call: Call, groupIds: readonly string[]): Promise<void> {
  for (const g of groupIds) await call(() => transport.request('DELETE', `/share-groups/${enc(g)}`));
}

/** A group of any type, as Kafka's ListGroups (v5) shows it. */
export interface GroupListingWithType {
  groupId: string;
  type: 'CLASSIC' | 'CONSUMER' | 'SHARE';
  /** consumer, share, or '' (offsets only). */
  protocolType: string;
  state: string;
}

/** Every group, consumer and share side by side; `types` filters (classic, consumer, share). */
export async function listGroupsWithTypes(
  transport: Transport,
  call: Call,
  types?: readonly ('classic' | 'consumer' | 'share')[],
): Promise<GroupListingWithType[]> {
  const query = types && types.length > 0 ? `?types=${enc(types.join(','))}` : '';
  const res = await call(() =>
    transport.request<{
      data: { group_id: string; type: GroupListingWithType['type']; protocol_type: string; state: string }[];
    }>('GET', `/groups${query}`),
  );
  return res.body.data.map((g) => ({
    groupId: g.group_id,
    type: g.type,
    protocolType: g.protocol_type,
    state: g.state,
  }));
}
