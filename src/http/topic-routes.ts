import { Hono } from 'hono';
import * as z from 'zod';
import { describedTopicConfigNames, isTopicConfigName, type TopicConfigName } from '../config/topic-configs.js';
import { KafkaError } from '../wire/errors.js';
import type { OffsetSpec } from '../log/partition-log.js';
import { assignReplicas } from '../partition/partition-state.js';
import type { AppEnv } from './app-env.js';
import { parseTimestamp } from './record-encoding.js';
import { mapBounded, partitionPage } from '../topics/partition-scan.js';
import { nextPageUrl, pageCursor } from './page-token.js';
import { ISOLATION_LEVELS, parseQuery, partitionParam, readJson } from './request.js';
import { allowed, allowedNames, authorize } from './security.js';

export const createTopicSchema = z.object({
  topic_name: z.string(),
  partitions_count: z.number().int().optional(),
  replication_factor: z.number().int().optional(),
  configs: z.array(z.object({ name: z.string(), value: z.string().nullable() })).optional(),
  validate_only: z.boolean().optional(),
  replicas_assignments: z
    .array(
      z.object({ partition_id: z.number().int().nonnegative(), broker_ids: z.array(z.number().int().nonnegative()) }),
    )
    .optional(),
});
export const patchTopicSchema = z.object({ partitions_count: z.number().int() });
export const putConfigSchema = z.object({ value: z.string() });

const configName = (name: string): TopicConfigName => {
  if (!isTopicConfigName(name)) throw new KafkaError('NOT_FOUND', `Config ${name} not found`);
  return name;
};

/**
 * Confluent's replicas_assignments, as far as they can be honoured: replicas are placed by store
 * index (replica j of partition i is store (i + j) mod n), so an assignment is taken only when it
 * is that placement, and refused with Kafka's INVALID_REPLICA_ASSIGNMENT otherwise, never ignored.
 */
function replicasAssignments(
  body: z.infer<typeof createTopicSchema>,
  storeCount: number,
): { partitionCount: number; replicationFactor: number } {
  const list = [...body.replicas_assignments!].sort((a, b) => a.partition_id - b.partition_id);
  if (body.partitions_count !== undefined || body.replication_factor !== undefined) {
    throw new KafkaError(
      'INVALID_REQUEST',
      'Give either replicas_assignments or partitions_count/replication_factor, not both',
    );
  }
  if (list.length === 0 || list.some((a, i) => a.partition_id !== i))
    throw new KafkaError('INVALID_REPLICA_ASSIGNMENT', 'replicas_assignments must name partitions 0..n-1 once each');
  const rf = list[0]!.broker_ids.length;
  for (const a of list) {
    const expected = assignReplicas(a.partition_id, rf, storeCount);
    if (a.broker_ids.length !== rf || a.broker_ids.some((b, j) => b !== expected[j])) {
      throw new KafkaError(
        'INVALID_REPLICA_ASSIGNMENT',
        `Partition ${a.partition_id}: replicas are placed by store index, so its ${rf} replicas are [${expected.join(', ')}] (got [${a.broker_ids.join(', ')}])`,
      );
    }
  }
  return { partitionCount: list.length, replicationFactor: rf };
}

/** A partition's offsets: the query the route parses, as the OpenAPI document lists it. */
export const offsetQuerySchema = z.object({
  offset_type: z.enum(['earliest_and_latest', 'earliest', 'latest', 'timestamp']).default('earliest_and_latest'),
  timestamp: z
    .string()
    .meta({ description: 'RFC 3339 date-time or epoch milliseconds (offset_type=timestamp)' })
    .optional(),
  isolation_level: z
    .enum(ISOLATION_LEVELS)
    .default('read_uncommitted')
    .meta({ description: 'latest is the last stable offset with read_committed' }),
});

/** Topics, topic configs, partitions and offsets: Confluent v3 paths and shapes. */
export function topicRoutes(): Hono<AppEnv> {
  const app = new Hono<AppEnv>();

  app.get('/topics', async (c) => {
    const r = c.get('resources');
    // Kafka's Metadata: a topic the caller may not DESCRIBE is not there.
    const [topics, visible] = await Promise.all([
      c.get('services').topics.list(),
      allowedNames(c, 'DESCRIBE', 'TOPIC'),
    ]);
    return c.json(
      r.list(
        'KafkaTopicList',
        `${r.base}/topics`,
        topics.filter((t) => visible(t.name)).map((t) => r.topic(t)),
      ),
    );
  });

  app.post('/topics', async (c) => {
    const body = createTopicSchema.parse(await readJson(c));
    // Kafka's CreateTopics: CREATE on the cluster, or on the topic.
    if (!(await allowed(c, 'CREATE', 'CLUSTER'))) await authorize(c, 'CREATE', 'TOPIC', body.topic_name);
    const { topics, defaults } = c.get('services');
    const configs: Record<string, string> = {};
    for (const { name, value } of body.configs ?? []) if (value !== null) configs[name] = value;
    const assigned = body.replicas_assignments ? replicasAssignments(body, topics.replicaStores) : undefined;
    const topic = await topics.create({
      name: body.topic_name,
      partitionCount: assigned?.partitionCount ?? body.partitions_count ?? defaults.partitions,
      replicationFactor: assigned?.replicationFactor ?? body.replication_factor ?? defaults.replicationFactor,
      configs,
      validateOnly: body.validate_only,
    });
    // As Confluent: a validate_only request creates nothing, so it is 200, not 201.
    return c.json(c.get('resources').topic(topic), body.validate_only ? 200 : 201);
  });

  // Every topic's configs at once (Confluent's `topics/-/configs`); before `/topics/:topic/configs`.
  app.get('/topics/-/configs', async (c) => {
    const r = c.get('resources');
    const [all, visible] = await Promise.all([
      c.get('services').topics.list(),
      allowedNames(c, 'DESCRIBE_CONFIGS', 'TOPIC'),
    ]);
    const shown = all.filter((t) => visible(t.name));
    return c.json(
      r.list(
        'KafkaTopicConfigList',
        `${r.base}/topics/-/configs`,
        shown.flatMap((t) => describedTopicConfigNames(t.configs).map((n) => r.topicConfig(t, n))),
      ),
    );
  });

  app.get('/topics/:topic', async (c) => {
    await authorize(c, 'DESCRIBE', 'TOPIC', c.req.param('topic'));
    const topic = await c.get('services').topics.get(c.req.param('topic'));
    return c.json(c.get('resources').topic(topic));
  });

  app.patch('/topics/:topic', async (c) => {
    await authorize(c, 'ALTER', 'TOPIC', c.req.param('topic'));
    const body = patchTopicSchema.parse(await readJson(c));
    const topic = await c.get('services').topics.addPartitions(c.req.param('topic'), body.partitions_count);
    return c.json(c.get('resources').topic(topic));
  });

  app.delete('/topics/:topic', async (c) => {
    await authorize(c, 'DELETE', 'TOPIC', c.req.param('topic'));
    // The data goes in the scheduler's background work (src/maintenance/topic-purge.ts).
    await c.get('services').topics.delete(c.req.param('topic'));
    return c.body(null, 204);
  });

  app.get('/topics/:topic/configs', async (c) => {
    await authorize(c, 'DESCRIBE_CONFIGS', 'TOPIC', c.req.param('topic'));
    const r = c.get('resources');
    const topic = await c.get('services').topics.get(c.req.param('topic'));
    return c.json(
      r.list(
        'KafkaTopicConfigList',
        `${r.base}/topics/${topic.name}/configs`,
        describedTopicConfigNames(topic.configs).map((n) => r.topicConfig(topic, n)),
      ),
    );
  });

  app.get('/topics/:topic/configs/:name', async (c) => {
    await authorize(c, 'DESCRIBE_CONFIGS', 'TOPIC', c.req.param('topic'));
    const topic = await c.get('services').topics.get(c.req.param('topic'));
    return c.json(c.get('resources').topicConfig(topic, configName(c.req.param('name'))));
  });

  app.put('/topics/:topic/configs/:name', async (c) => {
    await authorize(c, 'ALTER_CONFIGS', 'TOPIC', c.req.param('topic'));
    const body = putConfigSchema.parse(await readJson(c));
    await c.get('services').topics.alterConfigs(c.req.param('topic'), { [c.req.param('name')]: body.value });
    return c.body(null, 204);
  });

  app.delete('/topics/:topic/configs/:name', async (c) => {
    await authorize(c, 'ALTER_CONFIGS', 'TOPIC', c.req.param('topic'));
    await c.get('services').topics.alterConfigs(c.req.param('topic'), { [configName(c.req.param('name'))]: null });
    return c.body(null, 204);
  });

  app.get('/topics/:topic/partitions', async (c) => {
    await authorize(c, 'DESCRIBE', 'TOPIC', c.req.param('topic'));
    const { topics, log } = c.get('services');
    const r = c.get('resources');
    const topic = await topics.get(c.req.param('topic'));
    const after = pageCursor(c);
    const { page, next } = partitionPage([topic], after ? { after } : {});
    const states = await mapBounded(page, ({ partition }) => log.state(topic, partition));
    return c.json(
      r.list(
        'KafkaPartitionList',
        `${r.base}/topics/${topic.name}/partitions`,
        page.map(({ partition }, i) => r.partition(topic, partition, states[i]!)),
        nextPageUrl(c, next),
      ),
    );
  });

  app.get('/topics/:topic/partitions/:partition', async (c) => {
    await authorize(c, 'DESCRIBE', 'TOPIC', c.req.param('topic'));
    const { topics, log } = c.get('services');
    const topic = await topics.get(c.req.param('topic'));
    const p = partitionParam(c.req.param('partition'));
    return c.json(c.get('resources').partition(topic, p, await log.state(topic, p)));
  });

  // Confluent's partition offsets (offset_type=earliest_and_latest, the default: the log start
  // offset and the high watermark); as an extension, Kafka's ListOffsets for earliest, latest, or a
  // timestamp (timestamp=RFC 3339 or epoch ms).
  app.get('/topics/:topic/partitions/:partition/offset', async (c) => {
    await authorize(c, 'DESCRIBE', 'TOPIC', c.req.param('topic')); // ListOffsets
    const { topics, log } = c.get('services');
    const r = c.get('resources');
    const topic = await topics.get(c.req.param('topic'));
    const p = partitionParam(c.req.param('partition'));
    // read_committed: latest is the last stable offset (Kafka's ListOffsets with isolation_level).
    const { offset_type: type, isolation_level: isolation, timestamp: raw } = parseQuery(c, offsetQuerySchema);
    if (type === 'earliest_and_latest') {
      const [earliest, latest] = await Promise.all([
        log.reader.listOffset(topic, p, 'earliest'),
        log.reader.listOffset(topic, p, 'latest', isolation),
      ]);
      const self = `${r.base}/topics/${topic.name}/partitions/${p}/offset`;
      return c.json({
        kind: 'KafkaPartitionWithOffsets',
        metadata: {
          self,
          resource_name: `crn:///kafka=${r.clusterId}/topic=${topic.name}/partition=${p}/offset_type=${type}`,
        },
        cluster_id: r.clusterId,
        topic_name: topic.name,
        partition_id: p,
        earliest_offset: earliest.offset,
        latest_offset: latest.offset,
      });
    }
    let spec: OffsetSpec;
    if (type === 'earliest' || type === 'latest') spec = type;
    else {
      if (raw === undefined) throw new KafkaError('BAD_REQUEST', 'offset_type=timestamp needs a timestamp parameter');
      spec = { timestamp: /^-?\d+$/.test(raw) ? Number(raw) : parseTimestamp(raw, 0) };
    }
    const { offset, timestamp } = await log.reader.listOffset(topic, p, spec, isolation);
    return c.json({
      kind: 'KafkaPartitionOffset',
      cluster_id: c.get('resources').clusterId,
      topic_name: topic.name,
      partition_id: p,
      offset_type: type,
      offset,
      timestamp: timestamp >= 0 ? new Date(timestamp).toISOString() : null,
    });
  });

  return app;
}
