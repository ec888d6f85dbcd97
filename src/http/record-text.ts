/**
 * How the REST layer shows a fetched record: key and value in the REST layer's encodings
 * (Confluent v3 "embedded formats" without Schema Registry). The produce side, which validates
 * bodies with zod, is record-encoding.ts; this module holds none of its schemas, nor does the fetch bundle.
 */
import type { DecodedRecord } from '../wire/record-batch.js';

/** BINARY is base64, STRING is UTF-8 text, JSON is any JSON value serialized as UTF-8. */
export const DATA_TYPES = ['BINARY', 'STRING', 'JSON'] as const;
export type DataType = (typeof DATA_TYPES)[number];

const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/** How fetch shows a key or value: `format=binary` (default), `string` or `json`. */
export const OUTPUT_FORMATS = ['binary', 'string', 'json'] as const;
export type OutputFormat = (typeof OUTPUT_FORMATS)[number];

export function showData(bytes: Uint8Array | null, format: OutputFormat): { type: DataType; data: unknown } | null {
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
