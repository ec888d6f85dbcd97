/**
 * The two body formats the bench measures side by side, and what the load generator needs to know
 * of each: paths, headers, bodies, and how to read a fetch answer's position without parsing it.
 *  - json: Confluent REST Proxy v3's records:batch with STRING values (the server's sticky
 *    partitioner picks the partition) and the JSON fetch with format=string.
 *  - batch: one Kafka RecordBatch v2 per request, POSTed to a partition (the producer picks it, as
 *    Kafka's producer does), and the binary fetch (stored batches as they are, offsets in headers).
 */
import { header, type Reply } from './http-client.js';
import {
  batchBody,
  findBatchStamps,
  findStamps,
  lastIntField,
  produceBody,
  StampedBatchBodies,
  StampedBodies,
  type StampedPool,
} from './payload.js';

export type BodyFormat = 'json' | 'batch';
export const FORMATS: readonly BodyFormat[] = ['batch', 'json'];

/** The media type of the binary produce and fetch (src/http/record-batch-body.ts's RECORD_BATCH_MEDIA_TYPE). */
export const RECORD_BATCH_MEDIA_TYPE = 'application/vnd.kafka.record-batch.v2';

export interface Position {
  next?: number;
  highWatermark?: number;
}

export interface WireFormat {
  /** `${p}` in the path is the partition (batch: chosen by the producer, round robin per request). */
  producePath(topic: string, acks: string): string;
  /** `${p}` is the partition, `${offset}` the offset. */
  fetchTemplate(topic: string, maxBytes: number): string;
  produceHeaders?: Record<string, string>;
  fetchHeaders?: Record<string, string>;
  produceBody(batch: number): Buffer;
  stamped(batch: number): StampedPool;
  position(reply: Reply): Position;
  /** Send times (µs) in a fetch answer of records from offset `from` on. */
  stamps(reply: Reply, from: number): number[];
  /** The content-type of a fetch answer (for the ceiling's fixture). */
  fetchContentType: string;
}

const TOPICS = '/v3/clusters/local/topics';
const intHeader = (reply: Reply, name: string) => {
  const v = header(reply, name);
  return v === undefined ? undefined : Number(v);
};

export const WIRE: Record<BodyFormat, WireFormat> = {
  json: {
    producePath: (topic, acks) => `${TOPICS}/${topic}/records:batch?acks=${acks}`,
    fetchTemplate: (topic, maxBytes) =>
      `${TOPICS}/${topic}/partitions/\${p}/records?offset=\${offset}&max_bytes=${maxBytes}&format=string`,
    produceBody,
    stamped: (batch) => new StampedBodies(batch),
    // The load generator does not parse answers: it reads the fields from the end of the body.
    position: (reply) => ({
      next: lastIntField(reply.body, 'next_offset'),
      highWatermark: lastIntField(reply.body, 'high_watermark'),
    }),
    stamps: (reply) => findStamps(reply.body),
    fetchContentType: 'application/json',
  },
  batch: {
    producePath: (topic, acks) => `${TOPICS}/${topic}/partitions/\${p}/records?acks=${acks}`,
    fetchTemplate: (topic, maxBytes) =>
      `${TOPICS}/${topic}/partitions/\${p}/records?offset=\${offset}&max_bytes=${maxBytes}`,
    produceHeaders: { 'content-type': RECORD_BATCH_MEDIA_TYPE },
    fetchHeaders: { accept: RECORD_BATCH_MEDIA_TYPE },
    produceBody: batchBody,
    stamped: (batch) => new StampedBatchBodies(batch),
    position: (reply) => ({
      next: intHeader(reply, 'kafka-next-offset'),
      highWatermark: intHeader(reply, 'kafka-high-watermark'),
    }),
    stamps: (reply, from) => findBatchStamps(reply.body, from),
    fetchContentType: RECORD_BATCH_MEDIA_TYPE,
  },
};

/** The headers of a fetch answer the ceiling replays with its fixture (the binary fetch answers its offsets in them). */
export const FETCH_FIXTURE_HEADERS = [
  'content-type',
  'kafka-next-offset',
  'kafka-high-watermark',
  'kafka-log-start-offset',
];
