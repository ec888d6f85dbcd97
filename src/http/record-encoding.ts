import * as z from 'zod';
import { KafkaError } from '../wire/errors.js';
import type { DecodedRecord, LogRecord, RecordHeader } from '../wire/record-batch.js';

/**
 * The REST layer's key/value encodings (Confluent v3 "embedded formats" without Schema Registry):
 * BINARY is base64, STRING is UTF-8 text, JSON is any JSON value serialized as UTF-8.
 */
export type DataType = 'BINARY' | 'STRING' | 'JSON';
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

function decodeBase64(s: string, what: string): Uint8Array {
  if (!BASE64.test(s)) throw bad(`${what} is not valid base64`);
  return Buffer.from(s, 'base64');
}

/** Encodes one key or value; returns null for an absent or null data (a null key, or a tombstone). */
export function encodeData(
  d: z.infer<typeof dataSchema>,
  what: 'key' | 'value',
): { bytes: Uint8Array | null; type: DataType } {
  if (d === undefined || d === null) return { bytes: null, type: 'BINARY' };
  const type = (d.type ?? 'JSON').toUpperCase();
  if (SCHEMA_TYPES.includes(type) || SCHEMA_FIELDS.some((f) => f in d)) {
    throw bad(`${what}: Schema Registry formats are not supported; use BINARY, STRING or JSON`);
  }
  if (d.data === undefined || d.data === null) return { bytes: null, type: type as DataType };
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

export function toLogRecord(
  body: ProduceRecordBody,
  now: number,
): { record: LogRecord; keyType: DataType; valueType: DataType } {
  const key = encodeData(body.key, 'key');
  const value = encodeData(body.value, 'value');
  const headers: RecordHeader[] = (body.headers ?? []).map((h, i) => ({
    key: h.name,
    value: h.value === undefined || h.value === null ? null : decodeBase64(h.value, `headers[${i}].value`),
  }));
  return {
    record: { key: key.bytes, value: value.bytes, headers, timestamp: parseTimestamp(body.timestamp, now) },
    keyType: key.type,
    valueType: value.type,
  };
}

const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/** How fetch shows a key or value: `format=binary` (default), `string` or `json`. */
export type OutputFormat = 'binary' | 'string' | 'json';

function showData(bytes: Uint8Array | null, format: OutputFormat): { type: DataType; data: unknown } | null {
  if (bytes === null) return null;
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (format === 'string') return { type: 'STRING', data: buf.toString('utf8') };
  if (format === 'json') {
    // A key produced as STRING ("alice") is not JSON text: it comes back as the STRING it was,
    // and only bytes that are not UTF-8 fall back to BINARY. Both stay lossless.
    let text: string;
    try {
      text = utf8.decode(buf);
    } catch {
      return { type: 'BINARY', data: buf.toString('base64') };
    }
    try {
      return { type: 'JSON', data: JSON.parse(text) };
    } catch {
      return { type: 'STRING', data: text };
    }
  }
  return { type: 'BINARY', data: buf.toString('base64') };
}

export function showRecord(r: DecodedRecord, partition: number, format: OutputFormat) {
  return {
    partition_id: partition,
    offset: r.offset,
    timestamp: new Date(r.timestamp).toISOString(),
    key: showData(r.key, format),
    value: showData(r.value, format),
    headers: r.headers.map((h) => ({
      name: h.key,
      value: h.value === null ? null : Buffer.from(h.value).toString('base64'),
    })),
  };
}

/** Characters JSON.stringify escapes in text decoded from bytes (which holds no lone surrogates). */
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what JSON escapes
const NEEDS_ESCAPE = /[\u0000-\u001f"\\]/;

/**
 * A string as JSON text: quoted as is when nothing needs escaping (a fast scan, not a copy per
 * char). Only for text decoded from bytes: a string parsed from JSON may hold a lone surrogate,
 * which JSON.stringify escapes and this would not.
 */
export function jsonString(s: string): string {
  return NEEDS_ESCAPE.test(s) ? JSON.stringify(s) : `"${s}"`;
}

function dataText(bytes: Uint8Array | null, format: OutputFormat): string {
  if (bytes === null) return 'null';
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (format === 'string') return `{"type":"STRING","data":${jsonString(buf.toString('utf8'))}}`;
  if (format === 'binary') return `{"type":"BINARY","data":"${buf.toString('base64')}"}`;
  return JSON.stringify(showData(bytes, format));
}

/** ISO 8601 of epoch ms, remembering the last one: a fetch's records mostly share a few timestamps. */
export function isoTimestamps(): (ms: number) => string {
  let lastMs = Number.NaN;
  let last = '';
  return (ms) => {
    if (ms !== lastMs) {
      lastMs = ms;
      last = new Date(ms).toISOString();
    }
    return last;
  };
}

/**
 * `JSON.stringify(showRecord(r, partition, format))`, built as text: the fetch answers' hot path
 * (no object per record, key and value quoted without JSON.stringify's per-character walk).
 */
export function showRecordText(
  r: DecodedRecord,
  partition: number,
  format: OutputFormat,
  iso: (ms: number) => string = isoTimestamps(),
): string {
  let headers = '';
  for (const h of r.headers) {
    if (headers !== '') headers += ',';
    headers += `{"name":${jsonString(h.key)},"value":${h.value === null ? 'null' : `"${Buffer.from(h.value).toString('base64')}"`}}`;
  }
  return (
    `{"partition_id":${partition},"offset":${r.offset},"timestamp":"${iso(r.timestamp)}",` +
    `"key":${dataText(r.key, format)},"value":${dataText(r.value, format)},"headers":[${headers}]}`
  );
}
