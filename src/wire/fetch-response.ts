/**
 * The binary answer of a multi-partition fetch: Kafka's FetchResponse `responses` field as the
 * protocol lays it out (versions 5-10, not flexible), with fields of ours marked, so the answer needs
 * no JSON and no base64 on either side:
 *
 *   responses            => INT32 count, then per topic:
 *     topic              => INT16 length, UTF-8 bytes
 *     partitions         => INT32 count, then per partition:
 *       partition_index  => INT32
 *       error_code       => INT16
 *       error            => INT16 length (-1: null), UTF-8: the error's name (ours; codes repeat)
 *       error_message    => INT16 length (-1: null), UTF-8 bytes         (ours)
 *       high_watermark   => INT64
 *       last_stable_offset => INT64
 *       log_start_offset => INT64
 *       next_offset      => INT64: where to fetch next                 (ours)
 *       aborted_transactions => INT32 count (-1: null, read_uncommitted), then per transaction:
 *         producer_id    => INT64
 *         first_offset   => INT64
 *         last_offset    => INT64: the ABORT marker's offset           (ours, as the header's)
 *       records          => INT32 length (-1: null), then that many bytes of RecordBatch v2
 *
 * Big-endian. A client asks for it with `Accept: application/vnd.kafka.fetch-response`; without
 * it the answer is the JSON FetchResponse.
 */
import { KafkaError } from './errors.js';
import type { AbortedRange } from './protocol.js';

export const FETCH_RESPONSE_MEDIA_TYPE = 'application/vnd.kafka.fetch-response';

export interface FetchResponsePartition {
  partitionIndex: number;
  errorCode: number;
  /** The error's name, as the JSON answer's `error` (several of this product's names share a code). */
  error: string | null;
  errorMessage: string | null;
  highWatermark: number;
  lastStableOffset: number;
  logStartOffset: number;
  nextOffset: number;
  /** Null for read_uncommitted. */
  abortedTransactions: readonly AbortedRange[] | null;
  /** Record batches: views into the answer when decoded, not copies. */
  records: Uint8Array | null;
}

export interface FetchResponseTopic {
  topic: string;
  partitions: FetchResponsePartition[];
}

/** The fixed bytes of one partition besides its message, aborted transactions and records. */
export const FETCH_RESPONSE_PARTITION_BYTES = 4 + 2 + 2 + 2 + 8 * 4 + 4 + 4;

/** The bytes of one aborted transaction in a partition's aborted_transactions. */
export const FETCH_RESPONSE_ABORTED_BYTES = 8 * 3;

/**
 * The answer as parts to write one after the other: the fields in a few small buffers, the records
 * as the views they came in (no copy of the batches, which are most of the bytes).
 */
export function encodeFetchResponseParts(topics: readonly FetchResponseTopic[]): Uint8Array[] {
  const parts: Uint8Array[] = [];
  let head: Buffer;
  let at: number;
  const fields = (bytes: number) => {
    head = Buffer.allocUnsafe(bytes);
    at = 0;
    parts.push(head);
  };
  const int16 = (n: number) => (at = head.writeInt16BE(n, at));
  const int32 = (n: number) => (at = head.writeInt32BE(n, at));
  const int64 = (n: number) => (at = head.writeBigInt64BE(BigInt(n), at));
  const string = (b: Buffer | null) => {
    if (b === null) return int16(-1);
    int16(b.byteLength);
    at += b.copy(head, at);
  };
  const utf8 = (s: string | null) => (s === null ? null : Buffer.from(s, 'utf8'));
  fields(4);
  int32(topics.length);
  for (const t of topics) {
    const name = Buffer.from(t.topic, 'utf8');
    fields(2 + name.byteLength + 4);
    string(name);
    int32(t.partitions.length);
    for (const p of t.partitions) {
      const error = utf8(p.error);
      const message = utf8(p.errorMessage);
      const aborted = p.abortedTransactions;
      fields(
        FETCH_RESPONSE_PARTITION_BYTES +
          (error?.byteLength ?? 0) +
          (message?.byteLength ?? 0) +
          FETCH_RESPONSE_ABORTED_BYTES * (aborted?.length ?? 0),
      );
      int32(p.partitionIndex);
      int16(p.errorCode);
      string(error);
      string(message);
      int64(p.highWatermark);
      int64(p.lastStableOffset);
      int64(p.logStartOffset);
      int64(p.nextOffset);
      int32(aborted === null ? -1 : aborted.length);
      for (const a of aborted ?? []) {
        int64(a.producerId);
        int64(a.firstOffset);
        int64(a.lastOffset);
      }
      int32(p.records === null ? -1 : p.records.byteLength);
      if (p.records !== null && p.records.byteLength > 0) parts.push(p.records);
    }
  }
  return parts;
}

/** The answer in one buffer. */
export const encodeFetchResponse = (topics: readonly FetchResponseTopic[]): Buffer =>
  Buffer.concat(encodeFetchResponseParts(topics));

const invalid = (message: string) => new KafkaError('CORRUPT_MESSAGE', `Malformed fetch response: ${message}`);

/** Decodes a binary fetch answer; records are views into `bytes`. CORRUPT_MESSAGE for anything malformed. */
export function decodeFetchResponse(bytes: Uint8Array): FetchResponseTopic[] {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let at = 0;
  const need = (n: number, what: string) => {
    if (n < 0 || at + n > bytes.byteLength) throw invalid(`${what} at byte ${at} runs past the end`);
  };
  const int16 = (what: string) => {
    need(2, what);
    const v = view.getInt16(at);
    at += 2;
    return v;
  };
  const int32 = (what: string) => {
    need(4, what);
    const v = view.getInt32(at);
    at += 4;
    return v;
  };
  const int64 = (what: string) => {
    need(8, what);
    const v = Number(view.getBigInt64(at));
    at += 8;
    return v;
  };
  const string = (length: number, what: string) => {
    if (length < 0) throw invalid(`negative length of ${what}`);
    need(length, what);
    const s = Buffer.from(bytes.buffer, bytes.byteOffset + at, length).toString('utf8');
    at += length;
    return s;
  };
  const count = (what: string) => {
    const n = int32(what);
    if (n < 0) throw invalid(`negative ${what}`);
    return n;
  };
  const topics: FetchResponseTopic[] = [];
  for (let t = count('topic count'); t > 0; t--) {
    const topic = string(int16('a topic name length'), 'a topic name');
    const partitions: FetchResponsePartition[] = [];
    for (let p = count('partition count'); p > 0; p--) {
      const partitionIndex = int32('a partition index');
      const errorCode = int16('an error code');
      const nullable = (what: string) => {
        const length = int16(`${what} length`);
        return length === -1 ? null : string(length, what);
      };
      const error = nullable('an error name');
      const errorMessage = nullable('an error message');
      const highWatermark = int64('a high watermark');
      const lastStableOffset = int64('a last stable offset');
      const logStartOffset = int64('a log start offset');
      const nextOffset = int64('a next offset');
      const abortedCount = int32('an aborted transaction count');
      let abortedTransactions: AbortedRange[] | null = null;
      if (abortedCount !== -1) {
        if (abortedCount < 0) throw invalid('negative aborted transaction count');
        abortedTransactions = [];
        for (let a = 0; a < abortedCount; a++)
          abortedTransactions.push({
            producerId: int64('a producer id'),
            firstOffset: int64('a first offset'),
            lastOffset: int64('a last offset'),
          });
      }
      const length = int32('a records length');
      let records: Uint8Array | null = null;
      if (length !== -1) {
        need(length, `the records of ${topic}-${partitionIndex}`);
        records = bytes.subarray(at, at + length);
        at += length;
      }
      partitions.push({
        partitionIndex,
        errorCode,
        error,
        errorMessage,
        highWatermark,
        lastStableOffset,
        logStartOffset,
        nextOffset,
        abortedTransactions,
        records,
      });
    }
    topics.push({ topic, partitions });
  }
  if (at !== bytes.byteLength) throw invalid(`${bytes.byteLength - at} bytes after the last topic`);
  return topics;
}
