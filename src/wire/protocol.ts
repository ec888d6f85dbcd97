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
} as const;

/** Kafka's acks: 0 (no wait), 1 (the leader's store), all (every in-sync replica's store; Kafka's -1). */
export type Acks = 0 | 1 | 'all';
