import type { Context } from 'hono';
import { KafkaError } from '../wire/errors.js';
import type { BatchFetchResult } from '../log/partition-log.js';
import type { ProducedBatches } from '../log/produced-batches.js';

import {
  type AbortedRange,
  FETCH_HEADERS,
  formatAbortedTransactions,
  RECORD_BATCH_MEDIA_TYPE,
} from '../wire/protocol.js';
import { requestHeader } from './incoming-header.js';
import { mediaType } from './request.js';

/*
 * Kafka's own record format over HTTP (wire/protocol.ts): it spares both sides the JSON (and
 * base64) round trip: the server checks the batches and stores them as they are.
 */
export { FETCH_HEADERS, RECORD_BATCH_MEDIA_TYPE };

/** Produce bodies are record batches, sent as the product's media type or as plain octets. */
export function requireRecordBatchBody(c: Context): void {
  const type = mediaType(requestHeader(c, 'content-type'));
  if (type !== RECORD_BATCH_MEDIA_TYPE && type !== 'application/octet-stream') {
    throw new KafkaError(
      'UNSUPPORTED_MEDIA_TYPE',
      `This endpoint takes Kafka record batches: Content-Type ${RECORD_BATCH_MEDIA_TYPE} (or application/octet-stream)`,
    );
  }
}

/**
 * As Kafka's ProduceRequest: transactional batches come with the request's transactional id
 * (`?transactional_id=`), and only they do.
 */
export function requireTransactionalBatches(transactionalId: string | undefined, batches: ProducedBatches): void {
  if ((transactionalId !== undefined) !== (batches.producer?.transactional === true)) {
    throw new KafkaError(
      'INVALID_REQUEST',
      'Transactional batches need the transactional_id query parameter, and it takes only transactional batches',
    );
  }
}

/** Whether the request's Accept names `type` (e.g. record batches rather than the JSON record list). */
export function accepts(c: Context, type: string): boolean {
  return (
    c.req
      .header('accept')
      ?.split(',')
      .some((t) => mediaType(t) === type) ?? false
  );
}

export const acceptsRecordBatches = (c: Context): boolean => accepts(c, RECORD_BATCH_MEDIA_TYPE);

/** What one aborted transaction takes of the Kafka-Aborted-Transactions header: its entry and a comma. */
export const abortedHeaderCost = (a: AbortedRange): number => formatAbortedTransactions([a]).length + 1;

export function recordBatchResponse(c: Context, result: BatchFetchResult): Response {
  return c.body(result.batches as Uint8Array<ArrayBuffer>, 200, {
    'Content-Type': RECORD_BATCH_MEDIA_TYPE,
    [FETCH_HEADERS.nextOffset]: String(result.nextOffset),
    [FETCH_HEADERS.highWatermark]: String(result.highWatermark),
    [FETCH_HEADERS.logStartOffset]: String(result.logStartOffset),
    [FETCH_HEADERS.lastStableOffset]: String(result.lastStableOffset),
    ...(result.abortedTransactions
      ? { [FETCH_HEADERS.abortedTransactions]: formatAbortedTransactions(result.abortedTransactions) }
      : {}),
  });
}
