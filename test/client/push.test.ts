/**
 * Push (issue 20): a consumer waiting on the local server's WebSocket is woken by records that
 * ANOTHER server process, on the same data dir, commits; and a lost notification is caught by the
 * consumer's periodic re-check of its arms. Each consumer's fallback poll (a fetch) is far longer
 * than the bounds asserted, so only the socket can have delivered.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Kafka, type Consumer } from '../../src/client/index.js';
import { startServer, stopServer, tempDir, type LocalServer } from '../support/local-server.js';
import { quiet, until } from '../support/until.js';

describe('push across server processes', () => {
  let dir: Awaited<ReturnType<typeof tempDir>>;
  let consumerSide: LocalServer;
  let producerSide: LocalServer;
  /** Advertises an endpoint nobody listens on: every notification to its connections is lost. */
  let lossy: LocalServer;
  const consumers: Consumer[] = [];

  beforeAll(async () => {
    dir = await tempDir('client-push-');
    const env = { SCHEDULER_INTERVAL_MS: '0' };
    consumerSide = await startServer(dir.path, 0, env);
    [producerSide, lossy] = await Promise.all([
      startServer(dir.path, 0, env),
      startServer(dir.path, 0, { ...env, PUSH_ENDPOINT: 'http://127.0.0.1:9' }),
    ]);
    await new Kafka({ url: producerSide.origin }).admin().createTopics({
      topics: [
        { topic: 'pushed', numPartitions: 12 },
        { topic: 'lost', numPartitions: 3 },
      ],
    });
  }, 60_000);
  afterAll(async () => {
    await Promise.all(consumers.map((c) => c.close().catch(() => {})));
    await Promise.all([stopServer(consumerSide), stopServer(producerSide), stopServer(lossy)]);
    await dir.remove();
  });

  async function consume(server: LocalServer, topic: string, pushRecheckIntervalMs: number, fetches: { n: number }) {
    const seen: string[] = [];
    const counting: typeof globalThis.fetch = (input, init) => {
      if (String(input instanceof Request ? input.url : input).includes('/records')) fetches.n++;
      return globalThis.fetch(input, init);
    };
    const consumer = new Kafka({ url: server.origin, fetch: counting }).consumer({
      groupId: `g-${topic}`,
      autoOffsetReset: 'latest',
      pushRecheckIntervalMs,
      pushFallbackPollMs: 120_000,
      heartbeatIntervalMs: 1000,
    });
    consumers.push(consumer);
    await consumer.subscribe({ topics: [topic] });
    await consumer.run({ eachMessage: async ({ message }) => void seen.push(message.value!.toString()) });
    return { consumer, seen };
  }

  it('records committed by another process reach a waiting consumer, without polling', async () => {
    const fetches = { n: 0 };
    const { consumer, seen } = await consume(consumerSide, 'pushed', 120_000, fetches);
    await until('the assignment', () => consumer.assignment().length === 12, 15_000);
    await quiet(fetches); // every partition caught up and armed
    const producer = new Kafka({ url: producerSide.origin }).producer();
    for (let round = 0; round < 3; round++) {
      const before = fetches.n;
      const values = Array.from({ length: 12 }, (_, p) => `r${round}-p${p}`);
      await producer.send({ topic: 'pushed', messages: values.map((value, partition) => ({ value, partition })) });
      // Within the bound, far below the fallback poll and the re-check: only a push can deliver.
      await until(`round ${round}`, () => values.every((v) => seen.includes(v)), 5000);
      // Woken partitions are fetched, then re-armed after one empty answer: no polling loop.
      await quiet(fetches);
      expect(fetches.n - before).toBeLessThanOrEqual(12 * 3);
    }
    const idleFrom = fetches.n;
    await new Promise((r) => setTimeout(r, 2000));
    expect(fetches.n - idleFrom).toBe(0);
    await producer.close();
    expect(seen.sort()).toEqual(
      Array.from({ length: 3 }, (_, r) => Array.from({ length: 12 }, (_, p) => `r${r}-p${p}`))
        .flat()
        .sort(),
    );
  }, 60_000);

  it('a lost notification is caught by the periodic re-check: nothing is missed', async () => {
    const fetches = { n: 0 };
    const { consumer, seen } = await consume(lossy, 'lost', 1500, fetches);
    await until('the assignment', () => consumer.assignment().length === 3, 15_000);
    await new Promise((r) => setTimeout(r, 1000));
    const producer = new Kafka({ url: producerSide.origin }).producer();
    const values = Array.from({ length: 30 }, (_, i) => `lost-${i}`);
    await producer.send({ topic: 'lost', messages: values.map((value, i) => ({ value, partition: i % 3 })) });
    // Not pushed (the notifications went nowhere) nor polled (the fallback is 120 s): found by the
    // re-check, every 1.5 s.
    await until('the re-check', () => values.every((v) => seen.includes(v)), 10_000);
    expect(seen.sort()).toEqual([...values].sort());
    await producer.close();
  }, 60_000);

  it('where no socket is possible (the upgrade is refused) the consumer polls with the idle back-off and misses nothing', async () => {
    const refusing = createServer((_req, res) => res.writeHead(404).end());
    await new Promise<void>((r) => refusing.listen(0, '127.0.0.1', r));
    try {
      const warnings: string[] = [];
      const admin = new Kafka({ url: producerSide.origin }).admin();
      await admin.createTopics({ topics: [{ topic: 'polled', numPartitions: 2 }] });
      const consumer = new Kafka({
        url: consumerSide.origin,
        pushUrl: `ws://127.0.0.1:${(refusing.address() as AddressInfo).port}/push`,
      }).consumer({
        groupId: 'g-polled',
        autoOffsetReset: 'latest',
        fetchIdleBackoffMaxMs: 800,
        logger: (_level, message) => void warnings.push(message),
      });
      consumers.push(consumer);
      const seen: string[] = [];
      await consumer.subscribe({ topics: ['polled'] });
      await consumer.run({ eachMessage: async ({ message }) => void seen.push(message.value!.toString()) });
      await until('the assignment', () => consumer.assignment().length === 2, 15_000);
      await new Promise((r) => setTimeout(r, 1500));
      const producer = new Kafka({ url: producerSide.origin }).producer();
      const values = Array.from({ length: 10 }, (_, i) => `polled-${i}`);
      await producer.send({ topic: 'polled', messages: values.map((value, i) => ({ value, partition: i % 2 })) });
      await until('the polls', () => values.every((v) => seen.includes(v)), 5000);
      expect(seen.sort()).toEqual([...values].sort());
      expect(warnings).toEqual(['push connection failed; polling instead']);
      await producer.close();
    } finally {
      refusing.close();
    }
  }, 60_000);
});
