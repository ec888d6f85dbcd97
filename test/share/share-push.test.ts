/**
 * Push for idle share groups: a share consumer with `push: true` whose group has nothing to
 * deliver waits on the push connection (src/client/share-push.ts) and makes no request at all,
 * however often it polls; records another server process appends reach it through the
 * notification, far sooner than its fallback poll. Two server processes over one data dir, as two
 * Lambdas: the consumer's connection is held by one, the producer appends through the other.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Kafka, type ShareConsumer } from '../../src/client/index.js';
import { type LocalServer, startServer, stopServer, tempDir } from '../support/local-server.js';
import { quiet, until } from '../support/until.js';

describe('a share consumer with push', () => {
  let dir: Awaited<ReturnType<typeof tempDir>>;
  let consumerSide: LocalServer;
  let producerSide: LocalServer;
  const consumers: ShareConsumer[] = [];

  beforeAll(async () => {
    dir = await tempDir('share-push-');
    const env = { SCHEDULER_INTERVAL_MS: '0' };
    [consumerSide, producerSide] = await Promise.all([startServer(dir.path, 0, env), startServer(dir.path, 0, env)]);
    await new Kafka({ url: producerSide.origin })
      .admin()
      .createTopics({ topics: [{ topic: 'jobs', numPartitions: 3 }] });
    for (const g of ['pushed', 'no-socket', 'held'])
      await fetch(`${producerSide.origin}/v3/clusters/local/share-groups/${g}/configs/share.auto.offset.reset`, {
        method: 'PUT',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ value: 'earliest' }),
      });
  }, 60_000);
  afterAll(async () => {
    await Promise.all(consumers.map((c) => c.close().catch(() => {})));
    await Promise.all([stopServer(consumerSide), stopServer(producerSide)]);
    await dir.remove();
  });

  /** A share consumer polling in the background, every request it sends counted. */
  function consume(groupId: string, pushUrl?: string) {
    const requests = { n: 0 };
    const counting: typeof globalThis.fetch = (input, init) => {
      requests.n++;
      return globalThis.fetch(input, init);
    };
    const consumer = new Kafka({
      url: consumerSide.origin,
      fetch: counting,
      ...(pushUrl && { pushUrl }),
    }).shareConsumer(
      // Far longer than any bound below: only a notification can wake it in time.
      { groupId, push: true, pushFallbackPollMs: 120_000, pushRecheckIntervalMs: 120_000 },
    );
    consumers.push(consumer);
    consumer.subscribe(['jobs']);
    const seen: string[] = [];
    let polls = 0;
    let stopped = false;
    const loop = (async () => {
      while (!stopped) {
        for (const r of await consumer.poll(300)) seen.push(r.value!.toString());
        polls++;
      }
    })();
    return {
      requests,
      seen,
      polls: () => polls,
      stop: async () => {
        stopped = true;
        await loop;
      },
    };
  }

  const produce = (values: string[]) =>
    new Kafka({ url: producerSide.origin })
      .producer()
      .send({ topic: 'jobs', messages: values.map((value, i) => ({ value, partition: i % 3 })) });

  it('makes no request while its group is idle, and is woken by records another process appends', async () => {
    const c = consume('pushed');
    for (let round = 0; round < 3; round++) {
      const values = [0, 1, 2].map((p) => `r${round}-p${p}`);
      await produce(values);
      // Within the bound, far below the fallback poll: on rounds after the first, only a push can deliver.
      await until(`round ${round}`, () => values.every((v) => c.seen.includes(v)), 10_000);
      // Acknowledged with the next poll, then one empty receive and the group's description, then armed.
      await quiet(c.requests, 700);
      const from = { requests: c.requests.n, polls: c.polls() };
      await until('polls while idle', () => c.polls() >= from.polls + 5, 10_000);
      expect(c.requests.n - from.requests).toBe(0);
    }
    expect(c.seen).toHaveLength(9);
    await c.stop();
  }, 90_000);

  it('long-polls while records of its group are held, so a release reaches it without an append', async () => {
    const api = `${consumerSide.origin}/v3/clusters/local/share-groups/held/records:`;
    const post = async (what: string, body: unknown) =>
      (
        await fetch(`${api}${what}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(body),
        })
      ).json() as Promise<{ data: { partition_id: number; offset: number }[] }>;
    await produce(['h0', 'h1', 'h2']);
    // Another worker holds every record (30 s locks): the group is not idle.
    const held = await post('receive', { topics: ['jobs'], member_id: 'holder', max_records: 100 });
    expect(held.data.length).toBeGreaterThanOrEqual(3);
    const c = consume('held');
    await until('polls finding nothing', () => c.polls() >= 3, 10_000);
    await post('acknowledge', {
      member_id: 'holder',
      acknowledgements: held.data.map((r) => ({
        topic_name: 'jobs',
        partition_id: r.partition_id,
        offset: r.offset,
        type: 'release',
      })),
    });
    // No append tells of a release: a consumer armed on the socket would wait for its fallback poll.
    await until('the released records', () => c.seen.length === held.data.length, 10_000);
    await c.stop();
  }, 60_000);

  it('long-polls when the push connection can not be opened', async () => {
    const c = consume('no-socket', 'ws://127.0.0.1:9/push');
    const values = ['a', 'b', 'c'];
    await produce(values);
    await until('the records', () => values.every((v) => c.seen.includes(v)), 20_000);
    await c.stop();
  }, 60_000);
});
