/**
 * OpenAPI paths of records (merged into openapi.ts): Confluent v3's produce and batch produce, and
 * the extensions for Kafka's Produce, Fetch, FetchRequest, ProduceRequest, DeleteRecords,
 * InitProducerId and the replica catch-up. Request bodies are the schemas the routes validate with;
 * answers are record-answers.ts's.
 */
import * as z from 'zod';
import type { ZodOpenApiPathsObject, ZodOpenApiResponseObject } from 'zod-openapi';
import { FETCH_RESPONSE_MEDIA_TYPE } from '../wire/fetch-response.js';
import { PRODUCE_REQUEST_MEDIA_TYPE } from '../wire/produce-request.js';
import { acksQuerySchema } from './acks.js';
import { fetchRequestSchema } from './fetch-request-routes.js';
import { described, errors, inPath, jsonBody, ok } from './openapi-parts.js';
import { initSchema as producerInitSchema } from './producer-routes.js';
import {
  batchResultSchema,
  deleteRecordsResultSchema,
  fetchResponseSchema,
  partitionProduceResultSchema,
  produceResponseSchema,
  produceResultSchema,
  recordListSchema,
  replicaSyncReportSchema,
} from './record-answers.js';
import { FETCH_HEADERS, RECORD_BATCH_MEDIA_TYPE } from './record-batch-body.js';
import { produceRecordSchema } from './record-encoding.js';
import { fetchQuerySchema } from './record-fetch-routes.js';
import { batchSchema, deleteRecordsSchema } from './record-routes.js';

const topic = inPath('cluster_id', 'topic_name');
const partition = inPath('cluster_id', 'topic_name', 'partition_id');

/** The route's record schema, with what a client needs to know of its fields. */
const produceRecord = produceRecordSchema
  .extend({
    partition_id: described(
      produceRecordSchema.shape.partition_id,
      'Else murmur2(key) as Kafka, else sticky per request',
    ),
    key: described(
      produceRecordSchema.shape.key,
      'type BINARY (base64), STRING (UTF-8 text) or JSON (any JSON value, the default). Absent or null data is a null key',
    ),
    value: described(produceRecordSchema.shape.value, 'As key; absent or null data is a null value (a tombstone)'),
    timestamp: described(produceRecordSchema.shape.timestamp, 'RFC 3339 date-time; absent: the time of the append'),
  })
  .meta({ id: 'ProduceRecord' });

const batchBody = batchSchema.extend({
  entries: z.array(produceRecord.extend({ id: batchSchema.shape.entries.element.shape.id })).min(1),
  producer_id: described(
    batchSchema.shape.producer_id,
    'Idempotent producer (extension): from producers:init; needs producer_epoch, sequences and a partition_id on every entry',
  ),
  transactional_id: described(
    batchSchema.shape.transactional_id,
    "Transactional producer (extension): with producer_id, producer_epoch and sequences from transactions/{id}/init; the partitions join the id's transaction",
  ),
});

const recordBatches = {
  schema: z.string().meta({
    format: 'binary',
    description:
      'One or more Kafka RecordBatch v2 (magic 2, uncompressed or compressed with gzip, snappy, lz4 or zstd, no control batches), concatenated: the bytes a Kafka producer sends for a partition. An idempotent producer sets producerId, producerEpoch and baseSequence in the batch header; a transactional one also the transactional bit, with transactional_id in the query.',
  }),
};

const transactionalId = (description: string) =>
  z.object({ transactional_id: described(z.string(), description).optional() });

const intHeader = (description: string) => described(z.int(), description).optional();

const fetched: ZodOpenApiResponseObject = {
  description: `JSON (the default), or with Accept: ${RECORD_BATCH_MEDIA_TYPE} the stored record batches as they are: whole batches with absolute offsets (the first may start before \`offset\`: skip its earlier records, as a Kafka consumer does), CRCs for the client to check, the rest in headers`,
  headers: z.object({
    [FETCH_HEADERS.nextOffset]: intHeader('The offset to fetch next (record-batch answers)'),
    [FETCH_HEADERS.highWatermark]: intHeader('The high watermark (record-batch answers)'),
    [FETCH_HEADERS.logStartOffset]: intHeader('The log start offset (record-batch answers)'),
    [FETCH_HEADERS.lastStableOffset]: intHeader('The last stable offset (record-batch answers)'),
    [FETCH_HEADERS.abortedTransactions]: described(
      z.string(),
      'read_committed record-batch answers: the aborted transactions among the batches, `producerId:firstOffset:lastOffset` comma-separated (lastOffset is the ABORT marker). Leave out transactional batches of that producer whose base offset is in [firstOffset, lastOffset]. The header keeps within 8 KiB (API Gateway bounds headers at 10,240 bytes): the answer has fewer batches when their list would pass it',
    ).optional(),
  }),
  content: { 'application/json': { schema: recordListSchema }, [RECORD_BATCH_MEDIA_TYPE]: recordBatches },
};

/** The request schema, with what a client needs to know of its fields. */
const fetchRequest = fetchRequestSchema.extend({
  max_wait_ms: described(
    fetchRequestSchema.shape.max_wait_ms,
    "Kafka's fetch.max.wait.ms, bounded by MAX_FETCH_WAIT_MS: the longest wait for min_bytes",
  ),
  min_bytes: described(
    fetchRequestSchema.shape.min_bytes,
    "Kafka's fetch.min.bytes, counted over all partitions; an append to any of them, or an error in any, answers",
  ),
  max_bytes: described(
    fetchRequestSchema.shape.max_bytes,
    "Kafka's fetch.max.bytes for the whole answer (bounded by MAX_FETCH_BYTES), in whole batches and partitions in the order given; only the first partition with data may pass it, by one batch",
  ),
  format: described(
    fetchRequestSchema.shape.format,
    "record-batch: each partition's stored batches, base64; otherwise a JSON record list showing keys and values so",
  ),
  isolation_level: described(
    fetchRequestSchema.shape.isolation_level,
    "Kafka's isolation_level (0 = read_uncommitted, 1 = read_committed): read_committed reads each partition up to its last stable offset and answers its aborted transactions; a JSON record list leaves their records out",
  ),
});

const fetchedMany: ZodOpenApiResponseObject = {
  description: `Kafka's FetchResponse in JSON, topics and partitions in the request's order. With Accept: ${FETCH_RESPONSE_MEDIA_TYPE} and format record-batch, the same answer binary: Kafka's FetchResponse responses (the v5-v10 layout, big-endian) with next_offset after log_start_offset, the error's name and message after error_code and last_offset in each aborted transaction; records are the stored batches as they are`,
  content: {
    'application/json': { schema: fetchResponseSchema },
    [FETCH_RESPONSE_MEDIA_TYPE]: { schema: z.string().meta({ format: 'binary' }) },
  },
};

export const recordPaths: ZodOpenApiPathsObject = {
  '/v3/clusters/{cluster_id}/topics/{topic_name}/records': {
    post: {
      summary:
        'Produce one record, or (streaming mode) several records back to back in one body, with one delivery report each, in order',
      requestParams: { path: topic, query: acksQuerySchema },
      requestBody: {
        required: true,
        description: 'One ProduceRecord, or several JSON objects concatenated (whitespace between them optional)',
        content: { 'application/json': { schema: produceRecord } },
      },
      responses: {
        200: ok(
          produceResultSchema,
          'The delivery report; in streaming mode one JSON object per record, one a line, each with its error_code (200, or the error of that record)',
        ),
        ...errors(400, 404, 413, 415, 503),
      },
    },
  },
  '/v3/clusters/{cluster_id}/topics/{topic_name}/records:batch': {
    post: {
      summary:
        'Produce many records in one request (one object write); bounded by the request size, not an entry count',
      requestParams: { path: topic, query: acksQuerySchema },
      requestBody: jsonBody(batchBody),
      responses: { 207: ok(batchResultSchema, 'Per-entry results'), ...errors(400, 404, 413) },
    },
  },
  '/v3/clusters/{cluster_id}/topics/{topic_name}/partitions/{partition_id}/records': {
    get: {
      summary: "Fetch records from an offset up to the high watermark (Kafka's Fetch for one partition)",
      'x-extension': true,
      requestParams: { path: partition, query: fetchQuerySchema },
      responses: { 200: fetched, ...errors(400, 404, 416) },
    },
    post: {
      summary:
        "Produce Kafka record batches to one partition (Kafka's Produce for one partition): the batches are checked (CRC, offsets, sizes, keys of compacted topics) and stored as sent",
      'x-extension': true,
      requestParams: {
        path: partition,
        query: acksQuerySchema.extend(
          transactionalId(
            "Required with (and only with) transactional batches: the producer must be the id's current one; the partition joins its transaction",
          ).shape,
        ),
      },
      requestBody: {
        required: true,
        content: { [RECORD_BATCH_MEDIA_TYPE]: recordBatches, 'application/octet-stream': recordBatches },
      },
      responses: { 200: ok(partitionProduceResultSchema), ...errors(400, 404, 409, 413, 415, 503) },
    },
  },
  '/v3/clusters/{cluster_id}/records': {
    post: {
      summary:
        "Kafka's ProduceRequest: the record batches of many partitions of one or several topics in one request; each topic's partitions are stored as one object (one PUT per replica)",
      'x-extension': true,
      requestParams: {
        path: inPath('cluster_id'),
        query: acksQuerySchema.extend(
          transactionalId(
            "Kafka's ProduceRequest transactional_id: required with (and only with) transactional batches (a partition that breaks this is INVALID_REQUEST); the producer must be the id's current one, and every partition of the request joins its transaction before anything is appended (else each partition answers that error)",
          ).shape,
        ),
      },
      requestBody: {
        required: true,
        content: {
          [PRODUCE_REQUEST_MEDIA_TYPE]: {
            schema: z.string().meta({
              format: 'binary',
              description:
                "Kafka's ProduceRequest `topic_data` field as the protocol lays it out (versions 3-8, big-endian): INT32 topic count; per topic an INT16 name length and the UTF-8 name, an INT32 partition count; per partition an INT32 index, an INT32 length and that many bytes of RecordBatch v2 (as for the one-partition produce). Every batch of a request carries the same producer id and epoch, or none. A malformed body or a partition named twice is INVALID_REQUEST (400) and nothing is written",
            }),
          },
        },
      },
      responses: {
        200: ok(
          produceResponseSchema,
          "Kafka's ProduceResponse in JSON, topics and partitions in the request's order: each partition succeeds or fails on its own (unknown topic or partition, CORRUPT_MESSAGE, OUT_OF_ORDER_SEQUENCE_NUMBER, NOT_ENOUGH_REPLICAS, ...)",
        ),
        ...errors(400, 413, 415),
      },
    },
  },
  '/v3/clusters/{cluster_id}/records:fetch': {
    post: {
      summary:
        "Kafka's FetchRequest: many partitions of one or several topics in one request, with a long poll across all of them; an object holding several of the partitions is read once",
      'x-extension': true,
      requestParams: { path: inPath('cluster_id') },
      requestBody: jsonBody(fetchRequest),
      responses: { 200: fetchedMany, ...errors(400) },
    },
  },
  '/v3/clusters/{cluster_id}/producers:init': {
    post: {
      summary:
        "Kafka's InitProducerId: a new producer id at epoch 0, or the next epoch of an existing id (fencing the old one)",
      'x-extension': true,
      requestParams: { path: inPath('cluster_id') },
      requestBody: jsonBody(producerInitSchema, false),
      responses: {
        200: ok(
          z.object({
            kind: z.literal('KafkaProducerId'),
            cluster_id: z.string(),
            producer_id: z.int(),
            producer_epoch: z.int(),
          }),
        ),
        ...errors(404, 409),
      },
    },
  },
  '/v3/clusters/{cluster_id}/topics/{topic_name}/replicas:sync': {
    post: {
      summary:
        'The replica catch-up step now: drop failed or lagging followers from the ISR, copy what followers miss, add caught-up ones back, elect if the leader store is down',
      'x-extension': true,
      requestParams: { path: topic },
      responses: { 200: ok(replicaSyncReportSchema), ...errors(404) },
    },
  },
  '/v3/clusters/{cluster_id}/topics/{topic_name}/partitions/{partition_id}/records:delete': {
    post: {
      summary:
        "Kafka's DeleteRecords: move the log start offset to before_offset (-1: the high watermark); the records below it are no longer readable, their storage is freed after file.delete.delay.ms",
      'x-extension': true,
      requestParams: { path: partition },
      requestBody: jsonBody(deleteRecordsSchema),
      responses: { 200: ok(deleteRecordsResultSchema), ...errors(400, 404, 416) },
    },
  },
};
