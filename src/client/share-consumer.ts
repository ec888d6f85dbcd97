import type { ConsumerRecord } from './codec.js';
import { KafkaClientError } from './errors.js';
import { retry } from './retry.js';
import { SharePushWait } from './share-push.js';
import { enc, type Transport } from './transport.js';
import type { ShareGroupJson } from '../wire/share-group-json.js';

/** Kafka's AcknowledgeType (KIP-932; renew: KIP-1222). */
export type AcknowledgeType = 'accept' | 'release' | 'reject' | 'renew';

export interface ShareConsumerConfig {
  groupId: string;
  /** Who this consumer is to the share group (its records are acknowledged under it); made up when absent. */
  memberId?: string;
  /** Records per poll at most (Kafka's max.poll.records, default 500). */
  maxPollRecords?: number;
  /**
   * Kafka's share.acknowledgement.mode: 'implicit' (default) accepts every record of a poll at the
   * next poll or commit; 'explicit' needs each record acknowledged before the next poll.
   */
  acknowledgementMode?: 'implicit' | 'explicit';
  /** Retries of a failed request (default 5). */
  retries?: number;
  /**
   * Wait on the connection's push URL while the share group is idle instead of long-polling
   * (share-push.ts; default true, as the consumer's push): an idle group then costs no request at
   * all. Without a push URL (`pushUrl: false`) or with the connection refused it long-polls.
   */
  push?: boolean;
  /** With push: how long an idle consumer waits without a notification before it receives anyway (default 10 min). */
  pushFallbackPollMs?: number;
  /** With push: how often the armed share-partitions are checked again on the socket, for lost notifications (default 5 min). */
  pushRecheckIntervalMs?: number;
}

/** A record delivered to a share group: a consumer record with its delivery count and lock. */
export interface ShareRecord extends ConsumerRecord {
  /** 1 on the first delivery. */
  deliveryCount: number;
  /** When the lock ends (ms since the epoch): unacknowledged by then, the record is delivered again. */
  lockExpiresAt: number;
}

/** Per record acknowledged: null, or the Kafka error name of why not (INVALID_RECORD_STATE: the lock had ended). */
export type AcknowledgementResults = Map<string, string | null>;

interface WireShared {
  topic_name: string;
  partition_id: number;
  offset: number;
  timestamp: string;
  key: { data: string } | null;
  value: { data: string } | null;
  headers: { name: string; value: string | null }[];
  delivery_count: number;
  lock_expires_at: string;
}

const keyOf = (r: { topic: string; partition: number; offset: number }) => `${r.topic}-${r.partition}@${r.offset}`;

/**
 * A share group consumer in the shape of Java's KafkaShareConsumer, over the HTTP API's share group
 * routes (docs/share-groups.md): `subscribe`, `poll`, `acknowledge`, `commitSync`, `commitAsync`,
 * `close`. Any number of them may read the same partitions; each record is held by one at a time.
 * Acknowledgements ride on the next poll, as Kafka's ShareFetch carries them, or go at once with a
 * commit.
 */
export class ShareConsumer {
  private topics: string[] = [];
  private readonly memberId: string;
  /** Records of the last poll not yet acknowledged, by key. */
  private delivered = new Map<string, ShareRecord>();
  /** Acknowledgements to send, by key. */
  private pending = new Map<string, { record: ShareRecord; type: AcknowledgeType }>();
  private readonly call: <T>(fn: () => Promise<T>) => Promise<T>;
  private inFlight: Promise<unknown> = Promise.resolve();
  private readonly push: SharePushWait | undefined;

  constructor(
    private readonly transport: Transport,
    private readonly config: ShareConsumerConfig,
  ) {
    this.memberId = config.memberId ?? `share-${crypto.randomUUID()}`;
    this.call = (fn) => retry(fn, { retries: config.retries ?? 5, initialBackoffMs: 100, maxBackoffMs: 1000 });
    const url = (config.push ?? true) ? transport.pushUrl : undefined;
    if (url)
      this.push = new SharePushWait(
        transport,
        url,
        config.pushRecheckIntervalMs ?? 300_000,
        config.pushFallbackPollMs ?? 600_000,
        () => {},
      );
  }

  subscribe(topics: string[]): void {
    if (topics.length === 0) throw new KafkaClientError('INVALID_REQUEST', 'subscribe needs at least one topic');
    this.topics = [...topics];
    this.push?.disarm();
  }

  unsubscribe(): void {
    this.topics = [];
    this.push?.disarm();
  }

  subscription(): string[] {
    return [...this.topics];
  }

  /**
   * Sends the acknowledgements due (implicit mode: every record of the last poll not acknowledged
   * otherwise is accepted), then receives up to maxPollRecords records, waiting up to `timeoutMs`.
   */
  async poll(timeoutMs: number): Promise<ShareRecord[]> {
    if (this.topics.length === 0) throw new KafkaClientError('INVALID_REQUEST', 'poll before subscribe');
    if (this.config.acknowledgementMode === 'explicit' && this.delivered.size > this.pending.size)
      throw new KafkaClientError(
        'INVALID_REQUEST',
        'explicit acknowledgement mode: every record of the last poll must be acknowledged before the next',
      );
    await this.commitSync();
    // Idle and waiting on the push connection: no request until told of records.
    let waitMs = Math.max(0, Math.floor(timeoutMs));
    if (this.push?.isArmed) {
      const waited = await this.push.wait(waitMs);
      if (waited === 'idle') return [];
      this.push.disarm();
      if (waited === 'woken') waitMs = 0;
    }
    const res = await this.call(() =>
      this.transport.request<{ data: WireShared[] }>(
        'POST',
        `/share-groups/${enc(this.config.groupId)}/records:receive`,
        {
          body: {
            topics: this.topics,
            member_id: this.memberId,
            max_records: this.config.maxPollRecords ?? 500,
            max_wait_ms: waitMs,
            format: 'binary',
          },
        },
      ),
    );
    const records = res.body.data.map(toRecord);
    this.delivered = new Map(records.map((r) => [keyOf(r), r]));
    if (records.length === 0 && this.push?.worthArming()) await this.armIfIdle();
    return records;
  }

  /**
   * After an empty receive: if the group is idle on every subscribed topic (each share-partition
   * has state, none holds a record under a lock or available), waits on the push connection from
   * each one's SPEO. A group it may not describe, or one not idle, is long-polled as without push.
   */
  private async armIfIdle(): Promise<void> {
    let described: ShareGroupJson;
    try {
      described = (await this.transport.request<ShareGroupJson>('GET', `/share-groups/${enc(this.config.groupId)}`))
        .body;
    } catch {
      return;
    }
    const topics = new Set(this.topics);
    const partitions = described.partitions.filter((p) => topics.has(p.topic_name));
    const idle =
      partitions.length > 0 &&
      this.topics.every((t) => partitions.some((p) => p.topic_name === t)) &&
      partitions.every((p) => p.in_flight.acquired === 0 && p.in_flight.available === 0);
    if (!idle) return;
    this.push!.arm(partitions.map((p) => ({ topic: p.topic_name, partition: p.partition_id, offset: p.end_offset })));
  }

  /** Marks a record of the last poll as `type` (default accept); sent with the next poll or commit. */
  acknowledge(record: Pick<ShareRecord, 'topic' | 'partition' | 'offset'>, type: AcknowledgeType = 'accept'): void {
    const held = this.delivered.get(keyOf(record));
    if (!held)
      throw new KafkaClientError('INVALID_RECORD_STATE', `${keyOf(record)} was not delivered by the last poll`);
    this.pending.set(keyOf(record), { record: held, type });
  }

  /** Sends the acknowledgements due and waits for their results, by `topic-partition@offset`. */
  async commitSync(): Promise<AcknowledgementResults> {
    await this.inFlight.catch(() => {});
    const due = this.due();
    if (due.length === 0) return new Map();
    // One id for every attempt: a retry after a lost answer is recognised, not refused.
    const requestId = crypto.randomUUID();
    const res = await this.call(() =>
      this.transport.request<{
        data: { topic_name: string; partition_id: number; offset: number; error: string | null }[];
      }>('POST', `/share-groups/${enc(this.config.groupId)}/records:acknowledge`, {
        body: { member_id: this.memberId, request_id: requestId, acknowledgements: offsetRanges(due) },
      }),
    );
    // Answered per offset, whatever the ranges sent.
    const errors = new Map(
      res.body.data.map((d) => [keyOf({ topic: d.topic_name, partition: d.partition_id, offset: d.offset }), d.error]),
    );
    return new Map(due.map(({ record }) => [keyOf(record), errors.get(keyOf(record)) ?? null]));
  }

  /** `commitSync` in the background: `onComplete` gets its results or its error. */
  commitAsync(onComplete?: (results: AcknowledgementResults | undefined, error?: unknown) => void): void {
    const sent = this.commitSync();
    this.inFlight = sent;
    sent.then(
      (results) => onComplete?.(results),
      (e: unknown) => onComplete?.(undefined, e),
    );
  }

  /** Sends what is due; records of the last poll that were not acknowledged are released to others. */
  async close(): Promise<void> {
    if (this.config.acknowledgementMode === 'explicit')
      for (const [key, record] of this.delivered)
        if (!this.pending.has(key)) this.pending.set(key, { record, type: 'release' });
    await this.commitSync();
    this.topics = [];
    this.push?.close();
  }

  /** The acknowledgements to send now, taken from the queue (implicit mode: the rest of the last poll, accepted). */
  private due(): { record: ShareRecord; type: AcknowledgeType }[] {
    if (this.config.acknowledgementMode !== 'explicit')
      for (const [key, record] of this.delivered)
        if (!this.pending.has(key)) this.pending.set(key, { record, type: 'accept' });
    const due = [...this.pending.values()];
    // Renewed records stay held (and acknowledgeable); the others are done with.
    for (const [key, a] of this.pending) if (a.type !== 'renew') this.delivered.delete(key);
    this.pending = new Map();
    return due;
  }
}

/**
 * Acknowledgements as the route takes them, consecutive offsets of a partition with the same type
 * and delivery count in one entry (`last_offset`): a poll accepted whole is an entry or a few per
 * partition instead of one per record, for both sides to build and read.
 */
function offsetRanges(due: readonly { record: ShareRecord; type: AcknowledgeType }[]) {
  const sorted = [...due].sort(
    (a, b) =>
      (a.record.topic < b.record.topic ? -1 : a.record.topic > b.record.topic ? 1 : 0) ||
      a.record.partition - b.record.partition ||
      a.record.offset - b.record.offset,
  );
  const ranges: {
    topic_name: string;
    partition_id: number;
    offset: number;
    last_offset?: number;
    type: AcknowledgeType;
    delivery_count: number;
  }[] = [];
  for (const { record, type } of sorted) {
    const last = ranges[ranges.length - 1];
    if (
      last &&
      last.topic_name === record.topic &&
      last.partition_id === record.partition &&
      last.type === type &&
      last.delivery_count === record.deliveryCount &&
      (last.last_offset ?? last.offset) + 1 === record.offset
    )
      last.last_offset = record.offset;
    else
      ranges.push({
        topic_name: record.topic,
        partition_id: record.partition,
        offset: record.offset,
        type,
        delivery_count: record.deliveryCount,
      });
  }
  return ranges;
}

function toRecord(r: WireShared): ShareRecord {
  const headers: Record<string, Buffer | Buffer[]> = {};
  for (const h of r.headers) {
    const value = Buffer.from(h.value ?? '', 'base64');
    const had = headers[h.name];
    headers[h.name] = had === undefined ? value : Array.isArray(had) ? [...had, value] : [had, value];
  }
  return {
    topic: r.topic_name,
    partition: r.partition_id,
    offset: r.offset,
    timestamp: Date.parse(r.timestamp),
    key: r.key ? Buffer.from(r.key.data, 'base64') : null,
    value: r.value ? Buffer.from(r.value.data, 'base64') : null,
    headers,
    deliveryCount: r.delivery_count,
    lockExpiresAt: Date.parse(r.lock_expires_at),
  };
}
