/** The admin calls of share groups (KIP-932), as Java's Admin names them, over the HTTP API. */
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

export interface ShareGroupDescription {
  groupId: string;
  lag: number;
  partitions: SharePartitionDescription[];
}

interface WireShareGroup {
  group_id: string;
  lag: number;
  partitions: {
    topic_name: string;
    partition_id: number;
    start_offset: number;
    end_offset: number;
    high_watermark: number;
    lag: number;
    in_flight: SharePartitionDescription['inFlight'];
  }[];
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
  const res = await call(() => transport.request<WireShareGroup>('GET', `/share-groups/${enc(groupId)}`));
  const g = res.body;
  return {
    groupId: g.group_id,
    lag: g.lag,
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

/** Sets (a string) or resets (null) share group configs: share.auto.offset.reset, share.record.lock.duration.ms, share.delivery.count.limit. */
export async function alterShareGroupConfigs(
  transport: Transport,
  call: Call,
  groupId: string,
  configs: Record<string, string | null>,
): Promise<void> {
  for (const [name, value] of Object.entries(configs)) {
    const path = `/share-groups/${enc(groupId)}/configs/${enc(name)}`;
    await call(() =>
      value === null ? transport.request('DELETE', path) : transport.request('PUT', path, { body: { value } }),
    );
  }
}
