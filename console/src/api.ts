/**
 * The console's only way to the server: the HTTP API (Confluent v3 paths), relative to the page,
 * so the same build works served by the server itself or by `kafka-log console` as a signing proxy.
 */

/** A failed call, with the server's Kafka error name (`INVALID_CONFIG`, ...) and message. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly errorName: string,
    message: string,
  ) {
    super(message);
  }
  override toString(): string {
    return `${this.errorName}: ${this.message}`;
  }
}

// The page is <prefix>/console/: the API is at <prefix>/.
const apiRoot = new URL('../', location.href.replace(/[?#].*$/, ''));

export async function call<T>(path: string, init: { method?: string; body?: unknown } = {}): Promise<T> {
  const res = await fetch(new URL(path, apiRoot), {
    method: init.method ?? 'GET',
    headers: { accept: 'application/json', ...(init.body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) }),
  });
  if (!res.ok) {
    const body = (await res.json().catch(() => ({}))) as { error?: string; message?: string };
    throw new ApiError(res.status, body.error ?? `HTTP_${res.status}`, body.message ?? res.statusText);
  }
  if (res.status === 204) return undefined as T;
  return (await res.json()) as T;
}

let clusterId: Promise<string> | undefined;

/** The cluster this server serves (the first, and only, of GET /v3/clusters). */
export function cluster(): Promise<string> {
  clusterId ??= call<List<{ cluster_id: string }>>('v3/clusters').then((l) => {
    const first = l.data[0];
    if (!first) throw new ApiError(404, 'NOT_FOUND', 'The server lists no cluster');
    return first.cluster_id;
  });
  clusterId.catch(() => (clusterId = undefined));
  return clusterId;
}

/** A call under /v3/clusters/{cluster}. */
export async function api<T>(path: string, init?: { method?: string; body?: unknown }): Promise<T> {
  return call<T>(`v3/clusters/${encodeURIComponent(await cluster())}${path}`, init);
}

/** Every item of a paged list under /v3/clusters/{cluster}: follows metadata.next to the last page. */
export async function apiList<T>(path: string): Promise<List<T>> {
  const data: T[] = [];
  for (let at: string | undefined = path; at !== undefined; ) {
    const page: List<T> = await api<List<T>>(at);
    data.push(...page.data);
    const next = page.metadata?.next;
    at = next ? `${path.replace(/\?.*$/, '')}${new URL(next).search}` : undefined;
  }
  return { data };
}

export const enc = encodeURIComponent;

export interface List<T> {
  data: T[];
  metadata?: { next?: string | null };
}

export interface Topic {
  topic_name: string;
  partitions_count: number;
  replication_factor: number;
}

export interface Partition {
  partition_id: number;
  leader_id: number;
  leader_epoch: number;
  replica_ids: number[];
  isr: number[];
  log_start_offset: number;
  /** The first offset of the oldest open transaction, else the high watermark. */
  last_stable_offset: number;
  high_watermark: number;
  log_end_offset: number;
  size_in_bytes: number;
}

export interface TopicConfig {
  name: string;
  value: string | null;
  is_default: boolean;
  is_read_only: boolean;
  source: string;
}

export interface Data {
  type: 'BINARY' | 'STRING' | 'JSON';
  data: unknown;
}

export interface FetchedRecord {
  partition_id: number;
  offset: number;
  timestamp: string;
  key: Data | null;
  value: Data | null;
  headers: { name: string; value: string | null }[];
}

export interface RecordList {
  records: FetchedRecord[];
  next_offset: number;
  high_watermark: number;
  log_start_offset: number;
}

export interface Group {
  consumer_group_id: string;
  state: string;
  type: string;
  partition_assignor: string;
  group_epoch: number;
  assignment_epoch: number;
}

export interface TopicPartition {
  topic_name: string;
  partition_id: number;
}

export interface GroupDescription extends Group {
  members: {
    consumer_id: string;
    client_id: string;
    member_epoch: number;
    subscribed_topic_names: string[];
    last_heartbeat: string;
    assignment: TopicPartition[];
  }[];
  partitions: (TopicPartition & {
    consumer_id: string | null;
    client_id: string | null;
    committed_offset: number | null;
    log_start_offset: number;
    log_end_offset: number;
    lag: number;
  })[];
}

export interface LagSummary {
  total_lag: number;
  max_lag: number;
}

/** The answer of a consumer or share group's offsets:reset; a share group's names an error per partition. */
export interface ResetPlan {
  dry_run: boolean;
  data: (TopicPartition & { current_offset: number | null; new_offset: number; error?: string | null })[];
}

/** One row of GET /groups (Kafka's ListGroups): consumer and share groups side by side. */
export interface GroupListing {
  group_id: string;
  type: 'CLASSIC' | 'CONSUMER' | 'SHARE';
  protocol_type: string;
  state: string;
}

/** GET /share-groups/{group}: the shape the client reads too. */
export type { ShareGroupJson as ShareGroupDescription } from '../../src/wire/share-group-json.js';

/** GET /triggers and GET /triggers/{trigger}: the shapes the client reads too. */
export type {
  TriggerDescriptionJson as TriggerDescription,
  TriggerJson as Trigger,
  TriggerTargetJson as TriggerTarget,
} from '../../src/wire/trigger-json.js';
