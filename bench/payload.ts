/**
 * Request bodies for the benchmark, in both body formats. Every record is a keyless 1 KiB value:
 *  - json: a STRING of 1024 ASCII characters (UTF-8 = 1024 bytes, no base64 inflation), the
 *    closest the REST API gets to kafka-producer-perf-test's --record-size 1024;
 *  - batch: the same 1024 bytes as the value of a record in one Kafka RecordBatch v2, encoded by
 *    the product's own codec (src/wire/record-batch.ts), as a Kafka producer would send it.
 * Bodies are built once per batch size and reused, so the load generator spends its CPU on HTTP,
 * not on JSON or encoding.
 */
import { crc32c } from '../src/wire/crc32c.js';
import { decodeRecordBatch, encodeRecordBatch, type LogRecord } from '../src/wire/record-batch.js';
import { readVarint, readVarlong, type ByteCursor } from '../src/wire/varint.js';

export const RECORD_BYTES = 1024;

/** A fixed pseudo-random ASCII string, so values are not one repeated byte. */
const FILLER = (() => {
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
  let seed = 42;
  let s = '';
  for (let i = 0; i < RECORD_BYTES; i++) {
    seed = (seed * 1103515245 + 12345) & 0x7fffffff;
    s += alphabet[seed % alphabet.length];
  }
  return s;
})();

const entry = (id: number, data: string) => `{"id":"${id}","value":{"type":"STRING","data":"${data}"}}`;

/** A produce body of `batch` records, all 1 KiB. */
export function produceBody(batch: number): Buffer {
  const entries: string[] = [];
  for (let i = 0; i < batch; i++) entries.push(entry(i, FILLER));
  return Buffer.from(`{"entries":[${entries.join(',')}]}`);
}

const STAMP_LENGTH = 17; // `T` + 16 digits
const stampBytes = (stampMicros: number) =>
  Buffer.from(`T${String(Math.round(stampMicros)).padStart(16, '0')}`, 'latin1');

/**
 * Produce bodies whose first record carries its send time, for end-to-end latency: the value
 * starts with `T` and the time in microseconds since the epoch (16 digits), then filler to 1 KiB.
 * The body is built once; a request takes a buffer of the pool (a copy of the template, made
 * once per buffer) and patches the 17 stamp bytes in place (`patch` adds what else depends on
 * them), and gives it back with `release` when answered: the open loop neither copies nor
 * allocates a megabyte per request.
 */
export abstract class StampedPool {
  private readonly free: Buffer[] = [];

  protected constructor(
    protected readonly template: Buffer,
    protected readonly stampAt: number,
  ) {}

  body(stampMicros: number): Buffer {
    const out = this.free.pop() ?? Buffer.from(this.template);
    const stamp = stampBytes(stampMicros);
    this.patch(out, stamp);
    stamp.copy(out, this.stampAt);
    return out;
  }

  release(body: Buffer): void {
    this.free.push(body);
  }

  protected patch(_body: Buffer, _stamp: Buffer): void {}
}

/** json: the first entry's STRING value carries the stamp. */
export class StampedBodies extends StampedPool {
  constructor(readonly batch: number) {
    const template = produceBody(batch);
    super(template, template.indexOf('"data":"') + '"data":"'.length);
  }
}

const STAMP_MARKER = Buffer.from('"data":"T');

/** Send times (µs) found in a fetch response (format=string), in order. */
export function findStamps(body: Buffer): number[] {
  const out: number[] = [];
  for (let at = body.indexOf(STAMP_MARKER); at >= 0; at = body.indexOf(STAMP_MARKER, at + STAMP_MARKER.length)) {
    const start = at + STAMP_MARKER.length;
    out.push(Number(body.toString('latin1', start, start + 16)));
  }
  return out;
}

/** Reads an integer field of a JSON response without parsing the whole body (the last occurrence). */
export function lastIntField(body: Buffer, name: string): number | undefined {
  const key = `"${name}":`;
  const at = body.lastIndexOf(key);
  if (at < 0) return undefined;
  let end = at + key.length;
  while (end < body.length && ((body[end]! >= 0x30 && body[end]! <= 0x39) || body[end] === 0x2d)) end++;
  const n = Number(body.toString('latin1', at + key.length, end));
  return Number.isFinite(n) ? n : undefined;
}

// ---------------------------------------------------------------------------------------------------
// The batch format

const asBuffer = (u: Uint8Array) => Buffer.from(u.buffer, u.byteOffset, u.byteLength);
const FILLER_BYTES = Buffer.from(FILLER, 'latin1');

function batchOf(batch: number, first: Uint8Array = FILLER_BYTES): Buffer {
  const timestamp = Date.now();
  const records: LogRecord[] = [];
  for (let i = 0; i < batch; i++)
    records.push({ key: null, value: i === 0 ? first : FILLER_BYTES, headers: [], timestamp });
  return asBuffer(encodeRecordBatch(records));
}

/** A produce body of one RecordBatch v2 holding `batch` keyless 1 KiB records (baseOffset 0, no producer id). */
export function batchBody(batch: number): Buffer {
  return batchOf(batch);
}

/** Where a batch's CRC is (big-endian uint32; it covers the bytes from the attributes, at 21, to the end). */
const CRC_OFFSET = 17;
/** The register of a raw CRC-32C (no pre- or post-inversion) started at `register` after `data`. */
const rawCrc = (data: Uint8Array, register: number) => ~crc32c(data, ~register >>> 0) >>> 0;

/**
 * batch: the first record's value carries the stamp. Re-encoding a 1 MB batch per request (a CRC
 * over all of it) would cost the load generator about as much CPU as the server spends, so the
 * patch updates the CRC from the bytes that change. CRC-32C is linear: changing bytes at distance
 * L from the end changes the CRC by the raw CRC of the changed bits followed by L zero bytes, a
 * linear map of 32 bits computed once per body (the image of each bit): a few dozen operations.
 */
export class StampedBatchBodies extends StampedPool {
  /** shift[i]: the raw CRC register after L zero bytes, started at 1 << i. */
  private readonly shift = new Uint32Array(32);

  constructor(readonly batch: number) {
    const template = batchOf(batch, Buffer.concat([stampBytes(0), FILLER_BYTES.subarray(STAMP_LENGTH)]));
    super(template, firstValueAt(template, 0)!);
    const zeros = Buffer.alloc(template.length - (this.stampAt + STAMP_LENGTH));
    for (let i = 0; i < 32; i++) this.shift[i] = rawCrc(zeros, (1 << i) >>> 0);
    // Once, the codec's own check: the patched CRC must be the CRC of the patched bytes.
    const probe = this.body(1234567890123456);
    decodeRecordBatch(probe);
    this.release(probe);
    decodeRecordBatch(this.body(42)); // the same buffer, patched again
  }

  /** Called before the stamp is written: the CRC changes by the stamp's difference from the old one. */
  protected override patch(body: Buffer, stamp: Buffer): void {
    const delta = Buffer.allocUnsafe(STAMP_LENGTH);
    for (let i = 0; i < STAMP_LENGTH; i++) delta[i] = stamp[i]! ^ body[this.stampAt + i]!;
    const d = rawCrc(delta, 0);
    let change = 0;
    for (let i = 0; i < 32; i++) if ((d >>> i) & 1) change ^= this.shift[i]!;
    body.writeUInt32BE((body.readUInt32BE(CRC_OFFSET) ^ change) >>> 0, CRC_OFFSET);
  }
}

/** Where the first record's value starts in the batch at `position` (undefined if it has no records or a null value). */
function firstValueAt(bytes: Uint8Array, position: number): number | undefined {
  const end = position + 12 + new DataView(bytes.buffer, bytes.byteOffset + position + 8, 4).getInt32(0);
  const c: ByteCursor = { bytes, pos: position + 61, end };
  if (c.pos >= end) return undefined;
  readVarint(c); // record length
  c.pos++; // attributes
  readVarlong(c); // timestamp delta
  readVarint(c); // offset delta
  const keyLength = readVarint(c);
  if (keyLength > 0) c.pos += keyLength;
  const valueLength = readVarint(c);
  return valueLength >= STAMP_LENGTH ? c.pos : undefined;
}

/**
 * Send times (µs) in a binary fetch answer: the first record of each batch at or after `from` (a
 * fetch may start with a batch below the offset asked for, already seen), when its value is a stamp.
 * Walks the batch headers only; the load generator does not decode or verify the records.
 */
export function findBatchStamps(body: Buffer, from: number): number[] {
  const out: number[] = [];
  for (let at = 0; at + 61 <= body.length; ) {
    const baseOffset = Number(body.readBigInt64BE(at));
    const size = 12 + body.readInt32BE(at + 8);
    if (at + size > body.length) break;
    if (baseOffset >= from) {
      const v = firstValueAt(body, at);
      if (v !== undefined && body[v] === 0x54 /* T */)
        out.push(Number(body.toString('latin1', v + 1, v + STAMP_LENGTH)));
    }
    at += size;
  }
  return out;
}
