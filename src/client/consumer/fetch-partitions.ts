/**
 * One multi-partition fetch (`POST .../records:fetch`, Kafka's FetchRequest in JSON): every
 * partition asked for in one request, with a long poll across all of them, answered per partition.
 * The consumer's fetcher sends one per round; anything else that reads many partitions can too.
 */
import { decodeRecord, type ConsumerRecord, type WireRecord } from '../codec.js';
import { errorFromBody, KafkaClientError, KafkaProtocolError } from '../errors.js';
import { decodeFetchedRecords } from '../record-batches.js';
import type { Transport } from '../transport.js';
import { decodeFetchResponse, FETCH_RESPONSE_MEDIA_TYPE } from '../../wire/fetch-response.js';

const NONE = (): ConsumerRecord[] => [];

/** Decodes once, on the first call. */
function once(decode: () => ConsumerRecord[]): () => ConsumerRecord[] {
  let records: ConsumerRecord[] | undefined;
  return () => (records ??= decode());
}

export interface PartitionToFetch {
  topic: string;
  partition: number;
  /** The offset to read from (Kafka's fetch_offset). */
  offset: number;
  /** Kafka's max.partition.fetch.bytes (the server's bound when unset). */
  maxBytes?: number;
}

export interface FetchPartitionsRequest {
  partitions: PartitionToFetch[];
  /** Kafka's fetch.max.bytes for the whole answer (the server's bound when unset). */
  maxBytes?: number;
  /** Kafka's fetch.min.bytes, over all partitions. */
  minBytes?: number;
  /** Kafka's fetch.max.wait.ms: how long the server may hold the request for minBytes. */
  maxWaitMs?: number;
  /** 'record-batch' (the default: stored batches, CRCs checked here) or the JSON record list. */
  format?: 'record-batch' | 'json';
  /**
   * Kafka's isolation.level: read_committed reads each partition up to its last stable offset
   * and leaves out the records of aborted transactions (default read_uncommitted).
   */
  isolationLevel?: 'read_uncommitted' | 'read_committed';
}

export interface FetchedPartition {
  topic: string;
  partition: number;
  /** The partition's own error (OFFSET_OUT_OF_RANGE, UNKNOWN_TOPIC_OR_PARTITION, ...); the others are answered. */
  error?: KafkaClientError;
  /**
   * Records at or after the offset asked for. Record batches are checked (CRC: CORRUPT_MESSAGE is
   * thrown here) and decoded when first asked for, as Kafka's consumer decodes a completed fetch
   * when poll() reaches it: the next fetch need not wait for this one's decoding.
   */
  records: () => ConsumerRecord[];
  /** Whether the answer carried any records (before they are decoded). */
  hasRecords: boolean;
  /** Where to fetch next. */
  nextOffset: number;
  highWatermark: number;
  logStartOffset: number;
  /** Kafka's last stable offset (the high watermark when no transaction is open). */
  lastStableOffset: number;
}

interface WirePartition {
  partition_index: number;
  error_code: number;
  error?: string;
  error_message?: string;
  high_watermark: number;
  last_stable_offset?: number;
  log_start_offset: number;
  next_offset: number;
  /** base64 record batches, the JSON record list, or (binary answer) the batches themselves. */
  records: string | WireRecord[] | Uint8Array | null;
  /** read_committed: the aborted transactions among the batches (the server leaves them out of JSON records). */
  aborted_transactions?: { producer_id: number; first_offset: number; last_offset: number }[];
}

interface WireFetchResponse {
  responses: { topic: string; partitions: WirePartition[] }[];
}

/**
 * Sends one fetch for all `request.partitions` (distinct) and answers in their order. A request
 * error (the server unreachable, a bad request) rejects; a partition's error is in its answer, but
 * a batch that fails its CRC throws CORRUPT_MESSAGE from that partition's `records()`.
 */
export async function fetchPartitions(
  transport: Transport,
  request: FetchPartitionsRequest,
  options: { signal?: AbortSignal; timeoutMs?: number } = {},
): Promise<FetchedPartition[]> {
  const topics = new Map<string, { partition: number; fetch_offset: number; partition_max_bytes?: number }[]>();
  for (const p of request.partitions) {
    let list = topics.get(p.topic);
    if (!list) topics.set(p.topic, (list = []));
    list.push({
      partition: p.partition,
      fetch_offset: p.offset,
      ...(p.maxBytes !== undefined ? { partition_max_bytes: p.maxBytes } : {}),
    });
  }
  const format = request.format ?? 'record-batch';
  const res = await transport.request<WireFetchResponse | Buffer>('POST', '/records:fetch', {
    // The binary answer where the server has it (a JSON one, base64 inside, where it does not).
    ...(format === 'record-batch' ? { accept: `${FETCH_RESPONSE_MEDIA_TYPE}, application/json` } : {}),
    body: {
      ...(request.maxBytes !== undefined ? { max_bytes: request.maxBytes } : {}),
      min_bytes: request.minBytes ?? 0,
      max_wait_ms: request.maxWaitMs ?? 0,
      format: format === 'json' ? 'binary' : 'record-batch',
      ...(request.isolationLevel === 'read_committed' ? { isolation_level: 'read_committed' } : {}),
      topics: [...topics].map(([topic, partitions]) => ({ topic, partitions })),
    },
    timeoutMs: (options.timeoutMs ?? transport.requestTimeoutMs) + (request.maxWaitMs ?? 0),
    ...(options.signal ? { signal: options.signal } : {}),
  });
  const answers = new Map<string, WirePartition>();
  for (const t of responsesOf(res.body))
    for (const p of t.partitions) answers.set(`${t.topic}\0${p.partition_index}`, p);
  if (request.isolationLevel === 'read_committed')
    for (const p of answers.values())
      if (p.error_code === 0 && p.aborted_transactions === undefined)
        // A server from before the isolation level read the partitions uncommitted: nothing of it may be used.
        throw new KafkaClientError(
          'UNSUPPORTED_VERSION',
          'The server answered a read_committed multi-partition fetch without aborted transactions: it has no isolation level there',
        );
  return request.partitions.map((asked): FetchedPartition => {
    const { topic, partition, offset } = asked;
    const a = answers.get(`${topic}\0${partition}`);
    /** A partition that failed: no records, fetched again from the same offset. */
    const failed = (
      error: KafkaClientError,
      highWatermark: number,
      logStartOffset: number,
      lastStableOffset: number,
    ): FetchedPartition => ({
      topic,
      partition,
      error,
      records: NONE,
      hasRecords: false,
      nextOffset: offset,
      highWatermark,
      logStartOffset,
      lastStableOffset,
    });
    if (!a) {
      const error = errorFromBody(
        500,
        { error: 'UNKNOWN_SERVER_ERROR', message: `The fetch answer left out ${topic}-${partition}` },
        { topic, partition },
      );
      return failed(error, -1, -1, -1);
    }
    if (a.error_code !== 0) {
      // A partition's error inside a 200 answer: no HTTP status of its own.
      const error = new KafkaProtocolError(
        a.error ?? 'UNKNOWN_SERVER_ERROR',
        a.error_message ?? `error ${a.error_code}`,
        { topic, partition },
      );
      return failed(error, a.high_watermark, a.log_start_offset, a.last_stable_offset ?? a.high_watermark);
    }
    const offsets = {
      nextOffset: a.next_offset,
      highWatermark: a.high_watermark,
      logStartOffset: a.log_start_offset,
      lastStableOffset: a.last_stable_offset ?? a.high_watermark,
    };
    const aborted = (a.aborted_transactions ?? []).map((t) => ({
      producerId: t.producer_id,
      firstOffset: t.first_offset,
      lastOffset: t.last_offset,
    }));
    const batches = typeof a.records === 'string' ? Buffer.from(a.records, 'base64') : a.records;
    if (batches === null || (batches instanceof Uint8Array && batches.byteLength === 0))
      return { topic, partition, records: NONE, hasRecords: false, ...offsets };
    if (batches instanceof Uint8Array)
      return {
        topic,
        partition,
        records: once(() => decodeFetchedRecords(batches, topic, partition, offset, aborted)),
        hasRecords: true,
        ...offsets,
      };
    const records = batches.filter((r) => r.offset >= offset).map((r) => decodeRecord(topic, r));
    return { topic, partition, records: () => records, hasRecords: records.length > 0, ...offsets };
  });
}

/** The answer's topics in the JSON shape, from the JSON answer or the binary one. */
function responsesOf(body: WireFetchResponse | Buffer): WireFetchResponse['responses'] {
  if (!Buffer.isBuffer(body)) return body.responses;
  return decodeFetchResponse(body).map((t) => ({
    topic: t.topic,
    partitions: t.partitions.map(
      (p): WirePartition => ({
        partition_index: p.partitionIndex,
        error_code: p.errorCode,
        ...(p.error !== null ? { error: p.error } : {}),
        ...(p.errorMessage !== null ? { error_message: p.errorMessage } : {}),
        high_watermark: p.highWatermark,
        last_stable_offset: p.lastStableOffset,
        log_start_offset: p.logStartOffset,
        next_offset: p.nextOffset,
        records: p.records,
        ...(p.abortedTransactions !== null
          ? {
              aborted_transactions: p.abortedTransactions.map((x) => ({
                producer_id: x.producerId,
                first_offset: x.firstOffset,
                last_offset: x.lastOffset,
              })),
            }
          : {}),
      }),
    ),
  }));
}
