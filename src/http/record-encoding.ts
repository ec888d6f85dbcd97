/**
 * Produce bodies' records, validated by zod and encoded to log records. How fetch shows records
 * is in record-text.ts, apart so that the fetch bundle holds none of these schemas.
 */
import * as z from 'zod';
import { KafkaError } from '../wire/errors.js';
import type { LogRecord, RecordHeader } from '../wire/record-batch.js';
import type { DataType } from './record-text.js';

const SCHEMA_TYPES = ['AVRO', 'PROTOBUF', 'JSONSCHEMA'];
const SCHEMA_FIELDS = ['schema_id', 'schema_version', 'subject', 'subject_name_strategy', 'raw_schema'];

const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

export const dataSchema = z
  .object({ type: z.string().optional(), data: z.unknown().optional() })
  .passthrough()
  .nullable()
  .optional();

export const headerSchema = z.object({ name: z.string(), value: z.string().nullable().optional() });

export const produceRecordSchema = z.object({
  partition_id: z.number().int().nonnegative().optional().nullable(),
  headers: z.array(headerSchema).optional(),
  key: dataSchema,
  value: dataSchema,
  timestamp: z.string().optional().nullable(),
});
export type ProduceRecordBody = z.infer<typeof produceRecordSchema>;

const bad = (message: string) => new KafkaError('BAD_REQUEST', message);

/**
 * A JSON string of a body read as bytes (batch-body.ts) whose bytes are its text's UTF-8 as they
 * are (a UTF-8 body, no escapes) is left as a view of the body: a STRING key or value takes those
 * bytes without a string in between. JSON.parse never makes a Uint8Array, so a data that is one
 * is such a string; this is its text.
 */
export const rawText = (bytes: Uint8Array): string =>
  Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8');

/** An absent or null key or value, one object for every record. */
const ABSENT: { bytes: null; type: DataType } = Object.freeze({ bytes: null, type: 'BINARY' });

function decodeBase64(s: string, what: string): Uint8Array {
  if (!BASE64.test(s)) throw bad(`${what} is not valid base64`);
  return Buffer.from(s, 'base64');
}

/** Encodes one key or value; returns null for an absent or null data (a null key, or a tombstone). */
export function encodeData(
  d: z.infer<typeof dataSchema>,
  what: 'key' | 'value',
): { bytes: Uint8Array | null; type: DataType } {
  if (d === undefined || d === null) return ABSENT;
  // A STRING read from the body's bytes (batch-body.ts, which reads no other field): those bytes.
  if (d.data instanceof Uint8Array && d.type === 'STRING') return { bytes: d.data, type: 'STRING' };
  const type = (d.type ?? 'JSON').toUpperCase();
  if (SCHEMA_TYPES.includes(type) || SCHEMA_FIELDS.some((f) => f in d)) {
    throw bad(`${what}: Schema Registry formats are not supported; use BINARY, STRING or JSON`);
  }
  if (d.data === undefined || d.data === null) return { bytes: null, type: type as DataType };
  if (d.data instanceof Uint8Array) {
    if (type === 'STRING') return { bytes: d.data, type };
    return encodeData({ ...d, data: rawText(d.data) }, what);
  }
  switch (type) {
    case 'BINARY':
      if (typeof d.data !== 'string') throw bad(`${what}.data must be a base64 string for type BINARY`);
      return { bytes: decodeBase64(d.data, `${what}.data`), type };
    case 'STRING':
      if (typeof d.data !== 'string') throw bad(`${what}.data must be a string for type STRING`);
      return { bytes: Buffer.from(d.data, 'utf8'), type };
    case 'JSON':
      return { bytes: Buffer.from(JSON.stringify(d.data), 'utf8'), type };
    default:
      throw bad(`${what}.type must be one of BINARY, STRING, JSON (got ${JSON.stringify(d.type)})`);
  }
}

export function parseTimestamp(ts: string | null | undefined, now: number): number {
  if (ts === undefined || ts === null) return now;
  // RFC 3339 date-time: a date, 'T', a time and a zone; Date.parse alone accepts too much.
  if (!/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/i.test(ts))
    throw new KafkaError('INVALID_TIMESTAMP', `timestamp ${JSON.stringify(ts)} is not an RFC 3339 date-time`);
  const ms = Date.parse(ts);
  if (Number.isNaN(ms))
    throw new KafkaError('INVALID_TIMESTAMP', `timestamp ${JSON.stringify(ts)} is not a valid date-time`);
  return ms;
}

/** The headers of every record without any: one array, never written to, rather than one per record. */
const NO_HEADERS: RecordHeader[] = Object.freeze([]) as unknown as RecordHeader[];

/**
 * A batch body's entry whose record its reader made itself (batch-body.ts: a STRING or absent key
 * and value, no headers or timestamp): the entry and its record in one object, so that fewer
 * objects per record live while the append waits (each young collection copies them). Its
 * timestamp is the produce's time, set when it is produced ({@link entryRecord}).
 */
export class ReadRecord implements LogRecord {
  readonly headers = NO_HEADERS;
  timestamp = 0;

  constructor(
    readonly id: string,
    readonly partition_id: number | null | undefined,
    readonly key: Uint8Array | null,
    readonly value: Uint8Array | null,
    readonly keyType: DataType,
    readonly valueType: DataType,
  ) {}
}

/** An entry's record and data types: a {@link ReadRecord} as it is, at `now`; another by {@link toLogRecord}. */
export function entryRecord(
  entry: ProduceRecordBody | ReadRecord,
  now: number,
): { record: LogRecord; keyType: DataType; valueType: DataType } {
  if (!(entry instanceof ReadRecord)) return toLogRecord(entry, now);
  entry.timestamp = now;
  return { record: entry, keyType: entry.keyType, valueType: entry.valueType };
}

export function toLogRecord(
  body: ProduceRecordBody,
  now: number,
): { record: LogRecord; keyType: DataType; valueType: DataType } {
  const key = encodeData(body.key, 'key');
  const value = encodeData(body.value, 'value');
  const headers: RecordHeader[] =
    body.headers === undefined || body.headers.length === 0
      ? NO_HEADERS
      : body.headers.map((h, i) => ({
          key: h.name,
          value: h.value === undefined || h.value === null ? null : decodeBase64(h.value, `headers[${i}].value`),
        }));
  return {
    record: { key: key.bytes, value: value.bytes, headers, timestamp: parseTimestamp(body.timestamp, now) },
    keyType: key.type,
    valueType: value.type,
  };
}
