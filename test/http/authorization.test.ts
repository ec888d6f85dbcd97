/**
 * ACLs enforced over HTTP on the local mode: principals from bearer tokens in an auth config file,
 * every route checked for the operation Kafka checks for the same API, listings filtered, the ACL
 * admin on Confluent v3's paths, audit lines, and client quotas.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Hono } from 'hono';
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import type { Operation, ResourceType } from '../../src/authz/acl.js';
import { Kafka } from '../../src/client/index.js';
import type { Clock } from '../../src/clock.js';
import { createServices, createStorage, type Storage } from '../../src/compose.js';
import { serverConfigFromEnv } from '../../src/config/server-config.js';
import type { AppEnv } from '../../src/http/app-env.js';
import { createApp } from '../../src/http/app.js';
import { toErrorResponse } from '../../src/http/error-mapping.js';
import { RECORD_BATCH_MEDIA_TYPE } from '../../src/http/record-batch-body.js';
import { authorize, security } from '../../src/http/security.js';
import type { KafkaError } from '../../src/wire/errors.js';
import { encodeTopicData, PRODUCE_REQUEST_MEDIA_TYPE } from '../../src/wire/produce-request.js';
import { encodeRecordBatch } from '../../src/wire/record-batch.js';
import { FaultyMetadataStore } from '../support/fault-injection.js';

const BASE = '/v3/clusters/local';
const dir = mkdtempSync(join(tmpdir(), 'authz-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const AUTH_FILE = join(dir, 'auth.json');
writeFileSync(
  AUTH_FILE,
  JSON.stringify({
    authorization: true,
    'super.users': 'User:admin',
    tokens: { 'admin-token': 'User:admin', 'alice-token': 'User:alice', 'bob-token': 'User:bob' },
  }),
);

type Call = (
  method: string,
  path: string,
  body?: unknown,
  headers?: Record<string, string>,
) => Promise<{ status: number; body: any; headers: Headers }>;

function secureApp(options: { env?: Record<string, string>; clock?: Clock; storage?: Storage } = {}) {
  const config = serverConfigFromEnv({ STORAGE_BACKEND: 'memory', AUTH_CONFIG: AUTH_FILE, ...options.env });
  const storage = options.storage ?? createStorage(config.backend);
  const services = createServices(config, storage, options.clock);
  const audit: Record<string, unknown>[] = [];
  const app = createApp(services, { logError: () => {}, audit: (msg, fields) => audit.push({ msg, ...fields }) });
  const as =
    (token: string | undefined): Call =>
    async (method, path, body, headers = {}) => {
      const res = await app.request(path.startsWith('/') ? path : `${BASE}/${path}`, {
        method,
        headers: {
          'content-type': 'application/json',
          ...(token ? { authorization: `Bearer ${token}` } : {}),
          ...headers,
        },
        body: body === undefined ? undefined : body instanceof Uint8Array ? body : JSON.stringify(body),
      });
      const text = await res.text();
      let parsed: unknown = text;
      try {
        parsed = text ? JSON.parse(text) : undefined;
      } catch {}
      return { status: res.status, body: parsed, headers: res.headers };
    };
  return {
    app,
    storage,
    services,
    audit,
    admin: as('admin-token'),
    alice: as('alice-token'),
    bob: as('bob-token'),
    anonymous: as(undefined),
    as,
  };
}

const grant = (
  admin: Call,
  resource_type: ResourceType,
  resource_name: string,
  operation: Operation,
  extra: Record<string, string> = {},
) =>
  admin('POST', 'acls', {
    resource_type,
    resource_name,
    pattern_type: 'LITERAL',
    principal: 'User:alice',
    host: '*',
    operation,
    permission: 'ALLOW',
    ...extra,
  });

const b64 = (s: string) => Buffer.from(s).toString('base64');
const recordBatch = () =>
  encodeRecordBatch([{ key: null, value: Buffer.from('v'), headers: [], timestamp: Date.now() }], {
    partitionLeaderEpoch: -1,
  });

describe('principals', () => {
  it('a known bearer token names its principal; none is User:ANONYMOUS; an unknown one is 401', async () => {
    const t = secureApp();
    expect(await t.anonymous('GET', 'topics/t')).toMatchObject({
      status: 403,
      body: { error: 'TOPIC_AUTHORIZATION_FAILED', error_code: 40301 },
    });
    expect(t.audit.at(-1)).toMatchObject({
      msg: 'authorization denied',
      principal: 'User:ANONYMOUS',
      operation: 'DESCRIBE',
      resourceType: 'TOPIC',
      resourceName: 't',
    });
    expect(await t.as('nope')('GET', 'topics')).toMatchObject({
      status: 401,
      body: { error: 'SASL_AUTHENTICATION_FAILED', error_code: 40101 },
    });
    expect(t.audit.at(-1)).toMatchObject({
      msg: 'authentication failed',
      audit: 'denied',
      path: '/v3/clusters/local/topics',
    });
    expect(await t.alice('GET', 'topics/t')).toMatchObject({
      status: 403,
      body: { message: expect.stringContaining('User:alice') },
    });
  });

  it('without authorization configured, anonymous callers may do everything (the local default)', async () => {
    const config = serverConfigFromEnv({ STORAGE_BACKEND: 'memory' });
    expect(config.security).toMatchObject({ authorization: false, superUsers: [], tokens: {} });
    const app = createApp(createServices(config, createStorage(config.backend)), { logError: () => {} });
    const res = await app.request(`${BASE}/topics`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ topic_name: 'free' }),
    });
    expect(res.status).toBe(201);
  });

  it('a bad auth config fails at startup with its path and the field at fault', () => {
    const bad = join(dir, 'bad.json');
    writeFileSync(bad, JSON.stringify({ tokens: { t: 'alice' } }));
    expect(() => serverConfigFromEnv({ AUTH_CONFIG: bad })).toThrow(/bad\.json is invalid: tokens\.t/);
    expect(() => serverConfigFromEnv({ AUTH_CONFIG: join(dir, 'missing.json') })).toThrow(
      /Cannot read the auth config/,
    );
  });
});

/**
 * Each route with the ACL Kafka's authorizer requires for the same API: denied (with the
 * resource type's error) without it, allowed with it. `grants` are given to User:alice in order;
 * the request is denied until the last one is in place.
 */
interface Case {
  name: string;
  grants: [ResourceType, string, Operation][];
  request: (alice: Call) => ReturnType<Call>;
  denied: string;
  ok: number;
}

const TOPIC_CASES: Case[] = [
  {
    name: 'CreateTopics: CREATE on the topic',
    grants: [['TOPIC', 'fresh', 'CREATE']],
    request: (a) => a('POST', 'topics', { topic_name: 'fresh' }),
    denied: 'TOPIC_AUTHORIZATION_FAILED',
    ok: 201,
  },
  {
    name: 'CreateTopics: CREATE on the cluster',
    grants: [['CLUSTER', 'kafka-cluster', 'CREATE']],
    request: (a) => a('POST', 'topics', { topic_name: 'fresh' }),
    denied: 'TOPIC_AUTHORIZATION_FAILED',
    ok: 201,
  },
  {
    name: 'Metadata: DESCRIBE the topic',
    grants: [['TOPIC', 't', 'DESCRIBE']],
    request: (a) => a('GET', 'topics/t'),
    denied: 'TOPIC_AUTHORIZATION_FAILED',
    ok: 200,
  },
  {
    name: 'Metadata: partitions',
    grants: [['TOPIC', 't', 'DESCRIBE']],
    request: (a) => a('GET', 'topics/t/partitions'),
    denied: 'TOPIC_AUTHORIZATION_FAILED',
    ok: 200,
  },
  {
    name: 'Metadata: one partition',
    grants: [['TOPIC', 't', 'DESCRIBE']],
    request: (a) => a('GET', 'topics/t/partitions/0'),
    denied: 'TOPIC_AUTHORIZATION_FAILED',
    ok: 200,
  },
  {
    name: 'ListOffsets: DESCRIBE',
    grants: [['TOPIC', 't', 'DESCRIBE']],
    request: (a) => a('GET', 'topics/t/partitions/0/offset?offset_type=earliest'),
    denied: 'TOPIC_AUTHORIZATION_FAILED',
    ok: 200,
  },
  {
    name: 'CreatePartitions: ALTER',
    grants: [['TOPIC', 't', 'ALTER']],
    request: (a) => a('PATCH', 'topics/t', { partitions_count: 2 }),
    denied: 'TOPIC_AUTHORIZATION_FAILED',
    ok: 200,
  },
  {
    name: 'DescribeConfigs: DESCRIBE_CONFIGS',
    grants: [['TOPIC', 't', 'DESCRIBE_CONFIGS']],
    request: (a) => a('GET', 'topics/t/configs'),
    denied: 'TOPIC_AUTHORIZATION_FAILED',
    ok: 200,
  },
  {
    name: 'DescribeConfigs: one config',
    grants: [['TOPIC', 't', 'DESCRIBE_CONFIGS']],
    request: (a) => a('GET', 'topics/t/configs/retention.ms'),
    denied: 'TOPIC_AUTHORIZATION_FAILED',
    ok: 200,
  },
  {
    name: 'AlterConfigs: ALTER_CONFIGS (batch)',
    grants: [['TOPIC', 't', 'ALTER_CONFIGS']],
    request: (a) => a('POST', 'topics/t/configs:alter', { data: [{ name: 'retention.ms', value: '1000' }] }),
    denied: 'TOPIC_AUTHORIZATION_FAILED',
    ok: 204,
  },
  {
    name: 'AlterConfigs: PUT one',
    grants: [['TOPIC', 't', 'ALTER_CONFIGS']],
    request: (a) => a('PUT', 'topics/t/configs/retention.ms', { value: '1000' }),
    denied: 'TOPIC_AUTHORIZATION_FAILED',
    ok: 204,
  },
  {
    name: 'AlterConfigs: DELETE one',
    grants: [['TOPIC', 't', 'ALTER_CONFIGS']],
    request: (a) => a('DELETE', 'topics/t/configs/retention.ms'),
    denied: 'TOPIC_AUTHORIZATION_FAILED',
    ok: 204,
  },
  {
    name: 'DeleteTopics: DELETE',
    grants: [['TOPIC', 't', 'DELETE']],
    request: (a) => a('DELETE', 'topics/t'),
    denied: 'TOPIC_AUTHORIZATION_FAILED',
    ok: 204,
  },
  {
    name: 'DeleteRecords: DELETE',
    grants: [['TOPIC', 't', 'DELETE']],
    request: (a) => a('POST', 'topics/t/partitions/0/records:delete', { before_offset: 1 }),
    denied: 'TOPIC_AUTHORIZATION_FAILED',
    ok: 200,
  },
  {
    name: 'Produce (JSON): WRITE',
    grants: [['TOPIC', 't', 'WRITE']],
    request: (a) => a('POST', 'topics/t/records', { value: { type: 'BINARY', data: b64('x') } }),
    denied: 'TOPIC_AUTHORIZATION_FAILED',
    ok: 200,
  },
  {
    name: 'Produce (batch): WRITE',
    grants: [['TOPIC', 't', 'WRITE']],
    request: (a) =>
      a('POST', 'topics/t/records:batch', { entries: [{ id: 1, value: { type: 'BINARY', data: b64('x') } }] }),
    denied: 'TOPIC_AUTHORIZATION_FAILED',
    ok: 207,
  },
  {
    name: 'Produce (record batch): WRITE',
    grants: [['TOPIC', 't', 'WRITE']],
    request: (a) =>
      a('POST', 'topics/t/partitions/0/records', recordBatch(), { 'content-type': RECORD_BATCH_MEDIA_TYPE }),
    denied: 'TOPIC_AUTHORIZATION_FAILED',
    ok: 200,
  },
  {
    name: 'Fetch: READ',
    grants: [['TOPIC', 't', 'READ']],
    request: (a) => a('GET', 'topics/t/partitions/0/records?offset=0'),
    denied: 'TOPIC_AUTHORIZATION_FAILED',
    ok: 200,
  },
  {
    name: 'Replica sync: CLUSTER_ACTION',
    grants: [['CLUSTER', 'kafka-cluster', 'CLUSTER_ACTION']],
    request: (a) => a('POST', 'topics/t/replicas:sync'),
    denied: 'CLUSTER_AUTHORIZATION_FAILED',
    ok: 200,
  },
  {
    name: 'InitProducerId: IDEMPOTENT_WRITE on the cluster',
    grants: [['CLUSTER', 'kafka-cluster', 'IDEMPOTENT_WRITE']],
    request: (a) => a('POST', 'producers:init'),
    denied: 'CLUSTER_AUTHORIZATION_FAILED',
    ok: 200,
  },
  {
    name: 'InitProducerId: or WRITE on some topic',
    grants: [['TOPIC', 'any', 'WRITE']],
    request: (a) => a('POST', 'producers:init'),
    denied: 'CLUSTER_AUTHORIZATION_FAILED',
    ok: 200,
  },
  {
    name: 'Replicas: DESCRIBE the topic',
    grants: [['TOPIC', 't', 'DESCRIBE']],
    request: (a) => a('GET', 'topics/t/partitions/0/replicas'),
    denied: 'TOPIC_AUTHORIZATION_FAILED',
    ok: 200,
  },
  {
    name: 'DescribeConfigs of a broker: DESCRIBE_CONFIGS on the cluster',
    grants: [['CLUSTER', 'kafka-cluster', 'DESCRIBE_CONFIGS']],
    request: (a) => a('GET', 'brokers/0/configs'),
    denied: 'CLUSTER_AUTHORIZATION_FAILED',
    ok: 200,
  },
  {
    name: 'ListPartitionReassignments: DESCRIBE on the cluster',
    grants: [['CLUSTER', 'kafka-cluster', 'DESCRIBE']],
    request: (a) => a('GET', 'topics/-/partitions/-/reassignment'),
    denied: 'CLUSTER_AUTHORIZATION_FAILED',
    ok: 200,
  },
  {
    name: 'InitProducerId (transactional): WRITE on the id',
    grants: [['TRANSACTIONAL_ID', 'tx', 'WRITE']],
    request: (a) => a('POST', 'transactions/tx/init'),
    denied: 'TRANSACTIONAL_ID_AUTHORIZATION_FAILED',
    ok: 200,
  },
  {
    name: 'Transaction abort marker: CLUSTER_ACTION',
    grants: [['CLUSTER', 'kafka-cluster', 'CLUSTER_ACTION']],
    request: (a) => a('POST', 'topics/t/partitions/0/transactions:abort', { producer_id: 1, producer_epoch: 0 }),
    denied: 'CLUSTER_AUTHORIZATION_FAILED',
    ok: 200,
  },
  {
    name: 'DescribeAcls: DESCRIBE on the cluster',
    grants: [['CLUSTER', 'kafka-cluster', 'DESCRIBE']],
    request: (a) => a('GET', 'acls'),
    denied: 'CLUSTER_AUTHORIZATION_FAILED',
    ok: 200,
  },
  {
    name: 'CreateAcls: ALTER on the cluster',
    grants: [['CLUSTER', 'kafka-cluster', 'ALTER']],
    request: (a) =>
      a('POST', 'acls', {
        resource_type: 'TOPIC',
        resource_name: 'x',
        pattern_type: 'LITERAL',
        principal: 'User:bob',
        host: '*',
        operation: 'READ',
        permission: 'ALLOW',
      }),
    denied: 'CLUSTER_AUTHORIZATION_FAILED',
    ok: 201,
  },
  {
    name: 'DescribeClientQuotas: DESCRIBE_CONFIGS on the cluster',
    grants: [['CLUSTER', 'kafka-cluster', 'DESCRIBE_CONFIGS']],
    request: (a) => a('GET', 'client-quotas'),
    denied: 'CLUSTER_AUTHORIZATION_FAILED',
    ok: 200,
  },
  {
    name: 'AlterClientQuotas: ALTER_CONFIGS on the cluster',
    grants: [['CLUSTER', 'kafka-cluster', 'ALTER_CONFIGS']],
    request: (a) =>
      a('POST', 'client-quotas:alter', {
        data: [
          { entity: [{ entity_type: 'user', entity_name: 'bob' }], ops: [{ key: 'producer_byte_rate', value: 1e6 }] },
        ],
      }),
    denied: 'CLUSTER_AUTHORIZATION_FAILED',
    ok: 204,
  },
  {
    name: 'DescribeUserScramCredentials: DESCRIBE on the cluster',
    grants: [['CLUSTER', 'kafka-cluster', 'DESCRIBE']],
    request: (a) => a('GET', 'user-scram-credentials'),
    denied: 'CLUSTER_AUTHORIZATION_FAILED',
    ok: 200,
  },
  {
    name: 'AlterUserScramCredentials: ALTER on the cluster',
    grants: [['CLUSTER', 'kafka-cluster', 'ALTER']],
    request: (a) => a('POST', 'user-scram-credentials:alter', { deletions: [], upsertions: [] }),
    denied: 'CLUSTER_AUTHORIZATION_FAILED',
    ok: 200,
  },
];

const GROUP_CASES: Case[] = [
  {
    name: 'DescribeGroups: DESCRIBE',
    grants: [['GROUP', 'g', 'DESCRIBE']],
    request: (a) => a('GET', 'consumer-groups/g'),
    denied: 'GROUP_AUTHORIZATION_FAILED',
    ok: 200,
  },
  {
    name: 'DescribeGroups: consumers',
    grants: [['GROUP', 'g', 'DESCRIBE']],
    request: (a) => a('GET', 'consumer-groups/g/consumers'),
    denied: 'GROUP_AUTHORIZATION_FAILED',
    ok: 200,
  },
  {
    name: 'Group lags: DESCRIBE',
    grants: [['GROUP', 'g', 'DESCRIBE']],
    request: (a) => a('GET', 'consumer-groups/g/lags'),
    denied: 'GROUP_AUTHORIZATION_FAILED',
    ok: 200,
  },
  {
    name: 'Group lag summary: DESCRIBE',
    grants: [['GROUP', 'g', 'DESCRIBE']],
    request: (a) => a('GET', 'consumer-groups/g/lag-summary'),
    denied: 'GROUP_AUTHORIZATION_FAILED',
    ok: 200,
  },
  {
    name: 'OffsetFetch of one partition: DESCRIBE on the group and the topic',
    grants: [
      ['GROUP', 'g', 'DESCRIBE'],
      ['TOPIC', 't', 'DESCRIBE'],
    ],
    request: (a) => a('GET', 'consumer-groups/g/offsets/t/partitions/0'),
    denied: 'GROUP_AUTHORIZATION_FAILED',
    ok: 200,
  },
  {
    name: 'OffsetFetch: DESCRIBE on the group',
    grants: [['GROUP', 'g', 'DESCRIBE']],
    request: (a) => a('GET', 'consumer-groups/g/offsets'),
    denied: 'GROUP_AUTHORIZATION_FAILED',
    ok: 200,
  },
  {
    name: 'ConsumerGroupHeartbeat: READ on the group, DESCRIBE on the topics',
    grants: [
      ['GROUP', 'g2', 'READ'],
      ['TOPIC', 't', 'DESCRIBE'],
    ],
    request: (a) =>
      a('POST', 'consumer-groups/g2/consumers:heartbeat', { member_epoch: 0, subscribed_topic_names: ['t'] }),
    denied: 'GROUP_AUTHORIZATION_FAILED',
    ok: 200,
  },
  {
    name: 'OffsetCommit: READ on the group and the topic',
    grants: [
      ['GROUP', 'g', 'READ'],
      ['TOPIC', 't', 'READ'],
    ],
    request: (a) =>
      a('POST', 'consumer-groups/g/offsets:commit', { offsets: [{ topic_name: 't', partition_id: 0, offset: 1 }] }),
    denied: 'GROUP_AUTHORIZATION_FAILED',
    ok: 200,
  },
  {
    name: 'Offset reset: READ on the group and the topic',
    grants: [
      ['GROUP', 'g', 'READ'],
      ['TOPIC', 't', 'READ'],
    ],
    request: (a) => a('POST', 'consumer-groups/g/offsets:reset', { strategy: 'to-earliest', all_topics: true }),
    denied: 'GROUP_AUTHORIZATION_FAILED',
    ok: 200,
  },
  {
    name: 'DeleteGroups: DELETE',
    grants: [['GROUP', 'g', 'DELETE']],
    request: (a) => a('DELETE', 'consumer-groups/g'),
    denied: 'GROUP_AUTHORIZATION_FAILED',
    ok: 204,
  },
];

/** The topic `t` with one record, and the group `g` with a committed offset on it (by the super user). */
async function seed(admin: Call) {
  expect((await admin('POST', 'topics', { topic_name: 't' })).status).toBe(201);
  expect((await admin('POST', 'topics/t/records', { value: { type: 'BINARY', data: b64('x') } })).status).toBe(200);
  expect(
    (
      await admin('POST', 'consumer-groups/g/offsets:commit', {
        offsets: [{ topic_name: 't', partition_id: 0, offset: 0 }],
      })
    ).status,
  ).toBe(200);
}

describe('each route asks for the operation Kafka asks for', () => {
  for (const c of [...TOPIC_CASES, ...GROUP_CASES]) {
    it(c.name, async () => {
      const t = secureApp();
      await seed(t.admin);
      for (const [i, [type, name, op]] of c.grants.entries()) {
        const denied = await c.request(t.alice);
        expect(denied.status).toBe(403);
        if (i === 0) expect(denied.body.error).toBe(c.denied);
        expect((await grant(t.admin, type, name, op)).status).toBe(201);
      }
      const allowed = await c.request(t.alice);
      expect(allowed.status, JSON.stringify(allowed.body)).toBe(c.ok);
      // Bob holds no ACL: still denied.
      expect((await c.request(t.bob)).status).toBe(403);
    });
  }

  it('TRANSACTIONAL_ID: the check the transaction routes call maps to TRANSACTIONAL_ID_AUTHORIZATION_FAILED (53)', async () => {
    const t = secureApp();
    const app = new Hono<AppEnv>();
    app.onError((e, c) =>
      c.json({ error: toErrorResponse(e).body.error, code: (e as KafkaError).code }, toErrorResponse(e).status as 403),
    );
    app.use('*', security(t.services, { audit: () => {} }));
    app.post('/txn/:id', async (c) => {
      await authorize(c, 'WRITE', 'TRANSACTIONAL_ID', c.req.param('id'));
      return c.json({ ok: true });
    });
    const call = (id: string) =>
      app.request(`/txn/${id}`, { method: 'POST', headers: { authorization: 'Bearer alice-token' } });
    const denied = await call('tx-1');
    expect(denied.status).toBe(403);
    expect(await denied.json()).toEqual({ error: 'TRANSACTIONAL_ID_AUTHORIZATION_FAILED', code: 53 });
    await grant(t.admin, 'TRANSACTIONAL_ID', 'tx-', 'WRITE', { pattern_type: 'PREFIXED' });
    expect((await call('tx-1')).status).toBe(200);
    expect((await call('other')).status).toBe(403);
  });

  it('REST v2 consumer instances: READ on the group; DESCRIBE to subscribe; READ on the topics to poll and commit', async () => {
    const t = secureApp();
    await seed(t.admin);
    const v2 = { 'content-type': 'application/vnd.kafka.v2+json' };
    expect(await t.alice('POST', '/consumers/g', { name: 'c1', 'auto.offset.reset': 'earliest' }, v2)).toMatchObject({
      status: 403,
      body: { error: 'GROUP_AUTHORIZATION_FAILED' },
    });
    await grant(t.admin, 'GROUP', 'g', 'READ');
    expect((await t.alice('POST', '/consumers/g', { name: 'c1', 'auto.offset.reset': 'earliest' }, v2)).status).toBe(
      200,
    );
    const sub = '/consumers/g/instances/c1/subscription';
    expect(await t.alice('POST', sub, { topics: ['t'] }, v2)).toMatchObject({
      status: 403,
      body: { error: 'TOPIC_AUTHORIZATION_FAILED' },
    });
    await grant(t.admin, 'TOPIC', 't', 'DESCRIBE');
    expect((await t.alice('POST', sub, { topics: ['t'] }, v2)).status).toBe(204);
    expect(await t.alice('GET', '/consumers/g/instances/c1/records?timeout=0')).toMatchObject({
      status: 403,
      body: { error: 'TOPIC_AUTHORIZATION_FAILED' },
    });
    await grant(t.admin, 'TOPIC', 't', 'READ');
    const polled = await t.alice('GET', '/consumers/g/instances/c1/records?timeout=0');
    expect(polled.status).toBe(200);
    expect(polled.body).toHaveLength(1);
    expect((await t.alice('POST', '/consumers/g/instances/c1/offsets', undefined, v2)).status).toBe(200);
    expect((await t.bob('GET', '/consumers/g/instances/c1/assignments')).status).toBe(403);
    expect((await t.alice('DELETE', '/consumers/g/instances/c1')).status).toBe(204);
  });
});

describe('ACL semantics over HTTP', () => {
  let t: ReturnType<typeof secureApp>;
  beforeEach(async () => {
    t = secureApp();
    for (const name of ['pay.in', 'pay.out', 'hr.salaries'])
      expect((await t.admin('POST', 'topics', { topic_name: name })).status).toBe(201);
  });

  it('DENY over ALLOW, PREFIXED patterns, User:* for everyone', async () => {
    await t.admin('POST', 'acls', {
      resource_type: 'TOPIC',
      resource_name: 'pay.',
      pattern_type: 'PREFIXED',
      principal: 'User:*',
      host: '*',
      operation: 'WRITE',
      permission: 'ALLOW',
    });
    await t.admin('POST', 'acls', {
      resource_type: 'TOPIC',
      resource_name: 'pay.out',
      pattern_type: 'LITERAL',
      principal: 'User:alice',
      host: '*',
      operation: 'WRITE',
      permission: 'DENY',
    });
    const produce = (who: Call, topic: string) =>
      who('POST', `topics/${topic}/records`, { value: { type: 'BINARY', data: b64('x') } });
    expect((await produce(t.alice, 'pay.in')).status).toBe(200);
    expect(await produce(t.alice, 'pay.out')).toMatchObject({
      status: 403,
      body: { error: 'TOPIC_AUTHORIZATION_FAILED' },
    });
    expect((await produce(t.bob, 'pay.out')).status).toBe(200);
    expect((await produce(t.bob, 'hr.salaries')).status).toBe(403);
    // WRITE implies DESCRIBE: bob sees the topics he may write to.
    expect((await t.bob('GET', 'topics/pay.in')).status).toBe(200);
  });

  it('super users need no ACL; a listing never shows a topic the caller may not DESCRIBE', async () => {
    const names = (r: { body: { data: { topic_name: string }[] } }) => r.body.data.map((d) => d.topic_name).sort();
    expect(names(await t.admin('GET', 'topics'))).toEqual(['hr.salaries', 'pay.in', 'pay.out']);
    expect(names(await t.alice('GET', 'topics'))).toEqual([]);
    await grant(t.admin, 'TOPIC', 'pay.', 'READ', { pattern_type: 'PREFIXED' });
    expect(names(await t.alice('GET', 'topics'))).toEqual(['pay.in', 'pay.out']);
    const configTopics = (await t.alice('GET', 'topics/-/configs')).body.data.map(
      (c: { topic_name: string }) => c.topic_name,
    );
    expect([...new Set(configTopics)]).toEqual([]); // READ does not imply DESCRIBE_CONFIGS
    expect(
      (await t.alice('GET', 'brokers/0/partition-replicas')).body.data
        .map((r: { topic_name: string }) => r.topic_name)
        .sort(),
    ).toEqual(['pay.in', 'pay.out']);
    // An unknown topic and a hidden one answer alike: the caller learns nothing of either.
    expect((await t.alice('GET', 'topics/hr.salaries')).body.error).toBe('TOPIC_AUTHORIZATION_FAILED');
    expect((await t.alice('GET', 'topics/no-such')).body.error).toBe('TOPIC_AUTHORIZATION_FAILED');
  });

  it('group listings, offsets and lags show only what the caller may DESCRIBE', async () => {
    for (const g of ['app-1', 'other']) {
      await t.admin('POST', `consumer-groups/${g}/offsets:commit`, {
        offsets: [
          { topic_name: 'pay.in', partition_id: 0, offset: 0 },
          { topic_name: 'hr.salaries', partition_id: 0, offset: 0 },
        ],
      });
    }
    await grant(t.admin, 'GROUP', 'app-', 'DESCRIBE', { pattern_type: 'PREFIXED' });
    await grant(t.admin, 'TOPIC', 'pay.in', 'DESCRIBE');
    expect(
      (await t.alice('GET', 'consumer-groups')).body.data.map(
        (g: { consumer_group_id: string }) => g.consumer_group_id,
      ),
    ).toEqual(['app-1']);
    expect((await t.admin('GET', 'consumer-groups')).body.data).toHaveLength(2);
    expect(
      (await t.alice('GET', 'consumer-groups/app-1/offsets')).body.data.map(
        (o: { topic_name: string }) => o.topic_name,
      ),
    ).toEqual(['pay.in']);
    expect(
      (await t.alice('GET', 'consumer-groups/app-1/lags')).body.data.map((o: { topic_name: string }) => o.topic_name),
    ).toEqual(['pay.in']);
    expect((await t.alice('GET', 'consumer-groups/app-1/offsets?topic_name=hr.salaries')).body.error).toBe(
      'TOPIC_AUTHORIZATION_FAILED',
    );
    expect((await t.alice('GET', 'consumer-groups/other')).status).toBe(403);
  });
});

describe("ACL admin on Confluent v3's paths", () => {
  it('creates (201), lists with filters, batch-creates and deletes by filter, auditing each change', async () => {
    const t = secureApp();
    const acl = {
      resource_type: 'TOPIC',
      resource_name: 'orders',
      pattern_type: 'LITERAL',
      principal: 'User:alice',
      host: '*',
      operation: 'READ',
      permission: 'ALLOW',
    };
    expect(await t.admin('POST', 'acls', acl)).toMatchObject({ status: 201 });
    expect((await t.admin('POST', 'acls', acl)).status).toBe(201); // the same ACL again: still one
    const batch = await t.admin('POST', 'acls:batch', {
      data: [
        { ...acl, principal: 'User:bob', operation: 'WRITE' },
        { ...acl, resource_type: 'GROUP', resource_name: 'billing', pattern_type: 'PREFIXED' },
      ],
    });
    expect(batch.status).toBe(201);
    const all = await t.admin('GET', 'acls');
    expect(all.body).toMatchObject({
      kind: 'KafkaAclList',
      metadata: { self: expect.stringMatching(/\/v3\/clusters\/local\/acls$/) },
    });
    expect(all.body.data).toHaveLength(3);
    expect(all.body.data).toContainEqual({
      kind: 'KafkaAcl',
      metadata: {
        self: expect.stringContaining(
          '/acls?resource_type=TOPIC&resource_name=orders&pattern_type=LITERAL&principal=User%3Aalice',
        ),
      },
      cluster_id: 'local',
      ...acl,
    });
    expect((await t.admin('GET', 'acls?principal=User:alice')).body.data).toHaveLength(2);
    expect(
      (await t.admin('GET', 'acls?resource_type=GROUP&resource_name=billing-x&pattern_type=MATCH')).body.data,
    ).toHaveLength(1);
    expect(await t.admin('GET', 'acls?operation=NOPE')).toMatchObject({
      status: 400,
      body: { error: 'INVALID_REQUEST' },
    });
    expect(await t.admin('POST', 'acls', { ...acl, permission: 'MAYBE' })).toMatchObject({
      status: 400,
      body: { error: 'INVALID_REQUEST' },
    });
    // A bad entry fails the whole batch: nothing of it is written.
    expect(
      (
        await t.admin('POST', 'acls:batch', {
          data: [
            { ...acl, principal: 'User:carol' },
            { ...acl, operation: 'FLY' },
          ],
        })
      ).status,
    ).toBe(400);
    expect((await t.admin('GET', 'acls?principal=User:carol')).body.data).toEqual([]);

    expect(await t.admin('DELETE', 'acls')).toMatchObject({ status: 400 });
    const deleted = await t.admin('DELETE', 'acls?resource_type=TOPIC&principal=User:bob');
    expect(deleted).toMatchObject({
      status: 200,
      body: { data: [{ kind: 'KafkaAcl', principal: 'User:bob', operation: 'WRITE' }] },
    });
    expect((await t.admin('GET', 'acls')).body.data).toHaveLength(2);

    const changes = t.audit.filter((a) => a.audit === 'acl-created' || a.audit === 'acl-deleted');
    expect(changes.map((a) => a.audit)).toEqual([
      'acl-created',
      'acl-created',
      'acl-created',
      'acl-created',
      'acl-deleted',
    ]);
    expect(changes.at(-1)).toMatchObject({
      msg: 'acl deleted',
      principal: 'User:admin',
      acl: { principal: 'User:bob', resourceName: 'orders' },
    });
  });

  it('another process (a second Lambda instance) sees a change within the cache bound, 5 s', async () => {
    let now = 1_000_000;
    const clock = { now: () => now };
    const a = secureApp({ clock });
    const b = secureApp({ clock, storage: a.storage });
    await a.admin('POST', 'topics', { topic_name: 'orders' });
    expect((await b.alice('GET', 'topics/orders')).status).toBe(403); // b has read the (empty) ACL set
    await grant(a.admin, 'TOPIC', 'orders', 'DESCRIBE');
    expect((await a.alice('GET', 'topics/orders')).status).toBe(200);
    now += 4999;
    expect((await b.alice('GET', 'topics/orders')).status).toBe(403);
    now += 1;
    expect((await b.alice('GET', 'topics/orders')).status).toBe(200);
  });

  it('a revoked ACL applies at once on the process that changed it', async () => {
    const t = secureApp();
    await t.admin('POST', 'topics', { topic_name: 'orders' });
    await grant(t.admin, 'TOPIC', 'orders', 'DESCRIBE');
    expect((await t.alice('GET', 'topics/orders')).status).toBe(200);
    await t.admin('DELETE', 'acls?resource_type=TOPIC&resource_name=orders');
    expect((await t.alice('GET', 'topics/orders')).status).toBe(403);
  });
});

describe('storage faults', () => {
  it('an ACL write whose answer was lost, or a batch cut short, lands every ACL exactly once on retry', async () => {
    const base = createStorage({ kind: 'memory', replicaStores: 1 });
    const faulty = new FaultyMetadataStore(base.metadata);
    const t = secureApp({ storage: { ...base, metadata: faulty } });
    const acl = (principal: string) => ({
      resource_type: 'TOPIC',
      resource_name: 'orders',
      pattern_type: 'LITERAL',
      principal,
      host: '*',
      operation: 'READ',
      permission: 'ALLOW',
    });
    faulty.faults.fail('put', { when: 'after', match: (k) => k.startsWith('acl|') });
    expect((await t.admin('POST', 'acls', acl('User:a'))).status).toBe(500);
    expect((await t.admin('POST', 'acls', acl('User:a'))).status).toBe(201);
    faulty.faults.fail('put', { when: 'before', match: (k) => k.startsWith('acl|') && k.includes('User%3Ac') });
    const batch = { data: [acl('User:b'), acl('User:c'), acl('User:d')] };
    expect((await t.admin('POST', 'acls:batch', batch)).status).toBe(500);
    expect((await t.admin('POST', 'acls:batch', batch)).status).toBe(201);
    expect((await t.admin('GET', 'acls')).body.data.map((a: { principal: string }) => a.principal).sort()).toEqual([
      'User:a',
      'User:b',
      'User:c',
      'User:d',
    ]);
  });

  it('a quota change whose answer was lost applies once on retry; a concurrent change to another key is kept', async () => {
    const base = createStorage({ kind: 'memory', replicaStores: 1 });
    const faulty = new FaultyMetadataStore(base.metadata);
    const t = secureApp({ storage: { ...base, metadata: faulty } });
    const alter = (ops: unknown[]) =>
      t.admin('POST', 'client-quotas:alter', {
        data: [{ entity: [{ entity_type: 'user', entity_name: 'alice' }], ops }],
      });
    faulty.faults.fail('put', { when: 'after', match: (k) => k.startsWith('quota|') });
    expect((await alter([{ key: 'producer_byte_rate', value: 100 }])).status).toBe(500);
    expect((await alter([{ key: 'producer_byte_rate', value: 100 }])).status).toBe(204);
    await Promise.all([
      alter([{ key: 'consumer_byte_rate', value: 200 }]),
      alter([{ key: 'request_percentage', value: 50 }]),
    ]);
    expect((await t.admin('GET', 'client-quotas')).body.data).toEqual([
      {
        kind: 'KafkaClientQuota',
        entity: [{ entity_type: 'user', entity_name: 'alice' }],
        values: { producer_byte_rate: 100, consumer_byte_rate: 200, request_percentage: 50 },
      },
    ]);
  });
});

describe('client quotas', () => {
  it('a producer over its producer_byte_rate is throttled (429, Retry-After) while another principal is not', async () => {
    let now = 1_000_000;
    const t = secureApp({ clock: { now: () => now } });
    await t.admin('POST', 'topics', { topic_name: 't' });
    await t.admin('POST', 'acls', {
      resource_type: 'TOPIC',
      resource_name: 't',
      pattern_type: 'LITERAL',
      principal: 'User:*',
      host: '*',
      operation: 'WRITE',
      permission: 'ALLOW',
    });
    const alter = await t.admin('POST', 'client-quotas:alter', {
      data: [
        { entity: [{ entity_type: 'user', entity_name: 'alice' }], ops: [{ key: 'producer_byte_rate', value: 1000 }] },
      ],
    });
    expect(alter.status).toBe(204);
    expect((await t.admin('GET', 'client-quotas?user=alice')).body.data).toEqual([
      {
        kind: 'KafkaClientQuota',
        entity: [{ entity_type: 'user', entity_name: 'alice' }],
        values: { producer_byte_rate: 1000 },
      },
    ]);
    const record = { value: { type: 'BINARY', data: b64('x'.repeat(1500)) } };
    expect((await t.alice('POST', 'topics/t/records', record)).status).toBe(200); // into debt
    const throttled = await t.alice('POST', 'topics/t/records', record);
    expect(throttled).toMatchObject({ status: 429, body: { error: 'THROTTLING_QUOTA_EXCEEDED', error_code: 42901 } });
    const ms = Number(throttled.headers.get('x-throttle-time-ms'));
    expect(ms).toBeGreaterThan(0);
    expect(throttled.body.throttle_time_ms).toBe(ms);
    expect(Number(throttled.headers.get('retry-after'))).toBe(Math.ceil(ms / 1000));
    for (let i = 0; i < 3; i++) expect((await t.bob('POST', 'topics/t/records', record)).status).toBe(200);
    now += ms;
    expect((await t.alice('POST', 'topics/t/records', record)).status).toBe(200);
  });

  it('the multi-partition produce and fetch need WRITE and READ on every topic they name', async () => {
    const t = secureApp();
    await t.admin('POST', 'topics', { topic_name: 'm1' });
    await t.admin('POST', 'topics', { topic_name: 'm2' });
    const body = encodeTopicData(
      ['m1', 'm2'].map((name) => ({ name, partitions: [{ index: 0, records: recordBatch() }] })),
    );
    const produce = () =>
      t.alice('POST', '/v3/clusters/local/records', body, { 'content-type': PRODUCE_REQUEST_MEDIA_TYPE });
    const fetch = () =>
      t.alice('POST', '/v3/clusters/local/records:fetch', {
        topics: [
          { topic: 'm1', partitions: [{ partition: 0, fetch_offset: 0 }] },
          { topic: 'm2', partitions: [{ partition: 0, fetch_offset: 0 }] },
        ],
      });
    await grant(t.admin, 'TOPIC', 'm1', 'WRITE');
    expect(await produce()).toMatchObject({ status: 403, body: { error: 'TOPIC_AUTHORIZATION_FAILED' } });
    expect((await t.admin('GET', 'topics/m1/partitions/0')).body.high_watermark).toBe(0);
    await grant(t.admin, 'TOPIC', 'm2', 'WRITE');
    expect((await produce()).status).toBe(200);
    await grant(t.admin, 'TOPIC', 'm1', 'READ');
    expect(await fetch()).toMatchObject({ status: 403, body: { error: 'TOPIC_AUTHORIZATION_FAILED' } });
    await grant(t.admin, 'TOPIC', 'm2', 'READ');
    expect((await fetch()).status).toBe(200);
  });

  it("the client waits out a quota's throttle time and then delivers, as Kafka clients do", async () => {
    const t = secureApp();
    await t.admin('POST', 'topics', { topic_name: 't' });
    await t.admin('POST', 'acls', {
      resource_type: 'TOPIC',
      resource_name: 't',
      pattern_type: 'LITERAL',
      principal: 'User:alice',
      host: '*',
      operation: 'WRITE',
      permission: 'ALLOW',
    });
    await t.admin('POST', 'client-quotas:alter', {
      data: [
        {
          entity: [{ entity_type: 'user', entity_name: 'alice' }],
          ops: [{ key: 'producer_byte_rate', value: 20_000 }],
        },
      ],
    });
    const statuses: number[] = [];
    const fetch = async (url: string | URL | Request, init?: RequestInit) => {
      const res = await t.app.request(String(url), init);
      statuses.push(res.status);
      return res;
    };
    const kafka = new Kafka({
      url: 'http://local.test',
      clusterId: 'local',
      auth: { type: 'bearer', token: 'alice-token' },
      fetch: fetch as typeof globalThis.fetch,
    });
    const producer = kafka.producer({ lingerMs: 0, retryBackoffMs: 1, retryBackoffMaxMs: 2 });
    const started = Date.now();
    await producer.send({ topic: 't', messages: [{ value: 'x'.repeat(30_000) }] }); // 10 kB into debt: 500 ms
    await producer.send({ topic: 't', messages: [{ value: 'y' }] });
    expect(Date.now() - started).toBeGreaterThanOrEqual(450);
    // One 429, then one retry after the throttle time (a 1 ms back-off alone would have spun).
    expect(statuses.filter((s) => s === 429)).toHaveLength(1);
    await producer.disconnect();
    const hw = (await t.admin('GET', 'topics/t/partitions/0')).body.high_watermark;
    expect(hw).toBe(2);
  });

  it('a default client-id quota counts each client id on its own; bad quota changes are refused whole', async () => {
    const now = 1_000_000;
    const t = secureApp({ clock: { now: () => now } });
    await t.admin('POST', 'topics', { topic_name: 't' });
    await t.admin('POST', 'topics/t/records', { value: { type: 'BINARY', data: b64('y'.repeat(4000)) } });
    await t.admin('POST', 'acls', {
      resource_type: 'TOPIC',
      resource_name: 't',
      pattern_type: 'LITERAL',
      principal: 'User:*',
      host: '*',
      operation: 'READ',
      permission: 'ALLOW',
    });
    expect(
      (
        await t.admin('POST', 'client-quotas:alter', {
          data: [
            {
              entity: [{ entity_type: 'client-id', entity_name: null }],
              ops: [{ key: 'consumer_byte_rate', value: 1000 }],
            },
          ],
        })
      ).status,
    ).toBe(204);
    const fetch = (client: string) =>
      t.alice('GET', 'topics/t/partitions/0/records?offset=0', undefined, { 'x-client-id': client });
    expect((await fetch('a')).status).toBe(200);
    expect((await fetch('a')).status).toBe(429);
    expect((await fetch('b')).status).toBe(200);
    const bad = await t.admin('POST', 'client-quotas:alter', {
      data: [
        { entity: [{ entity_type: 'user', entity_name: 'x' }], ops: [{ key: 'producer_byte_rate', value: 1 }] },
        { entity: [{ entity_type: 'user', entity_name: 'y' }], ops: [{ key: 'no_such_quota', value: 1 }] },
      ],
    });
    expect(bad).toMatchObject({ status: 400, body: { error: 'INVALID_REQUEST' } });
    expect((await t.admin('GET', 'client-quotas?user=x')).body.data).toEqual([]);
    // Removing the last key removes the entity.
    await t.admin('POST', 'client-quotas:alter', {
      data: [
        {
          entity: [{ entity_type: 'client-id', entity_name: null }],
          ops: [{ key: 'consumer_byte_rate', remove: true }],
        },
      ],
    });
    expect((await t.admin('GET', 'client-quotas')).body.data).toEqual([]);
    expect(t.audit.filter((a) => a.audit === 'quota-altered')).toHaveLength(2);
  });
});

describe('the OpenAPI document', () => {
  it('has the ACL and client quota paths, and the local bearer scheme', async () => {
    const doc = (await secureApp().anonymous('GET', '/openapi.json')).body;
    expect(Object.keys(doc.paths)).toEqual(
      expect.arrayContaining([
        '/v3/clusters/{cluster_id}/acls',
        '/v3/clusters/{cluster_id}/acls:batch',
        '/v3/clusters/{cluster_id}/client-quotas',
        '/v3/clusters/{cluster_id}/client-quotas:alter',
      ]),
    );
    expect(Object.keys(doc.paths['/v3/clusters/{cluster_id}/acls'])).toEqual(['get', 'post', 'delete']);
    expect(Object.keys(doc.components.securitySchemes)).toEqual(
      expect.arrayContaining(['sigv4', 'jwt', 'apiKey', 'bearer']),
    );
  });
});
