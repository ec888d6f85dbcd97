/**
 * The on-failure destination `kafka://{topic}`: records a delivery gave up on (retries exhausted,
 * or older than the maximum record age) are produced to a topic of this log, each as it was (key,
 * value, headers) with headers saying where it came from and why, before the trigger's offset moves
 * past them. Produced with acks=all and checked, so an offset is committed only after its failed
 * records are in the topic; a produce whose answer was lost is produced again by the redelivery
 * (duplicates in the failure topic, never a loss: at-least-once, as the delivery itself).
 *
 * A record keeps its key's partition (murmur2, as a producer would place it); a keyless one goes
 * to the source partition's number modulo the failure topic's partitions, so one partition's
 * failures stay in order together.
 */
import type { Clock } from '../clock.js';
import type { PartitionLog } from '../log/partition-log.js';
import type { TopicRegistry } from '../topics/topics.js';
import { partitionForKey } from '../wire/murmur2.js';
import type { DecodedRecord, LogRecord } from '../wire/record-batch.js';
import type { InvokeAnswer } from './targets.js';

/** Why records went to the failure topic (PayloadTooLarge: one record's event alone over the 6 MB cap). */
export type FailureReason = 'RetriesExhausted' | 'RecordAgeExceeded' | 'PayloadTooLarge';

export interface FailedRecords {
  trigger: string;
  topic: string;
  partition: number;
  records: DecodedRecord[];
  reason: FailureReason;
  /** The last invocation's error (RetriesExhausted). */
  error?: string;
  /** How the target answered the last invocation, when it did (RetriesExhausted). */
  answer?: InvokeAnswer;
  /** Invocations of these records that failed. */
  attempts: number;
}

/** The headers a failed record carries, added after its own. */
export const FAILURE_HEADERS = {
  trigger: 'trigger.name',
  reason: 'trigger.failure.reason',
  error: 'trigger.failure.error',
  attempts: 'trigger.failure.attempts',
  topic: 'trigger.source.topic',
  partition: 'trigger.source.partition',
  offset: 'trigger.source.offset',
  timestamp: 'trigger.source.timestamp',
} as const;

const text = (s: string) => new TextEncoder().encode(s);

export async function produceFailed(
  deps: { topics: TopicRegistry; log: PartitionLog; clock: Clock },
  destination: string,
  failed: FailedRecords,
): Promise<void> {
  const topic = await deps.topics.get(destination);
  const now = deps.clock.now();
  const byPartition = new Map<number, LogRecord[]>();
  for (const r of failed.records) {
    const p = r.key !== null ? partitionForKey(r.key, topic.partitionCount) : failed.partition % topic.partitionCount;
    const headers = [
      ...r.headers,
      { key: FAILURE_HEADERS.trigger, value: text(failed.trigger) },
      { key: FAILURE_HEADERS.reason, value: text(failed.reason) },
      ...(failed.error !== undefined ? [{ key: FAILURE_HEADERS.error, value: text(failed.error.slice(0, 1000)) }] : []),
      { key: FAILURE_HEADERS.attempts, value: text(String(failed.attempts)) },
      { key: FAILURE_HEADERS.topic, value: text(failed.topic) },
      { key: FAILURE_HEADERS.partition, value: text(String(failed.partition)) },
      { key: FAILURE_HEADERS.offset, value: text(String(r.offset)) },
      { key: FAILURE_HEADERS.timestamp, value: text(String(r.timestamp)) },
    ];
    const list = byPartition.get(p) ?? [];
    list.push({ key: r.key, value: r.value, headers, timestamp: now });
    byPartition.set(p, list);
  }
  const outcomes = await deps.log.append(
    topic,
    [...byPartition].map(([partition, records]) => ({ partition, records })),
    { acks: 'all' },
  );
  for (const outcome of outcomes.values()) if (!outcome.ok) throw outcome.error;
}
