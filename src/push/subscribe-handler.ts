/**
 * A consumer's `subscribe` message on its push connection: arm the partitions, then read their
 * high watermarks and answer at once for any already past the consumer's offset. Arm first, check
 * second (as the purgatory watches, then tries): a commit either finds the arm and notifies, or
 * lands before this check, which sees it. The same code runs in the push Lambda and the local server.
 */
import { KafkaError } from '../wire/errors.js';
import type { PartitionLog } from '../log/partition-log.js';
import { requirePartition, type TopicRegistry } from '../topics/topics.js';
import type { PushMessage } from '../wire/push-message.js';
import type { Subscriptions } from './subscriptions.js';

export interface SubscribeMessage {
  action: 'subscribe';
  topic: string;
  partitions: { partition: number; offset: number }[];
  /** The consumer takes committed records in `ready` messages (push-notifier.ts). */
  records?: boolean;
}

export interface SubscribeDeps {
  subscriptions: Subscriptions;
  topics: TopicRegistry;
  log: PartitionLog;
  /**
   * Throws TOPIC_AUTHORIZATION_FAILED unless the connection's principal may READ the topic, as a
   * fetch would: a subscription tells when records arrive, so it needs what reading them needs.
   */
  authorizeRead(topic: string): Promise<void>;
}

/** Parses a client's message; a malformed one is INVALID_REQUEST (the connection stays open). */
export function parseClientMessage(text: string): SubscribeMessage | { action: 'ping' } {
  let m: unknown;
  try {
    m = JSON.parse(text);
  } catch {
    throw new KafkaError('INVALID_REQUEST', 'A push message must be JSON');
  }
  const o = m as Omit<Partial<SubscribeMessage>, 'action'> & { action?: unknown };
  if (o?.action === 'ping') return { action: 'ping' };
  const ok =
    o?.action === 'subscribe' &&
    typeof o.topic === 'string' &&
    Array.isArray(o.partitions) &&
    o.partitions.length <= 10_000 &&
    o.partitions.every(
      (p) => Number.isSafeInteger(p?.partition) && p.partition >= 0 && Number.isSafeInteger(p.offset) && p.offset >= 0,
    ) &&
    (o.records === undefined || typeof o.records === 'boolean');
  if (!ok)
    throw new KafkaError(
      'INVALID_REQUEST',
      'Expected {"action":"subscribe","topic":...,"partitions":[{"partition":n,"offset":n}],"records"?:boolean} or {"action":"ping"}',
    );
  return { action: 'subscribe', topic: o.topic!, partitions: o.partitions!, ...(o.records && { records: true }) };
}

/** Arms, checks, and returns the answer for the connection: the partitions with records past the offset, if any. */
export async function handleSubscribe(
  deps: SubscribeDeps,
  endpoint: string,
  connectionId: string,
  m: SubscribeMessage,
): Promise<PushMessage | undefined> {
  await deps.authorizeRead(m.topic);
  const topic = await deps.topics.get(m.topic);
  for (const p of m.partitions) requirePartition(topic, p.partition);
  await deps.subscriptions.arm(topic.name, endpoint, connectionId, m.partitions, { records: m.records === true });
  // Read together: one Query of each shard's log on a topic with a commit log, not one per partition.
  const read = await deps.log.reader.statesOf(
    topic,
    m.partitions.map((p) => p.partition),
  );
  const states = m.partitions.map((p) => ({ ...p, hw: read.get(p.partition)!.highWatermark }));
  const ready = states.filter((s) => s.hw > s.offset);
  if (ready.length === 0) return undefined;
  // Answered here: arm only the rest, so that a commit does not tell these twice; a consumer that
  // takes records stays armed on them all (it tells records it has from records it has not).
  if (!m.records)
    await deps.subscriptions.arm(
      topic.name,
      endpoint,
      connectionId,
      states.filter((s) => s.hw <= s.offset),
    );
  return {
    type: 'ready',
    topic: topic.name,
    partitions: ready.map((r) => ({
      partition: r.partition,
      high_watermark: r.hw,
      ...(m.records && { armed: true }),
    })),
  };
}
