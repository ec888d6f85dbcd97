/**
 * OpenAPI paths of the transaction API (merged into openapi.ts): Kafka's InitProducerId with a
 * transactional id, AddPartitionsToTxn, AddOffsetsToTxn + TxnOffsetCommit, EndTxn, Describe and
 * ListTransactions, and kafka-transactions.sh's find-hanging and abort. All are extensions. The
 * schemas are the routes' own (transaction-routes.ts).
 */
import type { ZodOpenApiPathsObject } from 'zod-openapi';
import { errors, inPath, jsonBody, ok } from './openapi-parts.js';
import {
  abortResultSchema,
  hangingListSchema,
  hangingQuerySchema,
  initSchema,
  listQuerySchema,
  offsetsSchema,
  partitionsSchema,
  producerIdSchema,
  producerSchema,
  transactionListSchema,
  transactionSchema,
} from './transaction-routes.js';

const id = inPath('cluster_id', 'transactional_id');

const end = (action: 'commit' | 'abort') => ({
  post: {
    summary: `Kafka's EndTxn(${action}): Prepare${action === 'commit' ? 'Commit' : 'Abort'} is persisted, a ${action.toUpperCase()} marker written to every partition of the transaction${action === 'commit' ? ', its offsets to their groups' : ''}, then Complete${action === 'commit' ? 'Commit' : 'Abort'}; answered once complete. A retry of an end already done is answered again`,
    'x-extension': true,
    requestParams: { path: id },
    requestBody: jsonBody(producerSchema),
    responses: { 200: ok(transactionSchema), ...errors(404, 409, 503) },
  },
});

export const transactionPaths: ZodOpenApiPathsObject = {
  '/v3/clusters/{cluster_id}/transactions': {
    get: {
      summary: "Kafka's ListTransactions",
      'x-extension': true,
      requestParams: { path: inPath('cluster_id'), query: listQuerySchema },
      responses: { 200: ok(transactionListSchema), ...errors(400) },
    },
  },
  '/v3/clusters/{cluster_id}/transactions:hanging': {
    get: {
      summary:
        'Transactions open in a partition longer than older_than_ms (default transaction.max.timeout.ms) that their coordinator does not list there: no end will write their marker (kafka-transactions.sh find-hanging)',
      'x-extension': true,
      requestParams: { path: inPath('cluster_id'), query: hangingQuerySchema },
      responses: { 200: ok(hangingListSchema), ...errors(404) },
    },
  },
  '/v3/clusters/{cluster_id}/transactions/{transactional_id}': {
    get: {
      summary: "Kafka's DescribeTransactions",
      'x-extension': true,
      requestParams: { path: id },
      responses: { 200: ok(transactionSchema), ...errors(404) },
    },
  },
  '/v3/clusters/{cluster_id}/transactions/{transactional_id}/init': {
    post: {
      summary:
        "Kafka's InitProducerId with a transactional id: completes a Prepare* the last producer left, fences it and aborts its open transaction, then bumps the epoch (a new id gets a producer id at epoch 0). transaction_timeout_ms defaults to 60000 and may not exceed transaction.max.timeout.ms (INVALID_TRANSACTION_TIMEOUT)",
      'x-extension': true,
      requestParams: { path: id },
      requestBody: jsonBody(initSchema, false),
      responses: { 200: ok(producerIdSchema), ...errors(400, 409) },
    },
  },
  '/v3/clusters/{cluster_id}/transactions/{transactional_id}/partitions': {
    post: {
      summary:
        "Kafka's AddPartitionsToTxn (optional: a transactional produce adds its partition itself, after checking the producer is current, KIP-890)",
      'x-extension': true,
      requestParams: { path: id },
      requestBody: jsonBody(partitionsSchema),
      responses: { 200: ok(transactionSchema), ...errors(404, 409) },
    },
  },
  '/v3/clusters/{cluster_id}/transactions/{transactional_id}/offsets': {
    post: {
      summary:
        "Kafka's AddOffsetsToTxn and TxnOffsetCommit: the group joins the transaction; the offsets become the group's committed offsets when the transaction commits, and are dropped when it aborts",
      'x-extension': true,
      requestParams: { path: id },
      requestBody: jsonBody(offsetsSchema),
      responses: { 200: ok(transactionSchema), ...errors(400, 404, 409) },
    },
  },
  '/v3/clusters/{cluster_id}/transactions/{transactional_id}/commit': end('commit'),
  '/v3/clusters/{cluster_id}/transactions/{transactional_id}/abort': end('abort'),
  '/v3/clusters/{cluster_id}/topics/{topic_name}/partitions/{partition_id}/transactions:abort': {
    post: {
      summary:
        "kafka-transactions.sh abort: writes an ABORT marker for the producer's open (hanging) transaction in this partition; nothing when it has none",
      'x-extension': true,
      requestParams: { path: inPath('cluster_id', 'topic_name', 'partition_id') },
      requestBody: jsonBody(producerSchema),
      responses: { 200: ok(abortResultSchema), ...errors(404) },
    },
  },
};
