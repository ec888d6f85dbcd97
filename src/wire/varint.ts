/**
 * Kafka's variable-length integers (`org.apache.kafka.common.utils.ByteUtils`): zigzag-encoded, then
 * written 7 bits per byte, least significant group first, high bit set on every byte but the last.
 *
 * - varint: a signed 32-bit value, 1..5 bytes. zigzag(n) = (n << 1) ^ (n >> 31).
 * - varlong: a signed 64-bit value, 1..10 bytes. Here values are JS numbers, so a varlong is limited
 *   to the safe integer range (|n| <= 2^53 - 1); reading one outside it is treated as corruption.
 *
 * Writers take (bytes, position, value) and return the position after the value; sizes are computed
 * with `sizeOfVarint` / `sizeOfVarlong` so callers can preallocate one buffer. Readers advance a
 * {@link ByteCursor} and throw `KafkaError('CORRUPT_MESSAGE')` on truncation or an over-long encoding,
 * since their only input is log data.
 */
import { KafkaError } from './errors.js';

/**
 * A read position over `bytes`, bounded by `end` (exclusive). Readers advance `pos`; a caller may
 * narrow `end` (e.g. to one record) and widen it again, which saves allocating a cursor per record.
 */
export interface ByteCursor {
  readonly bytes: Uint8Array;
  pos: number;
  end: number;
}

const TWO_POW_52 = 2 ** 52;

const truncated = (what: string): KafkaError => new KafkaError('CORRUPT_MESSAGE', `truncated ${what}`);

// ---------------------------------------------------------------------------------------------------
// varint (int32)

/** Bytes needed for `value` (a signed 32-bit integer) as a zigzag varint. */
export function sizeOfVarint(value: number): number {
  const z = ((value << 1) ^ (value >> 31)) >>> 0;
  if (z < 0x80) return 1;
  if (z < 0x4000) return 2;
  if (z < 0x20_0000) return 3;
  if (z < 0x1000_0000) return 4;
  return 5;
}

/** Writes `value` (a signed 32-bit integer) as a zigzag varint at `pos`; returns the next position. */
export function writeVarint(bytes: Uint8Array, pos: number, value: number): number {
  let z = ((value << 1) ^ (value >> 31)) >>> 0;
  while (z >= 0x80) {
    bytes[pos++] = (z & 0x7f) | 0x80;
    z >>>= 7;
  }
  bytes[pos++] = z;
  return pos;
}

/** Reads a zigzag varint (at most 5 bytes) at `cursor.pos` and advances it. */
export function readVarint(cursor: ByteCursor): number {
  const { bytes, end } = cursor;
  let pos = cursor.pos;
  let raw = 0;
  for (let shift = 0; shift < 35; shift += 7) {
    if (pos >= end) throw truncated('varint');
    const b = bytes[pos++]!;
    raw |= (b & 0x7f) << shift;
    if (b < 0x80) {
      cursor.pos = pos;
      return (raw >>> 1) ^ -(raw & 1);
    }
  }
  throw new KafkaError('CORRUPT_MESSAGE', 'varint longer than 5 bytes');
}

// ---------------------------------------------------------------------------------------------------
// varlong (int64, limited to safe integers)

/** zigzag for |value| < 2^52: exact in doubles because the result stays below 2^53. */
const zigzagNumber = (value: number): number => (value >= 0 ? value * 2 : -value * 2 - 1);

const zigzagBig = (value: number): bigint => {
  const v = BigInt(value);
  return v >= 0n ? v << 1n : (-v << 1n) - 1n;
};

const checkSafe = (value: number): void => {
  if (!Number.isSafeInteger(value)) throw new RangeError(`varlong value is not a safe integer: ${value}`);
};

/** Bytes needed for `value` (a safe integer) as a zigzag varlong. */
export function sizeOfVarlong(value: number): number {
  if (value >= -0x4000_0000 && value < 0x4000_0000) return sizeOfVarint(value);
  checkSafe(value);
  if (value > -TWO_POW_52 && value < TWO_POW_52) {
    let z = zigzagNumber(value);
    let n = 1;
    while (z >= 0x80) {
      z = Math.floor(z / 0x80);
      n++;
    }
    return n;
  }
  let z = zigzagBig(value);
  let n = 1;
  while (z >= 0x80n) {
    z >>= 7n;
    n++;
  }
  return n;
}

/** Writes `value` (a safe integer) as a zigzag varlong at `pos`; returns the next position. */
export function writeVarlong(bytes: Uint8Array, pos: number, value: number): number {
  // Fast path: values in [-2^30, 2^30) zigzag into 31 bits, the same bytes as a varint.
  if (value >= -0x4000_0000 && value < 0x4000_0000) return writeVarint(bytes, pos, value);
  checkSafe(value);
  if (value > -TWO_POW_52 && value < TWO_POW_52) {
    let z = zigzagNumber(value);
    while (z >= 0x80) {
      bytes[pos++] = (z % 0x80) | 0x80;
      z = Math.floor(z / 0x80);
    }
    bytes[pos++] = z;
    return pos;
  }
  let z = zigzagBig(value);
  while (z >= 0x80n) {
    bytes[pos++] = Number(z & 0x7fn) | 0x80;
    z >>= 7n;
  }
  bytes[pos++] = Number(z);
  return pos;
}

/**
 * Reads a zigzag varlong (at most 10 bytes) at `cursor.pos` and advances it. A value outside the safe
 * integer range cannot be represented as a number and throws CORRUPT_MESSAGE.
 */
export function readVarlong(cursor: ByteCursor): number {
  const { bytes, end } = cursor;
  const start = cursor.pos;
  let pos = start;
  // First four bytes (28 bits) with int arithmetic, the common case for timestamp deltas.
  let low = 0;
  for (let shift = 0; shift < 28; shift += 7) {
    if (pos >= end) throw truncated('varlong');
    const b = bytes[pos++]!;
    low |= (b & 0x7f) << shift;
    if (b < 0x80) {
      cursor.pos = pos;
      return (low >>> 1) ^ -(low & 1);
    }
  }
  // Longer: accumulate in a double while that stays exact (< 2^53), else fall back to BigInt.
  let z = low;
  let scale = 0x1000_0000; // 2^28
  for (let i = 4; i < 10; i++) {
    if (pos >= end) throw truncated('varlong');
    const b = bytes[pos++]!;
    z += (b & 0x7f) * scale;
    if (b < 0x80) {
      cursor.pos = pos;
      if (z <= Number.MAX_SAFE_INTEGER) return z % 2 === 0 ? z / 2 : -(z + 1) / 2;
      return unzigzagBigOrThrow(bytes, start, pos);
    }
    scale *= 0x80;
  }
  throw new KafkaError('CORRUPT_MESSAGE', 'varlong longer than 10 bytes');
}

function unzigzagBigOrThrow(bytes: Uint8Array, start: number, end: number): number {
  let z = 0n;
  for (let i = end - 1; i >= start; i--) z = (z << 7n) | BigInt(bytes[i]! & 0x7f);
  z &= 0xffff_ffff_ffff_ffffn;
  const v = z & 1n ? -((z + 1n) >> 1n) : z >> 1n;
  const n = Number(v);
  if (!Number.isSafeInteger(n)) {
    throw new KafkaError('CORRUPT_MESSAGE', `varlong ${v} is outside the safe integer range`);
  }
  return n;
}
