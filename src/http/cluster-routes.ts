import { Hono, type Context } from 'hono';
import { KafkaError } from '../wire/errors.js';
import type { AppEnv } from './app-env.js';
import type { AppServices } from '../services.js';
import { requirePartition } from '../topics/topics.js';
import { mapBounded, partitionPage } from '../topics/partition-scan.js';
import { nextPageUrl, pageCursor } from './page-token.js';
import { partitionParam } from './request.js';
import { allowedNames, authorize } from './security.js';

/**
 * Confluent v3's read-only cluster resources: brokers (one per replica store), broker configs,
 * partition replicas and reassignments. Replicas are placed once, at partition creation, so no
 * reassignment is ever in progress.
 */
export function clusterRoutes(): Hono<AppEnv> {
  const app = new Hono<AppEnv>();

  const brokerIds = (services: AppServices) => Array.from({ length: services.topics.replicaStores }, (_, i) => i);
  const brokerParam = (services: AppServices, raw: string): number => {
    const id = partitionParam(raw);
    if (id >= services.topics.replicaStores)
      throw new KafkaError(
        'NOT_FOUND',
        `Broker ${id} not found; brokers are the replica stores 0..${services.topics.replicaStores - 1}`,
      );
    return id;
  };

  app.get('/brokers', (c) => {
    const r = c.get('resources');
    return c.json(
      r.list(
        'KafkaBrokerList',
        `${r.base}/brokers`,
        brokerIds(c.get('services')).map((id) => r.broker(id)),
      ),
    );
  });

  app.get('/brokers/:broker', (c) =>
    c.json(c.get('resources').broker(brokerParam(c.get('services'), c.req.param('broker')))),
  );

  // Kafka's DescribeConfigs of a broker: DESCRIBE_CONFIGS on the cluster.
  app.get('/brokers/:broker/configs', async (c) => {
    await authorize(c, 'DESCRIBE_CONFIGS', 'CLUSTER');
    const services = c.get('services');
    const r = c.get('resources');
    const id = brokerParam(services, c.req.param('broker'));
    return c.json(
      r.list(
        'KafkaBrokerConfigList',
        `${r.base}/brokers/${id}/configs`,
        services.brokerConfigs.map((b) => r.brokerConfig(id, b)),
      ),
    );
  });

  app.get('/brokers/:broker/configs/:name', async (c) => {
    await authorize(c, 'DESCRIBE_CONFIGS', 'CLUSTER');
    const services = c.get('services');
    const id = brokerParam(services, c.req.param('broker'));
    const config = services.brokerConfigs.find((b) => b.name === c.req.param('name'));
    if (!config) throw new KafkaError('NOT_FOUND', `Config ${c.req.param('name')} not found`);
    return c.json(c.get('resources').brokerConfig(id, config));
  });

  app.get('/broker-configs', async (c) => {
    await authorize(c, 'DESCRIBE_CONFIGS', 'CLUSTER');
    const services = c.get('services');
    const r = c.get('resources');
    const data = brokerIds(services).flatMap((id) => services.brokerConfigs.map((b) => r.brokerConfig(id, b)));
    return c.json(r.list('KafkaBrokerConfigList', `${r.base}/broker-configs`, data));
  });

  app.get('/brokers/:broker/partition-replicas', async (c) => {
    const { topics, log } = c.get('services');
    const r = c.get('resources');
    const id = brokerParam(c.get('services'), c.req.param('broker'));
    const visible = await allowedNames(c, 'DESCRIBE', 'TOPIC');
    const after = pageCursor(c);
    const { page, next } = partitionPage(
      (await topics.list()).filter((t) => visible(t.name)),
      after ? { after } : {},
    );
    const states = await mapBounded(page, ({ topic, partition }) => log.state(topic, partition));
    const data = page.flatMap(({ topic, partition }, i) =>
      states[i]!.replicas.includes(id) ? [r.replica(topic, partition, states[i]!, id)] : [],
    );
    return c.json(r.list('KafkaReplicaList', `${r.base}/brokers/${id}/partition-replicas`, data, nextPageUrl(c, next)));
  });

  app.get('/topics/:topic/partitions/:partition/replicas', async (c) => {
    await authorize(c, 'DESCRIBE', 'TOPIC', c.req.param('topic'));
    const { topics, log } = c.get('services');
    const r = c.get('resources');
    const topic = await topics.get(c.req.param('topic'));
    const p = partitionParam(c.req.param('partition'));
    const s = await log.state(topic, p);
    return c.json(
      r.list(
        'KafkaReplicaList',
        `${r.base}/topics/${topic.name}/partitions/${p}/replicas`,
        s.replicas.map((b) => r.replica(topic, p, s, b)),
      ),
    );
  });

  app.get('/topics/:topic/partitions/:partition/replicas/:broker', async (c) => {
    await authorize(c, 'DESCRIBE', 'TOPIC', c.req.param('topic'));
    const { topics, log } = c.get('services');
    const topic = await topics.get(c.req.param('topic'));
    const p = partitionParam(c.req.param('partition'));
    const b = partitionParam(c.req.param('broker'));
    const s = await log.state(topic, p);
    if (!s.replicas.includes(b))
      throw new KafkaError('NOT_FOUND', `Broker ${b} holds no replica of ${topic.name}-${p}`);
    return c.json(c.get('resources').replica(topic, p, s, b));
  });

  // Kafka's ListPartitionReassignments: DESCRIBE on the cluster.
  const noReassignments = (self: string) => async (c: Context<AppEnv>) => {
    await authorize(c, 'DESCRIBE', 'CLUSTER');
    const r = c.get('resources');
    return c.json(r.list('KafkaReassignmentList', `${r.base}${self}`, []));
  };
  app.get('/topics/-/partitions/-/reassignment', noReassignments('/topics/-/partitions/-/reassignment'));
  app.get('/topics/:topic/partitions/-/reassignment', async (c) => {
    const topic = await c.get('services').topics.get(c.req.param('topic'));
    return noReassignments(`/topics/${topic.name}/partitions/-/reassignment`)(c);
  });
  app.get('/topics/:topic/partitions/:partition/reassignment', async (c) => {
    await authorize(c, 'DESCRIBE', 'CLUSTER');
    const topic = await c.get('services').topics.get(c.req.param('topic'));
    const p = partitionParam(c.req.param('partition'));
    requirePartition(topic, p);
    return c.json(c.get('resources').reassignment(topic, p));
  });

  return app;
}
