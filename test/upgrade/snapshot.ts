/**
 * Everything a cluster holds, read back through the public HTTP API (Confluent v3 shapes and this
 * project's extensions) into a plain, ordered value. The fixture writer takes one from the release
 * that wrote a fixture (`expected.json`); the upgrade test takes one from today's code over the same
 * data and compares. Only what the API promises is kept (no `self` links, no times the reader makes
 * up), so two versions that read the same data answer the same snapshot.
 */

export interface SnapshotRecord {
  offset: number;
  timestamp: string;
  /** Base64, or null for a null key or value (a tombstone). */
  key: string | null;
  value: string | null;
  headers: { name: string; value: string | null }[];
}

export interface PartitionSnapshot {
  topic: string;
  partition: number;
  earliest: number;
  latest: number;
  /** The last stable offset (read_committed's latest). */
  latestCommitted: number;
  /** Every record from the log start to the high watermark (read_uncommitted). */
  uncommitted: SnapshotRecord[];
  /** Every record below the last stable offset, aborted ones left out (read_committed). */
  committed: SnapshotRecord[];
}

export interface Snapshot {
  topics: { name: string; partitions: number; configs: Record<string, string> }[];
  partitions: PartitionSnapshot[];
  groups: Record<
    string,
    { topic: string; partition: number; offset: number; metadata: string | null; commitTimestamp: string | null }[]
  >;
  transactions: {
    transactionalId: string;
    producerId: number;
    producerEpoch: number;
    state: string;
    timeoutMs: number;
    partitions: string[];
  }[];
  acls: string[];
  quotas: string[];
}

export class Api {
  readonly base: string;
  constructor(
    readonly origin: string,
    readonly clusterId = 'local',
  ) {
    this.base = `${origin}/v3/clusters/${clusterId}`;
  }

  async call<T = unknown>(method: string, path: string, body?: unknown): Promise<T> {
    const res = await fetch(`${this.base}${path}`, {
      method,
      headers: body === undefined ? {} : { 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${text}`);
    return (text ? JSON.parse(text) : undefined) as T;
  }

  get = <T = unknown>(path: string) => this.call<T>('GET', path);
  post = <T = unknown>(path: string, body?: unknown) => this.call<T>('POST', path, body);
}

type Listed<T> = { data: T[] };

async function readAll(api: Api, topic: string, partition: number, from: number, isolation: string) {
  const records: SnapshotRecord[] = [];
  let offset = from;
  for (;;) {
    type Shown = { type: string; data: string } | null;
    const page = await api.get<{ records: (SnapshotRecord & { key: Shown; value: Shown })[]; next_offset: number }>(
      `/topics/${topic}/partitions/${partition}/records?offset=${offset}&format=binary&isolation_level=${isolation}`,
    );
    for (const r of page.records)
      records.push({
        offset: r.offset,
        timestamp: r.timestamp,
        key: r.key?.data ?? null,
        value: r.value?.data ?? null,
        headers: r.headers,
      });
    if (page.next_offset <= offset) return records;
    offset = page.next_offset;
  }
}

/**
 * Everything `api` answers about topics, records, groups, transactions, ACLs and quotas; `groups`
 * names groups to read besides the listed ones (a group with only transactional offsets is not
 * listed by every release).
 */
export async function takeSnapshot(api: Api, groups: string[] = []): Promise<Snapshot> {
  const topicList = await api.get<Listed<{ topic_name: string; partitions_count: number }>>('/topics');
  const snapshot: Snapshot = { topics: [], partitions: [], groups: {}, transactions: [], acls: [], quotas: [] };
  for (const t of topicList.data.sort((a, b) => a.topic_name.localeCompare(b.topic_name))) {
    const configs = await api.get<Listed<{ name: string; value: string | null; is_default: boolean }>>(
      `/topics/${t.topic_name}/configs`,
    );
    snapshot.topics.push({
      name: t.topic_name,
      partitions: t.partitions_count,
      configs: Object.fromEntries(
        configs.data
          .filter((c) => !c.is_default)
          .map((c) => [c.name, String(c.value)])
          .sort(([a], [b]) => a!.localeCompare(b!)),
      ),
    });
    for (let p = 0; p < t.partitions_count; p++) {
      const offsets = await api.get<{ earliest_offset: number; latest_offset: number }>(
        `/topics/${t.topic_name}/partitions/${p}/offset`,
      );
      const stable = await api.get<{ latest_offset: number }>(
        `/topics/${t.topic_name}/partitions/${p}/offset?isolation_level=read_committed`,
      );
      snapshot.partitions.push({
        topic: t.topic_name,
        partition: p,
        earliest: offsets.earliest_offset,
        latest: offsets.latest_offset,
        latestCommitted: stable.latest_offset,
        uncommitted: await readAll(api, t.topic_name, p, offsets.earliest_offset, 'read_uncommitted'),
        committed: await readAll(api, t.topic_name, p, offsets.earliest_offset, 'read_committed'),
      });
    }
  }
  const listed = await api.get<Listed<{ consumer_group_id: string }>>('/consumer-groups');
  for (const g of [...new Set([...listed.data.map((x) => x.consumer_group_id), ...groups])].sort()) {
    const offsets = await api.get<
      Listed<{
        topic_name: string;
        partition_id: number;
        committed_offset: number;
        offset_metadata: string | null;
        commit_timestamp: string | null;
      }>
    >(`/consumer-groups/${g}/offsets`);
    snapshot.groups[g] = offsets.data
      .map((o) => ({
        topic: o.topic_name,
        partition: o.partition_id,
        offset: o.committed_offset,
        metadata: o.offset_metadata,
        commitTimestamp: o.commit_timestamp,
      }))
      .sort((a, b) => a.topic.localeCompare(b.topic) || a.partition - b.partition);
  }
  const transactions =
    await api.get<
      Listed<{
        transactional_id: string;
        producer_id: number;
        producer_epoch: number;
        state: string;
        transaction_timeout_ms: number;
        partitions: { topic_name: string; partition_id: number }[];
      }>
    >('/transactions');
  snapshot.transactions = transactions.data
    .map((t) => ({
      transactionalId: t.transactional_id,
      producerId: t.producer_id,
      producerEpoch: t.producer_epoch,
      state: t.state,
      timeoutMs: t.transaction_timeout_ms,
      partitions: t.partitions.map((p) => `${p.topic_name}-${p.partition_id}`).sort(),
    }))
    .sort((a, b) => a.transactionalId.localeCompare(b.transactionalId));
  const acls = await api.get<Listed<Record<string, string>>>('/acls');
  snapshot.acls = acls.data
    .map((a) =>
      [a.resource_type, a.resource_name, a.pattern_type, a.principal, a.host, a.operation, a.permission].join(' '),
    )
    .sort();
  const quotas = await api.get<Listed<unknown>>('/client-quotas');
  snapshot.quotas = quotas.data.map((q) => JSON.stringify(stripLinks(q))).sort();
  return snapshot;
}

function stripLinks(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(stripLinks);
  if (v && typeof v === 'object')
    return Object.fromEntries(
      Object.entries(v)
        .filter(([k]) => k !== 'metadata' && k !== 'cluster_id')
        .map(([k, x]) => [k, stripLinks(x)]),
    );
  return v;
}
