/**
 * Validation of record batches a producer sends as bytes (Kafka's LogValidator for v2 batches from
 * a client, uncompressed or gzip): the batches are checked in place and kept as they are, so a produce does
 * not decode and re-encode what the producer already encoded.
 */
import { KafkaError } from '../wire/errors.js';
import { crc32c } from '../wire/crc32c.js';
import {
  ATTRIBUTES_OFFSET,
  CONTROL_FLAG_MASK,
  LOG_OVERHEAD,
  readBatchHeader,
  recordsCursor,
  setBaseOffset,
  setMaxTimestamp,
  TRANSACTIONAL_FLAG_MASK,
  type BatchHeader,
} from '../wire/record-batch.js';
import { readVarint, readVarlong, type ByteCursor } from '../wire/varint.js';

/** Batches ready to append: offsets relative to the run (0, n1, n1 + n2, ...), as encodeRecordBatch would lay them out. */
export interface ProducedBatches {
  bytes: Uint8Array;
  recordCount: number;
  minTimestamp: number;
  maxTimestamp: number;
  /** Set when the batches come from an idempotent producer (producerId >= 0). */
  producer?: { producerId: number; producerEpoch: number; baseSequence: number; transactional: boolean };
}

export interface ProducedBatchRules {
  maxMessageBytes: number;
  /** cleanup.policy=compact: every record needs a key. */
  requireKeys: boolean;
}

const corrupt = (message: string) => new KafkaError('CORRUPT_MESSAGE', message, { fromCaller: true });
const invalid = (message: string) => new KafkaError('INVALID_RECORD', message);

/**
 * Checks every batch of `bytes` (one or more concatenated v2 batches) and rewrites, in place, what
 * the broker owns: base offsets (relative to the run), and a max timestamp that does not match the
 * records (then the CRC), as Kafka corrects it (LogAppendTime topics are stamped at append time, by
 * the request object). Throws CORRUPT_MESSAGE (bad CRC, truncated or malformed bytes), INVALID_RECORD (inconsistent offsets, a missing key on a compacted topic, control
 * batches), UNSUPPORTED_COMPRESSION_TYPE (snappy, lz4, zstd: gzip and uncompressed
 * batches are taken, and stored compressed as sent), or MESSAGE_TOO_LARGE (a batch above
 * max.message.bytes); nothing is appended then.
 */
export function validateProducedBatches(bytes: Uint8Array, rules: ProducedBatchRules): ProducedBatches {
  if (bytes.byteLength === 0) throw invalid('The request holds no record batch');
  let position = 0;
  let recordCount = 0;
  let minTimestamp = Number.MAX_SAFE_INTEGER;
  let maxTimestamp = -1;
  let producer: ProducedBatches['producer'];
  while (position < bytes.byteLength) {
    let header: BatchHeader;
    try {
      header = readBatchHeader(bytes, position);
    } catch (e) {
      throw e instanceof KafkaError ? corrupt(e.message) : e;
    }
    const size = LOG_OVERHEAD + header.batchLength;
    const end = position + size;
    if (end > bytes.byteLength)
      throw corrupt(`Truncated batch at byte ${position}: needs ${size} bytes, ${bytes.byteLength - position} present`);
    if (size > rules.maxMessageBytes)
      throw new KafkaError(
        'MESSAGE_TOO_LARGE',
        `The record batch at byte ${position} is ${size} bytes, larger than max.message.bytes (${rules.maxMessageBytes})`,
      );
    if (crc32c(bytes.subarray(position + ATTRIBUTES_OFFSET, end)) !== header.crc)
      throw corrupt(`CRC mismatch in the record batch at byte ${position}`);
    // Markers are the transaction coordinator's to write, never a producer's (as Kafka refuses them from clients).
    if (header.attributes & CONTROL_FLAG_MASK)
      throw invalid('Control batches (transaction markers) cannot be produced');
    if (header.recordCount <= 0 || header.lastOffsetDelta + 1 !== header.recordCount) {
      throw invalid(
        `Inconsistent batch at byte ${position}: ${header.recordCount} records for offset deltas 0..${header.lastOffsetDelta}`,
      );
    }
    producer = checkProducer(header, producer, recordCount, position);
    const { min: batchMin, max: batchMax } = checkRecords(bytes, position, end, header, rules.requireKeys);
    if (batchMax !== header.maxTimestamp) setMaxTimestamp(bytes, position, batchMax);
    setBaseOffset(bytes, position, recordCount);
    minTimestamp = Math.min(minTimestamp, batchMin);
    maxTimestamp = Math.max(maxTimestamp, batchMax);
    recordCount += header.recordCount;
    position = end;
  }
  return { bytes, recordCount, minTimestamp, maxTimestamp, ...(producer ? { producer } : {}) };
}

/** All batches of a request share one producer (or none), and their sequences follow on. */
function checkProducer(
  header: BatchHeader,
  before: ProducedBatches['producer'],
  recordsBefore: number,
  position: number,
): ProducedBatches['producer'] {
  const idempotent = header.producerId >= 0;
  const transactional = (header.attributes & TRANSACTIONAL_FLAG_MASK) !== 0;
  if (transactional && !idempotent) throw invalid(`The transactional batch at byte ${position} has no producer id`);
  if (recordsBefore === 0) {
    if (!idempotent) return undefined;
    if (header.producerEpoch < 0 || header.baseSequence < 0)
      throw invalid(`The batch of producer ${header.producerId} needs a producer epoch and a base sequence`);
    return {
      producerId: header.producerId,
      producerEpoch: header.producerEpoch,
      baseSequence: header.baseSequence,
      transactional,
    };
  }
  const same = before
    ? header.producerId === before.producerId &&
      header.producerEpoch === before.producerEpoch &&
      header.baseSequence === before.baseSequence + recordsBefore &&
      transactional === before.transactional
    : !idempotent;
  if (!same)
    throw invalid(`The batch at byte ${position} does not continue the request's producer id, epoch and sequence`);
  return before;
}

/** Walks the records (inflated first, for gzip) without materialising them; returns their smallest and largest timestamps. */
function checkRecords(
  bytes: Uint8Array,
  position: number,
  end: number,
  header: BatchHeader,
  requireKeys: boolean,
): { min: number; max: number } {
  let min = Number.MAX_SAFE_INTEGER;
  let max = -1;
  try {
    const c = recordsCursor(bytes, position, end, header.attributes);
    const recordsEnd = c.end;
    for (let i = 0; i < header.recordCount; i++) {
      const length = readVarint(c);
      const recordEnd = c.pos + length;
      if (length <= 0 || recordEnd > recordsEnd)
        throw corrupt(`Record ${i} of the batch at byte ${position} has an invalid length`);
      c.end = recordEnd;
      c.pos++; // attributes
      const timestamp = header.baseTimestamp + readVarlong(c);
      if (!Number.isSafeInteger(timestamp))
        throw new KafkaError(
          'INVALID_TIMESTAMP',
          `Record ${i} of the batch at byte ${position} has an invalid timestamp`,
        );
      if (timestamp > max) max = timestamp;
      if (timestamp < min) min = timestamp;
      if (readVarint(c) !== i)
        throw invalid(`Record ${i} of the batch at byte ${position} has offset delta other than ${i}`);
      const keyLength = readVarint(c);
      if (keyLength === -1 && requireKeys) throw invalid('A compacted topic cannot accept a record without a key');
      skip(c, keyLength);
      skip(c, readVarint(c)); // value
      const headers = readVarint(c);
      if (headers < 0) throw corrupt(`Record ${i} of the batch at byte ${position} has a negative header count`);
      for (let h = 0; h < headers; h++) {
        const keyBytes = readVarint(c);
        if (keyBytes < 0) throw corrupt(`Record ${i} of the batch at byte ${position} has a header without a key`);
        skip(c, keyBytes);
        skip(c, readVarint(c));
      }
      if (c.pos !== recordEnd)
        throw corrupt(`Record ${i} of the batch at byte ${position} does not end where its length says`);
      c.end = recordsEnd;
    }
    if (c.pos !== recordsEnd) throw corrupt(`The batch at byte ${position} has bytes after its last record`);
  } catch (e) {
    if (e instanceof KafkaError && e.errorName === 'CORRUPT_MESSAGE' && !e.fromCaller) throw corrupt(e.message);
    throw e;
  }
  return { min, max };
}

function skip(c: ByteCursor, length: number): void {
  if (length === -1) return;
  if (length < 0 || length > c.end - c.pos) throw corrupt(`A field length ${length} runs past its record`);
  c.pos += length;
}
