/**
 * kafkajs's admin client on what tools and Terraform-style manifests set and read: every standard
 * Kafka topic config accepted and described with its source (over the listener and HTTP alike),
 * the broker's configs as the server applies them, and ACLs over the store the HTTP API uses.
 */
import {
  AclOperationTypes,
  AclPermissionTypes,
  AclResourceTypes,
  ConfigResourceTypes,
  Kafka,
  logLevel,
  ResourcePatternTypes,
} from 'kafkajs';
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

describe('broker configs', () => {
  it('DescribeConfigs of the broker answers the values the server applies, with their sources', async () => {
    const [broker] = await withAdmin(
      async (admin) =>
        (
          await admin.describeConfigs({
            resources: [{ type: ConfigResourceTypes.BROKER, name: '0' }],
            includeSynonyms: false,
          })
        ).resources,
    );
    expect(broker!.errorCode).toBe(0);
    const byName = new Map(broker!.configEntries.map((e) => [e.configName, e]));
    expect(byName.get('log.retention.ms')).toMatchObject({ configValue: '604800000', readOnly: true, isDefault: true });
    expect(byName.get('message.max.bytes')).toMatchObject({ configValue: '1048588', configSource: DEFAULT_CONFIG });
    expect(byName.get('auto.create.topics.enable')).toMatchObject({ configValue: 'true', configSource: 4 });
    expect(byName.get('num.partitions')).toMatchObject({ configValue: '1', readOnly: true });
    expect(byName.get('group.initial.rebalance.delay.ms')).toMatchObject({ configValue: '0' }); // the test server's
    // Only the asked names; the same values over HTTP (Confluent's broker configs).
    const [some] = await withAdmin(
      async (admin) =>
        (
          await admin.describeConfigs({
            resources: [{ type: ConfigResourceTypes.BROKER, name: '0', configNames: ['message.max.bytes'] }],
            includeSynonyms: false,
          })
        ).resources,
    );
    expect(some!.configEntries.map((e) => e.configName)).toEqual(['message.max.bytes']);
    const http = (await (await fetch(`${s.http}/brokers/0/configs/log.retention.ms`)).json()) as any;
    expect(http).toMatchObject({ value: '604800000', source: 'DEFAULT_CONFIG', is_read_only: true });
  });
});

describe('ACLs', () => {
  it('createAcls, describeAcls and deleteAcls over the listener, on the ACL store the HTTP API uses', async () => {
    await withAdmin(async (admin) => {
      await admin.createAcls({
        acl: [
          {
            resourceType: AclResourceTypes.TOPIC,
            resourceName: 'orders',
            resourcePatternType: ResourcePatternTypes.LITERAL,
            principal: 'User:alice',
            host: '*',
            operation: AclOperationTypes.READ,
            permissionType: AclPermissionTypes.ALLOW,
          },
          {
            resourceType: AclResourceTypes.GROUP,
            resourceName: 'billing-',
            resourcePatternType: ResourcePatternTypes.PREFIXED,
            principal: 'User:alice',
            host: '*',
            operation: AclOperationTypes.READ,
            permissionType: AclPermissionTypes.ALLOW,
          },
        ],
      });
      // Over HTTP, as kafka-acls.sh users list them.
      const listed = (await (await fetch(`${s.http}/acls?principal=User:alice`)).json()) as any;
      expect(
        listed.data.map((a: any) => `${a.resource_type}:${a.pattern_type}:${a.resource_name}:${a.operation}`).sort(),
      ).toEqual(['GROUP:PREFIXED:billing-:READ', 'TOPIC:LITERAL:orders:READ']);
      // One created over HTTP is described over Kafka.
      const posted = await fetch(`${s.http}/acls`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          resource_type: 'TOPIC',
          resource_name: 'orders',
          principal: 'User:bob',
          operation: 'WRITE',
          permission: 'DENY',
        }),
      });
      expect(posted.status).toBe(201);
      const described = await admin.describeAcls({
        resourceType: AclResourceTypes.TOPIC,
        resourceName: 'orders',
        resourcePatternType: ResourcePatternTypes.LITERAL,
        operation: AclOperationTypes.ANY,
        permissionType: AclPermissionTypes.ANY,
      });
      expect(described.resources).toHaveLength(1);
      expect(described.resources[0]).toMatchObject({ resourceType: AclResourceTypes.TOPIC, resourceName: 'orders' });
      expect(described.resources[0]!.acls.map((a) => [a.principal, a.operation, a.permissionType]).sort()).toEqual([
        ['User:alice', AclOperationTypes.READ, AclPermissionTypes.ALLOW],
        ['User:bob', AclOperationTypes.WRITE, AclPermissionTypes.DENY],
      ]);
      // MATCH finds the prefixed pattern that applies to a group name.
      const matching = await admin.describeAcls({
        resourceType: AclResourceTypes.GROUP,
        resourceName: 'billing-eu',
        resourcePatternType: ResourcePatternTypes.MATCH,
        operation: AclOperationTypes.ANY,
        permissionType: AclPermissionTypes.ANY,
      });
      expect(matching.resources).toMatchObject([
        { resourceName: 'billing-', resourcePatternType: ResourcePatternTypes.PREFIXED },
      ]);

      const deleted = await admin.deleteAcls({
        filters: [
          {
            resourceType: AclResourceTypes.ANY,
            resourcePatternType: ResourcePatternTypes.ANY,
            principal: 'User:alice',
            operation: AclOperationTypes.ANY,
            permissionType: AclPermissionTypes.ANY,
          },
        ],
      });
      expect(deleted.filterResponses[0]!.errorCode).toBe(0);
      expect(deleted.filterResponses[0]!.matchingAcls).toHaveLength(2);
      expect((await s.services.security.acls.list()).map((a) => a.principal)).toEqual(['User:bob']);
    });
  });

  it('refuses an invalid ACL by itself, creating the valid ones of the request', async () => {
    await withAdmin(async (admin) => {
      await expect(
        admin.createAcls({
          acl: [
            {
              resourceType: AclResourceTypes.CLUSTER,
              resourceName: 'not-the-cluster',
              resourcePatternType: ResourcePatternTypes.LITERAL,
              principal: 'User:carol',
              host: '*',
              operation: AclOperationTypes.ALTER,
              permissionType: AclPermissionTypes.ALLOW,
            },
            {
              resourceType: AclResourceTypes.TRANSACTIONAL_ID,
              resourceName: 'tx-',
              resourcePatternType: ResourcePatternTypes.PREFIXED,
              principal: 'User:carol',
              host: '*',
              operation: AclOperationTypes.WRITE,
              permissionType: AclPermissionTypes.ALLOW,
            },
          ],
        }),
      ).rejects.toMatchObject({ type: 'INVALID_REQUEST' });
      expect(await s.services.security.acls.list({ principal: 'User:carol' })).toEqual([
        expect.objectContaining({ resourceType: 'TRANSACTIONAL_ID', resourceName: 'tx-', operation: 'WRITE' }),
      ]);
    });
  });
});
