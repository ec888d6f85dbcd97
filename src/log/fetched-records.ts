/**
 * A fetch answer's records, decoded: what the JSON answers show (the REST fetch of one partition
 * and Fetch over many, the REST v2 consumer instances). The read path itself answers stored
 * batches only (partition-reader.ts); decoding is the JSON caller's step, as a Kafka consumer
 * decodes what the broker sent. `walkFetchedRecords` visits the same records without an object
 * each, for answers written straight into bytes.
 */
import { isAborted } from '../partition/offset-index.js';
import {
  CONTROL_FLAG_MASK,
  decodeRecordBatch,
  readCheckedBatch,
  TIMESTAMP_TYPE_MASK,
  TRANSACTIONAL_FLAG_MASK,
  walkRecords,
  type BatchHeader,
  type DecodedRecord,
  type RecordFields,
  type RecordVisitor,
} from '../wire/record-batch.js';
import { KafkaError } from '../wire/errors.js';
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

/** The records a reader takes: below the high watermark (read_committed: the last stable offset). */
const upperOf = (result: BatchFetchResult, isolation: IsolationLevel) =>
  isolation === 'read_committed' ? result.lastStableOffset : result.highWatermark;

/**
 * Control batches (transaction markers) are never records to a reader, and read_committed leaves
 * out the batches of the answer's aborted transactions.
 */
export function skipsBatch(header: BatchHeader, result: BatchFetchResult): boolean {
  const { attributes, producerId, baseOffset } = header;
  if (attributes & CONTROL_FLAG_MASK) return true;
  const aborted = result.abortedTransactions;
  return (
    aborted !== undefined &&
    aborted.length > 0 &&
    (attributes & TRANSACTIONAL_FLAG_MASK) !== 0 &&
    isAborted(aborted, producerId, baseOffset)
  );
}

/**
 * The records of a batch answer to a fetch from `offset`: those at or after it (the first batch
 * may start before) and below the high watermark (read_committed: the last stable offset), with
 * absolute offsets, without control batches and (read_committed) aborted transactions.
 */
export function fetchedRecords(result: BatchFetchResult, offset: number, isolation: IsolationLevel): FetchResult {
  const upper = upperOf(result, isolation);
  const records: DecodedRecord[] = [];
  const bytes = result.batches;
  for (let position = 0; position < bytes.length; ) {
    const batch = decodeRecordBatch(bytes, position);
    position += batch.sizeInBytes;
    if (skipsBatch(batch.header, result)) continue;
    for (const r of batch.records) if (r.offset >= offset && r.offset < upper) records.push(r);
  }
  return {
    records,
    nextOffset: result.nextOffset,
    highWatermark: result.highWatermark,
    logStartOffset: result.logStartOffset,
    bytes: bytes.byteLength,
    lastStableOffset: result.lastStableOffset,
  };
}

/**
 * What {@link walkFetchedRecords} hands on: walkRecords' fields of a record, its offset and
 * timestamp, and its headers as (keyStart, keyLength, valueStart, valueLength) in `fields.bytes`,
 * four numbers each (valueLength -1: null). Both are reused from record to record.
 */
export interface FetchedRecordVisitor {
  /** False stops the walk (the record was not taken). */
  record(fields: RecordFields, offset: number, timestamp: number, headers: readonly number[]): boolean;
}

/**
 * The records {@link fetchedRecords} answers, in order, visited where they lie in the batches
 * (walkRecords: nothing copied, no object per record). Returns false when the visitor stopped the walk.
 */
export function walkFetchedRecords(
  result: BatchFetchResult,
  offset: number,
  isolation: IsolationLevel,
  visitor: FetchedRecordVisitor,
): boolean {
  const upper = upperOf(result, isolation);
  const bytes = result.batches;
  const walk = new FetchedWalk(visitor, offset, upper);
  for (let position = 0; position < bytes.length; ) {
    const { header, size } = readCheckedBatch(bytes, position);
    if (!skipsBatch(header, result)) {
      walk.batch = header;
      walkRecords(bytes, position, position + size, header, walk);
      if (walk.stopped) return false;
    }
    position += size;
  }
  return true;
}

/** walkRecords' visitor for one fetch: a class, so the walk's calls stay monomorphic. */
class FetchedWalk implements RecordVisitor {
  batch: BatchHeader | undefined;
  stopped = false;
  private readonly headers: number[] = [];

  constructor(
    private readonly visitor: FetchedRecordVisitor,
    private readonly from: number,
    private readonly upper: number,
  ) {}

  header(_bytes: Uint8Array, keyStart: number, keyLength: number, valueStart: number, valueLength: number): void {
    this.headers.push(keyStart, keyLength, valueStart, valueLength);
  }

  record(f: RecordFields): void {
    const batch = this.batch!;
    const offset = batch.baseOffset + f.offsetDelta;
    const headers = this.headers;
    if (this.stopped || offset < this.from || offset >= this.upper) {
      headers.length = 0;
      return;
    }
    const timestamp =
      (batch.attributes & TIMESTAMP_TYPE_MASK) !== 0 ? batch.maxTimestamp : batch.baseTimestamp + f.timestampDelta;
    if (!Number.isSafeInteger(timestamp))
      throw new KafkaError('CORRUPT_MESSAGE', `record ${f.index} timestamp is outside the safe integer range`);
    if (!this.visitor.record(f, offset, timestamp, headers)) this.stopped = true;
    headers.length = 0;
  }
}
