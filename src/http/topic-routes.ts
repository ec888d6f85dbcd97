import { Hono } from 'hono';
import { z } from 'zod';
import { isTopicConfigName, TOPIC_CONFIG_DEFS, type TopicConfigName } from '../config/topic-configs.js';
import { KafkaError } from '../wire/errors.js';
import type { OffsetSpec } from '../log/partition-log.js';
import type { AppEnv } from './app-env.js';
import { parseTimestamp } from './record-encoding.js';
import { readJson, partitionParam } from './request.js';

const createTopicSchema = z.object({
  topic_name: z.string(),
  partitions_count: z.number().int().optional(),
  replication_factor: z.number().int().optional(),
  configs: z.array(z.object({ name: z.string(), value: z.string().nullable() })).optional(),
  validate_only: z.boolean().optional(),
});
const patchTopicSchema = z.object({ partitions_count: z.number().int() });
const alterConfigsSchema = z.object({
  data: z.array(z.object({ name: z.string(), value: z.string().nullable().optional(), operation: z.enum(['SET', 'DELETE']).optional() })),
  validate_only: z.boolean().optional(),
});
const putConfigSchema = z.object({ value: z.string() });

const configName = (name: string): TopicConfigName => {
  if (!isTopicConfigName(name)) throw new KafkaError('NOT_FOUND', `Config ${name} not found`);
  return name;
};

/** Topics, topic configs, partitions and offsets: Confluent v3 paths and shapes. */
export function topicRoutes(): Hono<AppEnv> {
  const app = new Hono<AppEnv>();

  app.get('/topics', async (c) => {
    const r = c.get('resources');
    const topics = await c.get('services').topics.list();
    return c.json(r.list('KafkaTopicList', `${r.base}/topics`, topics.map((t) => r.topic(t))));
  });

  app.post('/topics', async (c) => {
    const body = createTopicSchema.parse(await readJson(c));
    const { topics, defaults } = c.get('services');
    const configs: Record<string, string> = {};
    for (const { name, value } of body.configs ?? []) if (value !== null) configs[name] = value;
    const topic = await topics.create({
      name: body.topic_name,
      partitionCount: body.partitions_count ?? defaults.partitions,
      replicationFactor: body.replication_factor ?? defaults.replicationFactor,
      configs,
      validateOnly: body.validate_only,
    });
    return c.json(c.get('resources').topic(topic), 201);
  });

  app.get('/topics/:topic', async (c) => {
    const topic = await c.get('services').topics.get(c.req.param('topic'));
    return c.json(c.get('resources').topic(topic));
  });

  app.patch('/topics/:topic', async (c) => {
    const body = patchTopicSchema.parse(await readJson(c));
    const topic = await c.get('services').topics.addPartitions(c.req.param('topic'), body.partitions_count);
    return c.json(c.get('resources').topic(topic));
  });

  app.delete('/topics/:topic', async (c) => {
    const { topics, log } = c.get('services');
    const topic = await topics.delete(c.req.param('topic'));
    await log.purge(topic);
    return c.body(null, 204);
  });

  app.get('/topics/:topic/configs', async (c) => {
    const r = c.get('resources');
    const topic = await c.get('services').topics.get(c.req.param('topic'));
    const names = Object.keys(TOPIC_CONFIG_DEFS) as TopicConfigName[];
    return c.json(r.list('KafkaTopicConfigList', `${r.base}/topics/${topic.name}/configs`, names.map((n) => r.topicConfig(topic, n))));
  });

  // `configs:alter` is one path segment: Hono sees "configs:alter" as a literal.
  app.post('/topics/:topic/configs:alter', async (c) => {
    const body = alterConfigsSchema.parse(await readJson(c));
    const changes: Record<string, string | null> = {};
    for (const d of body.data) {
      if (d.operation === 'DELETE') changes[d.name] = null;
      else if (d.value === undefined || d.value === null) throw new KafkaError('INVALID_CONFIG', `A value is required to SET ${d.name}`);
      else changes[d.name] = d.value;
    }
    await c.get('services').topics.alterConfigs(c.req.param('topic'), changes, body.validate_only);
    return c.body(null, 204);
  });

  app.get('/topics/:topic/configs/:name', async (c) => {
    const topic = await c.get('services').topics.get(c.req.param('topic'));
    return c.json(c.get('resources').topicConfig(topic, configName(c.req.param('name'))));
  });

  app.put('/topics/:topic/configs/:name', async (c) => {
    const body = putConfigSchema.parse(await readJson(c));
    await c.get('services').topics.alterConfigs(c.req.param('topic'), { [c.req.param('name')]: body.value });
    return c.body(null, 204);
  });

  app.delete('/topics/:topic/configs/:name', async (c) => {
    await c.get('services').topics.alterConfigs(c.req.param('topic'), { [configName(c.req.param('name'))]: null });
    return c.body(null, 204);
  });

  app.get('/topics/:topic/partitions', async (c) => {
    const { topics, log } = c.get('services');
    const r = c.get('resources');
    const topic = await topics.get(c.req.param('topic'));
    const ids = Array.from({ length: topic.partitionCount }, (_, p) => p);
    const states = await Promise.all(ids.map((p) => log.state(topic, p)));
    return c.json(r.list('KafkaPartitionList', `${r.base}/topics/${topic.name}/partitions`, ids.map((p) => r.partition(topic, p, states[p]!))));
  });

  app.get('/topics/:topic/partitions/:partition', async (c) => {
    const { topics, log } = c.get('services');
    const topic = await topics.get(c.req.param('topic'));
    const p = partitionParam(c.req.param('partition'));
    return c.json(c.get('resources').partition(topic, p, await log.state(topic, p)));
  });

  // Extension: Kafka's ListOffsets. offset_type=earliest|latest|timestamp (with timestamp=RFC 3339 or epoch ms).
  app.get('/topics/:topic/partitions/:partition/offset', async (c) => {
    const { topics, log } = c.get('services');
    const topic = await topics.get(c.req.param('topic'));
    const p = partitionParam(c.req.param('partition'));
    const type = c.req.query('offset_type') ?? 'latest';
    let spec: OffsetSpec;
    if (type === 'earliest' || type === 'latest') spec = type;
    else if (type === 'timestamp') {
      const raw = c.req.query('timestamp');
      if (raw === undefined) throw new KafkaError('BAD_REQUEST', 'offset_type=timestamp needs a timestamp parameter');
      spec = { timestamp: /^-?\d+$/.test(raw) ? Number(raw) : parseTimestamp(raw, 0) };
    } else throw new KafkaError('BAD_REQUEST', 'offset_type must be earliest, latest or timestamp');
    const { offset, timestamp } = await log.listOffset(topic, p, spec);
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
