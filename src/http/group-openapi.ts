/**
 * OpenAPI paths of the consumer-group API (merged into openapi.ts): Confluent v3's consumer-group
 * paths, v3-style extensions (`x-extension: true`) and REST Proxy v2's consumer instances.
 */
type Json = Record<string, unknown>;

const json = (schema: Json, description = 'OK') => ({ description, content: { 'application/json': { schema } } });
const error = json({ $ref: '#/components/schemas/Error' }, 'Error');
const errors = (...statuses: number[]) => Object.fromEntries(statuses.map((s) => [String(s), error]));
const list = json({ $ref: '#/components/schemas/List' });
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
const noContent = { 204: { description: 'No content' } };

const cluster = path('cluster_id');
const group = path('consumer_group_id');
const consumer = path('consumer_id');
const topic = path('topic_name');
const partition = path('partition_id', { type: 'integer', minimum: 0 });
const v2group = path('group_name');
const instance = path('instance');

const tp = obj({ topic_name: { type: 'string' }, partition_id: { type: 'integer', minimum: 0 } }, [
  'topic_name',
  'partition_id',
]);
const v2tp = obj({ topic: { type: 'string' }, partition: { type: 'integer', minimum: 0 } }, ['topic', 'partition']);
const state = { enum: ['EMPTY', 'PREPARING_REBALANCE', 'COMPLETING_REBALANCE', 'STABLE', 'DEAD'] };

const groupSchema = obj({
  kind: { const: 'KafkaConsumerGroup' },
  consumer_group_id: { type: 'string' },
  is_simple: { type: 'boolean' },
  type: {
    enum: ['CONSUMER', 'CLASSIC'],
    description:
      "Kafka's group type: CONSUMER for members of the server-side assignment (KIP-848), CLASSIC for a group with offsets only",
  },
  is_mixed_consumer_group: { type: 'boolean' },
  partition_assignor: { type: 'string' },
  state,
  group_epoch: { type: 'integer' },
  assignment_epoch: { type: 'integer' },
  members: {
    type: 'array',
    items: { type: 'object' },
    description: 'Single-group describe only: member epoch, subscription, assignment, revoking, target',
  },
  partitions: {
    type: 'array',
    description: 'Single-group describe only',
    items: obj({
      topic_name: { type: 'string' },
      partition_id: { type: 'integer' },
      consumer_id: { type: ['string', 'null'] },
      committed_offset: { type: ['integer', 'null'] },
      log_end_offset: { type: 'integer', description: 'High watermark' },
      lag: { type: ['integer', 'null'] },
    }),
  },
});

const heartbeatRequest = obj({
  member_id: { type: 'string', description: 'Empty on the first call: the server names the member' },
  member_epoch: {
    type: 'integer',
    description: '0 to join (or rejoin after FENCED_MEMBER_EPOCH), -1 to leave, else the epoch last received',
  },
  client_id: { type: 'string' },
  subscribed_topic_names: {
    type: 'array',
    items: { type: 'string' },
    description: 'Required when joining; absent = unchanged',
  },
  assignor: { enum: ['range', 'roundrobin', 'sticky', 'cooperative-sticky', 'uniform'] },
  'session.timeout.ms': { type: 'integer', minimum: 6000, maximum: 1800000, default: 45000 },
  'max.poll.interval.ms': {
    type: 'integer',
    default: 300000,
    description: 'Rebalance timeout: partitions to revoke must be released within it',
  },
  owned_partitions: {
    type: 'array',
    items: tp,
    description: 'Optional: what the member still consumes. Without it a heartbeat acknowledges the previous answer',
  },
});

const heartbeatResponse = obj({
  kind: { const: 'KafkaConsumerGroupHeartbeat' },
  member_id: { type: 'string' },
  member_epoch: { type: 'integer', description: 'The generation: send it back, and with commits as generation_id' },
  generation_id: { type: 'integer' },
  group_epoch: { type: 'integer' },
  heartbeat_interval_ms: { type: 'integer' },
  assignment: { type: 'array', items: tp, description: 'Partitions the member may consume now' },
  pending_assignment: {
    type: 'array',
    items: tp,
    description: 'Partitions it receives once their previous owner released them',
  },
  state,
});

const offsetEntry = obj({
  kind: { const: 'KafkaConsumerGroupOffset' },
  topic_name: { type: 'string' },
  partition_id: { type: 'integer' },
  committed_offset: { type: ['integer', 'null'] },
  offset_metadata: { type: ['string', 'null'] },
  commit_timestamp: { type: ['string', 'null'] },
  generation_id: { type: ['integer', 'null'] },
  position: { type: 'integer', description: 'With auto_offset_reset only' },
  position_source: { enum: ['COMMITTED', 'RESET'] },
});

const g = '/v3/clusters/{cluster_id}/consumer-groups';
const i = '/consumers/{group_name}/instances/{instance}';

export const groupPaths: Record<string, Json> = {
  [g]: { get: { summary: 'List consumer groups', parameters: [cluster], responses: { 200: list, ...errors(404) } } },
  [`${g}/{consumer_group_id}`]: {
    get: {
      summary: 'Describe a group: state, members, assignment, committed offset, HW and lag per partition',
      parameters: [cluster, group],
      responses: { 200: json(groupSchema), ...errors(404) },
    },
    delete: {
      summary: 'Delete an Empty group and its offsets',
      'x-extension': true,
      parameters: [cluster, group],
      responses: { ...noContent, ...errors(404, 409) },
    },
  },
  [`${g}/{consumer_group_id}/consumers:heartbeat`]: {
    post: {
      summary: 'Join, heartbeat or leave (KIP-848 ConsumerGroupHeartbeat; the server assigns partitions)',
      'x-extension': true,
      parameters: [cluster, group],
      requestBody: body(heartbeatRequest),
      responses: { 200: json(heartbeatResponse), ...errors(400, 404, 409, 503) },
    },
  },
  [`${g}/{consumer_group_id}/consumers`]: {
    get: { summary: 'List members', parameters: [cluster, group], responses: { 200: list, ...errors(404) } },
  },
  [`${g}/{consumer_group_id}/consumers/{consumer_id}`]: {
    get: {
      summary: 'Describe a member',
      parameters: [cluster, group, consumer],
      responses: { 200: json({ type: 'object' }), ...errors(404) },
    },
    delete: {
      summary: 'Leave the group',
      'x-extension': true,
      parameters: [cluster, group, consumer],
      responses: { ...noContent, ...errors(404) },
    },
  },
  [`${g}/{consumer_group_id}/consumers/{consumer_id}/assignments`]: {
    get: {
      summary: "A member's assigned partitions",
      parameters: [cluster, group, consumer],
      responses: { 200: list, ...errors(404) },
    },
  },
  [`${g}/{consumer_group_id}/consumers/{consumer_id}/assignments/{topic_name}/partitions/{partition_id}`]: {
    get: {
      summary: 'One assignment',
      parameters: [cluster, group, consumer, topic, partition],
      responses: { 200: json({ type: 'object' }), ...errors(404) },
    },
  },
  [`${g}/{consumer_group_id}/lags`]: {
    get: {
      summary: 'Lag of every partition with a committed offset',
      parameters: [cluster, group],
      responses: { 200: list, ...errors(404) },
    },
  },
  [`${g}/{consumer_group_id}/lags/{topic_name}/partitions/{partition_id}`]: {
    get: {
      summary: 'Lag of one partition',
      parameters: [cluster, group, topic, partition],
      responses: { 200: json({ type: 'object' }), ...errors(404) },
    },
  },
  [`${g}/{consumer_group_id}/lag-summary`]: {
    get: {
      summary: 'Max and total lag',
      parameters: [cluster, group],
      responses: { 200: json({ type: 'object' }), ...errors(404) },
    },
  },
  [`${g}/{consumer_group_id}/offsets`]: {
    get: {
      summary:
        'Committed offsets; with auto_offset_reset, the position a consumer starts from on every partition of topic_name (in pages of partitions: metadata.next)',
      'x-extension': true,
      parameters: [
        cluster,
        group,
        query('topic_name', { type: 'string' }),
        query('partition_id', { type: 'integer', minimum: 0 }),
        query(
          'auto_offset_reset',
          { enum: ['earliest', 'latest', 'none'] },
          'none fails with NO_OFFSET_FOR_PARTITION or OFFSET_OUT_OF_RANGE (416)',
        ),
        query(
          'isolation_level',
          { enum: ['read_uncommitted', 'read_committed'] },
          'With auto_offset_reset=latest: read_committed starts at the last stable offset',
        ),
        query(
          'require_stable',
          { type: 'boolean' },
          "Kafka's require_stable (KIP-447): while a transaction not yet complete holds offsets of the group for a partition asked for, 409 UNSTABLE_OFFSET_COMMIT (retriable)",
        ),
        query(
          'page_token',
          { type: 'string' },
          'With auto_offset_reset: where the previous page stopped (its metadata.next)',
        ),
      ],
      responses: {
        200: json(
          obj({ kind: { const: 'KafkaConsumerGroupOffsetList' }, data: { type: 'array', items: offsetEntry } }),
        ),
        ...errors(400, 404, 409, 416),
      },
    },
  },
  [`${g}/{consumer_group_id}/offsets/{topic_name}/partitions/{partition_id}`]: {
    get: {
      summary: "One partition's committed offset (the self of a KafkaConsumerGroupOffset)",
      'x-extension': true,
      parameters: [cluster, group, topic, partition],
      responses: { 200: json({ type: 'object' }), ...errors(404) },
    },
  },
  [`${g}/{consumer_group_id}/offsets:commit`]: {
    post: {
      summary:
        'Commit offsets: by a member of the current generation, or without member_id for a group without members',
      'x-extension': true,
      parameters: [cluster, group],
      requestBody: body(
        obj(
          {
            member_id: { type: 'string' },
            generation_id: { type: 'integer', description: 'The member epoch (member_epoch is accepted too)' },
            offsets: {
              type: 'array',
              items: {
                ...tp,
                properties: {
                  ...tp.properties,
                  offset: { type: 'integer', minimum: 0 },
                  metadata: { type: 'string', maxLength: 4096 },
                },
              },
            },
          },
          ['offsets'],
        ),
      ),
      responses: { 200: json({ type: 'object' }), ...errors(400, 404, 409) },
    },
  },
  [`${g}/{consumer_group_id}/offsets:reset`]: {
    post: {
      summary: 'Reset offsets of an inactive group as kafka-consumer-groups.sh --reset-offsets does',
      'x-extension': true,
      parameters: [cluster, group],
      requestBody: body(
        obj(
          {
            strategy: {
              enum: ['to-earliest', 'to-latest', 'to-current', 'to-offset', 'shift-by', 'to-datetime', 'by-duration'],
            },
            all_topics: { type: 'boolean', description: 'Every partition with a committed offset' },
            topics: {
              type: 'array',
              items: obj(
                { topic_name: { type: 'string' }, partition_ids: { type: 'array', items: { type: 'integer' } } },
                ['topic_name'],
              ),
            },
            offset: { type: 'integer', description: 'to-offset' },
            shift_by: { type: 'integer', description: 'shift-by' },
            datetime: {
              type: ['string', 'integer'],
              description: "to-datetime: 'YYYY-MM-DDTHH:mm:SS.sss' (UTC without a zone) or epoch ms",
            },
            duration: { type: 'string', description: 'by-duration: PnDTnHnMnS' },
            dry_run: { type: 'boolean', default: false },
          },
          ['strategy'],
        ),
      ),
      responses: {
        200: json(
          obj({
            kind: { const: 'KafkaConsumerGroupOffsetReset' },
            dry_run: { type: 'boolean' },
            data: {
              type: 'array',
              items: obj({ topic_name: {}, partition_id: {}, current_offset: {}, new_offset: {} }),
            },
          }),
        ),
        ...errors(400, 404, 409),
      },
    },
  },
  '/consumers/{group_name}': {
    post: {
      summary: 'REST Proxy v2: create a consumer instance (a group member living in the metadata store)',
      parameters: [v2group],
      requestBody: body(
        obj({
          name: { type: 'string' },
          format: { enum: ['binary', 'json'] },
          'auto.offset.reset': { enum: ['earliest', 'latest', 'none'] },
          'auto.commit.enable': { type: ['string', 'boolean'] },
          'consumer.request.timeout.ms': { type: ['string', 'integer'] },
        }),
        false,
      ),
      responses: {
        200: json(obj({ instance_id: { type: 'string' }, base_uri: { type: 'string' } })),
        ...errors(400, 409),
      },
    },
  },
  [i]: {
    delete: {
      summary: 'Delete the instance (commits with auto-commit, leaves the group)',
      parameters: [v2group, instance],
      responses: { ...noContent, ...errors(404) },
    },
  },
  [`${i}/subscription`]: {
    post: {
      summary: 'Subscribe',
      parameters: [v2group, instance],
      requestBody: body(obj({ topics: { type: 'array', items: { type: 'string' } } }, ['topics'])),
      responses: { ...noContent, ...errors(400, 404) },
    },
    get: {
      summary: 'Subscribed topics',
      parameters: [v2group, instance],
      responses: { 200: json(obj({ topics: { type: 'array' } })), ...errors(404) },
    },
    delete: { summary: 'Unsubscribe', parameters: [v2group, instance], responses: { ...noContent, ...errors(404) } },
  },
  [`${i}/assignments`]: {
    get: {
      summary: 'Assigned partitions',
      parameters: [v2group, instance],
      responses: { 200: json(obj({ partitions: { type: 'array', items: v2tp } })), ...errors(404) },
    },
  },
  [`${i}/records`]: {
    get: {
      summary: 'Poll records (long poll up to timeout ms)',
      parameters: [
        v2group,
        instance,
        query('timeout', { type: 'integer', minimum: 0 }),
        query('max_bytes', { type: 'integer', minimum: 1 }),
      ],
      responses: {
        200: json({
          type: 'array',
          items: obj({
            topic: { type: 'string' },
            key: {},
            value: {},
            partition: { type: 'integer' },
            offset: { type: 'integer' },
          }),
        }),
        ...errors(404, 416),
      },
    },
  },
  [`${i}/offsets`]: {
    post: {
      summary: 'Commit offsets (each offset + 1, as REST Proxy does); no body commits every position',
      parameters: [v2group, instance],
      requestBody: body(
        obj({
          offsets: {
            type: 'array',
            items: {
              ...v2tp,
              properties: { ...v2tp.properties, offset: { type: 'integer' }, metadata: { type: 'string' } },
            },
          },
        }),
        false,
      ),
      responses: { 200: { description: 'Committed' }, ...errors(400, 404, 409) },
    },
    get: {
      summary: 'Committed offsets of partitions (GET body {partitions}, or ?topic=&partition= pairs)',
      parameters: [v2group, instance, query('topic', { type: 'string' }), query('partition', { type: 'integer' })],
      responses: { 200: json(obj({ offsets: { type: 'array' } })), ...errors(404) },
    },
  },
  [`${i}/positions`]: {
    post: {
      summary: 'Seek to offsets',
      parameters: [v2group, instance],
      requestBody: body(obj({ offsets: { type: 'array' } }, ['offsets'])),
      responses: { ...noContent, ...errors(400, 404) },
    },
  },
  [`${i}/positions/beginning`]: {
    post: {
      summary: 'Seek to the beginning',
      parameters: [v2group, instance],
      requestBody: body(obj({ partitions: { type: 'array', items: v2tp } }), false),
      responses: { ...noContent, ...errors(400, 404) },
    },
  },
  [`${i}/positions/end`]: {
    post: {
      summary: 'Seek to the end',
      parameters: [v2group, instance],
      requestBody: body(obj({ partitions: { type: 'array', items: v2tp } }), false),
      responses: { ...noContent, ...errors(400, 404) },
    },
  },
};
