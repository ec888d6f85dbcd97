/**
 * kafkajs's admin client on what tools and Terraform-style manifests set and read: every standard
 * Kafka topic config accepted and described with its source (over the listener and HTTP alike).
 */
import { Kafka, logLevel } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startKafkaServer, type TestKafkaServer } from './support/kafka-server.js';

let s: TestKafkaServer;
let kafka: Kafka;
beforeAll(async () => {
  s = await startKafkaServer();
  kafka = new Kafka({
    brokers: [s.broker],
    clientId: 'kafkajs-admin',
    logLevel: logLevel.NOTHING,
    retry: { retries: 2 },
  });
});
afterAll(async () => {
  await s?.close();
});

/** Kafka's DescribeConfigs config sources. */
const DYNAMIC_TOPIC_CONFIG = 1;
const DEFAULT_CONFIG = 5;

/** Configs Kafka accepts that have no effect here (docs/topic-configs.md), as manifests set them. */
const manifestConfigs = {
  'segment.jitter.ms': '60000',
  'flush.ms': '1000',
  'flush.messages': '10000',
  'index.interval.bytes': '8192',
  preallocate: 'true',
  'segment.index.bytes': '20971520',
  'leader.replication.throttled.replicas': '*',
  'follower.replication.throttled.replicas': '0:0,1:0',
  'local.retention.ms': '3600000',
  'local.retention.bytes': '-2',
  'remote.storage.enable': 'false',
  'compression.gzip.level': '6',
  'message.timestamp.difference.max.ms': '86400000',
};

async function withAdmin<T>(f: (admin: ReturnType<Kafka['admin']>) => Promise<T>): Promise<T> {
  const admin = kafka.admin();
  await admin.connect();
  try {
    return await f(admin);
  } finally {
    await admin.disconnect();
  }
}

describe('topic configs', () => {
  it('accepts every standard Kafka config a manifest sets, stores it and describes it with its source', async () => {
    await withAdmin(async (admin) => {
      expect(
        await admin.createTopics({
          topics: [
            {
              topic: 'manifest',
              numPartitions: 2,
              configEntries: Object.entries(manifestConfigs).map(([name, value]) => ({ name, value })),
            },
          ],
        }),
      ).toBe(true);
      expect((await s.services.topics.get('manifest')).configs).toEqual(manifestConfigs);
      const [described] = (
        await admin.describeConfigs({ resources: [{ type: 2, name: 'manifest' }], includeSynonyms: false })
      ).resources;
      const byName = new Map(described!.configEntries.map((e) => [e.configName, e]));
      for (const [name, value] of Object.entries(manifestConfigs))
        expect(byName.get(name), name).toMatchObject({
          configValue: value,
          isDefault: false,
          configSource: DYNAMIC_TOPIC_CONFIG,
        });
      expect(byName.get('remote.copy.lag.ms')).toMatchObject({
        configValue: '0',
        isDefault: true,
        configSource: DEFAULT_CONFIG,
      });
      expect(byName.get('retention.ms')).toMatchObject({ configValue: '604800000', configSource: DEFAULT_CONFIG });
      // A 3.x config Kafka 4.0 removed is described where set only.
      expect(byName.has('message.format.version')).toBe(false);

      // AlterConfigs (kafkajs has no incremental form) replaces the overrides.
      await admin.alterConfigs({
        validateOnly: false,
        resources: [{ type: 2, name: 'manifest', configEntries: [{ name: 'segment.jitter.ms', value: '5' }] }],
      });
      expect((await s.services.topics.get('manifest')).configs).toEqual({ 'segment.jitter.ms': '5' });
    });
    // The same configs over HTTP, with Confluent's source names.
    const res = await fetch(`${s.http}/topics/manifest/configs/segment.jitter.ms`);
    expect(await res.json()).toMatchObject({ value: '5', is_default: false, source: 'DYNAMIC_TOPIC_CONFIG' });
  });

  it('refuses a value out of Kafka range and an unknown name INVALID_CONFIG, creating nothing', async () => {
    await withAdmin(async (admin) => {
      for (const [name, value] of [
        ['segment.bytes', '1000'],
        ['compression.gzip.level', '0'],
        ['leader.replication.throttled.replicas', 'everything'],
        ['no.such.config', '1'],
      ] as const) {
        await expect(
          admin.createTopics({ topics: [{ topic: 'refused', numPartitions: 1, configEntries: [{ name, value }] }] }),
          `${name}=${value}`,
        ).rejects.toMatchObject({ errors: [expect.objectContaining({ type: 'INVALID_CONFIG' })] });
      }
      expect(await admin.listTopics()).not.toContain('refused');
    });
  });
});
