/**
 * OpenAPI paths of the transaction API (merged into openapi.ts): Kafka's InitProducerId with a
 * transactional id, AddPartitionsToTxn, AddOffsetsToTxn + TxnOffsetCommit, EndTxn, Describe and
 * ListTransactions, and kafka-transactions.sh's find-hanging and abort. All are extensions.
 */
type Json = Record<string, unknown>;

const json = (schema: Json, description = 'OK') => ({ description, content: { 'application/json': { schema } } });
const error = json({ $ref: '#/components/schemas/Error' }, 'Error');
const errors = (...statuses: number[]) => Object.fromEntries(statuses.map((s) => [String(s), error]));
const obj = (properties: Json, required?: string[]) => ({
  type: 'object',
  properties,
  ...(required ? { required } : {}),
});
const path = (name: string, schema: Json = { type: 'string' }) => ({ name, in: 'path', required: true, schema });
const query = (name: string, schema: Json, description?: string) => ({
  name,
  in: 'query',
  required: false,
  schema,
  ...(description ? { description } : {}),
});
const body = (schema: Json, required = true) => ({ required, content: { 'application/json': { schema } } });

const cluster = path('cluster_id');
const id = path('transactional_id');
const producer = { producer_id: { type: 'integer' }, producer_epoch: { type: 'integer' } };
const states = [
  'Empty',
  'Ongoing',
  'PrepareCommit',
  'PrepareAbort',
  'CompleteCommit',
  'CompleteAbort',
  'Dead',
  'PrepareEpochFence',
];

const transaction = obj({
  kind: { const: 'KafkaTransaction' },
  transactional_id: { type: 'string' },
  ...producer,
  state: { enum: states },
  transaction_timeout_ms: { type: 'integer' },
  transaction_start_time: { type: ['string', 'null'], format: 'date-time' },
  last_update_time: { type: 'string', format: 'date-time' },
  partitions: { type: 'array', items: obj({ topic_name: { type: 'string' }, partition_id: { type: 'integer' } }) },
  groups: { type: 'array', items: { type: 'string' } },
});

const end = (action: 'commit' | 'abort') => ({
  post: {
    summary: `Kafka's EndTxn(${action}): Prepare${action === 'commit' ? 'Commit' : 'Abort'} is persisted, a ${action.toUpperCase()} marker written to every partition of the transaction${action === 'commit' ? ', its offsets to their groups' : ''}, then Complete${action === 'commit' ? 'Commit' : 'Abort'}; answered once complete. A retry of an end already done is answered again`,
    'x-extension': true,
    parameters: [cluster, id],
    requestBody: body(obj(producer, ['producer_id', 'producer_epoch'])),
    responses: { 200: json(transaction), ...errors(404, 409, 503) },
  },
});

export const transactionPaths = {
  '/v3/clusters/{cluster_id}/transactions': {
    get: {
      summary: "Kafka's ListTransactions",
      'x-extension': true,
      parameters: [
        cluster,
        query('state', { enum: states }, 'Repeatable'),
        query('producer_id', { type: 'integer' }, 'Repeatable'),
      ],
      responses: {
        200: json(obj({ kind: { const: 'KafkaTransactionList' }, data: { type: 'array', items: transaction } })),
      },
    },
  },
  '/v3/clusters/{cluster_id}/transactions:hanging': {
    get: {
      summary:
        'Transactions open in a partition longer than older_than_ms (default transaction.max.timeout.ms) that their coordinator does not list there: no end will write their marker (kafka-transactions.sh find-hanging)',
      'x-extension': true,
      parameters: [
        cluster,
        query('topic', { type: 'string' }),
        query('older_than_ms', { type: 'integer', minimum: 0 }),
        query(
          'page_token',
          { type: 'string' },
          'Where the previous page stopped (its metadata.next): each page reads at most 1,000 partitions',
        ),
      ],
      responses: {
        200: json(
          obj({
            kind: { const: 'KafkaHangingTransactionList' },
            metadata: obj({ self: { type: 'string' }, next: { type: ['string', 'null'] } }),
            data: {
              type: 'array',
              items: obj({
                topic_name: { type: 'string' },
                partition_id: { type: 'integer' },
                ...producer,
                start_offset: { type: 'integer' },
                start_time: { type: 'string', format: 'date-time' },
                transactional_id: { type: ['string', 'null'] },
                coordinator_state: { type: ['string', 'null'] },
              }),
            },
          }),
        ),
        ...errors(404),
      },
    },
  },
  '/v3/clusters/{cluster_id}/transactions/{transactional_id}': {
    get: {
      summary: "Kafka's DescribeTransactions",
      'x-extension': true,
      parameters: [cluster, id],
      responses: { 200: json(transaction), ...errors(404) },
    },
  },
  '/v3/clusters/{cluster_id}/transactions/{transactional_id}/init': {
    post: {
      summary:
        "Kafka's InitProducerId with a transactional id: completes a Prepare* the last producer left, fences it and aborts its open transaction, then bumps the epoch (a new id gets a producer id at epoch 0). transaction_timeout_ms defaults to 60000 and may not exceed transaction.max.timeout.ms (INVALID_TRANSACTION_TIMEOUT)",
      'x-extension': true,
      parameters: [cluster, id],
      requestBody: body(obj({ transaction_timeout_ms: { type: 'integer', minimum: 1 }, ...producer }), false),
      responses: {
        200: json(obj({ kind: { const: 'KafkaProducerId' }, transactional_id: { type: 'string' }, ...producer })),
        ...errors(400, 409),
      },
    },
  },
  '/v3/clusters/{cluster_id}/transactions/{transactional_id}/partitions': {
    post: {
      summary:
        "Kafka's AddPartitionsToTxn (optional: a transactional produce adds its partition itself, after checking the producer is current, KIP-890)",
      'x-extension': true,
      parameters: [cluster, id],
      requestBody: body(
        obj(
          {
            ...producer,
            partitions: {
              type: 'array',
              items: obj({ topic_name: { type: 'string' }, partition_id: { type: 'integer' } }),
            },
          },
          ['producer_id', 'producer_epoch', 'partitions'],
        ),
      ),
      responses: { 200: json(transaction), ...errors(404, 409) },
    },
  },
  '/v3/clusters/{cluster_id}/transactions/{transactional_id}/offsets': {
    post: {
      summary:
        "Kafka's AddOffsetsToTxn and TxnOffsetCommit: the group joins the transaction; the offsets become the group's committed offsets when the transaction commits, and are dropped when it aborts",
      'x-extension': true,
      parameters: [cluster, id],
      requestBody: body(
        obj(
          {
            ...producer,
            group_id: { type: 'string' },
            member_id: {
              type: 'string',
              description:
                "KIP-447: the consumer's member id; with generation_id, checked as for its own commits (ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID)",
            },
            generation_id: { type: 'integer' },
            offsets: {
              type: 'array',
              items: obj({
                topic_name: { type: 'string' },
                partition_id: { type: 'integer' },
                offset: { type: 'integer' },
                metadata: { type: 'string' },
              }),
            },
          },
          ['producer_id', 'producer_epoch', 'group_id'],
        ),
      ),
      responses: { 200: json(transaction), ...errors(400, 404, 409) },
    },
  },
  '/v3/clusters/{cluster_id}/transactions/{transactional_id}/commit': end('commit'),
  '/v3/clusters/{cluster_id}/transactions/{transactional_id}/abort': end('abort'),
  '/v3/clusters/{cluster_id}/topics/{topic_name}/partitions/{partition_id}/transactions:abort': {
    post: {
      summary:
        "kafka-transactions.sh abort: writes an ABORT marker for the producer's open (hanging) transaction in this partition; nothing when it has none",
      'x-extension': true,
      parameters: [cluster, path('topic_name'), path('partition_id', { type: 'integer', minimum: 0 })],
      requestBody: body(obj(producer, ['producer_id', 'producer_epoch'])),
      responses: {
        200: json(
          obj({
            kind: { const: 'KafkaTransactionAbortResult' },
            marker_written: { type: 'boolean' },
            marker_offset: { type: ['integer', 'null'] },
          }),
        ),
        ...errors(404),
      },
    },
  },
};
