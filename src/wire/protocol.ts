/**
 * The names the HTTP API shares between server and client beyond JSON shapes: the record-batch
 * media type, the headers that carry a binary fetch's offsets, and Kafka's acks.
 */

/**
 * Kafka's own record format over HTTP: a body of RecordBatch v2 bytes, as a Kafka producer puts
 * them in a ProduceRequest and a broker returns them in a FetchResponse.
 */
export const RECORD_BATCH_MEDIA_TYPE = 'application/vnd.kafka.record-batch.v2';

/** The headers that carry what a JSON fetch answer holds beside its records. */
export const FETCH_HEADERS = {
  nextOffset: 'Kafka-Next-Offset',
  highWatermark: 'Kafka-High-Watermark',
  logStartOffset: 'Kafka-Log-Start-Offset',
  lastStableOffset: 'Kafka-Last-Stable-Offset',
  abortedTransactions: 'Kafka-Aborted-Transactions',
} as const;

/** An aborted transaction of a read_committed fetch: the producer's batches in [firstOffset, lastOffset] are left out. */
export interface AbortedRange {
  producerId: number;
  firstOffset: number;
  /** The offset of the ABORT marker. */
  lastOffset: number;
}

/**
 * The aborted transactions of a read_committed record-batch answer (Kafka's FetchResponse
 * aborted_transactions) as the Kafka-Aborted-Transactions header: `producerId:firstOffset:lastOffset`
 * per transaction, comma-separated, in first-offset order. lastOffset, the ABORT marker's offset, is
 * more than Kafka sends: the consumer filters without having to see the marker.
 */
export const formatAbortedTransactions = (aborted: readonly AbortedRange[]): string =>
  aborted.map((a) => `${a.producerId}:${a.firstOffset}:${a.lastOffset}`).join(',');

export function parseAbortedTransactions(header: string | null): AbortedRange[] {
  if (!header) return [];
  return header.split(',').flatMap((part) => {
    const [producerId, firstOffset, lastOffset] = part.split(':').map(Number);
    return [producerId, firstOffset, lastOffset].every((n) => Number.isSafeInteger(n))
      ? [{ producerId: producerId!, firstOffset: firstOffset!, lastOffset: lastOffset! }]
      : [];
  });
}

/** Kafka's acks: 0 (no wait), 1 (the leader's store), all (every in-sync replica's store; Kafka's -1). */
export type Acks = 0 | 1 | 'all';
