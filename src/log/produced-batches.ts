/**
 * Validation of record batches a producer sends as bytes (Kafka's LogValidator for v2 batches from
 * a client, uncompressed or compressed with any of Kafka's codecs): the batches are checked in place and kept as they are, so a
 * produce does not decode and re-encode what the producer already encoded. The wire format (CRC,
 * framing, the record grammar) is src/wire's `readCheckedBatch` and `walkRecords`; what is here
 * is the broker's rules over it.
 */
import { KafkaError } from '../wire/errors.js';
import {
  CONTROL_FLAG_MASK,
  readCheckedBatch,
  setBaseOffset,
  setMaxTimestamp,
  TRANSACTIONAL_FLAG_MASK,
  walkRecords,
  type BatchHeader,
  type RecordFields,
  type RecordVisitor,
} from '../wire/record-batch.js';

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
 * batches), UNSUPPORTED_COMPRESSION_TYPE (a codec id Kafka does not have; compressed batches are
 * inflated to be checked, bounded, and stored compressed as sent), or MESSAGE_TOO_LARGE (a batch above
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
    const { header, size } = asCallers(() => readCheckedBatch(bytes, position));
    if (size > rules.maxMessageBytes)
      throw new KafkaError(
        'MESSAGE_TOO_LARGE',
        `The record batch at byte ${position} is ${size} bytes, larger than max.message.bytes (${rules.maxMessageBytes})`,
      );
    // Markers are the transaction coordinator's to write, never a producer's (as Kafka refuses them from clients).
    if (header.attributes & CONTROL_FLAG_MASK)
      throw invalid('Control batches (transaction markers) cannot be produced');
    if (header.recordCount <= 0 || header.lastOffsetDelta + 1 !== header.recordCount) {
      throw invalid(
        `Inconsistent batch at byte ${position}: ${header.recordCount} records for offset deltas 0..${header.lastOffsetDelta}`,
      );
    }
    producer = checkProducer(header, producer, recordCount, position);
    const { min: batchMin, max: batchMax } = checkRecords(bytes, position, position + size, header, rules.requireKeys);
    if (batchMax !== header.maxTimestamp) setMaxTimestamp(bytes, position, batchMax);
    setBaseOffset(bytes, position, recordCount);
    minTimestamp = Math.min(minTimestamp, batchMin);
    maxTimestamp = Math.max(maxTimestamp, batchMax);
    recordCount += header.recordCount;
    position += size;
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

/**
 * The records' rules (the wire walker checks their framing): offset deltas 0, 1, 2, ..., safe
 * timestamps, keys where the topic is compacted. Returns the smallest and largest timestamps.
 */
function checkRecords(
  bytes: Uint8Array,
  position: number,
  end: number,
  header: BatchHeader,
  requireKeys: boolean,
): { min: number; max: number } {
  const rules = new RecordRules(header, position, requireKeys);
  asCallers(() => walkRecords(bytes, position, end, header, rules));
  return { min: rules.min, max: rules.max };
}

/** The visitor of `checkRecords`: a class, so the walk's calls stay monomorphic on the produce path. */
class RecordRules implements RecordVisitor {
  min = Number.MAX_SAFE_INTEGER;
  max = -1;

  constructor(
    private readonly batch: BatchHeader,
    private readonly position: number,
    private readonly requireKeys: boolean,
  ) {}

  record(f: RecordFields): void {
    const timestamp = this.batch.baseTimestamp + f.timestampDelta;
    if (!Number.isSafeInteger(timestamp))
      throw new KafkaError(
        'INVALID_TIMESTAMP',
        `Record ${f.index} of the batch at byte ${this.position} has an invalid timestamp`,
      );
    if (timestamp > this.max) this.max = timestamp;
    if (timestamp < this.min) this.min = timestamp;
    if (f.offsetDelta !== f.index)
      throw invalid(`Record ${f.index} of the batch at byte ${this.position} has offset delta other than ${f.index}`);
    if (f.keyLength === -1 && this.requireKeys) throw invalid('A compacted topic cannot accept a record without a key');
  }
}

/** Runs `read`, marking the bytes' corruption it finds as the producer's (fromCaller), not the server's. */
function asCallers<T>(read: () => T): T {
  try {
    return read();
  } catch (e) {
    if (e instanceof KafkaError && e.errorName === 'CORRUPT_MESSAGE' && !e.fromCaller) throw corrupt(e.message);
    throw e;
  }
}
