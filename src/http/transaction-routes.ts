import { Hono } from 'hono';
import * as z from 'zod';
import { KafkaError } from '../wire/errors.js';
import {
  DEFAULT_TRANSACTION_TIMEOUT_MS,
  type PartitionCursor,
  type TransactionRecord,
  type TransactionStatus,
} from '../transactions/index.js';
import type { AppEnv } from './app-env.js';
import { partitionParam, queryInt, readJson } from './request.js';
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

const producerSchema = z.object({
  producer_id: z.number().int().nonnegative(),
  producer_epoch: z.number().int().nonnegative(),
});
const initSchema = z
  .object({
    transaction_timeout_ms: z.number().int().optional(),
    producer_id: z.number().int().nonnegative().optional(),
    producer_epoch: z.number().int().nonnegative().optional(),
  })
  .refine(
    (b) => (b.producer_id === undefined) === (b.producer_epoch === undefined),
    'producer_id and producer_epoch go together',
  );
const partitionsSchema = producerSchema.extend({
  partitions: z.array(z.object({ topic_name: z.string().min(1), partition_id: z.number().int().nonnegative() })).min(1),
});
const offsetsSchema = producerSchema.extend({
  group_id: z.string(),
  // KIP-447: the consumer's member id and generation, checked as for its own commits.
  member_id: z.string().min(1).optional(),
  generation_id: z.number().int().optional(),
  offsets: z
    .array(
      z.object({
        topic_name: z.string().min(1),
        partition_id: z.number().int().nonnegative(),
        offset: z.number().int().nonnegative(),
        metadata: z.string().optional(),
      }),
    )
    .default([]),
});
const STATES: TransactionStatus[] = [
  'Empty',
  'Ongoing',
  'PrepareCommit',
  'PrepareAbort',
  'CompleteCommit',
  'CompleteAbort',
  'Dead',
  'PrepareEpochFence',
];

const producerOf = (b: z.infer<typeof producerSchema>) => ({
  producerId: b.producer_id,
  producerEpoch: b.producer_epoch,
});

function show(clusterId: string, r: TransactionRecord) {
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
    const states = c.req.queries('state');
    for (const s of states ?? [])
      if (!STATES.includes(s as TransactionStatus))
        throw new KafkaError('BAD_REQUEST', `Unknown transaction state ${s}`);
    const producerIds = c.req.queries('producer_id')?.map((p) => queryInt(p, 'producer_id')!);
    const list = await transactions.list({
      ...(states ? { states: states as TransactionStatus[] } : {}),
      ...(producerIds ? { producerIds } : {}),
    });
    const visible = await allowedNames(c, 'DESCRIBE', 'TRANSACTIONAL_ID');
    return c.json({
      kind: 'KafkaTransactionList',
      data: list.filter((r) => visible(r.transactionalId)).map((r) => show(clusterId, r)),
    });
  });

  app.get('/transactions:hanging', async (c) => {
    await authorize(c, 'CLUSTER_ACTION', 'CLUSTER');
    const { transactions, clusterId } = c.get('services');
    const topic = c.req.query('topic');
    const olderThanMs = queryInt(c.req.query('older_than_ms'), 'older_than_ms');
    const token = c.req.query('page_token');
    const { hanging, next } = await transactions.findHanging({
      ...(topic ? { topic } : {}),
      ...(olderThanMs !== undefined ? { olderThanMs } : {}),
      ...(token ? { after: parsePageToken(token) } : {}),
    });
    // A page of partitions per request (FIND_HANGING_PAGE): metadata.next goes on where it stopped.
    const url = new URL(c.req.url);
    if (next) url.searchParams.set('page_token', pageToken(next));
    return c.json({
      kind: 'KafkaHangingTransactionList',
      cluster_id: clusterId,
      metadata: { self: c.req.url, next: next ? url.toString() : null },
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
    });
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
    });
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
    const r = await transactions.addPartitions(
      c.req.param('id'),
      producerOf(body),
      body.partitions.map((p) => ({ topic: p.topic_name, partition: p.partition_id })),
    );
    return c.json(show(clusterId, r));
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
    return c.json(
      show(
        clusterId,
        await transactions.commitOffsets(c.req.param('id'), producerOf(body), body.group_id, offsets, member),
      ),
    );
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
    });
  });

  return app;
}

/** A find-hanging page token: the last partition read, opaque to callers. */
const pageToken = (c: PartitionCursor) => Buffer.from(JSON.stringify([c.topic, c.partition])).toString('base64url');

function parsePageToken(token: string): PartitionCursor {
  try {
    const [topic, partition] = JSON.parse(Buffer.from(token, 'base64url').toString('utf8')) as unknown[];
    if (typeof topic === 'string' && Number.isInteger(partition)) return { topic, partition: partition as number };
  } catch {}
  throw new KafkaError('INVALID_REQUEST', 'page_token is not one this server gave');
}
