/**
 * The event a target is invoked with: Lambda's self-managed Apache Kafka event, so a function
 * written for an MSK or self-managed Kafka trigger runs unchanged. Records are grouped under
 * `{topic}-{partition}`; key and value are base64, header values arrays of byte values.
 *
 * The event is written as JSON text record by record (`recordJson`), not built as objects and
 * stringified: a delivery needs each record's size anyway to keep the event under Lambda's 6 MB
 * payload cap, and a record retried or carried into the next batch is serialized once.
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

/**
 * Lambda's limit on a synchronous invocation's payload (6 MB), which an event source mapping cuts
 * its batches to: a webhook event is held to it too, so a function moves between the two unchanged.
 */
export const MAX_EVENT_BYTES = 6 * 1024 * 1024;

export const partitionKey = (topic: string, partition: number) => `${topic}-${partition}`;

/** One record as the event holds it (the object `recordJson` writes). */
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

/** Records' JSON, by record object: a delivery reads each record once per run and may send it several times. */
const written = new WeakMap<DecodedRecord, Buffer>();

/** A record's JSON in the event as UTF-8 (`eventRecord`'s object, written directly). */
export function recordJson(b: Omit<EventBatch, 'records'>, r: DecodedRecord): Buffer {
  const known = written.get(r);
  if (known !== undefined) return known;
  let json = `{"topic":${JSON.stringify(b.topic)},"partition":${b.partition},"offset":${r.offset},"timestamp":${r.timestamp},"timestampType":"${b.logAppendTime ? 'LOG_APPEND_TIME' : 'CREATE_TIME'}"`;
  // base64 needs no escaping.
  if (r.key !== null)
    json += `,"key":"${Buffer.from(r.key.buffer, r.key.byteOffset, r.key.byteLength).toString('base64')}"`;
  if (r.value !== null)
    json += `,"value":"${Buffer.from(r.value.buffer, r.value.byteOffset, r.value.byteLength).toString('base64')}"`;
  json += ',"headers":[';
  for (let i = 0; i < r.headers.length; i++) {
    const h = r.headers[i]!;
    json += `${i > 0 ? ',' : ''}{${JSON.stringify(h.key)}:[${h.value === null ? '' : h.value.join(',')}]}`;
  }
  const bytes = Buffer.from(`${json}]}`);
  written.set(r, bytes);
  return bytes;
}

/** The event's JSON around its records: the records go between `head` and `tail`, separated by commas. */
export function envelope(bootstrapServers: string, topic: string, partition: number): { head: Buffer; tail: Buffer } {
  return {
    head: Buffer.from(
      `{"eventSource":"SelfManagedKafka","bootstrapServers":${JSON.stringify(bootstrapServers)},"records":{${JSON.stringify(partitionKey(topic, partition))}:[`,
    ),
    tail: Buffer.from(']}}'),
  };
}

const COMMA = Buffer.from(',');

/** The event of one partition's batch, as JSON (UTF-8). */
export function kafkaEventJson(bootstrapServers: string, batch: EventBatch): Buffer {
  const { head, tail } = envelope(bootstrapServers, batch.topic, batch.partition);
  const parts: Buffer[] = [head];
  batch.records.forEach((r, i) => {
    if (i > 0) parts.push(COMMA);
    parts.push(recordJson(batch, r));
  });
  parts.push(tail);
  return Buffer.concat(parts);
}
