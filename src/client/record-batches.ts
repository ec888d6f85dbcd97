/**
 * Records as Kafka RecordBatch v2 bytes, the body of the record-batch produce and fetch API
 * (`application/vnd.kafka.record-batch.v2`). Encoding and decoding are the shared wire-format
 * functions (`src/wire/record-batch.ts`, with its CRC-32C and varints), so the client writes exactly the bytes
 * the server stores, and verifies the CRC of every batch it reads, as a Kafka consumer does.
 */
import { KafkaError } from '../wire/errors.js';
import {
  type BatchHeader,
  CONTROL_FLAG_MASK,
  encodeRecordBatch,
  readCheckedBatch,
  type RecordFields,
  type RecordVisitor,
  TIMESTAMP_TYPE_MASK,
  TRANSACTIONAL_FLAG_MASK,
  walkRecords,
} from '../wire/record-batch.js';
import type { AbortedRange } from '../wire/protocol.js';
import type { CompressionType } from '../wire/compression/index.js';
import type { ConsumerRecord, EncodedRecord } from './codec.js';
import { KafkaClientError } from './errors.js';

export interface BatchProducer {
  producerId: number;
  producerEpoch: number;
  baseSequence: number;
  /** A transactional producer's batch (the attribute bit the server and read_committed readers go by). */
  transactional?: boolean;
}

/** Size of a batch's fixed header: a batch of records takes this plus the records. */
export { RECORD_BATCH_OVERHEAD } from '../wire/record-batch.js';

/**
 * One producer batch as RecordBatch v2 bytes (baseOffset 0: the server assigns offsets). An
 * idempotent producer's id, epoch and base sequence go in the batch header, as Kafka's producer
 * writes them; without them the header says producerId -1.
 */
export function encodeProducerBatch(
  records: readonly EncodedRecord[],
  producer?: BatchProducer,
  context: { topic?: string; partition?: number } = {},
  compression: { type: CompressionType; level?: number } = { type: 'none' },
  /** Where the batch is written (new memory by default); see EncodeBatchOptions.allocate. */
  allocate?: (bytes: number) => Uint8Array,
): Uint8Array {
  try {
    // partitionLeaderEpoch -1, as a Kafka producer writes it (the broker sets it).
    const options = producer
      ? {
          producerId: producer.producerId,
          producerEpoch: producer.producerEpoch,
          baseSequence: producer.baseSequence,
          transactional: producer.transactional === true,
        }
      : {};
    return encodeRecordBatch(records as EncodedRecord[], {
      partitionLeaderEpoch: -1,
      compression: compression.type,
      ...(compression.level === undefined ? {} : { compressionLevel: compression.level }),
      ...options,
      ...(allocate ? { allocate } : {}),
    });
  } catch (e) {
    throw asClientError(e, 'INVALID_RECORD', context);
  }
}

/**
 * The records of a fetch answer (whole batches, concatenated) from `fromOffset` on, without the
 * batches of `aborted` transactions (a read_committed fetch's). Every batch's
 * CRC is checked; a corrupt or truncated batch is CORRUPT_MESSAGE. The first batch may start
 * before `fromOffset` (records below it are skipped) and compacted batches may have offset gaps.
 * Control records (transaction markers) are not handed out. Keys, values and header values are
 * views of `bytes`, not copies; a null header value becomes an empty Buffer, as on the JSON path.
 */
export function decodeFetchedRecords(
  bytes: Uint8Array,
  topic: string,
  partition: number,
  fromOffset: number,
  aborted: AbortedRange[] = [],
): ConsumerRecord[] {
  const out: ConsumerRecord[] = [];
  let position = 0;
  try {
    while (position < bytes.length) {
      const { header, size } = readCheckedBatch(bytes, position);
      const { attributes, baseOffset, producerId } = header;
      const skip =
        (attributes & CONTROL_FLAG_MASK) !== 0 ||
        baseOffset + header.lastOffsetDelta < fromOffset ||
        (aborted.length > 0 &&
          (attributes & TRANSACTIONAL_FLAG_MASK) !== 0 &&
          aborted.some(
            (a) => a.producerId === producerId && baseOffset >= a.firstOffset && baseOffset <= a.lastOffset,
          ));
      if (!skip)
        walkRecords(
          bytes,
          position,
          position + size,
          header,
          new ConsumerRecordMaker(header, topic, partition, fromOffset, out),
        );
      position += size;
    }
  } catch (e) {
    throw asClientError(
      e,
      'CORRUPT_MESSAGE',
      { topic, partition },
      `Record batch for ${topic}-${partition} fetched at offset ${fromOffset} is invalid: `,
    );
  }
  return out;
}

/**
 * The walk's visitor that makes each record as the consumer hands it out, and nothing else: keys,
 * values and header values are Buffers over the answer's memory (no copies, no intermediate record).
 */
class ConsumerRecordMaker implements RecordVisitor {
  private headers: Record<string, Buffer | Buffer[]> = {};
  private readonly logAppendTime: boolean;

  constructor(
    private readonly batch: BatchHeader,
    private readonly topic: string,
    private readonly partition: number,
    private readonly fromOffset: number,
    private readonly out: ConsumerRecord[],
  ) {
    this.logAppendTime = (batch.attributes & TIMESTAMP_TYPE_MASK) !== 0;
  }

  header(bytes: Uint8Array, keyStart: number, keyLength: number, valueStart: number, valueLength: number): void {
    const name = Buffer.from(bytes.buffer, bytes.byteOffset + keyStart, keyLength).toString('utf8');
    // A null header value becomes an empty Buffer, as on the JSON path.
    const v = valueLength < 0 ? Buffer.alloc(0) : view(bytes, valueStart, valueLength);
    const prev = this.headers[name];
    this.headers[name] = prev === undefined ? v : Array.isArray(prev) ? [...prev, v] : [prev, v];
  }

  record(f: RecordFields): void {
    const headers = this.headers;
    this.headers = {};
    const offset = this.batch.baseOffset + f.offsetDelta;
    if (offset < this.fromOffset) return;
    const timestamp = this.logAppendTime ? this.batch.maxTimestamp : this.batch.baseTimestamp + f.timestampDelta;
    if (!Number.isSafeInteger(timestamp))
      throw new KafkaError('CORRUPT_MESSAGE', `record ${f.index} timestamp is outside the safe integer range`);
    this.out.push({
      topic: this.topic,
      partition: this.partition,
      offset,
      timestamp,
      key: f.keyLength < 0 ? null : view(f.bytes, f.keyStart, f.keyLength),
      value: f.valueLength < 0 ? null : view(f.bytes, f.valueStart, f.valueLength),
      headers,
    });
  }
}

const view = (b: Uint8Array, start: number, length: number): Buffer =>
  Buffer.from(b.buffer, b.byteOffset + start, length);

/** The log module throws the server's KafkaError (or a RangeError); the client's callers expect its own errors. */
function asClientError(
  e: unknown,
  fallback: string,
  context: { topic?: string; partition?: number },
  prefix = '',
): KafkaClientError {
  if (e instanceof KafkaClientError) return e;
  const type = e instanceof KafkaError ? e.errorName : fallback;
  // A corrupt batch is not cured by fetching it again: poll() raises it, as Kafka's consumer does.
  return new KafkaClientError(type, `${prefix}${(e as Error).message}`, { ...context, retriable: false, cause: e });
}
