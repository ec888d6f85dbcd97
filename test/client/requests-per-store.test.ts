/**
 * The producer groups the batches it sends by where their partitions' appends are written, as
 * Kafka's sender drains per broker: the server writes a request's object once to every store the
 * request names, so at RF 1 a request of one leader store's partitions costs one PUT. Against a
 * server with three stores, a topic's leaders are spread over all three.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Kafka } from '../../src/client/index.js';
import { partitionForKey } from '../../src/wire/murmur2.js';
import { decodeTopicData } from '../../src/wire/produce-request.js';
import { isMultiPartitionProduce, isProduce, proxy } from './support/flaky-proxy.js';
import { startServer, stopServer, tempDir, type LocalServer } from '../support/local-server.js';
import { until } from '../support/until.js';

describe('produce requests per leader store (three stores, RF 1)', () => {
  let dir: Awaited<ReturnType<typeof tempDir>>;
  let server: LocalServer | undefined;
  let kafka: Kafka;

  beforeAll(async () => {
    dir = await tempDir('client-per-store-');
    server = await startServer(dir.path, 0, { REPLICA_STORES: '3' });
    kafka = new Kafka({ url: server.origin });
  });
  afterAll(async () => {
    await stopServer(server);
    await dir.remove();
  });

  /** A producer through a logging proxy, its metadata (leaders included) read before the test's sends. */
  async function producerOf(
    topic: string,
    config: Parameters<Kafka['producer']>[0] = {},
    options: Parameters<typeof proxy>[1] = {},
  ) {
    const front = await proxy(server!.origin, options);
    const producer = new Kafka({ url: front.origin }).producer(config);
    await producer.connect();
    await producer.send({ topic, messages: [{ value: 'warm', partition: 0 }] });
    await until('the placements read', () =>
      front.log.some((e) => e.method === 'GET' && /\/partitions(\?|$)/.test(e.url) && e.endedAt > 0),
    );
    const before = front.log.filter(isProduce).length;
    return { front, producer, produces: () => front.log.filter(isProduce).slice(before) };
  }

  async function leadersOf(topic: string): Promise<Map<number, number>> {
    const d = await kafka.admin().describeTopic(topic);
    return new Map(d.partitions.map((p) => [p.partition, p.leader]));
  }

  /** Each request's partitions, as the topic_data it carries names them. */
  const partitionsOf = (body: Buffer) => decodeTopicData(body).flatMap((t) => t.partitions.map((p) => p.index));

  it('sends ready batches of 12 partitions as one request per leader store, each naming one leader', async () => {
    await kafka.admin().createTopics({ topics: [{ topic: 'placed', numPartitions: 12 }] });
    const leaders = await leadersOf('placed');
    expect(new Set(leaders.values()).size).toBe(3);
    const { front, producer, produces } = await producerOf('placed', { lingerMs: 1000 });
    try {
      const keys = Array.from({ length: 12 }, (_, p) => {
        for (let i = 0; ; i++) if (partitionForKey(Buffer.from(`k${i}`), 12) === p) return `k${i}`;
      });
      const sends = keys.flatMap((key) =>
        Array.from({ length: 10 }, (_, i) =>
          producer.send({ topic: 'placed', messages: [{ key, value: `${key}-${i}` }] }),
        ),
      );
      expect(new Set((await Promise.all(sends)).map(([m]) => m!.partition)).size).toBe(12);
      const requests = produces();
      expect(requests.every((r) => isMultiPartitionProduce(r.url) && r.status === 200)).toBe(true);
      // Three requests, one per store, together naming every partition once.
      expect(requests).toHaveLength(3);
      const named = requests.map((r) => partitionsOf(r.body));
      for (const ps of named) expect(new Set(ps.map((p) => leaders.get(p))).size).toBe(1);
      expect(named.flat().sort((a, b) => a - b)).toEqual(keys.map((_, p) => p));
      await producer.close();
    } finally {
      await front.close();
    }
  });

  it('spreads keyless records over every partition, each request naming one leader store', async () => {
    await kafka.admin().createTopics({ topics: [{ topic: 'spread3', numPartitions: 12 }] });
    const leaders = await leadersOf('spread3');
    const { front, producer, produces } = await producerOf('spread3');
    try {
      const value = 'v'.repeat(1000);
      const sends = Array.from({ length: 3000 }, () => producer.send({ topic: 'spread3', messages: [{ value }] }));
      const placed = (await Promise.all(sends)).map(([m]) => m!.partition);
      await producer.close();
      const counts = Array.from({ length: 12 }, (_, p) => placed.filter((x) => x === p).length);
      expect(Math.min(...counts)).toBeGreaterThan(0.7 * (3000 / 12));
      const requests = produces();
      expect(requests.filter((r) => r.status !== 200)).toEqual([]);
      for (const r of requests) expect(new Set(partitionsOf(r.body).map((p) => leaders.get(p))).size).toBe(1);
      // ~3 MB in requests that still fill toward 1 MiB per store, not one request per stint.
      expect(requests.length).toBeLessThanOrEqual(9);
    } finally {
      await front.close();
    }
  });

  it('saturated, a place has at most max.in.flight requests in flight, filled to max.request.size', async () => {
    await kafka.admin().createTopics({ topics: [{ topic: 'saturated', numPartitions: 12 }] });
    const leaders = await leadersOf('saturated');
    // Answers slow enough that the producer's 12 partitions fill while a place's requests are out.
    const { front, producer, produces } = await producerOf(
      'saturated',
      {},
      { delayMs: (req) => (isProduce(req) ? 300 : 0) },
    );
    try {
      const value = Buffer.alloc(1000, 1);
      const sends = Array.from({ length: 48_000 }, () => producer.send({ topic: 'saturated', messages: [{ value }] }));
      await Promise.all(sends);
      await producer.close();
      const requests = produces();
      expect(requests.filter((r) => r.status !== 200)).toEqual([]);
      const placeOf = (r: (typeof requests)[number]) => leaders.get(partitionsOf(r.body)[0]!)!;
      for (const place of new Set(leaders.values())) {
        const mine = requests.filter((r) => placeOf(r) === place);
        // In flight at once, per place: never more than max.in.flight (5).
        const most = Math.max(
          ...mine.map((r) => mine.filter((o) => o.startedAt <= r.startedAt && o.endedAt > r.startedAt).length),
        );
        expect(most).toBeLessThanOrEqual(5);
      }
      // ~48 MB in requests of ~1 MiB: a request's partitions' batches fill it, cut where a whole batch would not fit.
      const sizes = requests.map((r) => r.body.byteLength).sort((a, b) => a - b);
      const median = sizes[Math.floor(sizes.length / 2)]!;
      expect(median).toBeGreaterThan(0.9 * 1024 * 1024);
      // 46 at 1 MiB each; whole heads only left requests near 0.6 MiB (about 77 of them). 48-55 seen.
      expect(requests.length).toBeLessThanOrEqual(66);
    } finally {
      await front.close();
    }
  });

  it("saturated, a place's requests in flight carry different partitions, so they race less", async () => {
    await kafka.admin().createTopics({ topics: [{ topic: 'rotated', numPartitions: 12 }] });
    const leaders = await leadersOf('rotated');
    const { front, producer, produces } = await producerOf(
      'rotated',
      {},
      { delayMs: (req) => (isProduce(req) ? 300 : 0) },
    );
    try {
      const value = Buffer.alloc(1000, 1);
      const sends = Array.from({ length: 48_000 }, () => producer.send({ topic: 'rotated', messages: [{ value }] }));
      await Promise.all(sends);
      await producer.close();
      const requests = produces().map((r) => ({ ...r, partitions: partitionsOf(r.body) }));
      expect(requests.filter((r) => r.status !== 200)).toEqual([]);
      // Pairs of a place's requests in flight at once holding a partition in common: the server may
      // commit the two out of order, and the later batch waits for the gap to fill. Four partitions
      // a place and five requests in flight leave some. Sending the first partition's batches while
      // it had any made 50 pairs in 48-51 requests (five of one partition at once); each
      // partition's head in turn (fewest in flight first) makes 19-24.
      const place = (r: (typeof requests)[number]) => leaders.get(r.partitions[0]!);
      const pairs = requests.reduce(
        (n, r) =>
          n +
          requests.filter(
            (o) =>
              o !== r &&
              place(o) === place(r) &&
              o.startedAt <= r.startedAt &&
              o.endedAt > r.startedAt &&
              o.partitions.some((p) => r.partitions.includes(p)),
          ).length,
        0,
      );
      expect(pairs).toBeLessThanOrEqual(0.75 * requests.length);
    } finally {
      await front.close();
    }
  });
});
