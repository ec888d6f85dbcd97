/**
 * A fetch answer's records, decoded: what the JSON answers show (the REST fetch of one partition
 * and Fetch over many, the REST v2 consumer instances). The read path itself answers stored
 * batches only (partition-reader.ts); decoding is the JSON caller's step, as a Kafka consumer
 * decodes what the broker sent.
 */
import { isAborted } from '../partition/offset-index.js';
import {
  CONTROL_FLAG_MASK,
  decodeRecordBatches,
  TRANSACTIONAL_FLAG_MASK,
  type DecodedRecord,
} from '../wire/record-batch.js';
import type { BatchFetchResult, IsolationLevel } from './partition-reader.js';

/** A fetch answered as records (Kafka's Fetch, decoded). */
export interface FetchResult {
  records: DecodedRecord[];
  /** The offset to fetch next: one past the last record returned, or the requested offset. */
  nextOffset: number;
  highWatermark: number;
  logStartOffset: number;
  /** Bytes of record batches read to answer (Kafka's fetch size accounting). */
  bytes: number;
  lastStableOffset: number;
}

/**
 * The records of a batch answer to a fetch from `offset`: those at or after it (the first batch
 * may start before) and below the high watermark (read_committed: the last stable offset), with
 * absolute offsets. Control batches (transaction markers) are never records to a reader, and
 * read_committed leaves out the batches of the answer's aborted transactions.
 */
export function fetchedRecords(result: BatchFetchResult, offset: number, isolation: IsolationLevel): FetchResult {
  const upper = isolation === 'read_committed' ? result.lastStableOffset : result.highWatermark;
  const aborted = result.abortedTransactions ?? [];
  const records: DecodedRecord[] = [];
  for (const batch of decodeRecordBatches(result.batches)) {
    const { attributes, producerId, baseOffset } = batch.header;
    if (attributes & CONTROL_FLAG_MASK) continue;
    if (aborted.length > 0 && attributes & TRANSACTIONAL_FLAG_MASK && isAborted(aborted, producerId, baseOffset))
      continue;
    for (const r of batch.records) if (r.offset >= offset && r.offset < upper) records.push(r);
  }
  return {
    records,
    nextOffset: result.nextOffset,
    highWatermark: result.highWatermark,
    logStartOffset: result.logStartOffset,
    bytes: result.batches.byteLength,
    lastStableOffset: result.lastStableOffset,
  };
}
