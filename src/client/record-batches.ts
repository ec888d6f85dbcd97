/**
 * Records as Kafka RecordBatch v2 bytes, the body of the record-batch produce and fetch API
 * (`application/vnd.kafka.record-batch.v2`). Encoding and decoding are the shared wire-format
 * functions (`src/wire/record-batch.ts`, with its CRC-32C and varints), so the client writes exactly the bytes
 * the server stores, and verifies the CRC of every batch it reads, as a Kafka consumer does.
 */
import { KafkaError } from '../wire/errors.js';
import {
  CONTROL_FLAG_MASK,
  decodeRecordBatches,
  encodeRecordBatch,
  TRANSACTIONAL_FLAG_MASK,
} from '../wire/record-batch.js';
import type { AbortedRange } from '../wire/protocol.js';
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
  compression: 'none' | 'gzip' = 'none',
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
    return encodeRecordBatch(records as EncodedRecord[], { partitionLeaderEpoch: -1, compression, ...options });
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
  let batches: ReturnType<typeof decodeRecordBatches>;
  try {
    batches = decodeRecordBatches(bytes);
  } catch (e) {
    throw asClientError(
      e,
      'CORRUPT_MESSAGE',
      { topic, partition },
      `Record batch for ${topic}-${partition} fetched at offset ${fromOffset} is invalid: `,
    );
  }
  const out: ConsumerRecord[] = [];
  for (const batch of batches) {
    const { attributes, baseOffset, producerId } = batch.header;
    if ((attributes & CONTROL_FLAG_MASK) !== 0) continue;
    if (baseOffset + batch.header.lastOffsetDelta < fromOffset) continue;
    if (
      aborted.length > 0 &&
      (attributes & TRANSACTIONAL_FLAG_MASK) !== 0 &&
      aborted.some((a) => a.producerId === producerId && baseOffset >= a.firstOffset && baseOffset <= a.lastOffset)
    )
      continue;
    for (const r of batch.records) {
      if (r.offset < fromOffset) continue;
      const headers: Record<string, Buffer | Buffer[]> = {};
      for (const h of r.headers) {
        const v = h.value === null ? Buffer.alloc(0) : view(h.value);
        const prev = headers[h.key];
        headers[h.key] = prev === undefined ? v : Array.isArray(prev) ? [...prev, v] : [prev, v];
      }
      out.push({
        topic,
        partition,
        offset: r.offset,
        timestamp: r.timestamp,
        key: r.key === null ? null : view(r.key),
        value: r.value === null ? null : view(r.value),
        headers,
      });
    }
  }
  return out;
}

const view = (b: Uint8Array): Buffer => Buffer.from(b.buffer, b.byteOffset, b.byteLength);

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
