/**
 * The event a target is invoked with: Lambda's self-managed Apache Kafka event, so a function
 * written for an MSK or self-managed Kafka trigger runs unchanged. Records are grouped under
 * `{topic}-{partition}`; key and value are base64, header values arrays of byte values.
 */
import type { DecodedRecord } from '../wire/record-batch.js';

export interface KafkaEventRecord {
  topic: string;
  partition: number;
  offset: number;
  timestamp: number;
  timestampType: 'CREATE_TIME' | 'LOG_APPEND_TIME';
  key?: string;
  value?: string;
  headers: Record<string, number[]>[];
}

export interface KafkaEvent {
  eventSource: 'SelfManagedKafka';
  bootstrapServers: string;
  records: Record<string, KafkaEventRecord[]>;
}

export interface EventBatch {
  topic: string;
  partition: number;
  logAppendTime: boolean;
  records: DecodedRecord[];
}

export const partitionKey = (topic: string, partition: number) => `${topic}-${partition}`;

export function eventRecord(b: Omit<EventBatch, 'records'>, r: DecodedRecord): KafkaEventRecord {
  return {
    topic: b.topic,
    partition: b.partition,
    offset: r.offset,
    timestamp: r.timestamp,
    timestampType: b.logAppendTime ? 'LOG_APPEND_TIME' : 'CREATE_TIME',
    // Absent rather than null, as Lambda leaves out a null key or value (a tombstone).
    ...(r.key !== null && { key: Buffer.from(r.key).toString('base64') }),
    ...(r.value !== null && { value: Buffer.from(r.value).toString('base64') }),
    headers: r.headers.map((h) => ({ [h.key]: h.value === null ? [] : [...h.value] })),
  };
}

export function kafkaEvent(bootstrapServers: string, batch: EventBatch): KafkaEvent {
  return {
    eventSource: 'SelfManagedKafka',
    bootstrapServers,
    records: { [partitionKey(batch.topic, batch.partition)]: batch.records.map((r) => eventRecord(batch, r)) },
  };
}
