import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Kafka, type Consumer, type ConsumerRecord, type TopicPartition } from '../../src/client/index.js';
import { startServer, stopServer, tempDir, type LocalServer } from '../support/local-server.js';
import { startArrivalProxy } from '../support/arrival-proxy.js';
import { proxy } from './support/flaky-proxy.js';
import { until } from '../support/until.js';

const key = (r: { partition: number; offset: number }) => `${r.partition}@${r.offset}`;
const sortTps = (tps: TopicPartition[]) => tps.map((t) => `${t.topic}-${t.partition}`).sort();

describe('consumer against the local server', () => {
  let dir: Awaited<ReturnType<typeof tempDir>>;
  let server: LocalServer;
  let kafka: Kafka;
  const fast = { heartbeatIntervalMs: 100, autoCommitIntervalMs: 200, fetchMaxWaitMs: 100, sessionTimeoutMs: 6000 };

  // Keys k0..k15: murmur2 spreads them over all four partitions (k0..k12 would leave partition 3 empty).
  async function produce(topic: string, n: number, from = 0) {
    const producer = kafka.producer({ lingerMs: 5 });
    await Promise.all(
      Array.from({ length: n }, (_, i) =>
        producer.send({ topic, messages: [{ key: `k${(from + i) % 16}`, value: `v${from + i}` }] }),
      ),
    );
    await producer.close();
  }

  beforeAll(async () => {
    dir = await tempDir('client-consumer-');
    server = await startServer(dir.path);
    kafka = new Kafka({ url: server.origin });
  });
  afterAll(async () => {
    await stopServer(server);
    await dir.remove();
  });

  it('two consumers split the partitions; after one closes the other takes over from its committed offsets, nothing lost or repeated', async () => {
    await kafka.admin().createTopics({ topics: [{ topic: 'orders', numPartitions: 4 }] });
    await produce('orders', 400);
    const seen: Record<'a' | 'b', ConsumerRecord[]> = { a: [], b: [] };
    const events: string[] = [];
    const start = async (name: 'a' | 'b') => {
      const c = kafka.consumer({ groupId: 'billing', clientId: name, autoOffsetReset: 'earliest', ...fast });
      await c.subscribe({
        topics: ['orders'],
        listener: {
          onPartitionsAssigned: (tps) => void events.push(`${name} assigned ${sortTps(tps).join(',')}`),
          onPartitionsRevoked: (tps) => void events.push(`${name} revoked ${sortTps(tps).join(',')}`),
        },
      });
      await c.run({ eachMessage: async ({ message }) => void seen[name].push(message) });
      return c;
    };
    const a = await start('a');
    const b = await start('b');
    const total = () => seen.a.length + seen.b.length;
    await until(
      'the first 400 records and a split',
      () => total() >= 400 && a.assignment().length === 2 && b.assignment().length === 2,
    );
    expect(sortTps([...a.assignment(), ...b.assignment()])).toEqual(['orders-0', 'orders-1', 'orders-2', 'orders-3']);

    const aPartitions = sortTps(a.assignment());
    // a closes while records keep coming: it commits what it processed, revokes, leaves the group.
    const wave = produce('orders', 200, 400);
    await until('a consuming the second wave', () => total() > 420);
    await a.close();
    expect(events).toContain(`a revoked ${aPartitions.join(',')}`);
    const bBefore = seen.b.length;
    await wave;
    await produce('orders', 100, 600);
    await until('all 700 records', () => total() >= 700);
    await until('b owning every partition', () => b.assignment().length === 4);
    await new Promise((r) => setTimeout(r, 300)); // anything repeated would arrive now
    const all = [...seen.a, ...seen.b];
    expect(all.length).toBe(700);
    expect(new Set(all.map(key)).size).toBe(700);
    expect(new Set(all.map((r) => r.value!.toString())).size).toBe(700);
    // Per partition, each consumer saw an increasing run of offsets.
    for (const list of [seen.a, seen.b]) {
      const last = new Map<number, number>();
      for (const r of list) {
        expect(r.offset).toBeGreaterThan(last.get(r.partition) ?? -1);
        last.set(r.partition, r.offset);
      }
    }
    expect(events.filter((e) => e.startsWith('b assigned')).length).toBeGreaterThanOrEqual(2);
    // b took over a's partitions: records produced after a left, on every partition, went to b.
    expect(sortTps(seen.b.slice(bBefore))).toEqual(expect.arrayContaining(aPartitions));
    await b.close();
    const d = await kafka.admin().describeGroup('billing');
    expect(d.state).toBe('Empty');
    expect(d.partitions.map((p) => p.lag)).toEqual([0, 0, 0, 0]);
  }, 40_000);

  it('after a consumer stops without committing its tail, the next one repeats exactly that tail', async () => {
    await kafka.admin().createTopics({ topics: [{ topic: 'tail', numPartitions: 2 }] });
    const producer = kafka.producer();
    for (const p of [0, 1])
      await producer.send({
        topic: 'tail',
        messages: Array.from({ length: 50 }, (_, i) => ({ value: `p${p}-${i}`, partition: p })),
      });
    await producer.close();

    const first = kafka.consumer({
      groupId: 'tail-group',
      autoOffsetReset: 'earliest',
      enableAutoCommit: false,
      maxPollRecords: 30,
      ...fast,
    });
    await first.subscribe({ topics: ['tail'] });
    const firstSeen: ConsumerRecord[] = [];
    while (firstSeen.length < 100) firstSeen.push(...(await first.poll({ timeoutMs: 1000 })));
    expect(await first.position({ topic: 'tail', partition: 0 })).toBe(50);
    // Processed everything, committed only up to offset 20 on p0 and 35 on p1, then goes away.
    await first.commitSync([
      { topic: 'tail', partition: 0, offset: 20 },
      { topic: 'tail', partition: 1, offset: 35 },
    ]);
    expect((await first.committed()).map((o) => [o.partition, o.offset]).sort()).toEqual([
      [0, 20],
      [1, 35],
    ]);
    await first.close();

    const second = kafka.consumer({ groupId: 'tail-group', autoOffsetReset: 'earliest', ...fast });
    await second.subscribe({ topics: ['tail'] });
    const again: ConsumerRecord[] = [];
    await until('the uncommitted tail', async () => {
      again.push(...(await second.poll({ timeoutMs: 200 })));
      return again.length >= 45;
    });
    expect((await second.poll({ timeoutMs: 300 })).length).toBe(0);
    expect(again.map(key).sort()).toEqual(
      [
        ...Array.from({ length: 30 }, (_, i) => `0@${20 + i}`),
        ...Array.from({ length: 15 }, (_, i) => `1@${35 + i}`),
      ].sort(),
    );
    await second.close();
  }, 30_000);

  it('assign, seek, pause/resume, position, max.poll.records and commits without a group membership', async () => {
    await kafka.admin().createTopics({ topics: [{ topic: 'manual', numPartitions: 2 }] });
    const producer = kafka.producer();
    await producer.send({
      topic: 'manual',
      messages: Array.from({ length: 20 }, (_, i) => ({ value: `m${i}`, partition: i % 2 })),
    });
    await producer.close();
    const c: Consumer = kafka.consumer({
      groupId: 'manual-group',
      autoOffsetReset: 'earliest',
      maxPollRecords: 4,
      enableAutoCommit: false,
      fetchMaxWaitMs: 50,
    });
    c.assign([
      { topic: 'manual', partition: 0 },
      { topic: 'manual', partition: 1 },
    ]);
    expect(await c.position({ topic: 'manual', partition: 1 })).toBe(0);
    const batch = await c.poll();
    expect(batch.length).toBeLessThanOrEqual(4);
    c.pause([{ topic: 'manual', partitions: [0] }]);
    expect(c.paused()).toEqual([{ topic: 'manual', partition: 0 }]);
    c.seek({ topic: 'manual', partition: 1, offset: 7 });
    const got: ConsumerRecord[] = [];
    await until('partition 1 from offset 7', async () => {
      got.push(...(await c.poll({ timeoutMs: 200 })));
      return got.length >= 3;
    });
    expect(got.every((r) => r.partition === 1)).toBe(true);
    expect(got.map((r) => r.offset)).toEqual([7, 8, 9]);
    expect(await c.position({ topic: 'manual', partition: 1 })).toBe(10);
    c.resume([{ topic: 'manual' }]);
    const rest: ConsumerRecord[] = [];
    await until('partition 0', async () => {
      rest.push(...(await c.poll({ timeoutMs: 200 })));
      return (await c.position({ topic: 'manual', partition: 0 })) === 10;
    });
    await new Promise<void>((resolve, reject) => c.commitAsync(undefined, (e) => (e ? reject(e) : resolve())));
    expect((await c.committed()).map((o) => [o.partition, o.offset]).sort()).toEqual([
      [0, 10],
      [1, 10],
    ]);
    c.seekToBeginning([{ topic: 'manual', partition: 0 }]);
    expect(await c.position({ topic: 'manual', partition: 0 })).toBe(0);
    await c.close();
  });

  /**
   * A one-partition topic of four stored requests of 10 records (one answer each at a small
   * max.partition.fetch.bytes), and a client that notes the offset of every multi-partition fetch.
   */
  async function fourAnswers(topic: string): Promise<{ fetched: number[]; counted: Kafka }> {
    await kafka.admin().createTopics({ topics: [{ topic, numPartitions: 1 }] });
    const producer = kafka.producer();
    for (let b = 0; b < 4; b++)
      await producer.send({ topic, messages: Array.from({ length: 10 }, (_, i) => ({ value: `m${b * 10 + i}` })) });
    await producer.close();
    const fetched: number[] = [];
    const counting: typeof fetch = async (url, init) => {
      if (String(url).endsWith('/records:fetch'))
        fetched.push(JSON.parse(String(init?.body)).topics[0].partitions[0].fetch_offset);
      return fetch(url, init);
    };
    return { fetched, counted: new Kafka({ url: server.origin, fetch: counting }) };
  }

  /** A consumer of a fourAnswers topic, one answer (10 records) at a time, once poll() handed out the first. */
  async function afterFirstAnswer(via: Kafka, topic: string): Promise<Consumer> {
    const c = via.consumer({
      groupId: `${topic}-group`,
      autoOffsetReset: 'earliest',
      maxPartitionFetchBytes: 1, // one stored request of 10 records per answer
      enableAutoCommit: false,
      fetchMaxWaitMs: 50,
    });
    c.assign([{ topic, partition: 0 }]);
    let first: ConsumerRecord[] = [];
    await until('the first answer', async () => (first = await c.poll({ timeoutMs: 200 })).length > 0);
    expect(first.map((r) => r.offset)).toEqual(Array.from({ length: 10 }, (_, i) => i));
    return c;
  }

  it('fetches the next answer while the application works through this one, and a seek drops what was fetched ahead', async () => {
    const { fetched, counted } = await fourAnswers('ahead');
    const c = counted.consumer({
      groupId: 'ahead-group',
      autoOffsetReset: 'earliest',
      maxPollRecords: 2,
      maxPartitionFetchBytes: 1,
      enableAutoCommit: false,
      fetchMaxWaitMs: 50,
    });
    c.assign([{ topic: 'ahead', partition: 0 }]);
    let first: ConsumerRecord[] = [];
    await until('the first records', async () => (first = await c.poll({ timeoutMs: 200 })).length > 0);
    expect(first.map((r) => r.offset)).toEqual([0, 1]);
    // The answer after the one in hand is asked for before the application has finished this one.
    await until('a fetch ahead', () => fetched.includes(10));
    expect(fetched.filter((o) => o === 20)).toEqual([]); // one answer ahead, no more
    c.seek({ topic: 'ahead', partition: 0, offset: 25 });
    const got: ConsumerRecord[] = [];
    await until('the records after the seek', async () => {
      got.push(...(await c.poll({ timeoutMs: 200 })));
      return got.length >= 15;
    });
    expect(got.map((r) => r.offset)).toEqual(Array.from({ length: 15 }, (_, i) => 25 + i));
    await c.close();
  });

  it('asks for the next answer as soon as one arrives, without waiting for the next poll()', async () => {
    const { fetched, counted } = await fourAnswers('eager');
    const c = await afterFirstAnswer(counted, 'eager');
    // No poll() from here: the answer at 10 arrives while the application works, and the fetch
    // after it leaves from its end at once (the server reads it while the client decodes).
    await until('the fetch after the next answer', () => fetched.includes(20));
    expect(fetched.filter((o) => o === 30)).toEqual([]); // one answer in hand, one in flight, no more
    const rest: ConsumerRecord[] = [];
    await until('the rest', async () => {
      rest.push(...(await c.poll({ timeoutMs: 200 })));
      return rest.length >= 30;
    });
    expect(rest.map((r) => r.offset)).toEqual(Array.from({ length: 30 }, (_, i) => 10 + i));
    await c.close();
  });

  it('puts the next fetch on the wire before poll() returns, so the server reads it while the application works', async () => {
    await fourAnswers('wire');
    const proxy = await startArrivalProxy(server.origin);
    try {
      const c = await afterFirstAnswer(new Kafka({ url: proxy.origin }), 'wire');
      // The application works through the records without yielding to the event loop, until the
      // proxy has seen the next fetch (the bound only ends a test that would fail).
      const bound = Date.now() + 20_000;
      while (!proxy.fetchOffsets().some((f) => f.offset === 10) && Date.now() < bound);
      const busyUntil = Date.now();
      // The proxy holds the fetch at 10: no answer came back that could have sent another.
      expect(
        proxy
          .fetchOffsets()
          .filter((f) => f.at <= busyUntil)
          .map((f) => f.offset),
      ).toEqual([0, 10]);
      proxy.release();
      await c.close();
    } finally {
      await proxy.stop();
    }
  });

  it("asks each partition for 4 MiB by default, and for Kafka's 1 MiB when configured so", async () => {
    await kafka.admin().createTopics({ topics: [{ topic: 'sized', numPartitions: 1 }] });
    const producer = kafka.producer();
    await producer.send({ topic: 'sized', messages: [{ value: 'x' }] });
    await producer.close();
    // A proxy per consumer: one's fetch still in flight at its close must not count as the next one's.
    const asked = async (config: { maxPartitionFetchBytes?: number }) => {
      const logged = await proxy(server.origin);
      try {
        const c = new Kafka({ url: logged.origin }).consumer(config);
        c.assign([{ topic: 'sized', partition: 0 }]);
        c.seek({ topic: 'sized', partition: 0, offset: 0 });
        await until('a record', async () => (await c.poll({ timeoutMs: 200 })).length > 0);
        await c.close();
        const fetch = logged.log.find((r) => r.url.endsWith('/records:fetch'))!;
        return (JSON.parse(fetch.body.toString()) as { topics: { partitions: { partition_max_bytes: number }[] }[] })
          .topics[0]!.partitions[0]!.partition_max_bytes;
      } finally {
        await logged.close();
      }
    };
    expect(await asked({})).toBe(4 * 1024 * 1024);
    expect(await asked({ maxPartitionFetchBytes: 1_048_576 })).toBe(1_048_576);
  });

  it("shares one fetch's max bytes among its partitions: none is starved or left to wait while others have records", async () => {
    await kafka.admin().createTopics({ topics: [{ topic: 'fair', numPartitions: 4 }] });
    const producer = kafka.producer({ lingerMs: 0 });
    for (let i = 0; i < 10; i++)
      for (let p = 0; p < 4; p++)
        await producer.send({ topic: 'fair', messages: [{ value: `p${p}-${i}-${'x'.repeat(1000)}`, partition: p }] });
    await producer.close();
    // Each answer holds one batch: the first partition asked for with records takes it all.
    const c = kafka.consumer({
      autoOffsetReset: 'earliest',
      maxPartitionFetchBytes: 1,
      fetchMaxBytes: 1,
    });
    c.assign([0, 1, 2, 3].map((partition) => ({ topic: 'fair', partition })));
    const got: ConsumerRecord[] = [];
    await until('all forty', async () => {
      got.push(...(await c.poll({ timeoutMs: 200 })));
      return got.length >= 40;
    });
    await c.close();
    // Partitions take turns (KIP-74's rotation), from the first answers on: one that answered empty
    // while others took the bytes is asked again at once, not after an idle wait.
    expect(new Set(got.slice(0, 8).map((r) => r.partition)).size).toBe(4);
    for (let p = 0; p < 4; p++)
      expect(got.filter((r) => r.partition === p).map((r) => r.offset)).toEqual(
        Array.from({ length: 10 }, (_, i) => i),
      );
  });

  it('eachBatch with a failing handler redelivers the failed records', async () => {
    await kafka.admin().createTopics({ topics: [{ topic: 'retry', numPartitions: 1 }] });
    await produce('retry', 10);
    const c = kafka.consumer({
      groupId: 'retry-group',
      autoOffsetReset: 'earliest',
      ...fast,
      retryBackoffMs: 10,
      logger: () => {},
    });
    await c.subscribe({ topics: ['retry'] });
    const processed: number[] = [];
    let failed = false;
    await c.run({
      eachBatch: async ({ batch, resolveOffset }) => {
        for (const m of batch.messages) {
          if (m.offset === 5 && !failed) {
            failed = true;
            throw new Error('transient');
          }
          processed.push(m.offset);
          resolveOffset(m.offset);
        }
      },
    });
    await until('all ten', () => processed.length >= 10);
    await c.close();
    expect(processed).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    const d = await kafka.admin().describeGroup('retry-group');
    expect(d.partitions[0]!.committedOffset).toBe(10);
  });
});
