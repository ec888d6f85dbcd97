import type { Context } from 'hono';
import { KafkaError } from '../errors.js';
import type { BatchFetchResult } from '../log/partition-log.js';

/**
 * Kafka's own record format over HTTP: a body of RecordBatch v2 bytes, as a Kafka producer puts
 * them in a ProduceRequest and a broker returns them in a FetchResponse. It spares both sides the
 * JSON (and base64) round trip: the server checks the batches and stores them as they are.
 */
export const RECORD_BATCH_MEDIA_TYPE = 'application/vnd.kafka.record-batch.v2';

const mediaType = (header: string | undefined) => header?.split(';')[0]!.trim().toLowerCase();

/** Produce bodies are record batches, sent as the product's media type or as plain octets. */
export function requireRecordBatchBody(c: Context): void {
  const type = mediaType(c.req.header('content-type'));
  if (type !== RECORD_BATCH_MEDIA_TYPE && type !== 'application/octet-stream') {
    throw new KafkaError('UNSUPPORTED_MEDIA_TYPE', `This endpoint takes Kafka record batches: Content-Type ${RECORD_BATCH_MEDIA_TYPE} (or application/octet-stream)`);
  }
}

/** Whether a fetch asks for record batches (Accept) rather than the JSON record list. */
export function acceptsRecordBatches(c: Context): boolean {
  return c.req.header('accept')?.split(',').some((t) => mediaType(t) === RECORD_BATCH_MEDIA_TYPE) ?? false;
}

/** The headers that carry what a JSON fetch answer holds beside its records. */
export const FETCH_HEADERS = {
  nextOffset: 'Kafka-Next-Offset',
  highWatermark: 'Kafka-High-Watermark',
  logStartOffset: 'Kafka-Log-Start-Offset',
  lastStableOffset: 'Kafka-Last-Stable-Offset',
  abortedTransactions: 'Kafka-Aborted-Transactions',
} as const;

/**
 * The aborted transactions of a read_committed answer (Kafka's FetchResponse aborted_transactions)
 * as a header: `producerId:firstOffset:lastOffset` per transaction, comma-separated, in first-offset
 * order (lastOffset, the ABORT marker's offset, is more than Kafka sends: a consumer can filter
 * without seeing the marker). Batches of such a producer from firstOffset to lastOffset are aborted.
 */
export const formatAbortedTransactions = (aborted: NonNullable<BatchFetchResult['abortedTransactions']>) => aborted.map((a) => `${a.producerId}:${a.firstOffset}:${a.lastOffset}`).join(',');

export function recordBatchResponse(c: Context, result: BatchFetchResult): Response {
  return c.body(result.batches as Uint8Array<ArrayBuffer>, 200, {
    'Content-Type': RECORD_BATCH_MEDIA_TYPE,
    [FETCH_HEADERS.nextOffset]: String(result.nextOffset),
    [FETCH_HEADERS.highWatermark]: String(result.highWatermark),
    [FETCH_HEADERS.logStartOffset]: String(result.logStartOffset),
    [FETCH_HEADERS.lastStableOffset]: String(result.lastStableOffset),
    ...(result.abortedTransactions ? { [FETCH_HEADERS.abortedTransactions]: formatAbortedTransactions(result.abortedTransactions) } : {}),
  });
}
