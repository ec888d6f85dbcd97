/**
 * Records as users see them (kafkajs-shaped: Buffers or strings, headers as an object) and as the
 * HTTP API carries them (Confluent v3 BINARY data: base64, headers as base64 name/value pairs).
 */

export type Bytes = Buffer | Uint8Array | string;
export type HeaderValue = Bytes | Bytes[] | undefined;
export type MessageHeaders = Record<string, HeaderValue>;

/** A record to produce. */
export interface Message {
  key?: Bytes | null;
  /** null is a tombstone. */
  value: Bytes | null;
  headers?: MessageHeaders;
  /** Overrides the partitioner. */
  partition?: number;
  /** CreateTime: ms since the epoch, a numeric string, or a Date. Defaults to now. */
  timestamp?: number | string | Date;
}

/** A consumed record. Offsets and timestamps are numbers (safe up to 2^53). */
export interface ConsumerRecord {
  topic: string;
  partition: number;
  offset: number;
  /** ms since the epoch. */
  timestamp: number;
  key: Buffer | null;
  value: Buffer | null;
  /** Header values by name; a name that repeats maps to an array, in order. */
  headers: Record<string, Buffer | Buffer[]>;
}

export interface WireData {
  type: 'BINARY';
  data: string;
}

export interface WireHeader {
  name: string;
  value: string | null;
}

/** One entry of a records:batch request. */
export interface WireEntry {
  id: string;
  partition_id: number;
  key: WireData | null;
  value: WireData | null;
  headers?: WireHeader[];
  timestamp: string;
}

export function toBuffer(v: Bytes | null | undefined): Buffer | null {
  if (v === null || v === undefined) return null;
  if (typeof v === 'string') return Buffer.from(v, 'utf8');
  if (Buffer.isBuffer(v)) return v;
  return Buffer.from(v.buffer, v.byteOffset, v.byteLength);
}

const wireData = (b: Buffer | null): WireData | null =>
  b === null ? null : { type: 'BINARY', data: b.toString('base64') };

export function toTimestamp(t: Message['timestamp'], now: number): number {
  if (t === undefined) return now;
  if (t instanceof Date) return t.getTime();
  const n = typeof t === 'string' ? Number(t) : t;
  if (!Number.isSafeInteger(n)) throw new TypeError(`Invalid timestamp ${String(t)} (ms since the epoch, an integer)`);
  return n;
}

/**
 * One record ready to send: its bytes (the shape `encodeRecordBatch` takes) and Kafka's size
 * estimate (for batch.size and buffer.memory). The JSON form is built only when the JSON API is used.
 */
export interface EncodedRecord {
  key: Buffer | null;
  value: Buffer | null;
  headers: { key: string; value: Buffer | null }[];
  /** CreateTime, ms since the epoch. */
  timestamp: number;
  /** Roughly the record's size in a Kafka RecordBatch: key, value, headers and ~21 bytes of framing. */
  sizeInBytes: number;
  /** Roughly the record's size in the JSON request. */
  wireBytes: number;
}

const b64 = (n: number) => 4 * Math.ceil(n / 3);

/** The headers of every record sent without any: one array, never written to. */
const NO_HEADERS: EncodedRecord['headers'] = Object.freeze([]) as unknown as EncodedRecord['headers'];

export function encodeMessage(m: Message, now: number): EncodedRecord {
  const key = toBuffer(m.key);
  const value = toBuffer(m.value);
  const timestamp = toTimestamp(m.timestamp, now);
  let size = 21 + (key?.length ?? 0) + (value?.length ?? 0);
  let wire = 120 + b64(key?.length ?? 0) + b64(value?.length ?? 0);
  if (m.headers === undefined)
    return { key, value, headers: NO_HEADERS, timestamp, sizeInBytes: size, wireBytes: wire };
  const headers: EncodedRecord['headers'] = [];
  for (const [name, raw] of Object.entries(m.headers)) {
    if (raw === undefined) continue;
    for (const v of Array.isArray(raw) ? raw : [raw]) {
      const b = toBuffer(v)!;
      headers.push({ key: name, value: b });
      size += 2 + Buffer.byteLength(name) + b.length;
      wire += 24 + name.length + b64(b.length);
    }
  }
  return { key, value, headers, timestamp, sizeInBytes: size, wireBytes: wire };
}

/** The record as an entry of a JSON records:batch request (without id and partition). */
export function wireEntry(r: EncodedRecord): Omit<WireEntry, 'id' | 'partition_id'> {
  const entry: Omit<WireEntry, 'id' | 'partition_id'> = {
    key: wireData(r.key),
    value: wireData(r.value),
    timestamp: new Date(r.timestamp).toISOString(),
  };
  if (r.headers.length > 0)
    entry.headers = r.headers.map((h) => ({
      name: h.key,
      value: h.value === null ? null : h.value.toString('base64'),
    }));
  return entry;
}

/** One record as the fetch path returns it (format=binary). */
export interface WireRecord {
  partition_id: number;
  offset: number;
  timestamp: string;
  key: { type: string; data: unknown } | null;
  value: { type: string; data: unknown } | null;
  headers?: WireHeader[];
}

function fromWireData(d: WireRecord['key']): Buffer | null {
  if (d === null || d === undefined || d.data === null || d.data === undefined) return null;
  if (d.type === 'BINARY' && typeof d.data === 'string') return Buffer.from(d.data, 'base64');
  if (d.type === 'STRING' && typeof d.data === 'string') return Buffer.from(d.data, 'utf8');
  return Buffer.from(JSON.stringify(d.data), 'utf8');
}

export function decodeRecord(topic: string, r: WireRecord): ConsumerRecord {
  const headers: Record<string, Buffer | Buffer[]> = {};
  for (const h of r.headers ?? []) {
    const v = h.value === null ? Buffer.alloc(0) : Buffer.from(h.value, 'base64');
    const prev = headers[h.name];
    headers[h.name] = prev === undefined ? v : Array.isArray(prev) ? [...prev, v] : [prev, v];
  }
  return {
    topic,
    partition: r.partition_id,
    offset: r.offset,
    timestamp: Date.parse(r.timestamp),
    key: fromWireData(r.key),
    value: fromWireData(r.value),
    headers,
  };
}
