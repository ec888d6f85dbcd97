/**
 * Push subscriptions and the commit notifier, in-process over the memory backend, posting through
 * the real HTTP ConnectionPoster to a small server that plays API Gateway's @connections API.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { handleSubscribe } from '../../src/push/subscribe-handler.js';
import { gatewayPushSubscribeDeps, pushSubscribeDeps } from '../../src/http/push-subscribe.js';
import { SUBSCRIPTION_TTL_MS, Subscriptions, subscriptionPk } from '../../src/push/subscriptions.js';
import { PUSH_RECORDS_MAX_BYTES, PushNotifier } from '../../src/push/push-notifier.js';
import type { PushedPartition } from '../../src/wire/push-message.js';
import { decodeFetchedRecords } from '../../src/client/record-batches.js';
import { createStorage, openStorage } from '../../src/compose.js';
import { systemClock } from '../../src/clock.js';
import type { MetadataStore } from '../../src/storage/ports.js';
import { testApp } from '../support/test-app.js';

let server: Server;
let endpoint: string;
const posts: { connectionId: string; body: { type: string; topic: string; partitions: { partition: number }[] } }[] =
  [];
/** The status @connections answers per connection id (200 by default). */
const answers = new Map<string, number>();

beforeAll(async () => {
  server = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      const connectionId = decodeURIComponent(req.url!.replace(/^\/@connections\//, ''));
      const status = answers.get(connectionId) ?? 200;
      if (status === 200) posts.push({ connectionId, body: JSON.parse(body) });
      res.writeHead(status).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise((r) => server.close(r)));
beforeEach(() => {
  posts.length = 0;
  answers.clear();
});

async function setup(options: Parameters<typeof testApp>[0] & { createTopic?: boolean } = {}) {
  const t = testApp(options);
  if (options.createTopic !== false)
    expect((await t.call('POST', 'topics', { topic_name: 'orders', partitions_count: 3 })).status).toBe(201);
  const produce = async (partition: number) =>
    expect(
      (await t.call('POST', 'topics/orders/records', { partition_id: partition, value: { data: 1 } })).status,
    ).toBe(200);
  const deps = pushSubscribeDeps(t.services, 'User:ANONYMOUS', '127.0.0.1');
  const subscribe = (connectionId: string, partitions: { partition: number; offset: number }[]) =>
    handleSubscribe(deps, endpoint, connectionId, { action: 'subscribe', topic: 'orders', partitions });
  const armed = async (connectionId: string) =>
    (await t.storage.metadata.get<{ armed: Record<string, number> }>(subscriptionPk('orders'), `conn#${connectionId}`))
      ?.value.armed;
  return { ...t, produce, subscribe, armed };
}

describe('push subscriptions', () => {
  it('a commit tells the connection armed on its partition once, and disarms only that partition', async () => {
    const t = await setup();
    expect(
      await t.subscribe('c1', [
        { partition: 0, offset: 0 },
        { partition: 1, offset: 0 },
      ]),
    ).toBeUndefined();
    await t.produce(0);
    expect(posts).toEqual([
      { connectionId: 'c1', body: { type: 'ready', topic: 'orders', partitions: [{ partition: 0 }] } },
    ]);
    expect(await t.armed('c1')).toEqual({ '1': 0 });
    await t.produce(0); // no longer armed there: nothing sent
    await t.produce(2); // never armed
    expect(posts).toHaveLength(1);
    await t.produce(1);
    expect(posts.map((p) => p.body.partitions)).toEqual([[{ partition: 0 }], [{ partition: 1 }]]);
    expect(await t.armed('c1')).toBeUndefined(); // nothing left: the item is gone
  });

  it('an arm at an offset below the high watermark is answered at once and not kept (a commit before the arm is not missed)', async () => {
    const t = await setup();
    await t.produce(0);
    expect(
      await t.subscribe('c1', [
        { partition: 0, offset: 0 },
        { partition: 1, offset: 0 },
      ]),
    ).toEqual({ type: 'ready', topic: 'orders', partitions: [{ partition: 0, high_watermark: 1 }] });
    expect(await t.armed('c1')).toEqual({ '1': 0 });
  });

  it("checks an arm's partitions with one read of their shard's log, not one per partition", async () => {
    const t = await setup();
    for (const p of [0, 1, 2]) await t.produce(p);
    const partitions = [0, 1, 2].map((partition) => ({ partition, offset: 1 }));
    expect(await t.subscribe('one-read', partitions)).toBeUndefined();
    const metadata = t.storage.metadata;
    const query = metadata.query.bind(metadata);
    const reads: string[] = [];
    metadata.query = (pk, options) => {
      if (pk.startsWith('clog#') || pk.startsWith('part#')) reads.push(pk);
      return query(pk, options);
    };
    await t.produce(1);
    reads.length = 0;
    expect(await t.subscribe('one-read', partitions)).toEqual({
      type: 'ready',
      topic: 'orders',
      partitions: [{ partition: 1, high_watermark: 2 }],
    });
    expect(reads).toEqual(['clog#orders#0']);
    metadata.query = query;
    // Not left armed: a later look at the list would post to it during another test.
    await t.services.push.subscriptions.arm('orders', endpoint, 'one-read', []);
  });

  it('a connection that is gone (410) loses its subscription; a failed post keeps the arm for the re-check', async () => {
    const t = await setup();
    answers.set('gone', 410);
    answers.set('flaky', 500);
    await t.subscribe('gone', [{ partition: 0, offset: 0 }]);
    await t.subscribe('flaky', [{ partition: 0, offset: 0 }]);
    await t.subscribe('ok', [{ partition: 0, offset: 0 }]);
    await t.produce(0);
    expect(posts.map((p) => p.connectionId)).toEqual(['ok']);
    expect(await t.armed('gone')).toBeUndefined();
    expect(await t.armed('flaky')).toEqual({ '0': 0 });
    // The consumer's periodic re-check sends its arms again: the server answers what the lost post would have said.
    expect(await t.subscribe('flaky', [{ partition: 0, offset: 0 }])).toMatchObject({ partitions: [{ partition: 0 }] });
  });

  it('refuses a malformed arm with a Kafka error and stores nothing', async () => {
    const t = await setup();
    await expect(t.subscribe('c1', [{ partition: 3, offset: 0 }])).rejects.toMatchObject({
      errorName: 'UNKNOWN_TOPIC_OR_PARTITION',
    });
    expect(await t.armed('c1')).toBeUndefined();
  });
});

describe('push with records (a consumer that takes them)', () => {
  // The lists are reused for their bound (the memory store has no stamps), and a second look comes
  // after it: the arms go at the end, so that no later test sees a post of these.
  const arms: [Awaited<ReturnType<typeof setup>>, string][] = [];
  afterEach(async () => {
    for (const [t, id] of arms.splice(0)) await t.services.push.subscriptions.arm('orders', endpoint, id, []);
  });
  const subscribeForRecords = (t: Awaited<ReturnType<typeof setup>>, connectionId: string, offset: number) => {
    arms.push([t, connectionId]);
    return handleSubscribe(pushSubscribeDeps(t.services, 'User:ANONYMOUS', '127.0.0.1'), endpoint, connectionId, {
      action: 'subscribe',
      topic: 'orders',
      partitions: [{ partition: 0, offset }],
      records: true,
    });
  };
  const told = () => posts.map((p) => p.body.partitions[0] as PushedPartition);

  it('tells every commit with its records, offsets and high watermark, and keeps the arm (no write)', async () => {
    const t = await setup();
    await subscribeForRecords(t, 'r1', 0);
    const item = await t.storage.metadata.get(subscriptionPk('orders'), 'conn#r1');
    await t.produce(0);
    await t.produce(0);
    expect(told().map(({ records, ...rest }) => rest)).toEqual([
      { partition: 0, base_offset: 0, last_offset: 0, high_watermark: 1, last_stable_offset: 1 },
      { partition: 0, base_offset: 1, last_offset: 1, high_watermark: 2, last_stable_offset: 2 },
    ]);
    const records = told().flatMap((p) => decodeFetchedRecords(Buffer.from(p.records!, 'base64'), 'orders', 0, 0));
    expect(records.map((r) => [r.offset, JSON.parse(r.value!.toString())])).toEqual([
      [0, 1],
      [1, 1],
    ]);
    // Not disarmed: the item is the one the arm wrote.
    expect((await t.storage.metadata.get(subscriptionPk('orders'), 'conn#r1'))?.version).toBe(item?.version);
  });

  it('a commit too large for one frame is told with its high watermark, still armed', async () => {
    const t = await setup();
    await subscribeForRecords(t, 'r2', 0);
    const big = 'x'.repeat(PUSH_RECORDS_MAX_BYTES);
    expect((await t.call('POST', 'topics/orders/records', { partition_id: 0, value: { data: big } })).status).toBe(200);
    await t.produce(0);
    expect(told()).toEqual([
      { partition: 0, high_watermark: 1, armed: true },
      expect.objectContaining({ partition: 0, base_offset: 1, last_offset: 1 }),
    ]);
    expect(await t.armed('r2')).toEqual({ '0': 0 });
  });

  it('an arm below the high watermark is answered at once and kept', async () => {
    const t = await setup();
    await t.produce(0);
    expect(await subscribeForRecords(t, 'r3', 0)).toEqual({
      type: 'ready',
      topic: 'orders',
      partitions: [{ partition: 0, high_watermark: 1, armed: true }],
    });
    expect(await t.armed('r3')).toEqual({ '0': 0 });
    await t.produce(0);
    expect(told()).toEqual([expect.objectContaining({ partition: 0, base_offset: 1 })]);
  });
});

describe('push with change stamps (local backend): a topic nobody waits on is not queried per commit', () => {
  /** Counts the queries of the topic's subscriptions. */
  function countListings(t: Awaited<ReturnType<typeof setup>>) {
    const counted = { n: 0 };
    const query = t.storage.metadata.query.bind(t.storage.metadata);
    t.storage.metadata.query = (pk, o) => {
      if (pk === subscriptionPk('orders')) counted.n++;
      return query(pk, o);
    };
    return counted;
  }

  /** A local backend (SQLite, which has change stamps) in a directory of its own, and how to drop it. */
  async function localStore() {
    const dataDir = await mkdtemp(join(tmpdir(), 'push-stamps-'));
    const backend = { kind: 'local' as const, dataDir, replicaStores: 1, fsync: false };
    return { backend, open: () => openStorage(backend), remove: () => rm(dataDir, { recursive: true, force: true }) };
  }

  it('the memory store, standing in for DynamoDB, has no stamps: the list is reused for its time bound, not per commit', async () => {
    const t = await setup();
    const listings = countListings(t);
    for (let i = 0; i < 20; i++) await t.produce(i % 3);
    expect(listings.n).toBe(1);
  });

  it('lists once while nobody is armed, and an arm of this process is still told at the next commit', async () => {
    const local = await localStore();
    const storage = await local.open();
    try {
      await listOnceThenTell(await setup({ storage }));
    } finally {
      storage.close();
      await local.remove();
    }
  });

  async function listOnceThenTell(t: Awaited<ReturnType<typeof setup>>) {
    const listings = countListings(t);
    await t.produce(0);
    await t.produce(1);
    await t.produce(0);
    expect(listings.n).toBe(1);
    expect(await t.subscribe('c1', [{ partition: 0, offset: 3 }])).toBeUndefined();
    await t.produce(0);
    expect(posts.map((p) => [p.connectionId, p.body.partitions])).toEqual([['c1', [{ partition: 0 }]]]);
    expect(listings.n).toBe(2);
    // The post disarmed the last partition, so the item went: one listing finds that, then none again.
    await t.produce(0);
    await t.produce(0);
    expect(listings.n).toBe(3);
    expect(posts).toHaveLength(1);
  }

  it('a commit in one process tells a connection armed through another process sharing the local store', async () => {
    const local = await localStore();
    const [a, b] = [await local.open(), await local.open()];
    try {
      const producer = await setup({ storage: a });
      const consumerSide = await setup({ storage: b, createTopic: false });
      const listings = countListings(producer);
      await producer.produce(0);
      await producer.produce(0); // nobody armed: listed once, then known empty
      expect(listings.n).toBe(1);
      expect(await consumerSide.subscribe('c2', [{ partition: 0, offset: 2 }])).toBeUndefined();
      await producer.produce(0);
      expect(posts.map((p) => [p.connectionId, p.body.partitions])).toEqual([['c2', [{ partition: 0 }]]]);
      expect(await consumerSide.armed('c2')).toBeUndefined();
    } finally {
      a.close();
      b.close();
      await local.remove();
    }
  });
});

describe('push over a store without change stamps (DynamoDB): the subscription list cached for a bound', () => {
  /** A notifier over the memory store (no stamps, as DynamoDB), counting the subscription queries and its posts. */
  function notifierOver(metadata: MetadataStore, cacheMs: number) {
    const counted = { queries: 0 };
    const query = metadata.query.bind(metadata);
    metadata.query = (pk, o) => {
      if (pk === subscriptionPk('orders')) counted.queries++;
      return query(pk, o);
    };
    const told: string[] = [];
    const poster = {
      post: async (_endpoint: string, connectionId: string) => {
        told.push(connectionId);
        return 'delivered' as const;
      },
    };
    const subscriptions = new Subscriptions(metadata, systemClock, cacheMs);
    return { subscriptions, notifier: new PushNotifier(subscriptions, poster), counted, told };
  }

  it('N produces in one bound cost one query of the subscriptions, not N', async () => {
    const storage = createStorage({ kind: 'memory', replicaStores: 1 });
    const p = notifierOver(storage.metadata, 60_000);
    for (let i = 0; i < 500; i++) {
      p.notifier.committed('orders', i % 7);
      await p.notifier.settle();
    }
    expect(p.counted.queries).toBe(1);
  });

  it('a connection armed through another process after the list was read is told within the bound, with no further produce', async () => {
    const storage = createStorage({ kind: 'memory', replicaStores: 1 });
    const producer = notifierOver(storage.metadata, 300);
    const consumerSide = new Subscriptions(storage.metadata, systemClock, 300);
    producer.notifier.committed('orders', 0);
    await producer.notifier.settle(); // read: nobody armed, kept for 300 ms
    await consumerSide.arm('orders', endpoint, 'late', [{ partition: 0, offset: 1 }]);
    const committedAt = Date.now();
    producer.notifier.committed('orders', 0); // answered from the list read before the arm
    await producer.notifier.settle();
    expect(producer.told).toEqual([]);
    await vi.waitFor(() => expect(producer.told).toEqual(['late']), { timeout: 3000, interval: 20 });
    expect(Date.now() - committedAt).toBeLessThan(300 + 1000);
    expect(producer.counted.queries).toBe(2);
    // Told once: the look-again disarmed it, and nothing more is pending.
    expect(await consumerSide.list('orders')).toEqual([]);
  });

  it('a produce reads the subscriptions as its append begins, beside its storage calls, not after its commit', async () => {
    const t = await setup();
    const calls: string[] = [];
    const { metadata } = t.storage;
    const query = metadata.query.bind(metadata);
    const put = metadata.put.bind(metadata);
    metadata.query = (pk, o) => {
      calls.push(`query ${pk}`);
      return query(pk, o);
    };
    metadata.put = (pk, sk, value, condition, options) => {
      if (condition) calls.push(`conditional put ${pk}`);
      return put(pk, sk, value, condition, options);
    };
    await t.produce(1);
    const read = calls.indexOf(`query ${subscriptionPk('orders')}`);
    const commit = calls.findIndex((c) => c.startsWith('conditional put') && !c.includes('push#'));
    expect(read, calls.join('\n')).toBeGreaterThanOrEqual(0);
    expect(commit, calls.join('\n')).toBeGreaterThan(read);
    // The round after the commit used that read: one query in all.
    expect(calls.filter((c) => c.startsWith('query push#'))).toHaveLength(1);
  });

  it('an arm made after the read begun with an append, and checked before its commit, is told within the bound', async () => {
    const storage = createStorage({ kind: 'memory', replicaStores: 1 });
    const producer = notifierOver(storage.metadata, 300);
    const consumerSide = new Subscriptions(storage.metadata, systemClock, 300);
    producer.notifier.appending('orders'); // the append begins: nobody armed yet
    await producer.notifier.settle();
    // The consumer arms and checks the high watermark: the commit has not landed, so it waits.
    await consumerSide.arm('orders', endpoint, 'between', [{ partition: 0, offset: 0 }]);
    const committedAt = Date.now();
    producer.notifier.committed('orders', 0);
    await producer.notifier.settle();
    expect(producer.told).toEqual([]);
    await vi.waitFor(() => expect(producer.told).toEqual(['between']), { timeout: 3000, interval: 20 });
    expect(Date.now() - committedAt).toBeLessThan(300 + 1000);
    expect(producer.counted.queries).toBe(2);
  });

  it('an arm in this process drops the cached list: the next commit tells it at once', async () => {
    const storage = createStorage({ kind: 'memory', replicaStores: 1 });
    const p = notifierOver(storage.metadata, 60_000);
    p.notifier.committed('orders', 0);
    await p.notifier.settle();
    await p.subscriptions.arm('orders', endpoint, 'here', [{ partition: 0, offset: 1 }]);
    p.notifier.committed('orders', 0);
    await p.notifier.settle();
    expect(p.told).toEqual(['here']);
  });
});

describe('push subscription expiry', () => {
  it('an expired subscription that TTL has not deleted yet is not listed, not told, and removed by the produce that finds it', async () => {
    let now = Date.UTC(2026, 11, 3);
    const t = await setup({ clock: { now: () => now } });
    await t.subscribe('old', [{ partition: 0, offset: 0 }]);
    const item = await t.storage.metadata.get<{ expiresAt: number }>(subscriptionPk('orders'), 'conn#old');
    expect(item!.value.expiresAt).toBe(now + SUBSCRIPTION_TTL_MS);
    now += SUBSCRIPTION_TTL_MS;
    expect(await t.services.push.subscriptions.list('orders')).toEqual([]);
    await t.subscribe('new', [{ partition: 0, offset: 0 }]);
    await t.produce(0);
    expect(posts.map((p) => p.connectionId)).toEqual(['new']);
    expect(await t.armed('old')).toBeUndefined();
  });

  it('every write of a subscription gives the store its expiry (DynamoDB TTL deletes it at no cost)', async () => {
    const expiries: (number | undefined)[] = [];
    const t = await setup();
    const put = t.storage.metadata.put.bind(t.storage.metadata);
    t.storage.metadata.put = (pk, sk, value, condition, options) => {
      if (pk === subscriptionPk('orders')) expiries.push(options?.expiresAt);
      return put(pk, sk, value, condition, options);
    };
    await t.subscribe('c1', [
      { partition: 0, offset: 0 },
      { partition: 1, offset: 0 },
    ]);
    await t.produce(0); // disarms partition 0: a conditional put of the rest
    const item = await t.storage.metadata.get<{ expiresAt: number }>(subscriptionPk('orders'), 'conn#c1');
    expect(expiries).toHaveLength(2);
    expect(expiries).toEqual([item!.value.expiresAt, item!.value.expiresAt]);
  });
});

describe('push subscribe authorization', () => {
  it('a principal without READ on the topic cannot subscribe (TOPIC_AUTHORIZATION_FAILED, nothing armed); with READ it can', async () => {
    const t = testApp({ env: { AUTHORIZATION: 'true', SUPER_USERS: 'User:admin' } });
    await t.services.topics.create({ name: 'orders', partitionCount: 3, replicationFactor: 1 });
    await t.services.security.acls.create([
      {
        resourceType: 'TOPIC',
        resourceName: 'orders',
        patternType: 'LITERAL',
        principal: 'User:alice',
        host: '*',
        operation: 'READ',
        permission: 'ALLOW',
      },
    ]);
    const audit: Record<string, unknown>[] = [];
    const as = (principal: string) =>
      pushSubscribeDeps(t.services, principal, '203.0.113.7', (msg, fields) => audit.push({ msg, ...fields }));
    const arm = (principal: string, connectionId: string) =>
      handleSubscribe(as(principal), endpoint, connectionId, {
        action: 'subscribe',
        topic: 'orders',
        partitions: [{ partition: 0, offset: 0 }],
      });
    const armed = (connectionId: string) => t.storage.metadata.get(subscriptionPk('orders'), `conn#${connectionId}`);

    await expect(arm('User:bob', 'bob-conn')).rejects.toMatchObject({ errorName: 'TOPIC_AUTHORIZATION_FAILED' });
    expect(await armed('bob-conn')).toBeUndefined();
    expect(audit).toMatchObject([
      { audit: 'denied', principal: 'User:bob', operation: 'READ', resourceName: 'orders' },
    ]);
    // An unknown topic is refused the same way (no hint that it does not exist), as a fetch is.
    await expect(
      handleSubscribe(as('User:bob'), endpoint, 'bob-conn', { action: 'subscribe', topic: 'secret', partitions: [] }),
    ).rejects.toMatchObject({ errorName: 'TOPIC_AUTHORIZATION_FAILED' });

    expect(await arm('User:alice', 'alice-conn')).toBeUndefined();
    expect(await armed('alice-conn')).toMatchObject({ value: { armed: { '0': 0 } } });
  });

  it('the WebSocket API message names its principal as the $connect authorizer did', async () => {
    const t = testApp({ env: { AUTHORIZATION: 'true' } });
    await t.services.topics.create({ name: 'orders', partitionCount: 1, replicationFactor: 1 });
    await t.services.security.acls.create([
      {
        resourceType: 'TOPIC',
        resourceName: 'orders',
        patternType: 'LITERAL',
        principal: 'User:arn:aws:iam::123456789012:role/Reader',
        host: '*',
        operation: 'READ',
        permission: 'ALLOW',
      },
    ]);
    const arm = (requestContext: object) =>
      handleSubscribe(gatewayPushSubscribeDeps(t.services, requestContext), endpoint, 'c', {
        action: 'subscribe',
        topic: 'orders',
        partitions: [{ partition: 0, offset: 0 }],
      });
    // IAM ($connect signed by an assumed role): named by its role, as the HTTP API does.
    expect(
      await arm({ identity: { userArn: 'arn:aws:sts::123456789012:assumed-role/Reader/i-0abc', sourceIp: '1.2.3.4' } }),
    ).toBeUndefined();
    // A JWT authorizer's principalId (the token's sub), or an API key's id: no ACL for them here.
    await expect(arm({ authorizer: { principalId: 'alice' } })).rejects.toMatchObject({
      errorName: 'TOPIC_AUTHORIZATION_FAILED',
    });
    await expect(arm({ authorizer: { principalId: 'k1', apiKeyId: 'k1' } })).rejects.toMatchObject({
      errorName: 'TOPIC_AUTHORIZATION_FAILED',
    });
  });
});
