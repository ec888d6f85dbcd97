import { KafkaError } from './errors.js';
import { encodeRecordBatch, RECORD_BATCH_OVERHEAD, utf8Length, type LogRecord } from './record-batch.js';

/**
 * An upper bound of a record's encoded size inside a v2 batch: each varint field at its widest
 * (length, offset delta, key/value/header lengths: 5 bytes; timestamp delta: 10) plus the payload.
 * Cheap enough for the produce hot path; the exact size is only computed when the bound is too big.
 */
export function recordSizeUpperBound(r: LogRecord): number {
  let n = 5 + 1 + 10 + 5 + 5 + (r.key?.byteLength ?? 0) + 5 + (r.value?.byteLength ?? 0) + 5;
  const headers = r.headers;
  // Indexed: a for-of makes an iterator per record where the loop is not optimised.
  for (let i = 0; i < headers.length; i++) {
    const h = headers[i]!;
    n += 5 + utf8Length(h.key) + 5 + (h.value?.byteLength ?? 0);
  }
  return n;
}

/** Kafka's max.message.bytes bounds a record batch; a record that alone exceeds it is MESSAGE_TOO_LARGE. */
export function checkRecordSize(r: LogRecord, maxMessageBytes: number): void {
  if (RECORD_BATCH_OVERHEAD + recordSizeUpperBound(r) <= maxMessageBytes) return;
  const exact = encodeRecordBatch([r]).byteLength;
  if (exact > maxMessageBytes) {
    throw new KafkaError(
      'MESSAGE_TOO_LARGE',
      `The record batch of one record is ${exact} bytes, larger than max.message.bytes (${maxMessageBytes})`,
    );
  }
}

/**
 * Splits records into runs whose batches stay within max.message.bytes (by the upper bound), so a
 * request of many records for one partition becomes as many batches as the limit requires.
 */
export function chunkRecords<R extends LogRecord>(records: readonly R[], maxMessageBytes: number): R[][] {
  // Each chunk is one slice of `records` (a request holds thousands: no array grown record by record).
  const chunks: R[][] = [];
  let start = 0;
  let size = RECORD_BATCH_OVERHEAD;
  for (let i = 0; i < records.length; i++) {
    const n = recordSizeUpperBound(records[i]!);
    if (i > start && size + n > maxMessageBytes) {
      chunks.push(records.slice(start, i));
      start = i;
      size = RECORD_BATCH_OVERHEAD;
    }
    size += n;
  }
  if (records.length > start) chunks.push(records.slice(start));
  return chunks;
}
