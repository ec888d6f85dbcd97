/**
 * The OpenAPI document of the HTTP API (served at /openapi.json). Paths follow Confluent REST Proxy
 * v3; operations v3 lacks are marked `x-extension: true`. Schemas are kept to what a client needs.
 */
import { groupPaths } from './group-openapi.js';
import { transactionPaths } from './transaction-openapi.js';
import { PRODUCE_REQUEST_MEDIA_TYPE } from '../wire/produce-request.js';
import { FETCH_RESPONSE_MEDIA_TYPE } from '../wire/fetch-response.js';
import { FETCH_HEADERS, RECORD_BATCH_MEDIA_TYPE } from './record-batch-body.js';
import { securityPaths } from './security-openapi.js';
import { shareGroupPaths } from './share-group-openapi.js';
import { triggerPaths } from './trigger-openapi.js';
import { RELEASE } from '../wire/release.js';
import { errorSchema, errors } from './openapi-parts.js';
import { ISOLATION_LEVELS } from './request.js';
import { createDocument, type oas31, type ZodOpenApiObject } from 'zod-openapi';

type Json = Record<string, unknown>;

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
const json = (schema: Json, description = 'OK') => ({ description, content: { 'application/json': { schema } } });
/** The multi-partition fetch's binary answer beside its JSON one (wire/fetch-response.ts has the layout). */
const withBinaryFetchResponse = (r: ReturnType<typeof json>) => ({
  ...r,
  description: `${r.description}. With Accept: ${FETCH_RESPONSE_MEDIA_TYPE} and format record-batch, the same answer binary: Kafka's FetchResponse responses (the v5-v10 layout, big-endian) with next_offset after log_start_offset, the error's name and message after error_code and last_offset in each aborted transaction; records are the stored batches as they are`,
  content: {
    ...r.content,
    [FETCH_RESPONSE_MEDIA_TYPE]: { schema: { type: 'string', format: 'binary' } },
  },
});
const param = (name: string, where: 'path' | 'query', schema: Json = { type: 'string' }, description?: string) => ({
  name,
  in: where,
  required: where === 'path',
  schema,
  ...(description ? { description } : {}),
});
const cluster = param('cluster_id', 'path');
const topic = param('topic_name', 'path');
const partition = param('partition_id', 'path', { type: 'integer', minimum: 0 });
const configName = param('name', 'path');
const brokerId = param('broker_id', 'path', { type: 'integer', minimum: 0 });
const pageToken = param(
  'page_token',
  'query',
  { type: 'string' },
  'Where the previous page stopped (its metadata.next): each page reads at most 1,000 partitions',
);
const body = (schema: Json) => ({ required: true, content: { 'application/json': { schema } } });
const isolation = param(
  'isolation_level',
  'query',
  { enum: [...ISOLATION_LEVELS], default: 'read_uncommitted' },
  "Kafka's isolation level: read_committed reads up to the last stable offset and leaves out aborted transactions (JSON), or answers their ranges in Kafka-Aborted-Transactions (record batches)",
);
const acks = param(
  'acks',
  'query',
  { enum: ['0', '1', 'all', '-1'], default: 'all' },
  "Kafka's acks (extension): 0 answers before anything is durable (offset -1); 1 once the leader store has it; all once every in-sync replica store has it",
);

/** A KafkaFeatureLevel (src/http/feature-routes.ts). */
const featureLevel = {
  type: 'object',
  required: ['kind', 'cluster_id', 'release', 'feature_level', 'supported_feature_level', 'processes'],
  properties: {
    kind: { const: 'KafkaFeatureLevel' },
    cluster_id: { type: 'string' },
    release: { type: 'string', description: 'The release of the code that answered' },
    feature_level: { type: 'integer', minimum: 1 },
    supported_feature_level: { type: 'integer', minimum: 1 },
    finalizable_feature_level: { type: 'integer', minimum: 1 },
    raised_at: { type: 'string', format: 'date-time' },
    raised_by: { type: 'string' },
    processes: {
      type: 'array',
      items: {
        type: 'object',
        required: ['role', 'release', 'supported_feature_level', 'last_seen'],
        properties: {
          role: { type: 'string' },
          release: { type: 'string' },
          supported_feature_level: { type: 'integer' },
          last_seen: { type: 'string', format: 'date-time' },
        },
      },
    },
  },
};

const recordBatches = {
  schema: {
    type: 'string',
    format: 'binary',
    description:
      'One or more Kafka RecordBatch v2 (magic 2, uncompressed or compressed with gzip, snappy, lz4 or zstd, no control batches), concatenated: the bytes a Kafka producer sends for a partition. An idempotent producer sets producerId, producerEpoch and baseSequence in the batch header; a transactional one also the transactional bit, with transactional_id in the query.',
  },
};
const intHeader = (description: string) => ({ schema: { type: 'integer' }, description });

const dataSchema: oas31.SchemaObject = {
  type: ['object', 'null'],
  properties: { type: { enum: ['BINARY', 'STRING', 'JSON'], default: 'JSON' }, data: {} },
  description:
    'BINARY data is base64; STRING is UTF-8 text; JSON is any JSON value. Absent or null data is a null key / value.',
};

const document: ZodOpenApiObject = {
  openapi: '3.1.0',
  info: {
    title: 'Serverless Kafka-semantics log',
    version: RELEASE,
    description:
      "Confluent REST Proxy v3 paths and shapes where v3 has the operation (operations v3 lacks are marked `x-extension: true`); REST Proxy v2's consumer instances under /consumers; Kafka's error names in `error`.",
  },
  // The first server is the origin the document is fetched from (openApiDocumentAt).
  servers: [
    {
      url: 'https://{api_id}.execute-api.{region}.amazonaws.com',
      description: 'A deployed stage (the stack output ApiUrl)',
      variables: { api_id: { default: 'api-id' }, region: { default: 'us-east-1' } },
    },
  ],
  // One of the deployment's auth modes (infra/stack-config.ts authMode); the local server takes a
  // bearer token from its auth config, or none. The principal each names: docs/security.md.
  security: [{ sigv4: [] }, { jwt: [] }, { apiKey: [] }, { bearer: [] }, {}],
  paths: {
    '/health': { get: { summary: 'Liveness', responses: { 200: json({ type: 'object' }) } } },
    '/v3/clusters': { get: { summary: 'List clusters', responses: { 200: json(ref('List')) } } },
    '/v3/clusters/{cluster_id}': {
      get: {
        summary: 'Describe the cluster',
        parameters: [cluster],
        responses: { 200: json({ type: 'object' }), ...errors(404) },
      },
    },
    '/v3/clusters/{cluster_id}/topics': {
      get: { summary: 'List topics', parameters: [cluster], responses: { 200: json(ref('List')) } },
      post: {
        summary: 'Create a topic',
        parameters: [cluster],
        requestBody: body(ref('CreateTopic')),
        responses: {
          200: json(ref('Topic'), 'validate_only: what would be created; nothing is'),
          201: json(ref('Topic'), 'Created'),
          ...errors(400, 404, 415),
        },
      },
    },
    '/v3/clusters/{cluster_id}/topics/{topic_name}': {
      get: {
        summary: 'Describe a topic',
        parameters: [cluster, topic],
        responses: { 200: json(ref('Topic')), ...errors(404) },
      },
      patch: {
        summary: 'Grow the partition count',
        parameters: [cluster, topic],
        requestBody: body({
          type: 'object',
          required: ['partitions_count'],
          properties: { partitions_count: { type: 'integer' } },
        }),
        responses: { 200: json(ref('Topic')), ...errors(400, 404) },
      },
      delete: {
        summary: 'Delete a topic and its data',
        parameters: [cluster, topic],
        responses: { 204: { description: 'Deleted' }, ...errors(404) },
      },
    },
    '/v3/clusters/{cluster_id}/topics/-/configs': {
      get: {
        summary: "Every topic's configs",
        parameters: [cluster],
        responses: { 200: json(ref('List')), ...errors(404) },
      },
    },
    '/v3/clusters/{cluster_id}/brokers': {
      get: {
        summary:
          'List brokers: one per replica store (broker i is store i; replica, leader and ISR ids are store indexes)',
        parameters: [cluster],
        responses: { 200: json(ref('List')), ...errors(404) },
      },
    },
    '/v3/clusters/{cluster_id}/brokers/{broker_id}': {
      get: {
        summary: 'Describe a broker (no host or port: every function serves every partition)',
        parameters: [cluster, brokerId],
        responses: { 200: json({ type: 'object' }), ...errors(404) },
      },
    },
    '/v3/clusters/{cluster_id}/brokers/{broker_id}/configs': {
      get: {
        summary:
          "A broker's configs: the server's read-only defaults for new topics (num.partitions, default.replication.factor)",
        parameters: [cluster, brokerId],
        responses: { 200: json(ref('List')), ...errors(404) },
      },
    },
    '/v3/clusters/{cluster_id}/brokers/{broker_id}/configs/{name}': {
      get: {
        summary: 'Read one broker config',
        parameters: [cluster, brokerId, configName],
        responses: { 200: json({ type: 'object' }), ...errors(404) },
      },
    },
    '/v3/clusters/{cluster_id}/broker-configs': {
      get: {
        summary: 'Every broker config of every broker',
        parameters: [cluster],
        responses: { 200: json(ref('List')), ...errors(404) },
      },
    },
    '/v3/clusters/{cluster_id}/brokers/{broker_id}/partition-replicas': {
      get: {
        summary: 'The partition replicas a broker (store) holds, in pages of partitions (metadata.next)',
        parameters: [cluster, brokerId, pageToken],
        responses: { 200: json(ref('List')), ...errors(404) },
      },
    },
    '/v3/clusters/{cluster_id}/topics/{topic_name}/partitions/{partition_id}/replicas': {
      get: {
        summary: "A partition's replicas, with leader and in-sync flags",
        parameters: [cluster, topic, partition],
        responses: { 200: json(ref('List')), ...errors(404) },
      },
    },
    '/v3/clusters/{cluster_id}/topics/{topic_name}/partitions/{partition_id}/replicas/{broker_id}': {
      get: {
        summary: 'One replica of a partition',
        parameters: [cluster, topic, partition, brokerId],
        responses: { 200: json({ type: 'object' }), ...errors(404) },
      },
    },
    '/v3/clusters/{cluster_id}/topics/-/partitions/-/reassignment': {
      get: {
        summary: 'Reassignments in progress: always none (replicas are placed when a partition is created)',
        parameters: [cluster],
        responses: { 200: json(ref('List')), ...errors(404) },
      },
    },
    '/v3/clusters/{cluster_id}/topics/{topic_name}/partitions/-/reassignment': {
      get: {
        summary: "A topic's reassignments in progress: always none",
        parameters: [cluster, topic],
        responses: { 200: json(ref('List')), ...errors(404) },
      },
    },
    '/v3/clusters/{cluster_id}/topics/{topic_name}/partitions/{partition_id}/reassignment': {
      get: {
        summary:
          "A partition's reassignment: no replica is being added or removed, since replicas are placed when a partition is created",
        parameters: [cluster, topic, partition],
        responses: { 200: json({ type: 'object' }), ...errors(404) },
      },
    },
    '/v3/clusters/{cluster_id}/topics/{topic_name}/configs': {
      get: {
        summary: 'List topic configs (Kafka names, defaults included)',
        parameters: [cluster, topic],
        responses: { 200: json(ref('List')), ...errors(404) },
      },
    },
    '/v3/clusters/{cluster_id}/topics/{topic_name}/configs:alter': {
      post: {
        summary: 'Set or delete several configs, all or nothing',
        parameters: [cluster, topic],
        requestBody: body({
          type: 'object',
          properties: {
            data: {
              type: 'array',
              items: {
                type: 'object',
                properties: {
                  name: { type: 'string' },
                  value: { type: 'string' },
                  operation: { enum: ['SET', 'DELETE'] },
                },
              },
            },
            validate_only: { type: 'boolean' },
          },
        }),
        responses: { 204: { description: 'Altered' }, ...errors(400, 404) },
      },
    },
    '/v3/clusters/{cluster_id}/topics/{topic_name}/configs/{name}': {
      get: {
        summary: 'Read one config',
        parameters: [cluster, topic, configName],
        responses: { 200: json({ type: 'object' }), ...errors(404) },
      },
      put: {
        summary: 'Set one config',
        parameters: [cluster, topic, configName],
        requestBody: body({ type: 'object', properties: { value: { type: 'string' } } }),
        responses: { 204: { description: 'Set' }, ...errors(400, 404) },
      },
      delete: {
        summary: 'Reset one config to its default',
        parameters: [cluster, topic, configName],
        responses: { 204: { description: 'Reset' }, ...errors(404) },
      },
    },
    '/v3/clusters/{cluster_id}/topics/{topic_name}/partitions': {
      get: {
        summary: 'List partitions with leader, ISR, HW, LEO, in pages (metadata.next)',
        parameters: [cluster, topic, pageToken],
        responses: { 200: json(ref('List')), ...errors(404) },
      },
    },
    '/v3/clusters/{cluster_id}/topics/{topic_name}/partitions/{partition_id}': {
      get: {
        summary: 'Describe a partition',
        parameters: [cluster, topic, partition],
        responses: { 200: json(ref('Partition')), ...errors(404) },
      },
    },
    '/v3/clusters/{cluster_id}/topics/{topic_name}/partitions/{partition_id}/offset': {
      get: {
        summary:
          "A partition's earliest and latest offsets (Confluent's default, offset_type=earliest_and_latest); as an extension, Kafka's ListOffsets for earliest, latest, or the first offset at or after a timestamp",
        parameters: [
          cluster,
          topic,
          partition,
          param('offset_type', 'query', {
            enum: ['earliest_and_latest', 'earliest', 'latest', 'timestamp'],
            default: 'earliest_and_latest',
          }),
          param(
            'timestamp',
            'query',
            { type: 'string' },
            'RFC 3339 date-time or epoch milliseconds (offset_type=timestamp)',
          ),
          param(
            'isolation_level',
            'query',
            { enum: [...ISOLATION_LEVELS], default: 'read_uncommitted' },
            'latest is the last stable offset with read_committed',
          ),
        ],
        responses: {
          200: json({
            oneOf: [
              {
                type: 'object',
                required: ['kind', 'earliest_offset', 'latest_offset'],
                properties: {
                  kind: { const: 'KafkaPartitionWithOffsets' },
                  metadata: { type: 'object' },
                  cluster_id: { type: 'string' },
                  topic_name: { type: 'string' },
                  partition_id: { type: 'integer' },
                  earliest_offset: { type: 'integer', description: 'The log start offset' },
                  latest_offset: { type: 'integer', description: 'The high watermark' },
                },
              },
              {
                type: 'object',
                required: ['kind', 'offset'],
                description: 'Extension (offset_type earliest, latest or timestamp)',
                properties: {
                  kind: { const: 'KafkaPartitionOffset' },
                  offset: { type: 'integer', description: '-1 when no record is at or after the timestamp' },
                  timestamp: { type: ['string', 'null'] },
                },
              },
            ],
          }),
          ...errors(400, 404),
        },
      },
    },
    '/v3/clusters/{cluster_id}/topics/{topic_name}/records': {
      post: {
        summary:
          'Produce one record, or (streaming mode) several records back to back in one body, with one delivery report each, in order',
        parameters: [cluster, topic, acks],
        requestBody: {
          required: true,
          description: 'One ProduceRecord, or several JSON objects concatenated (whitespace between them optional)',
          content: { 'application/json': { schema: ref('ProduceRecord') } },
        },
        responses: {
          200: json(
            ref('ProduceResult'),
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
        parameters: [cluster, topic, acks],
        requestBody: body({
          type: 'object',
          required: ['entries'],
          properties: {
            entries: {
              type: 'array',
              items: {
                allOf: [
                  ref('ProduceRecord'),
                  { type: 'object', required: ['id'], properties: { id: { type: 'string' } } },
                ],
              },
            },
            producer_id: {
              type: 'integer',
              description:
                'Idempotent producer (extension): from producers:init; needs producer_epoch, sequences and a partition_id on every entry',
            },
            producer_epoch: { type: 'integer' },
            sequences: {
              type: 'array',
              items: {
                type: 'object',
                properties: { partition_id: { type: 'integer' }, base_sequence: { type: 'integer' } },
              },
            },
            transactional_id: {
              type: 'string',
              description:
                "Transactional producer (extension): with producer_id, producer_epoch and sequences from transactions/{id}/init; the partitions join the id's transaction",
            },
          },
        }),
        responses: {
          207: json(
            {
              type: 'object',
              properties: {
                successes: {
                  type: 'array',
                  items: { allOf: [ref('ProduceResult'), { properties: { id: { type: 'string' } } }] },
                },
                failures: {
                  type: 'array',
                  items: { allOf: [ref('Error'), { properties: { id: { type: 'string' } } }] },
                },
              },
            },
            'Per-entry results',
          ),
          ...errors(400, 404, 413),
        },
      },
    },
    '/v3/clusters/{cluster_id}/topics/{topic_name}/partitions/{partition_id}/records': {
      get: {
        summary: "Fetch records from an offset up to the high watermark (Kafka's Fetch for one partition)",
        'x-extension': true,
        parameters: [
          cluster,
          topic,
          partition,
          param('offset', 'query', { type: 'integer', minimum: 0, default: 0 }),
          param(
            'max_bytes',
            'query',
            { type: 'integer', minimum: 1 },
            "Kafka's max bytes, at batch granularity: the answer starts at the stored batch holding `offset` (JSON: at that record) and takes whole batches within max_bytes, at least one. A deployment with MAX_RESPONSE_BYTES (Lambda: 6 MB) also keeps the answer within that, after base64 or JSON inflation: a JSON answer then stops at a record and `next_offset` goes on from there",
          ),
          param(
            'format',
            'query',
            { enum: ['binary', 'string', 'json'], default: 'binary' },
            'How keys and values are shown',
          ),
          param(
            'min_bytes',
            'query',
            { type: 'integer', minimum: 0, default: 0 },
            "Kafka's fetch.min.bytes: wait until this many bytes are readable below the high watermark (with max_wait_ms)",
          ),
          param(
            'max_wait_ms',
            'query',
            { type: 'integer', minimum: 0, default: 0 },
            "Kafka's fetch.max.wait.ms: the longest wait for min_bytes, bounded by the server (MAX_FETCH_WAIT_MS, 25 s); then whatever there is is returned, possibly nothing",
          ),
          isolation,
        ],
        responses: {
          200: {
            description: `JSON (the default), or with Accept: ${RECORD_BATCH_MEDIA_TYPE} the stored record batches as they are: whole batches with absolute offsets (the first may start before \`offset\`: skip its earlier records, as a Kafka consumer does), CRCs for the client to check, the rest in headers`,
            headers: {
              [FETCH_HEADERS.nextOffset]: intHeader('The offset to fetch next (record-batch answers)'),
              [FETCH_HEADERS.highWatermark]: intHeader('The high watermark (record-batch answers)'),
              [FETCH_HEADERS.logStartOffset]: intHeader('The log start offset (record-batch answers)'),
              [FETCH_HEADERS.lastStableOffset]: intHeader('The last stable offset (record-batch answers)'),
              [FETCH_HEADERS.abortedTransactions]: {
                schema: { type: 'string' },
                description:
                  'read_committed record-batch answers: the aborted transactions among the batches, `producerId:firstOffset:lastOffset` comma-separated (lastOffset is the ABORT marker). Leave out transactional batches of that producer whose base offset is in [firstOffset, lastOffset]. The header keeps within 8 KiB (API Gateway bounds headers at 10,240 bytes): the answer has fewer batches when their list would pass it',
              },
            },
            content: {
              'application/json': {
                schema: {
                  type: 'object',
                  properties: {
                    records: { type: 'array', items: ref('Record') },
                    next_offset: { type: 'integer' },
                    high_watermark: { type: 'integer' },
                    log_start_offset: { type: 'integer' },
                    last_stable_offset: { type: 'integer' },
                  },
                },
              },
              [RECORD_BATCH_MEDIA_TYPE]: recordBatches,
            },
          },
          ...errors(400, 404, 416),
        },
      },
      post: {
        summary:
          "Produce Kafka record batches to one partition (Kafka's Produce for one partition): the batches are checked (CRC, offsets, sizes, keys of compacted topics) and stored as sent",
        'x-extension': true,
        parameters: [
          cluster,
          topic,
          partition,
          acks,
          param(
            'transactional_id',
            'query',
            { type: 'string' },
            "Required with (and only with) transactional batches: the producer must be the id's current one; the partition joins its transaction",
          ),
        ],
        requestBody: {
          required: true,
          content: { [RECORD_BATCH_MEDIA_TYPE]: recordBatches, 'application/octet-stream': recordBatches },
        },
        responses: {
          200: json({
            type: 'object',
            properties: {
              kind: { const: 'KafkaProduceResult' },
              partition_id: { type: 'integer' },
              base_offset: { type: 'integer', description: '-1 with acks=0' },
              last_offset: { type: 'integer' },
              record_count: { type: 'integer' },
              log_append_time: { type: 'integer', description: 'Epoch ms when the topic uses LogAppendTime, else -1' },
              log_start_offset: { type: 'integer' },
              duplicate: {
                type: 'boolean',
                description: "An idempotent producer's retry of a batch already appended: nothing was written",
              },
            },
          }),
          ...errors(400, 404, 409, 413, 415, 503),
        },
      },
    },
    '/v3/clusters/{cluster_id}/records': {
      post: {
        summary:
          "Kafka's ProduceRequest: the record batches of many partitions of one or several topics in one request; each topic's partitions are stored as one object (one PUT per replica)",
        'x-extension': true,
        parameters: [
          cluster,
          acks,
          param(
            'transactional_id',
            'query',
            { type: 'string' },
            "Kafka's ProduceRequest transactional_id: required with (and only with) transactional batches (a partition that breaks this is INVALID_REQUEST); the producer must be the id's current one, and every partition of the request joins its transaction before anything is appended (else each partition answers that error)",
          ),
        ],
        requestBody: {
          required: true,
          content: {
            [PRODUCE_REQUEST_MEDIA_TYPE]: {
              schema: {
                type: 'string',
                format: 'binary',
                description:
                  "Kafka's ProduceRequest `topic_data` field as the protocol lays it out (versions 3-8, big-endian): INT32 topic count; per topic an INT16 name length and the UTF-8 name, an INT32 partition count; per partition an INT32 index, an INT32 length and that many bytes of RecordBatch v2 (as for the one-partition produce). Every batch of a request carries the same producer id and epoch, or none. A malformed body or a partition named twice is INVALID_REQUEST (400) and nothing is written",
              },
            },
          },
        },
        responses: {
          200: json(
            {
              type: 'object',
              properties: {
                kind: { const: 'KafkaProduceResponse' },
                responses: {
                  type: 'array',
                  items: {
                    type: 'object',
                    properties: {
                      name: { type: 'string' },
                      partition_responses: {
                        type: 'array',
                        items: {
                          type: 'object',
                          properties: {
                            index: { type: 'integer' },
                            error_code: { type: 'integer', description: "Kafka's error code, 0 for success" },
                            error: { type: 'string', description: "Kafka's error name, when error_code is not 0" },
                            error_message: { type: 'string' },
                            base_offset: { type: 'integer', description: '-1 with acks=0 or on error' },
                            last_offset: { type: 'integer' },
                            log_append_time_ms: {
                              type: 'integer',
                              description: 'Epoch ms when the topic uses LogAppendTime, else -1',
                            },
                            log_start_offset: { type: 'integer' },
                            duplicate: {
                              type: 'boolean',
                              description:
                                "An idempotent producer's retry of a batch already appended: nothing was written",
                            },
                          },
                        },
                      },
                    },
                  },
                },
              },
            },
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
        parameters: [cluster],
        requestBody: body({
          type: 'object',
          required: ['topics'],
          properties: {
            max_wait_ms: {
              type: 'integer',
              minimum: 0,
              default: 0,
              description: "Kafka's fetch.max.wait.ms, bounded by MAX_FETCH_WAIT_MS: the longest wait for min_bytes",
            },
            min_bytes: {
              type: 'integer',
              minimum: 0,
              default: 0,
              description:
                "Kafka's fetch.min.bytes, counted over all partitions; an append to any of them, or an error in any, answers",
            },
            max_bytes: {
              type: 'integer',
              minimum: 1,
              description:
                "Kafka's fetch.max.bytes for the whole answer (bounded by MAX_FETCH_BYTES), in whole batches and partitions in the order given; only the first partition with data may pass it, by one batch",
            },
            format: {
              enum: ['record-batch', 'binary', 'string', 'json'],
              default: 'record-batch',
              description:
                "record-batch: each partition's stored batches, base64; otherwise a JSON record list showing keys and values so",
            },
            isolation_level: {
              enum: ['read_uncommitted', 'read_committed', 0, 1],
              default: 'read_uncommitted',
              description:
                "Kafka's isolation_level (0 = read_uncommitted, 1 = read_committed): read_committed reads each partition up to its last stable offset and answers its aborted transactions; a JSON record list leaves their records out",
            },
            topics: {
              type: 'array',
              items: {
                type: 'object',
                required: ['topic', 'partitions'],
                properties: {
                  topic: { type: 'string' },
                  partitions: {
                    type: 'array',
                    items: {
                      type: 'object',
                      required: ['partition', 'fetch_offset'],
                      properties: {
                        partition: { type: 'integer', minimum: 0 },
                        fetch_offset: { type: 'integer', minimum: 0 },
                        partition_max_bytes: {
                          type: 'integer',
                          minimum: 1,
                          description: "Kafka's max.partition.fetch.bytes; at batch granularity",
                        },
                      },
                    },
                  },
                },
              },
            },
          },
        }),
        responses: {
          200: withBinaryFetchResponse(
            json(
              {
                type: 'object',
                properties: {
                  kind: { const: 'KafkaFetchResponse' },
                  responses: {
                    type: 'array',
                    items: {
                      type: 'object',
                      properties: {
                        topic: { type: 'string' },
                        partitions: {
                          type: 'array',
                          items: {
                            type: 'object',
                            properties: {
                              partition_index: { type: 'integer' },
                              error_code: {
                                type: 'integer',
                                description:
                                  "Kafka's error code, 0 for success (1 OFFSET_OUT_OF_RANGE, 3 UNKNOWN_TOPIC_OR_PARTITION, ...)",
                              },
                              error: { type: 'string' },
                              error_message: { type: 'string' },
                              high_watermark: { type: 'integer' },
                              last_stable_offset: {
                                type: 'integer',
                                description:
                                  "Kafka's last stable offset: the first offset of the oldest open transaction, or the high watermark",
                              },
                              log_start_offset: { type: 'integer' },
                              next_offset: {
                                type: 'integer',
                                description:
                                  'Where to fetch next (past compaction gaps, or the first record a bounded JSON answer left out)',
                              },
                              aborted_transactions: {
                                type: 'array',
                                description:
                                  "read_committed only (Kafka's aborted_transactions): the aborted transactions with records among the answer's batches; a consumer leaves out the producer's transactional batches from first_offset to the ABORT marker at last_offset",
                                items: {
                                  type: 'object',
                                  properties: {
                                    producer_id: { type: 'integer' },
                                    first_offset: { type: 'integer' },
                                    last_offset: { type: 'integer' },
                                  },
                                },
                              },
                              records: {
                                description:
                                  'record-batch: whole RecordBatch v2 bytes in base64 with absolute offsets, from the batch holding fetch_offset (skip its earlier records); else an array of records',
                                oneOf: [
                                  { type: 'string', contentEncoding: 'base64' },
                                  { type: 'array', items: ref('Record') },
                                ],
                              },
                            },
                          },
                        },
                      },
                    },
                  },
                },
              },
              "Kafka's FetchResponse in JSON, topics and partitions in the request's order",
            ),
          ),
          ...errors(400),
        },
      },
    },
    '/v3/clusters/{cluster_id}/producers:init': {
      post: {
        summary:
          "Kafka's InitProducerId: a new producer id at epoch 0, or the next epoch of an existing id (fencing the old one)",
        'x-extension': true,
        parameters: [cluster],
        requestBody: {
          required: false,
          content: {
            'application/json': {
              schema: {
                type: 'object',
                properties: { producer_id: { type: 'integer' }, producer_epoch: { type: 'integer' } },
              },
            },
          },
        },
        responses: {
          200: json({
            type: 'object',
            properties: { producer_id: { type: 'integer' }, producer_epoch: { type: 'integer' } },
          }),
          ...errors(404, 409),
        },
      },
    },
    '/v3/clusters/{cluster_id}/topics/{topic_name}/replicas:sync': {
      post: {
        summary:
          'The replica catch-up step now: drop failed or lagging followers from the ISR, copy what followers miss, add caught-up ones back, elect if the leader store is down',
        'x-extension': true,
        parameters: [cluster, topic],
        responses: { 200: json({ type: 'object' }), ...errors(404) },
      },
    },
    '/v3/clusters/{cluster_id}/topics/{topic_name}/partitions/{partition_id}/records:delete': {
      post: {
        summary:
          "Kafka's DeleteRecords: move the log start offset to before_offset (-1: the high watermark); the records below it are no longer readable, their storage is freed after file.delete.delay.ms",
        'x-extension': true,
        parameters: [cluster, topic, partition],
        requestBody: body({
          type: 'object',
          required: ['before_offset'],
          properties: { before_offset: { type: 'integer', minimum: -1 } },
        }),
        responses: {
          200: json({
            type: 'object',
            properties: {
              kind: { const: 'KafkaDeleteRecordsResult' },
              topic_name: { type: 'string' },
              partition_id: { type: 'integer' },
              low_watermark: { type: 'integer' },
            },
          }),
          ...errors(400, 404, 416),
        },
      },
    },
    '/v3/clusters/{cluster_id}/features': {
      get: {
        summary:
          "The cluster's feature level (as Kafka's metadata.version): the level in force, what this code and every registered process support, and the highest level that may be raised to now",
        'x-extension': true,
        parameters: [cluster],
        responses: { 200: json(featureLevel), ...errors(403) },
      },
    },
    '/v3/clusters/{cluster_id}/features:raise': {
      post: {
        summary:
          'Raise the feature level (ALTER on the cluster); refused above what this code or any active process supports, and never lowered (docs/deploy.md "Upgrading and rolling back")',
        'x-extension': true,
        parameters: [cluster],
        requestBody: body({
          type: 'object',
          required: ['feature_level'],
          properties: { feature_level: { type: 'integer', minimum: 1 } },
        }),
        responses: { 200: json(featureLevel), ...errors(400, 403, 409) },
      },
    },
    ...groupPaths,
    ...shareGroupPaths,
    ...transactionPaths,
    ...securityPaths,
    ...triggerPaths,
  } as Record<string, Json>,
  components: {
    securitySchemes: {
      sigv4: {
        type: 'apiKey',
        in: 'header',
        name: 'Authorization',
        description:
          'authMode=iam (the default): AWS Signature Version 4 for service execute-api, checked by API Gateway against IAM',
        'x-amazon-apigateway-authtype': 'awsSigv4',
      },
      jwt: {
        type: 'http',
        scheme: 'bearer',
        bearerFormat: 'JWT',
        description: 'authMode=jwt: a JWT from the configured issuer, with one of the configured audiences',
      },
      apiKey: {
        type: 'apiKey',
        in: 'header',
        name: 'x-api-key',
        description: 'authMode=apiKey: a key whose SHA-256 digest the stack holds',
      },
      bearer: {
        type: 'http',
        scheme: 'bearer',
        description: 'The local server with an auth config (AUTH_CONFIG): a token mapped to a principal',
      },
    },
    schemas: {
      Error: errorSchema,
      List: {
        type: 'object',
        properties: {
          kind: { type: 'string' },
          metadata: { type: 'object' },
          data: { type: 'array', items: { type: 'object' } },
        },
      },
      CreateTopic: {
        type: 'object',
        required: ['topic_name'],
        properties: {
          topic_name: { type: 'string', pattern: '^[a-zA-Z0-9._-]{1,249}$' },
          partitions_count: { type: 'integer', minimum: 1 },
          replication_factor: { type: 'integer', minimum: 1 },
          configs: {
            type: 'array',
            items: { type: 'object', properties: { name: { type: 'string' }, value: { type: 'string' } } },
          },
          validate_only: { type: 'boolean' },
          replicas_assignments: {
            type: 'array',
            description:
              'Taken when it is the placement by store index (replica j of partition i on store (i + j) mod n), else INVALID_REPLICA_ASSIGNMENT; instead of partitions_count and replication_factor',
            items: {
              type: 'object',
              required: ['partition_id', 'broker_ids'],
              properties: {
                partition_id: { type: 'integer', minimum: 0 },
                broker_ids: { type: 'array', items: { type: 'integer', minimum: 0 } },
              },
            },
          },
        },
      },
      Topic: {
        type: 'object',
        properties: {
          kind: { const: 'KafkaTopic' },
          topic_name: { type: 'string' },
          partitions_count: { type: 'integer' },
          replication_factor: { type: 'integer' },
        },
      },
      Partition: {
        type: 'object',
        properties: {
          partition_id: { type: 'integer' },
          leader_id: { type: 'integer' },
          leader_epoch: { type: 'integer' },
          replica_ids: { type: 'array', items: { type: 'integer' } },
          isr: { type: 'array', items: { type: 'integer' } },
          log_start_offset: { type: 'integer' },
          high_watermark: { type: 'integer' },
          last_stable_offset: {
            type: 'integer',
            description: 'The first offset of the oldest open transaction, else the high watermark',
          },
          log_end_offset: { type: 'integer' },
        },
      },
      ProduceRecord: {
        type: 'object',
        properties: {
          partition_id: { type: 'integer', description: 'Else murmur2(key) as Kafka, else sticky per request' },
          key: dataSchema,
          value: dataSchema,
          headers: {
            type: 'array',
            items: {
              type: 'object',
              properties: { name: { type: 'string' }, value: { type: ['string', 'null'], description: 'base64' } },
            },
          },
          timestamp: { type: 'string', format: 'date-time' },
        },
      },
      ProduceResult: {
        type: 'object',
        properties: {
          partition_id: { type: 'integer' },
          offset: { type: 'integer' },
          timestamp: { type: 'string' },
          key: { type: ['object', 'null'] },
          value: { type: ['object', 'null'] },
        },
      },
      Record: {
        type: 'object',
        properties: {
          partition_id: { type: 'integer' },
          offset: { type: 'integer' },
          timestamp: { type: 'string' },
          key: dataSchema,
          value: dataSchema,
          headers: { type: 'array' },
        },
      },
    },
  },
};

const METHODS = ['get', 'put', 'post', 'delete', 'patch'] as const;

/**
 * An operationId for every operation that has none: the method and the path's literal segments
 * (`post /v3/clusters/{cluster_id}/topics/{topic_name}/records:batch` ->
 * `postClustersTopicsRecordsBatch`), so an operation added without one still gets a stable name.
 */
export function operationIdFor(method: string, path: string): string {
  const words = path
    .split('/')
    .filter((seg) => seg !== '' && seg !== 'v3' && !seg.startsWith('{'))
    .flatMap((seg) => seg.split(/[:\-_.]/))
    .map((w) => w.replace(/\{[^}]*\}/g, ''))
    .filter((w) => w !== '');
  return method + words.map((w) => w[0]!.toUpperCase() + w.slice(1)).join('');
}

/** REST Proxy v2 answers in its own media type, as the consumer-instance routes do. */
function v2MediaType(operation: Json): void {
  for (const response of Object.values((operation.responses ?? {}) as Record<string, Json>)) {
    const content = response.content as Record<string, unknown> | undefined;
    if (content?.['application/json'] === undefined) continue;
    response.content = { 'application/vnd.kafka.v2+json': content['application/json'] };
  }
}

const GATEWAY_DENIED = (description: string) =>
  json({ type: 'object', properties: { message: { type: 'string' } } }, description);

function finish(doc: oas31.OpenAPIObject): oas31.OpenAPIObject {
  const seen = new Set<string>();
  for (const [path, item] of Object.entries(doc.paths ?? {})) {
    for (const method of METHODS) {
      const op = item[method] as Json | undefined;
      if (!op) continue;
      let id = (op.operationId as string | undefined) ?? operationIdFor(method, path);
      for (let n = 2; seen.has(id); n++) id = `${operationIdFor(method, path)}${n}`;
      seen.add(id);
      op.operationId = id;
      if (path.startsWith('/consumers/')) v2MediaType(op);
      // API Gateway answers these itself on a deployed stage, before any function runs.
      const responses = op.responses as Record<string, Json>;
      responses['401'] ??= GATEWAY_DENIED('No credentials, or an expired JWT (authMode=jwt)');
      responses['403'] ??= GATEWAY_DENIED('Credentials that IAM, the JWT authorizer or the API-key authorizer refused');
    }
  }
  return doc;
}

export const openApiDocument = finish(createDocument(document));

/**
 * The document as served from `origin`: that origin first among its servers, so a client or
 * Swagger UI generated from it calls the server that answered (any port, any host), not a fixed one.
 */
export function openApiDocumentAt(origin: string) {
  return {
    ...openApiDocument,
    servers: [
      { url: origin, description: 'The server this document was fetched from' },
      ...(openApiDocument.servers ?? []),
    ],
  };
}
