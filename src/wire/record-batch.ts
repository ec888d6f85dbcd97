/**
 * Kafka RecordBatch v2 (magic 2), the byte format of every segment (after Kafka's
 * `DefaultRecordBatch` / `DefaultRecord`). Uncompressed or compressed records: with a codec
 * (gzip, snappy, lz4, zstd: ./compression/) the records after the header are one compressed
 * stream, as Kafka writes them.
 *
 * Batch layout, big-endian, offsets from the batch start:
 * ```
 *  0 baseOffset           int64
 *  8 batchLength          int32   bytes after this field (total size = 12 + batchLength)
 * 12 partitionLeaderEpoch int32
 * 16 magic                int8    = 2
 * 17 crc                  uint32  CRC-32C of bytes [21, end): attributes .. last record
 * 21 attributes           int16   bits 0-2 compression, 3 timestampType (1 = LogAppendTime),
 *                                 4 transactional, 5 control, 6 hasDeleteHorizonMs
 * 23 lastOffsetDelta      int32
 * 27 baseTimestamp        int64   timestamp of the first record
 * 35 maxTimestamp         int64
 * 43 producerId           int64
 * 51 producerEpoch        int16
 * 53 baseSequence         int32
 * 57 recordCount          int32
 * 61 records
 * ```
 * Record: length varint (bytes after it), attributes int8 (unused, 0), timestampDelta varlong,
 * offsetDelta varint, keyLength varint (-1 = null), key, valueLength varint (-1 = null), value,
 * header count varint, then per header keyLength varint + UTF-8 key, valueLength varint (-1 = null) +
 * value.
 *
 * The CRC leaves out baseOffset, batchLength, partitionLeaderEpoch and magic, so {@link setBaseOffset}
 * and {@link setPartitionLeaderEpoch} patch a stored batch in place when it is assigned offsets or read,
 * and the CRC stays valid. Readers verify the CRC; a mismatch, a truncated batch or a malformed record
 * is `KafkaError('CORRUPT_MESSAGE')`, never data.
 *
 * Offsets and timestamps are JS numbers; int64 fields outside the safe integer range are rejected as
 * corrupt on read and with a RangeError on write.
 */
import {
  CODEC,
  CodecError,
  type CompressionType,
  compress,
  compressionTypeOf,
  decompress,
} from './compression/index.js';
import { KafkaError } from './errors.js';
import { crc32c } from './crc32c.js';
import {
  type ByteCursor,
  readVarint,
  readVarlong,
  sizeOfVarint,
  sizeOfVarlong,
  writeVarint,
  writeVarlong,
} from './varint.js';

export interface RecordHeader {
  key: string;
  value: Uint8Array | null;
}

export interface LogRecord {
  key: Uint8Array | null;
  value: Uint8Array | null;
  headers: RecordHeader[];
  /** Epoch milliseconds. */
  timestamp: number;
}

/** The fixed 61-byte batch header, decoded. */
export interface BatchHeader {
  baseOffset: number;
  /** Bytes after the batchLength field: the batch occupies 12 + batchLength bytes. */
  batchLength: number;
  partitionLeaderEpoch: number;
  magic: number;
  /** Stored CRC-32C (unsigned). */
  crc: number;
  attributes: number;
  lastOffsetDelta: number;
  baseTimestamp: number;
  maxTimestamp: number;
  producerId: number;
  producerEpoch: number;
  baseSequence: number;
  recordCount: number;
}

/** A decoded record with its absolute offset (baseOffset + offsetDelta). */
export interface DecodedRecord extends LogRecord {
  offset: number;
}

export interface DecodedBatch {
  header: BatchHeader;
  records: DecodedRecord[];
  /** Total size of the batch in bytes (12 + batchLength). */
  sizeInBytes: number;
}

export interface EncodeBatchOptions {
  /** Default 0. */
  baseOffset?: number;
  /** Default 0. */
  partitionLeaderEpoch?: number;
  /** Default -1 (no producer id). */
  producerId?: number;
  /** Default -1. */
  producerEpoch?: number;
  /** Default -1. */
  baseSequence?: number;
  /** Sets the timestampType attribute bit; default false = CreateTime. */
  logAppendTime?: boolean;
  /** Sets the transactional attribute bit (a transactional producer's batch, or a marker). */
  transactional?: boolean;
  /** Sets the control attribute bit (a transaction marker, see src/transactions/control-batch.ts). */
  control?: boolean;
  /** Compresses the records (Kafka's compression.type); default 'none'. */
  compression?: CompressionType;
  /** The codec's level where it takes one (gzip, zstd: ./compression/); default the codec's. */
  compressionLevel?: number;
  /**
   * Offset delta of each record (default: record i gets i). Strictly increasing and >= 0: a
   * compacted batch keeps each kept record's original offset, with gaps where records were removed.
   */
  offsetDeltas?: ArrayLike<number>;
  /**
   * lastOffsetDelta of the batch (default: the last record's offset delta). With it, an empty
   * record list is allowed: Kafka's empty batch, which keeps a cleaned range's last offset.
   */
  lastOffsetDelta?: number;
  /**
   * Where an uncompressed batch is written: memory of exactly the size asked (default: new memory),
   * for a caller that reuses its buffers. A compressed batch is always new memory.
   */
  allocate?: (bytes: number) => Uint8Array;
}

/** The fixed header of a v2 batch (Kafka's RECORD_BATCH_OVERHEAD): a batch takes this plus its records. */
export const RECORD_BATCH_OVERHEAD = 61;
/** baseOffset + batchLength: the bytes of a batch not counted by batchLength. */
export const LOG_OVERHEAD = 12;
export const CURRENT_MAGIC = 2;

/** Attribute bits (Kafka's `RecordBatch` / `DefaultRecordBatch`). */
export const COMPRESSION_CODEC_MASK = 0x07;
export const TIMESTAMP_TYPE_MASK = 0x08;
export const TRANSACTIONAL_FLAG_MASK = 0x10;
export const CONTROL_FLAG_MASK = 0x20;

const BASE_OFFSET_OFFSET = 0;
const BATCH_LENGTH_OFFSET = 8;
const PARTITION_LEADER_EPOCH_OFFSET = 12;
const MAGIC_OFFSET = 16;
const CRC_OFFSET = 17;
export const ATTRIBUTES_OFFSET = 21;
const LAST_OFFSET_DELTA_OFFSET = 23;
const BASE_TIMESTAMP_OFFSET = 27;
const MAX_TIMESTAMP_OFFSET = 35;
const PRODUCER_ID_OFFSET = 43;
const PRODUCER_EPOCH_OFFSET = 51;
const BASE_SEQUENCE_OFFSET = 53;
const RECORD_COUNT_OFFSET = 57;

const TWO_POW_32 = 0x1_0000_0000;
const INT32_MAX = 0x7fff_ffff;

const corrupt = (message: string): KafkaError => new KafkaError('CORRUPT_MESSAGE', message);

// ---------------------------------------------------------------------------------------------------
// int64 <-> number without BigInt: high int32 * 2^32 + low uint32 is exact for safe integers.

function writeInt64(view: DataView, at: number, value: number): void {
  const high = Math.floor(value / TWO_POW_32);
  view.setInt32(at, high);
  view.setUint32(at + 4, value - high * TWO_POW_32);
}

function readInt64(view: DataView, at: number, field: string): number {
  const value = view.getInt32(at) * TWO_POW_32 + view.getUint32(at + 4);
  if (!Number.isSafeInteger(value)) throw corrupt(`${field} is outside the safe integer range`);
  return value;
}

// ---------------------------------------------------------------------------------------------------
// UTF-8 for header keys (short strings; avoid TextEncoder's allocation on the hot path).

const textEncoder = new TextEncoder();
// ignoreBOM keeps a leading U+FEFF as a character, as Kafka's (Java's) UTF-8 decoding does;
// TextDecoder's default would drop it and change the key.
const textDecoder = new TextDecoder('utf-8', { ignoreBOM: true });

/** UTF-8 byte length of `s` as TextEncoder encodes it (a lone surrogate becomes U+FFFD, 3 bytes). */
export function utf8Length(s: string): number {
  const n = s.length;
  let bytes = n;
  for (let i = 0; i < n; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x80) continue;
    if (c < 0x800) {
      bytes += 1;
    } else if (c >= 0xd800 && c <= 0xdbff && i + 1 < n) {
      const d = s.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) i++; // pair: 2 code units -> 4 bytes
      bytes += 2;
    } else {
      bytes += 2;
    }
  }
  return bytes;
}

function writeUtf8(out: Uint8Array, pos: number, s: string, byteLength: number): number {
  if (byteLength === s.length) {
    for (let i = 0; i < byteLength; i++) out[pos + i] = s.charCodeAt(i);
  } else {
    textEncoder.encodeInto(s, out.subarray(pos, pos + byteLength));
  }
  return pos + byteLength;
}

function readUtf8(bytes: Uint8Array, start: number, end: number): string {
  if (end - start <= 32) {
    let s = '';
    for (let i = start; i < end; i++) {
      const b = bytes[i]!;
      if (b >= 0x80) return textDecoder.decode(bytes.subarray(start, end));
      s += String.fromCharCode(b);
    }
    return s;
  }
  return textDecoder.decode(bytes.subarray(start, end));
}

// ---------------------------------------------------------------------------------------------------
// Encoding

/** Scratch space reused across calls: record body sizes and header key byte lengths. */
let bodySizes: Int32Array = new Int32Array(256);
let headerKeyLengths: Int32Array = new Int32Array(256);

const grow = (a: Int32Array, needed: number): Int32Array => {
  if (needed <= a.length) return a;
  const b = new Int32Array(Math.max(needed, a.length * 2));
  b.set(a);
  return b;
};

function checkInt(value: number, min: number, max: number, name: string): void {
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new RangeError(`${name} must be an integer in [${min}, ${max}], got ${value}`);
  }
}

function checkSafeInteger(value: number, name: string): void {
  if (!Number.isSafeInteger(value)) throw new RangeError(`${name} must be a safe integer, got ${value}`);
}

/** Copies `src` to `out` at `pos`; a plain loop beats `set` for the short keys that dominate. */
function copyBytes(out: Uint8Array, pos: number, src: Uint8Array): number {
  const n = src.length;
  if (n < 32) {
    for (let i = 0; i < n; i++) out[pos + i] = src[i]!;
  } else {
    out.set(src, pos);
  }
  return pos + n;
}

/**
 * Encodes `records` as one uncompressed RecordBatch v2. Record i gets offsetDelta i (or offsetDeltas[i]); baseTimestamp is
 * the first record's timestamp (later deltas may be negative) and maxTimestamp the largest.
 *
 * Sizes are computed first and everything is written into one exactly-sized buffer, then the CRC.
 * Throws INVALID_RECORD for an empty list or a timestamp that is not a safe integer, and RangeError
 * for out-of-range options.
 */
export function encodeRecordBatch(records: LogRecord[], options: EncodeBatchOptions = {}): Uint8Array {
  const count = records.length;
  if (count === 0 && options.lastOffsetDelta === undefined)
    throw new KafkaError('INVALID_RECORD', 'a record batch needs at least one record');
  const deltas = options.offsetDeltas;
  if (deltas !== undefined) checkOffsetDeltas(deltas, count);
  const lastRecordDelta = count === 0 ? 0 : deltas !== undefined ? deltas[count - 1]! : count - 1;
  const lastOffsetDelta = options.lastOffsetDelta ?? lastRecordDelta;
  checkInt(lastOffsetDelta, lastRecordDelta, INT32_MAX, 'lastOffsetDelta');
  const baseOffset = options.baseOffset ?? 0;
  const partitionLeaderEpoch = options.partitionLeaderEpoch ?? 0;
  const producerId = options.producerId ?? -1;
  const producerEpoch = options.producerEpoch ?? -1;
  const baseSequence = options.baseSequence ?? -1;
  checkSafeInteger(baseOffset, 'baseOffset');
  checkInt(partitionLeaderEpoch, -0x8000_0000, INT32_MAX, 'partitionLeaderEpoch');
  checkSafeInteger(producerId, 'producerId');
  checkInt(producerEpoch, -0x8000, 0x7fff, 'producerEpoch');
  checkInt(baseSequence, -0x8000_0000, INT32_MAX, 'baseSequence');
  if (count > INT32_MAX) throw new KafkaError('RECORD_LIST_TOO_LARGE', 'too many records for one batch');

  // Pass 1: sizes.
  const baseTimestamp = count === 0 ? -1 : records[0]!.timestamp;
  let maxTimestamp = baseTimestamp;
  let total = RECORD_BATCH_OVERHEAD;
  let headerIndex = 0;
  if (bodySizes.length < count) bodySizes = grow(bodySizes, count);
  const sizes = bodySizes;
  for (let i = 0; i < count; i++) {
    const r = records[i]!;
    const ts = r.timestamp;
    if (!Number.isSafeInteger(ts)) throw new KafkaError('INVALID_RECORD', `record ${i} has an invalid timestamp ${ts}`);
    if (ts > maxTimestamp) maxTimestamp = ts;
    const delta = ts - baseTimestamp;
    if (!Number.isSafeInteger(delta)) {
      throw new KafkaError('INVALID_RECORD', `record ${i} timestamp is too far from the batch's first timestamp`);
    }
    let size = 1 + sizeOfVarlong(delta) + sizeOfVarint(deltas === undefined ? i : deltas[i]!);
    const key = r.key;
    size += key === null ? 1 : sizeOfVarint(key.length) + key.length;
    const value = r.value;
    size += value === null ? 1 : sizeOfVarint(value.length) + value.length;
    const headers = r.headers;
    const headerCount = headers.length;
    size += sizeOfVarint(headerCount);
    if (headerCount > 0) {
      if (headerKeyLengths.length < headerIndex + headerCount) {
        headerKeyLengths = grow(headerKeyLengths, headerIndex + headerCount);
      }
      for (let j = 0; j < headerCount; j++) {
        const h = headers[j]!;
        const keyLength = utf8Length(h.key);
        headerKeyLengths[headerIndex++] = keyLength;
        size += sizeOfVarint(keyLength) + keyLength;
        const hv = h.value;
        size += hv === null ? 1 : sizeOfVarint(hv.length) + hv.length;
      }
    }
    if (size > INT32_MAX) throw new KafkaError('MESSAGE_TOO_LARGE', `record ${i} is too large`);
    sizes[i] = size;
    total += sizeOfVarint(size) + size;
  }
  if (total - LOG_OVERHEAD > INT32_MAX) throw new KafkaError('RECORD_LIST_TOO_LARGE', 'record batch too large');

  // Pass 2: header, then records.
  const compressed = options.compression === 'none' ? undefined : options.compression;
  const out =
    options.allocate !== undefined && compressed === undefined ? options.allocate(total) : new Uint8Array(total);
  const view = new DataView(out.buffer, out.byteOffset, out.byteLength);
  writeInt64(view, BASE_OFFSET_OFFSET, baseOffset);
  view.setInt32(BATCH_LENGTH_OFFSET, total - LOG_OVERHEAD);
  view.setInt32(PARTITION_LEADER_EPOCH_OFFSET, partitionLeaderEpoch);
  out[MAGIC_OFFSET] = CURRENT_MAGIC;
  const attributes =
    (options.logAppendTime === true ? TIMESTAMP_TYPE_MASK : 0) |
    (options.transactional === true ? TRANSACTIONAL_FLAG_MASK : 0) |
    (options.control === true ? CONTROL_FLAG_MASK : 0);
  view.setInt16(ATTRIBUTES_OFFSET, attributes);
  view.setInt32(LAST_OFFSET_DELTA_OFFSET, lastOffsetDelta);
  writeInt64(view, BASE_TIMESTAMP_OFFSET, baseTimestamp);
  writeInt64(view, MAX_TIMESTAMP_OFFSET, maxTimestamp);
  writeInt64(view, PRODUCER_ID_OFFSET, producerId);
  view.setInt16(PRODUCER_EPOCH_OFFSET, producerEpoch);
  view.setInt32(BASE_SEQUENCE_OFFSET, baseSequence);
  view.setInt32(RECORD_COUNT_OFFSET, count);

  let pos = RECORD_BATCH_OVERHEAD;
  headerIndex = 0;
  for (let i = 0; i < count; i++) {
    const r = records[i]!;
    pos = writeVarint(out, pos, sizes[i]!);
    out[pos++] = 0; // record attributes
    pos = writeVarlong(out, pos, r.timestamp - baseTimestamp);
    pos = writeVarint(out, pos, deltas === undefined ? i : deltas[i]!);
    const key = r.key;
    if (key === null) {
      out[pos++] = 1; // varint -1
    } else {
      pos = copyBytes(out, writeVarint(out, pos, key.length), key);
    }
    const value = r.value;
    if (value === null) {
      out[pos++] = 1;
    } else {
      pos = copyBytes(out, writeVarint(out, pos, value.length), value);
    }
    const headers = r.headers;
    const headerCount = headers.length;
    pos = writeVarint(out, pos, headerCount);
    for (let j = 0; j < headerCount; j++) {
      const h = headers[j]!;
      const keyLength = headerKeyLengths[headerIndex++]!;
      pos = writeUtf8(out, writeVarint(out, pos, keyLength), h.key, keyLength);
      const hv = h.value;
      if (hv === null) {
        out[pos++] = 1;
      } else {
        pos = copyBytes(out, writeVarint(out, pos, hv.length), hv);
      }
    }
  }
  if (pos !== total) throw new Error(`record batch size mismatch: wrote ${pos} of ${total} bytes`);
  if (compressed !== undefined) return compressBatch(out, compressed, options.compressionLevel);
  view.setUint32(CRC_OFFSET, crc32c(out.subarray(ATTRIBUTES_OFFSET)));
  return out;
}

/** The same batch with its records compressed: the header copied, the codec and length set, a new CRC. */
function compressBatch(
  plain: Uint8Array,
  type: Exclude<CompressionType, 'none'>,
  level: number | undefined,
): Uint8Array {
  const compressed = compress(type, plain.subarray(RECORD_BATCH_OVERHEAD), level);
  const out = new Uint8Array(RECORD_BATCH_OVERHEAD + compressed.byteLength);
  out.set(plain.subarray(0, RECORD_BATCH_OVERHEAD));
  out.set(compressed, RECORD_BATCH_OVERHEAD);
  const view = new DataView(out.buffer, out.byteOffset, out.byteLength);
  view.setInt32(BATCH_LENGTH_OFFSET, out.byteLength - LOG_OVERHEAD);
  view.setInt16(ATTRIBUTES_OFFSET, view.getInt16(ATTRIBUTES_OFFSET) | CODEC[type]);
  view.setUint32(CRC_OFFSET, crc32c(out.subarray(ATTRIBUTES_OFFSET)));
  return out;
}

function checkOffsetDeltas(deltas: ArrayLike<number>, count: number): void {
  if (deltas.length !== count) throw new RangeError(`offsetDeltas has ${deltas.length} entries for ${count} records`);
  let previous = -1;
  for (let i = 0; i < count; i++) {
    const d = deltas[i]!;
    if (!Number.isInteger(d) || d <= previous || d > INT32_MAX)
      throw new RangeError(`offsetDeltas must be strictly increasing integers in [0, ${INT32_MAX}]`);
    previous = d;
  }
}

// ---------------------------------------------------------------------------------------------------
// Decoding

function headerView(bytes: Uint8Array, position: number): DataView {
  if (!Number.isInteger(position) || position < 0) throw new RangeError(`invalid batch position ${position}`);
  if (bytes.length - position < RECORD_BATCH_OVERHEAD) {
    throw corrupt(`truncated batch header at position ${position}: ${Math.max(0, bytes.length - position)} bytes`);
  }
  const magic = bytes[position + MAGIC_OFFSET]!;
  if (magic !== CURRENT_MAGIC) throw corrupt(`unsupported magic ${magic} at position ${position}`);
  return new DataView(bytes.buffer, bytes.byteOffset + position, RECORD_BATCH_OVERHEAD);
}

/**
 * Decodes the 61-byte header of the batch at `position` without reading its records or checking its
 * CRC (use it to walk batches or index them). Throws CORRUPT_MESSAGE if fewer than 61 bytes remain,
 * the magic is not 2, or batchLength is too small; it does not require the records to be present.
 */
export function readBatchHeader(bytes: Uint8Array, position = 0): BatchHeader {
  const view = headerView(bytes, position);
  const batchLength = view.getInt32(BATCH_LENGTH_OFFSET);
  if (batchLength < RECORD_BATCH_OVERHEAD - LOG_OVERHEAD) {
    throw corrupt(`batch length ${batchLength} at position ${position} is smaller than the batch header`);
  }
  return {
    baseOffset: readInt64(view, BASE_OFFSET_OFFSET, 'baseOffset'),
    batchLength,
    partitionLeaderEpoch: view.getInt32(PARTITION_LEADER_EPOCH_OFFSET),
    magic: CURRENT_MAGIC,
    crc: view.getUint32(CRC_OFFSET),
    attributes: view.getInt16(ATTRIBUTES_OFFSET),
    lastOffsetDelta: view.getInt32(LAST_OFFSET_DELTA_OFFSET),
    baseTimestamp: readInt64(view, BASE_TIMESTAMP_OFFSET, 'baseTimestamp'),
    maxTimestamp: readInt64(view, MAX_TIMESTAMP_OFFSET, 'maxTimestamp'),
    producerId: readInt64(view, PRODUCER_ID_OFFSET, 'producerId'),
    producerEpoch: view.getInt16(PRODUCER_EPOCH_OFFSET),
    baseSequence: view.getInt32(BASE_SEQUENCE_OFFSET),
    recordCount: view.getInt32(RECORD_COUNT_OFFSET),
  };
}

export { CODEC, type CompressionType } from './compression/index.js';

/** A compressed batch may inflate to at most this much: a bound against decompression bombs. */
export const MAX_INFLATED_RECORDS_BYTES = 64 * 1024 * 1024;

/**
 * A cursor over the records of the batch at [position, end): the bytes after the header, or, for
 * a compressed batch, those bytes inflated (CORRUPT_MESSAGE if they do not inflate, or inflate past
 * {@link MAX_INFLATED_RECORDS_BYTES}; UNSUPPORTED_COMPRESSION_TYPE for a codec id Kafka does not have).
 */
export function recordsCursor(bytes: Uint8Array, position: number, end: number, attributes: number): ByteCursor {
  const codec = attributes & COMPRESSION_CODEC_MASK;
  const start = position + RECORD_BATCH_OVERHEAD;
  if (codec === CODEC.none) return { bytes, pos: start, end };
  const type = compressionTypeOf(codec);
  if (type === undefined)
    throw new KafkaError(
      'UNSUPPORTED_COMPRESSION_TYPE',
      `compression codec ${codec} of the batch at position ${position} does not exist`,
    );
  let inflated: Uint8Array;
  try {
    inflated = decompress(codec, bytes.subarray(start, end), MAX_INFLATED_RECORDS_BYTES);
  } catch (e) {
    if (!(e instanceof CodecError)) throw e;
    throw corrupt(
      e.tooLarge
        ? `the ${type} records of the batch at position ${position} inflate past ${MAX_INFLATED_RECORDS_BYTES} bytes`
        : `the ${type} records of the batch at position ${position} do not inflate (${e.message})`,
    );
  }
  return { bytes: inflated, pos: 0, end: inflated.byteLength };
}

/**
 * Reads the header of the batch at `position` and verifies the batch: it lies within `bytes` and
 * its CRC-32C matches, otherwise CORRUPT_MESSAGE. Returns the header and the batch's size.
 */
export function readCheckedBatch(bytes: Uint8Array, position = 0): { header: BatchHeader; size: number } {
  const header = readBatchHeader(bytes, position);
  const size = LOG_OVERHEAD + header.batchLength;
  const end = position + size;
  if (end > bytes.length) {
    throw corrupt(`truncated batch at position ${position}: needs ${size} bytes, ${bytes.length - position} present`);
  }
  const crc = crc32c(bytes.subarray(position + ATTRIBUTES_OFFSET, end));
  if (crc !== header.crc) {
    throw corrupt(`CRC mismatch in batch at position ${position}: stored ${header.crc}, computed ${crc}`);
  }
  return { header, size };
}

/**
 * Where one record's fields are, as {@link walkRecords} found them: offsets into `bytes` (the
 * batch's bytes, or its records inflated), nothing copied. A walk fills one object for every record
 * of the batch: take what you keep during the visit.
 */
export interface RecordFields {
  bytes: Uint8Array;
  /** The record's place in its batch, from 0. */
  index: number;
  timestampDelta: number;
  offsetDelta: number;
  keyStart: number;
  /** -1: a null key. */
  keyLength: number;
  valueStart: number;
  /** -1: a null value. */
  valueLength: number;
  headerCount: number;
}

export interface RecordVisitor {
  /** Each header of a record, before `record` is called for that record; valueLength -1 is null. */
  header?(bytes: Uint8Array, keyStart: number, keyLength: number, valueStart: number, valueLength: number): void;
  record(fields: RecordFields): void;
}

/**
 * The allocation-free record walker, the one reader of the record grammar: walks the records of
 * the batch at [position, end) (its header read, its CRC checked), inflated first if compressed, and
 * hands the visitor where each record's fields are. It checks the framing only (every length within
 * its record, every record within the batch, no bytes left over) and throws CORRUPT_MESSAGE where it
 * fails, UNSUPPORTED_COMPRESSION_TYPE for a codec id that does not exist. What the fields must hold (offsets,
 * keys, timestamps) is the caller's rule: the decoder's, or the produce validator's.
 */
export function walkRecords(
  bytes: Uint8Array,
  position: number,
  end: number,
  header: BatchHeader,
  visitor: RecordVisitor,
): void {
  if (header.recordCount < 0) throw corrupt(`negative record count ${header.recordCount}`);
  const c = recordsCursor(bytes, position, end, header.attributes);
  const recordsEnd = c.end;
  const fields: RecordFields = {
    bytes: c.bytes,
    index: 0,
    timestampDelta: 0,
    offsetDelta: 0,
    keyStart: 0,
    keyLength: -1,
    valueStart: 0,
    valueLength: -1,
    headerCount: 0,
  };
  for (let i = 0; i < header.recordCount; i++) {
    const length = readVarint(c);
    if (length <= 0 || length > recordsEnd - c.pos) throw corrupt(`invalid length ${length} of record ${i}`);
    const recordEnd = c.pos + length;
    c.end = recordEnd;
    c.pos++; // record attributes: unused in v2
    fields.index = i;
    fields.timestampDelta = readVarlong(c);
    fields.offsetDelta = readVarint(c);
    fields.keyLength = nullableLength(c, 'key');
    fields.keyStart = c.pos;
    if (fields.keyLength > 0) c.pos += fields.keyLength;
    fields.valueLength = nullableLength(c, 'value');
    fields.valueStart = c.pos;
    if (fields.valueLength > 0) c.pos += fields.valueLength;
    const headerCount = readVarint(c);
    if (headerCount < 0 || headerCount > recordEnd - c.pos) throw corrupt(`invalid header count ${headerCount}`);
    fields.headerCount = headerCount;
    for (let j = 0; j < headerCount; j++) {
      const keyLength = readVarint(c);
      if (keyLength < 0 || keyLength > recordEnd - c.pos) throw corrupt(`invalid header key length ${keyLength}`);
      const keyStart = c.pos;
      c.pos += keyLength;
      const valueLength = nullableLength(c, 'header value');
      const valueStart = c.pos;
      if (valueLength > 0) c.pos += valueLength;
      visitor.header?.(c.bytes, keyStart, keyLength, valueStart, valueLength);
    }
    if (c.pos !== recordEnd) throw corrupt(`record ${i} has ${recordEnd - c.pos} unread bytes`);
    c.end = recordsEnd;
    visitor.record(fields);
  }
  if (c.pos !== recordsEnd)
    throw corrupt(`${recordsEnd - c.pos} bytes after the last record of the batch at position ${position}`);
}

/** The length of a nullable byte field (-1 = null), which must fit what is left of the record. */
function nullableLength(c: ByteCursor, what: string): number {
  const length = readVarint(c);
  if (length < -1 || length > c.end - c.pos) throw corrupt(`invalid ${what} length ${length}`);
  return length;
}

/** A nullable field as a view into the walked bytes. */
const viewOf = (bytes: Uint8Array, start: number, length: number): Uint8Array | null =>
  length === -1 ? null : bytes.subarray(start, start + length);

/**
 * Decodes and verifies the batch at `position`: its CRC-32C must match and every record must parse
 * exactly within the batch (inflated first, if compressed), otherwise CORRUPT_MESSAGE.
 *
 * Aliasing: returned keys, values and header values are `subarray` views of `bytes`, not copies. They
 * stay valid as long as `bytes` is not modified; copy them (`slice()`) before reusing the buffer.
 *
 * For a LogAppendTime batch every record's timestamp is the batch's maxTimestamp, as Kafka reports it.
 */
export function decodeRecordBatch(bytes: Uint8Array, position = 0): DecodedBatch {
  const { header, size: sizeInBytes } = readCheckedBatch(bytes, position);
  const decoder = new RecordDecoder(header);
  walkRecords(bytes, position, position + sizeInBytes, header, decoder);
  return { header, records: decoder.records, sizeInBytes };
}

/** The decoder's visitor: a class, so the walk's calls stay monomorphic on the fetch path. */
class RecordDecoder implements RecordVisitor {
  readonly records: DecodedRecord[] = [];
  private headers: RecordHeader[] = [];
  private readonly logAppendTime: boolean;

  constructor(private readonly batch: BatchHeader) {
    this.logAppendTime = (batch.attributes & TIMESTAMP_TYPE_MASK) !== 0;
  }

  header(bytes: Uint8Array, keyStart: number, keyLength: number, valueStart: number, valueLength: number): void {
    this.headers.push({
      key: readUtf8(bytes, keyStart, keyStart + keyLength),
      value: viewOf(bytes, valueStart, valueLength),
    });
  }

  record(f: RecordFields): void {
    const timestamp = this.logAppendTime ? this.batch.maxTimestamp : this.batch.baseTimestamp + f.timestampDelta;
    if (!Number.isSafeInteger(timestamp))
      throw corrupt(`record ${f.index} timestamp is outside the safe integer range`);
    this.records.push({
      key: viewOf(f.bytes, f.keyStart, f.keyLength),
      value: viewOf(f.bytes, f.valueStart, f.valueLength),
      headers: this.headers,
      timestamp,
      offset: this.batch.baseOffset + f.offsetDelta,
    });
    this.headers = [];
  }
}

/**
 * Decodes a concatenation of batches (a segment or a produce object), verifying each. A trailing
 * partial batch is CORRUPT_MESSAGE, not silently dropped.
 */
export function decodeRecordBatches(bytes: Uint8Array): DecodedBatch[] {
  const batches: DecodedBatch[] = [];
  let position = 0;
  while (position < bytes.length) {
    const batch = decodeRecordBatch(bytes, position);
    batches.push(batch);
    position += batch.sizeInBytes;
  }
  return batches;
}

/** Sets baseOffset of the batch at `position` in place; the CRC does not cover it and stays valid. */
export function setBaseOffset(bytes: Uint8Array, position: number, baseOffset: number): void {
  checkSafeInteger(baseOffset, 'baseOffset');
  writeInt64(headerView(bytes, position), BASE_OFFSET_OFFSET, baseOffset);
}

/** Sets partitionLeaderEpoch of the batch at `position` in place; the CRC stays valid. */
export function setPartitionLeaderEpoch(bytes: Uint8Array, position: number, epoch: number): void {
  checkInt(epoch, -0x8000_0000, INT32_MAX, 'partitionLeaderEpoch');
  headerView(bytes, position).setInt32(PARTITION_LEADER_EPOCH_OFFSET, epoch);
}

/**
 * Sets maxTimestamp of the batch at `position` and recomputes its CRC (which covers it): the broker
 * corrects a producer's max timestamp to the records' largest, as Kafka's validator does.
 */
export function setMaxTimestamp(bytes: Uint8Array, position: number, maxTimestamp: number): void {
  checkSafeInteger(maxTimestamp, 'maxTimestamp');
  const view = headerView(bytes, position);
  writeInt64(view, MAX_TIMESTAMP_OFFSET, maxTimestamp);
  resealCrc(bytes, position, view);
}

/** Marks the batch at `position` LogAppendTime with the broker's time `now`, and recomputes its CRC. */
export function setLogAppendTime(bytes: Uint8Array, position: number, now: number): void {
  checkSafeInteger(now, 'now');
  const view = headerView(bytes, position);
  view.setInt16(ATTRIBUTES_OFFSET, view.getInt16(ATTRIBUTES_OFFSET) | TIMESTAMP_TYPE_MASK);
  writeInt64(view, MAX_TIMESTAMP_OFFSET, now);
  resealCrc(bytes, position, view);
}

function resealCrc(bytes: Uint8Array, position: number, view: DataView): void {
  const end = position + LOG_OVERHEAD + view.getInt32(BATCH_LENGTH_OFFSET);
  view.setUint32(CRC_OFFSET, crc32c(bytes.subarray(position + ATTRIBUTES_OFFSET, end)));
}

/**
 * The batches of `bytes` with their records compressed as `compression` says (Kafka's topic
 * compression.type when it differs from the producer's): a batch already so is kept as it is, any
 * other is decoded and encoded again with the same header fields and offsets.
 */
export function recompressBatches(bytes: Uint8Array, compression: CompressionType, level?: number): Uint8Array {
  const wanted = CODEC[compression];
  const out: Uint8Array[] = [];
  let changed = false;
  for (let at = 0; at < bytes.byteLength; ) {
    const header = readBatchHeader(bytes, at);
    const size = LOG_OVERHEAD + header.batchLength;
    if ((header.attributes & COMPRESSION_CODEC_MASK) === wanted) {
      out.push(bytes.subarray(at, at + size));
    } else {
      const { records } = decodeRecordBatch(bytes, at);
      out.push(
        encodeRecordBatch(records, {
          baseOffset: header.baseOffset,
          partitionLeaderEpoch: header.partitionLeaderEpoch,
          producerId: header.producerId,
          producerEpoch: header.producerEpoch,
          baseSequence: header.baseSequence,
          logAppendTime: (header.attributes & TIMESTAMP_TYPE_MASK) !== 0,
          transactional: (header.attributes & TRANSACTIONAL_FLAG_MASK) !== 0,
          offsetDeltas: records.map((r) => r.offset - header.baseOffset),
          lastOffsetDelta: header.lastOffsetDelta,
          compression,
          ...(level === undefined ? {} : { compressionLevel: level }),
        }),
      );
      changed = true;
    }
    at += size;
  }
  return changed ? Buffer.concat(out) : bytes;
}
