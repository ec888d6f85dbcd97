/**
 * Least privilege checked against the code: every route of each HTTP function is driven through
 * the app with instrumented storage (the calls the S3 and DynamoDB adapters would make), routed as
 * API Gateway routes them (infra/routes.ts). Each call must be allowed by the function's grant in
 * infra/data-access.ts, and each granted action must be used by some call.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { IAM_ACTION_FOR_CALL, DATA_ACCESS } from '../../infra/data-access.js';
import { routeFor, type HttpFunctionName } from '../../infra/routes.js';
import { instrumentStorage } from '../../functions/instrumented-storage.js';
import { HEARTBEAT_ROUTE, observedApp } from '../../functions/http-entry.js';
import { HEARTBEAT_ENVIRONMENT } from '../../infra/log-functions.js';
import type { StorageCall } from '../../src/storage/observed-stores.js';
import { createServices, createStorage } from '../../src/compose.js';
import { serverConfigFromEnv } from '../../src/config/server-config.js';
import { createApp } from '../../src/http/app.js';
import { RECORD_BATCH_MEDIA_TYPE } from '../../src/http/record-batch-body.js';
import { encodeTopicData, PRODUCE_REQUEST_MEDIA_TYPE } from '../../src/wire/produce-request.js';
import { encodeRecordBatch } from '../../src/wire/record-batch.js';
import { indexSk, partitionPk } from '../../src/storage/key-layout.js';
import { handleSubscribe } from '../../src/push/subscribe-handler.js';
import { subscriptionPk } from '../../src/push/subscriptions.js';

const NAMES: HttpFunctionName[] = ['produce', 'fetch', 'admin'];
const BASE = '/v3/clusters/local';
type Fn = HttpFunctionName | 'push' | 'heartbeat';
const calls: Record<Fn, StorageCall[]> = { produce: [], fetch: [], admin: [], push: [], heartbeat: [] };
const base = createStorage({ kind: 'memory', replicaStores: 1 });
const config = serverConfigFromEnv({ STORAGE_BACKEND: 'memory', CLUSTER_ID: 'local' });
const apps = Object.fromEntries(
  NAMES.map((name) => [
    name,
    createApp(
      createServices(
        config,
        instrumentStorage(base, (c) => calls[name].push(c)),
      ),
      { logError: () => {} },
    ),
  ]),
) as Record<HttpFunctionName, ReturnType<typeof createApp>>;

// The push function's subscribe route (functions/push-entry.ts), over the same storage.
const pushServices = createServices(
  config,
  instrumentStorage(base, (c) => calls.push.push(c)),
);
// The heartbeat function (functions/heartbeat.ts: the heartbeat route alone, behind its function URL).
const heartbeatApp = observedApp(
  createApp(
    createServices(
      serverConfigFromEnv({ STORAGE_BACKEND: 'memory', CLUSTER_ID: 'local', ...HEARTBEAT_ENVIRONMENT }),
      instrumentStorage(base, (c) => calls.heartbeat.push(c)),
    ),
    { logError: () => {} },
  ),
  { namespace: 'n', service: 's', functionName: 'heartbeat', write: () => {}, now: () => Date.now() },
  HEARTBEAT_ROUTE,
);
const heartbeat = async (body: unknown) => {
  const res = await heartbeatApp.request(`${BASE}/consumer-groups/g/consumers:heartbeat`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as { member_id: string; member_epoch: number } };
};

const subscribe = (partitions: { partition: number; offset: number }[]) =>
  handleSubscribe(
    {
      subscriptions: pushServices.push.subscriptions,
      topics: pushServices.topics,
      log: pushServices.log,
      authorizeRead: async () => {},
    },
    'http://127.0.0.1:9',
    'conn-1',
    { action: 'subscribe', topic: 'orders', partitions },
  );

async function call(method: string, path: string, body?: unknown) {
  const url = `${BASE}/${path}`;
  const target = routeFor(method, url.split('?')[0]!)!.target;
  const bytes = body instanceof Uint8Array;
  const res = await apps[target].request(url, {
    method,
    headers: {
      'content-type': bytes
        ? path === 'records'
          ? PRODUCE_REQUEST_MEDIA_TYPE
          : RECORD_BATCH_MEDIA_TYPE
        : 'application/json',
    },
    ...(body !== undefined && { body: bytes ? body : JSON.stringify(body) }),
  });
  const text = await res.text();
  return { target, status: res.status, body: text ? JSON.parse(text) : undefined };
}

const used = (name: Fn) => new Set(calls[name].map((c) => IAM_ACTION_FOR_CALL[c.op]!));
const granted = (name: Fn) => {
  const a = DATA_ACCESS[name];
  return new Set([...a.objectActions, ...a.bucketActions, ...a.tableActions]);
};

beforeAll(async () => {
  const steps: [string, string, unknown, HttpFunctionName, number][] = [
    ['POST', 'topics', { topic_name: 'orders', partitions_count: 2 }, 'admin', 201],
    ['GET', 'topics', undefined, 'admin', 200],
    ['GET', 'topics/orders', undefined, 'admin', 200],
    ['GET', 'topics/orders/configs', undefined, 'admin', 200],
    ['GET', 'topics/orders/partitions', undefined, 'admin', 200],
    ['POST', 'topics/orders/records', { partition_id: 0, value: { data: { n: 1 } } }, 'produce', 200],
    [
      'POST',
      'topics/orders/records:batch',
      { entries: [1, 2, 3].map((n) => ({ id: String(n), partition_id: 0, value: { data: { n } } })) },
      'produce',
      207,
    ],
    [
      'POST',
      'topics/orders/partitions/1/records',
      encodeRecordBatch([{ key: null, value: new Uint8Array([1]), headers: [], timestamp: 0 }]),
      'produce',
      200,
    ],
    // The one non-produce POST the produce route takes (see infra/routes.ts).
    ['POST', 'topics/orders/configs:alter', { data: [{ name: 'retention.ms', value: '86400000' }] }, 'produce', 204],
    ['GET', 'topics/orders/partitions/0/records?offset=0', undefined, 'fetch', 200],
    // Kafka's ProduceRequest (topic_data) and FetchRequest (on partition 1: partition 0's last commit is the repair case below).
    [
      'POST',
      'records',
      encodeTopicData([
        {
          name: 'orders',
          partitions: [1].map((index) => ({
            index,
            records: encodeRecordBatch([{ key: null, value: new Uint8Array([2]), headers: [], timestamp: 0 }]),
          })),
        },
      ]),
      'produce',
      200,
    ],
    [
      'POST',
      'records:fetch',
      { topics: [{ topic: 'orders', partitions: [{ partition: 1, fetch_offset: 0 }] }] },
      'admin',
      200,
    ],
    ['GET', 'topics/orders/partitions/0/offset?offset_type=timestamp&timestamp=0', undefined, 'admin', 200],
  ];
  const run = async (list: typeof steps) => {
    for (const [method, path, body, target, status] of list) {
      const res = await call(method, path, body);
      expect({ step: `${method} ${path}`, target: res.target, status: res.status }).toEqual({
        step: `${method} ${path}`,
        target,
        status,
      });
    }
  };
  await run(steps.slice(0, 7));
  // Push: arm partition 1 (waiting), then partition 0 past its HW (answered at once, so only 1 stays armed).
  expect(await subscribe([{ partition: 1, offset: 1 }])).toBeUndefined();
  expect(
    await subscribe([
      { partition: 0, offset: 0 },
      { partition: 1, offset: 1 },
    ]),
  ).toMatchObject({ partitions: [{ partition: 0 }] });
  // A subscription whose TTL passed: the next produce to the topic removes it.
  await base.metadata.put(subscriptionPk('orders'), 'conn#gone', {
    endpoint: 'http://127.0.0.1:9',
    connectionId: 'gone',
    armed: { '0': 0 },
    expiresAt: 0,
  });
  await run(steps.slice(7));
  // A member joins (registry, group item, session timer), heartbeats and leaves.
  const joined = await heartbeat({ member_id: '', member_epoch: 0, subscribed_topic_names: ['orders'] });
  expect(joined.status).toBe(200);
  expect((await heartbeat({ member_id: joined.body.member_id, member_epoch: joined.body.member_epoch })).status).toBe(
    200,
  );
  expect((await heartbeat({ member_id: joined.body.member_id, member_epoch: -1 })).status).toBe(200);
  // Nothing else is served there.
  expect((await heartbeatApp.request(`${BASE}/topics`)).status).toBe(404);
  expect(await base.metadata.get(subscriptionPk('orders'), 'conn#gone')).toBeUndefined();
  await subscribe([]); // disarms all
  // A writer that died between its state write and its index write: the next fetch repairs the index.
  await base.metadata.delete(partitionPk('orders', 0), indexSk(1));
  expect((await call('GET', 'topics/orders/partitions/0/records?offset=1')).body.records).toHaveLength(3);
  expect(await call('DELETE', 'topics/orders')).toMatchObject({ target: 'admin', status: 204 });
});

describe("each function's IAM data actions match the calls its routes make", () => {
  it.each([...NAMES, 'push' as const, 'heartbeat' as const])('%s: every call is allowed', (name) => {
    expect(calls[name].length).toBeGreaterThan(0);
    const allowed = granted(name);
    const denied = calls[name].filter((c) => !allowed.has(IAM_ACTION_FOR_CALL[c.op]!)).map((c) => c.op);
    expect(denied).toEqual([]);
  });

  it.each([...NAMES, 'push' as const, 'heartbeat' as const])('%s: every granted action is used', (name) => {
    expect([...granted(name)].filter((a) => !used(name).has(a))).toEqual([]);
  });

  it("calls stay within the stack's stores (replica ids only)", () => {
    for (const name of NAMES) for (const c of calls[name]) if (c.port === 'object') expect(c.store).toBe(0);
  });
});
