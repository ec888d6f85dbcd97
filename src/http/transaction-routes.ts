import { Hono } from 'hono';
import * as z from 'zod';
import { DEFAULT_TRANSACTION_TIMEOUT_MS, TRANSACTION_STATES, type TransactionRecord } from '../transactions/index.js';
import type { AppEnv } from './app-env.js';
import { dateTime } from './openapi-parts.js';
import { nextPageUrl, pageCursor, pageTokenSchema } from './page-token.js';
import { intQuery, parseQuery, partitionParam, readJson } from './request.js';
import { allowedNames, authorize, authorizeAll } from './security.js';

/**
 * Extension: Kafka's transaction APIs (no REST API has them), in v3 style under the cluster:
 *
 *   POST /transactions/{id}/init         InitProducerId with a transactional.id
 *   POST /transactions/{id}/partitions   AddPartitionsToTxn (optional: a produce adds its partition)
 *   POST /transactions/{id}/offsets      AddOffsetsToTxn + TxnOffsetCommit
 *   POST /transactions/{id}/commit       EndTxn(commit)
 *   POST /transactions/{id}/abort        EndTxn(abort)
 *   GET  /transactions                   ListTransactions (?state=Ongoing&producer_id=7)
 *   GET  /transactions/{id}              DescribeTransactions
 *   GET  /transactions:hanging           kafka-transactions.sh find-hanging (?topic=&older_than_ms=)
 *   POST /topics/{t}/partitions/{p}/transactions:abort   kafka-transactions.sh abort (a hanging one)
 *
 * Authorization as Kafka's: WRITE on the TRANSACTIONAL_ID for init, add, offsets and end (and WRITE
 * on the topics added, READ on the group of the offsets), DESCRIBE on it to describe or list (the
 * list shows only those), CLUSTER_ACTION on the cluster to find hanging transactions or write a
 * marker (WriteTxnMarkers).
 */

const producer = { producer_id: z.int().min(0), producer_epoch: z.int().min(0) };
export const producerSchema = z.object(producer);
export const initSchema = z
  .object({
    transaction_timeout_ms: z.int().min(1).optional(),
    producer_id: producer.producer_id.optional(),
    producer_epoch: producer.producer_epoch.optional(),
  })
  .refine(
    (b) => (b.producer_id === undefined) === (b.producer_epoch === undefined),
    'producer_id and producer_epoch go together',
  );
const topicPartition = z.object({ topic_name: z.string().min(1), partition_id: z.int().min(0) });
export const partitionsSchema = producerSchema.extend({ partitions: z.array(topicPartition).min(1) });
export const offsetsSchema = producerSchema.extend({
  group_id: z.string(),
  member_id: z
    .string()
    .min(1)
    .meta({
      description:
        "KIP-447: the consumer's member id; with generation_id, checked as for its own commits (ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID)",
    })
    .optional(),
  generation_id: z.int().optional(),
  offsets: z.array(topicPartition.extend({ offset: z.int().min(0), metadata: z.string().optional() })).default([]),
});
export const listQuerySchema = z.object({
  state: z.array(z.enum(TRANSACTION_STATES)).meta({ description: 'Repeatable' }).optional(),
  producer_id: z
    .array(intQuery(z.int().min(0)))
    .meta({ description: 'Repeatable' })
    .optional(),
});
export const hangingQuerySchema = z.object({
  topic: z.string().optional(),
  older_than_ms: intQuery(z.int().min(0)).optional(),
  page_token: pageTokenSchema,
});

export const transactionSchema = z.object({
  kind: z.literal('KafkaTransaction'),
  cluster_id: z.string(),
  transactional_id: z.string(),
  ...producer,
  state: z.enum(TRANSACTION_STATES),
  transaction_timeout_ms: z.int(),
  transaction_start_time: dateTime.nullable(),
  last_update_time: dateTime,
  partitions: z.array(topicPartition),
  groups: z.array(z.string()),
});
export const transactionListSchema = z.object({
  kind: z.literal('KafkaTransactionList'),
  data: z.array(transactionSchema),
});
export const hangingListSchema = z.object({
  kind: z.literal('KafkaHangingTransactionList'),
  cluster_id: z.string(),
  metadata: z.object({ self: z.string(), next: z.string().nullable() }),
  data: z.array(
    z.object({
      topic_name: z.string(),
      partition_id: z.int(),
      ...producer,
      start_offset: z.int(),
      start_time: dateTime,
      transactional_id: z.string().nullable(),
      coordinator_state: z.enum(TRANSACTION_STATES).nullable(),
    }),
  ),
});
export const producerIdSchema = z.object({
  kind: z.literal('KafkaProducerId'),
  cluster_id: z.string(),
  transactional_id: z.string(),
  ...producer,
});
export const abortResultSchema = z.object({
  kind: z.literal('KafkaTransactionAbortResult'),
  cluster_id: z.string(),
  topic_name: z.string(),
  partition_id: z.int(),
  marker_written: z.boolean(),
  marker_offset: z.int().nullable(),
});
type Answer<S extends z.ZodType> = z.input<S>;

const producerOf = (b: z.infer<typeof producerSchema>) => ({
  producerId: b.producer_id,
  producerEpoch: b.producer_epoch,
});

function show(clusterId: string, r: TransactionRecord): Answer<typeof transactionSchema> {
  return {
    kind: 'KafkaTransaction',
    cluster_id: clusterId,
    transactional_id: r.transactionalId,
    producer_id: r.producerId,
    producer_epoch: r.producerEpoch,
    state: r.state,
    transaction_timeout_ms: r.timeoutMs,
    transaction_start_time: r.startedAt >= 0 ? new Date(r.startedAt).toISOString() : null,
    last_update_time: new Date(r.updatedAt).toISOString(),
    partitions: r.partitions.map((p) => ({ topic_name: p.topic, partition_id: p.partition })),
    groups: r.groups,
  };
}

export function transactionRoutes(): Hono<AppEnv> {
  const app = new Hono<AppEnv>();

  app.get('/transactions', async (c) => {
    const { transactions, clusterId } = c.get('services');
    const query = parseQuery(c, listQuerySchema);
    const list = await transactions.list({
      ...(query.state ? { states: query.state } : {}),
      ...(query.producer_id ? { producerIds: query.producer_id } : {}),
    });
    const visible = await allowedNames(c, 'DESCRIBE', 'TRANSACTIONAL_ID');
    return c.json({
      kind: 'KafkaTransactionList',
      data: list.filter((r) => visible(r.transactionalId)).map((r) => show(clusterId, r)),
    } satisfies Answer<typeof transactionListSchema>);
  });

  app.get('/transactions:hanging', async (c) => {
    await authorize(c, 'CLUSTER_ACTION', 'CLUSTER');
    const { transactions, clusterId } = c.get('services');
    // page_token is the schema's for the document; pageCursor reads and checks it.
    const { topic, older_than_ms: olderThanMs } = parseQuery(c, hangingQuerySchema);
    const after = pageCursor(c);
    const { hanging, next } = await transactions.findHanging({
      ...(topic ? { topic } : {}),
      ...(olderThanMs !== undefined ? { olderThanMs } : {}),
      ...(after ? { after } : {}),
    });
    // A page of partitions per request (PARTITION_PAGE): metadata.next goes on where it stopped.
    return c.json({
      kind: 'KafkaHangingTransactionList',
      cluster_id: clusterId,
      metadata: { self: c.req.url, next: nextPageUrl(c, next) },
      data: hanging.map((h) => ({
        topic_name: h.topic,
        partition_id: h.partition,
        producer_id: h.producerId,
        producer_epoch: h.producerEpoch,
        start_offset: h.firstOffset,
        start_time: new Date(h.startedAt).toISOString(),
        transactional_id: h.transactionalId ?? null,
        coordinator_state: h.coordinatorState ?? null,
      })),
    } satisfies Answer<typeof hangingListSchema>);
  });

  app.get('/transactions/:id', async (c) => {
    await authorize(c, 'DESCRIBE', 'TRANSACTIONAL_ID', c.req.param('id'));
    const { transactions, clusterId } = c.get('services');
    return c.json(show(clusterId, await transactions.describe(c.req.param('id'))));
  });

  app.post('/transactions/:id/init', async (c) => {
    await authorize(c, 'WRITE', 'TRANSACTIONAL_ID', c.req.param('id'));
    const body = initSchema.parse(await readJson(c, { optional: true }));
    const { transactions, clusterId } = c.get('services');
    const expected =
      body.producer_id !== undefined
        ? { producerId: body.producer_id, producerEpoch: body.producer_epoch! }
        : undefined;
    const r = await transactions.init(
      c.req.param('id'),
      body.transaction_timeout_ms ?? DEFAULT_TRANSACTION_TIMEOUT_MS,
      expected,
    );
    return c.json({
      kind: 'KafkaProducerId',
      cluster_id: clusterId,
      transactional_id: c.req.param('id'),
      producer_id: r.producerId,
      producer_epoch: r.producerEpoch,
    } satisfies Answer<typeof producerIdSchema>);
  });

  app.post('/transactions/:id/partitions', async (c) => {
    await authorize(c, 'WRITE', 'TRANSACTIONAL_ID', c.req.param('id'));
    const body = partitionsSchema.parse(await readJson(c));
    await authorizeAll(
      c,
      'WRITE',
      'TOPIC',
      body.partitions.map((p) => p.topic_name),
    );
    const { transactions, clusterId } = c.get('services');
    await transactions.addPartitions(
      c.req.param('id'),
      producerOf(body),
      body.partitions.map((p) => ({ topic: p.topic_name, partition: p.partition_id })),
    );
    return c.json(show(clusterId, await transactions.describe(c.req.param('id'))));
  });

  app.post('/transactions/:id/offsets', async (c) => {
    await authorize(c, 'WRITE', 'TRANSACTIONAL_ID', c.req.param('id'));
    const body = offsetsSchema.parse(await readJson(c));
    await authorize(c, 'READ', 'GROUP', body.group_id);
    const { transactions, clusterId } = c.get('services');
    const offsets = body.offsets.map((o) => ({
      topic: o.topic_name,
      partition: o.partition_id,
      offset: o.offset,
      metadata: o.metadata ?? '',
    }));
    const member =
      body.member_id !== undefined ? { memberId: body.member_id, generation: body.generation_id ?? -1 } : undefined;
    await transactions.commitOffsets(c.req.param('id'), producerOf(body), body.group_id, offsets, member);
    return c.json(show(clusterId, await transactions.describe(c.req.param('id'))));
  });

  for (const action of ['commit', 'abort'] as const) {
    app.post(`/transactions/:id/${action}`, async (c) => {
      await authorize(c, 'WRITE', 'TRANSACTIONAL_ID', c.req.param('id'));
      const body = producerSchema.parse(await readJson(c));
      const { transactions, clusterId } = c.get('services');
      return c.json(show(clusterId, await transactions.end(c.req.param('id'), producerOf(body), action === 'commit')));
    });
  }

  app.post('/topics/:topic/partitions/:partition/transactions:abort', async (c) => {
    await authorize(c, 'CLUSTER_ACTION', 'CLUSTER'); // WriteTxnMarkers
    const body = producerSchema.parse(await readJson(c));
    const { transactions, clusterId } = c.get('services');
    const partition = partitionParam(c.req.param('partition'));
    const r = await transactions.abortInPartition(c.req.param('topic'), partition, producerOf(body));
    return c.json({
      kind: 'KafkaTransactionAbortResult',
      cluster_id: clusterId,
      topic_name: c.req.param('topic'),
      partition_id: partition,
      marker_written: r.written,
      marker_offset: r.written ? r.offset : null,
    } satisfies Answer<typeof abortResultSchema>);
  });

  return app;
}
