/**
 * What the record routes answer (record-routes.ts, produce-request-routes.ts,
 * fetch-request-routes.ts), as zod schemas: the OpenAPI document is built from them
 * (record-openapi.ts). Kept out of the route modules, which the produce and fetch functions
 * bundle: only the admin function, which serves the document, holds these.
 */
import * as z from 'zod';
import { described, errorSchema } from './openapi-parts.js';
import { DATA_TYPES } from './record-text.js';

const int = z.int();

/** A key or value as a fetch shows it (record-encoding.ts showData); null for a null key or value. */
const shownData = z
  .object({ type: z.enum(DATA_TYPES), data: z.unknown() })
  .nullable()
  .meta({
    description: 'BINARY data is base64; STRING is UTF-8 text; JSON is any JSON value. null: a null key / value',
  });

/** A fetched record (record-encoding.ts showRecord). */
export const recordSchema = z
  .looseObject({
    partition_id: int,
    offset: int,
    timestamp: z.string(),
    key: shownData,
    value: shownData,
    headers: z.array(z.looseObject({ name: z.string() })),
  })
  .meta({ id: 'Record' });

/** A delivery report (record-routes.ts `success`): the key's and value's type and size, not their data. */
export const produceResultSchema = z
  .object({
    error_code: int.optional(),
    cluster_id: z.string(),
    topic_name: z.string(),
    partition_id: int,
    offset: described(int, '-1 with acks=0'),
    timestamp: z.string().meta({ format: 'date-time' }),
    key: z.object({ type: z.enum(DATA_TYPES), size: int }).nullable(),
    value: z.object({ type: z.enum(DATA_TYPES), size: int }).nullable(),
    duplicate: described(z.boolean(), "An idempotent producer's retry of a record already appended").optional(),
  })
  .meta({ id: 'ProduceResult' });

export const batchResultSchema = z.object({
  successes: z.array(produceResultSchema.extend({ id: z.string() })),
  failures: z.array(errorSchema.extend({ id: z.string() })),
});

const duplicate = described(
  z.boolean(),
  "An idempotent producer's retry of a batch already appended: nothing was written",
).optional();
const logAppendTime = described(int, 'Epoch ms when the topic uses LogAppendTime, else -1');

/** The one-partition record-batch produce's answer. */
export const partitionProduceResultSchema = z.object({
  kind: z.literal('KafkaProduceResult'),
  cluster_id: z.string(),
  topic_name: z.string(),
  partition_id: int,
  base_offset: described(int, '-1 with acks=0'),
  last_offset: int,
  record_count: int,
  log_append_time: logAppendTime,
  log_start_offset: int,
  duplicate,
});

/** A partition's JSON fetch answer. */
export const recordListSchema = z.object({
  kind: z.literal('KafkaRecordList'),
  cluster_id: z.string(),
  topic_name: z.string(),
  partition_id: int,
  records: z.array(recordSchema),
  next_offset: int,
  high_watermark: int,
  log_start_offset: int,
  last_stable_offset: int,
});

/** Kafka's ProduceResponse in JSON (produce-request-routes.ts). */
export const produceResponseSchema = z.object({
  kind: z.literal('KafkaProduceResponse'),
  cluster_id: z.string(),
  responses: z.array(
    z.object({
      name: z.string(),
      partition_responses: z.array(
        z.object({
          index: int,
          error_code: described(int, "Kafka's error code, 0 for success"),
          error: described(z.string(), "Kafka's error name, when error_code is not 0").optional(),
          error_message: z.string().optional(),
          base_offset: described(int, '-1 with acks=0 or on error'),
          last_offset: int,
          log_append_time_ms: logAppendTime,
          log_start_offset: int,
          duplicate,
          leader_id: described(
            int,
            "KIP-951's current leader: the partition's leader as of this append (a leader elected during the request shows here, with no error)",
          ).optional(),
          leader_epoch: described(int, "The leader's epoch as of this append").optional(),
          isr: described(
            z.array(int),
            'The in-sync replicas as of this append (the stores an acks=all append is written to)',
          ).optional(),
        }),
      ),
    }),
  ),
});

/** Kafka's FetchResponse in JSON (fetch-request-routes.ts). */
export const fetchResponseSchema = z.object({
  kind: z.literal('KafkaFetchResponse'),
  cluster_id: z.string().optional(),
  responses: z.array(
    z.object({
      topic: z.string(),
      partitions: z.array(
        z.looseObject({
          partition_index: int,
          error_code: described(
            int,
            "Kafka's error code, 0 for success (1 OFFSET_OUT_OF_RANGE, 3 UNKNOWN_TOPIC_OR_PARTITION, ...)",
          ),
          error: z.string().optional(),
          error_message: z.string().optional(),
          high_watermark: int,
          last_stable_offset: described(
            int,
            "Kafka's last stable offset: the first offset of the oldest open transaction, or the high watermark",
          ),
          log_start_offset: int,
          next_offset: described(
            int,
            'Where to fetch next (past compaction gaps, or the first record a bounded JSON answer left out)',
          ),
          aborted_transactions: described(
            z.array(z.object({ producer_id: int, first_offset: int, last_offset: int })),
            "read_committed only (Kafka's aborted_transactions): the aborted transactions with records among the answer's batches; a consumer leaves out the producer's transactional batches from first_offset to the ABORT marker at last_offset",
          ).optional(),
          records: described(
            z.union([z.string().meta({ contentEncoding: 'base64' }), z.array(recordSchema)]),
            'record-batch: whole RecordBatch v2 bytes in base64 with absolute offsets, from the batch holding fetch_offset (skip its earlier records); else an array of records',
          ),
        }),
      ),
    }),
  ),
});

export const deleteRecordsResultSchema = z.object({
  kind: z.literal('KafkaDeleteRecordsResult'),
  cluster_id: z.string(),
  topic_name: z.string(),
  partition_id: int,
  low_watermark: int,
});

export const replicaSyncReportSchema = z.object({
  kind: z.literal('KafkaReplicaSyncReport'),
  topic_name: z.string(),
  partitions: z.array(
    z.object({
      partition_id: int,
      copied_objects: int,
      caught_up: z.array(int),
      removed_from_isr: z.array(int),
      added_to_isr: z.array(int),
      elected_leader: int.optional(),
    }),
  ),
});
