/**
 * The event a target is invoked with: Lambda's self-managed Apache Kafka event, so a function
 * written for an MSK or self-managed Kafka trigger runs unchanged. Records are grouped under
 * `{topic}-{partition}`; key and value are base64, header values arrays of byte values.
 *
 * The event is written as JSON text directly (`EventLayout`), not built as objects and stringified:
 * a delivery needs each record's size anyway to keep the event under Lambda's 6 MB payload cap.
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

/** One record as the event holds it (the object `EventLayout` writes). */
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

/**
 * How one partition's event is written: its records' JSON between `head` and `tail`, separated by
 * commas. `recordBytes` counts a record's UTF-8 bytes without writing it (base64 and decimal
 * lengths are arithmetic), so the payload cap is kept before anything is encoded, and `write` puts
 * the whole event in one buffer of that size, one write per record: no Buffer per record to make,
 * concatenate and collect (what a delivery of a thousand records a batch spent most of its time on).
 */
export class EventLayout {
  private readonly head: string;
  private readonly prefix: string;
  private readonly timestampType: string;
  /** The event's bytes without records. */
  readonly emptyBytes: number;
  private readonly prefixBytes: number;
  /** The record prefix (the topic's name) is ASCII: a record without headers is written as Latin-1. */
  private readonly ascii: boolean;

  constructor(bootstrapServers: string, b: Omit<EventBatch, 'records'>) {
    this.head = `{"eventSource":"SelfManagedKafka","bootstrapServers":${JSON.stringify(bootstrapServers)},"records":{${JSON.stringify(partitionKey(b.topic, b.partition))}:[`;
    this.emptyBytes = Buffer.byteLength(this.head) + TAIL.length;
    this.prefix = `{"topic":${JSON.stringify(b.topic)},"partition":${b.partition},"offset":`;
    this.prefixBytes = Buffer.byteLength(this.prefix);
    this.ascii = this.prefixBytes === this.prefix.length;
    this.timestampType = `,"timestampType":"${b.logAppendTime ? 'LOG_APPEND_TIME' : 'CREATE_TIME'}"`;
  }

  /** A record's JSON in the event, in UTF-8 bytes (without the comma before it). */
  recordBytes(r: DecodedRecord): number {
    let n =
      this.prefixBytes +
      decimalLength(r.offset) +
      TIMESTAMP.length +
      decimalLength(r.timestamp) +
      this.timestampType.length +
      HEADERS.length +
      2; // ]}
    if (r.key !== null) n += KEY.length + base64Length(r.key.byteLength) + 1;
    if (r.value !== null) n += VALUE.length + base64Length(r.value.byteLength) + 1;
    if (r.headers.length > 0) n += Buffer.byteLength(headersJson(r));
    return n;
  }

  /** The event of `records`, as JSON (UTF-8). */
  write(records: DecodedRecord[]): Buffer {
    let size = this.emptyBytes + Math.max(0, records.length - 1);
    for (const r of records) size += this.recordBytes(r);
    const out = Buffer.allocUnsafe(size);
    let pos = out.write(this.head, 0, 'utf8');
    for (let i = 0; i < records.length; i++) {
      const r = records[i]!;
      // One write a record (each write is a call into the runtime); base64 is ASCII, no escaping.
      const json = `${i > 0 ? ',' : ''}${this.prefix}${r.offset}${TIMESTAMP}${r.timestamp}${this.timestampType}${
        r.key === null ? '' : `${KEY}${base64(r.key)}"`
      }${r.value === null ? '' : `${VALUE}${base64(r.value)}"`}${HEADERS}${r.headers.length > 0 ? headersJson(r) : ''}]}`;
      pos += out.write(json, pos, this.ascii && r.headers.length === 0 ? 'latin1' : 'utf8');
    }
    pos += out.write(TAIL, pos, 'latin1');
    // The sizes are what the payload cap was kept with: a mismatch would send a cut event.
    if (pos !== size) throw new Error(`event written as ${pos} bytes, counted ${size}`);
    return out;
  }
}

const TAIL = ']}}';
const TIMESTAMP = ',"timestamp":';
const KEY = ',"key":"';
const VALUE = ',"value":"';
const HEADERS = ',"headers":[';

/** Digits of an integer in decimal (and its minus sign), without making its string. */
function decimalLength(n: number): number {
  if (n < 0) return 1 + decimalLength(-n);
  let digits = 1;
  for (let bound = 10; n >= bound && digits < 16; bound *= 10) digits++;
  return n >= 1e16 ? String(n).length : digits;
}
const base64Length = (bytes: number) => 4 * Math.ceil(bytes / 3);

/** The headers' JSON between the brackets: each `{"key":[byte values]}`. */
function headersJson(r: DecodedRecord): string {
  let json = '';
  for (let i = 0; i < r.headers.length; i++) {
    const h = r.headers[i]!;
    json += `${i > 0 ? ',' : ''}{${JSON.stringify(h.key)}:[${h.value === null ? '' : h.value.join(',')}]}`;
  }
  return json;
}

/** A Buffer over the ArrayBuffer the last record's bytes were in: a read's records share one. */
let lastView: Buffer | undefined;

function base64(bytes: Uint8Array): string {
  if (lastView?.buffer !== bytes.buffer) lastView = Buffer.from(bytes.buffer, 0, bytes.buffer.byteLength);
  return lastView.toString('base64', bytes.byteOffset, bytes.byteOffset + bytes.byteLength);
}

/** The event of one partition's batch, as JSON (UTF-8). */
export function kafkaEventJson(bootstrapServers: string, batch: EventBatch): Buffer {
  return new EventLayout(bootstrapServers, batch).write(batch.records);
}
