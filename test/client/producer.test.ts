import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Kafka, KafkaClientError, type RecordMetadata } from '../../src/client/index.js';
import { encodeMessage } from '../../src/client/codec.js';
import { partitionForKey } from '../../src/wire/murmur2.js';
import { decodeTopicData } from '../../src/wire/produce-request.js';
import { flakyProxy, isMultiPartitionProduce, isProduce, proxy } from './support/flaky-proxy.js';
import { startServer, stopServer, tempDir, type LocalServer } from '../support/local-server.js';
import { until } from '../support/until.js';

/** Every record of a topic, partition by partition, as `value` strings in offset order. */
async function readAll(
  kafka: Kafka,
  topic: string,
): Promise<Map<number, { offset: number; key: string | null; value: string }[]>> {
  const admin = kafka.admin();
  const d = await admin.describeTopic(topic);
  const consumer = kafka.consumer({ autoOffsetReset: 'earliest', maxPollRecords: 10_000 });
  consumer.assign(d.partitions.map((p) => ({ topic, partition: p.partition })));
  const out = new Map<number, { offset: number; key: string | null; value: string }[]>(
    d.partitions.map((p) => [p.partition, []]),
  );
  const total = d.partitions.reduce((n, p) => n + p.highWatermark, 0);
  let seen = 0;
  while (seen < total) {
    const records = await consumer.poll({ timeoutMs: 2000 });
    if (records.length === 0) break;
    for (const r of records)
      out
        .get(r.partition)!
        .push({ offset: r.offset, key: r.key?.toString() ?? null, value: r.value?.toString() ?? '<null>' });
    seen += records.length;
  }
  await consumer.close();
  return out;
}

describe('producer against the local server', () => {
  let dir: Awaited<ReturnType<typeof tempDir>>;
  let server: LocalServer | undefined;
  let kafka: Kafka;

  beforeAll(async () => {
    dir = await tempDir('client-producer-');
    server = await startServer(dir.path);
    kafka = new Kafka({ url: server.origin });
  });
  afterAll(async () => {
    await stopServer(server);
    await dir.remove();
  });

  it('moves keyless records to the next sticky partition when a batch is full, so no stub batch follows it', async () => {
    const admin = kafka.admin();
    await admin.createTopics({ topics: [{ topic: 'sticky', numPartitions: 4 }] });
    const value = 'x'.repeat(200);
    const size = encodeMessage({ value }, Date.now()).sizeInBytes;
    // Room for exactly 10 records; the partitioner's byte count reaches batch.size only at the 11th.
    const producer = kafka.producer({ batchSize: 10 * size + Math.floor(size / 2), lingerMs: 30_000 });
    const sends = Array.from({ length: 35 }, () => producer.send({ topic: 'sticky', messages: [{ value }] }));
    // The three full batches leave at once (not at linger.ms): each is due as soon as it is full.
    const full = (await Promise.all(sends.slice(0, 30))).map(([m]) => m!);
    const counts = new Map<number, number>();
    for (const m of full) counts.set(m.partition, (counts.get(m.partition) ?? 0) + 1);
    // Each stint on a partition is one whole batch, with no 11th record left behind as a stub.
    for (const n of counts.values()) expect(n % 10).toBe(0);
    await producer.flush();
    const rest = (await Promise.all(sends.slice(30))).map(([m]) => m!);
    expect(new Set(rest.map((m) => m.partition)).size).toBe(1);
    await producer.close();
  });

  it('spreads keyless records over every partition 16 KiB at a time, in requests that still pack ~1 MiB', async () => {
    await kafka.admin().createTopics({ topics: [{ topic: 'spread', numPartitions: 12 }] });
    const front = await proxy(server!.origin);
    try {
      const producer = new Kafka({ url: front.origin }).producer();
      const value = 'v'.repeat(1000);
      const size = encodeMessage({ value }, Date.now()).sizeInBytes;
      const sends = Array.from({ length: 3000 }, () => producer.send({ topic: 'spread', messages: [{ value }] }));
      const placed = (await Promise.all(sends)).map(([m]) => m!.partition);
      await producer.close();
      // Stints of Kafka's 16 KiB (batch.size as its sticky partitioner uses it), not of a batch.
      const perStint = Math.ceil(16_384 / size);
      const stints: number[] = [];
      placed.forEach((p, i) => (i > 0 && p === placed[i - 1] ? stints[stints.length - 1]!++ : stints.push(1)));
      expect(Math.max(...stints)).toBe(perStint);
      expect(stints.length).toBeGreaterThanOrEqual(Math.floor(3000 / perStint));
      const counts = Array.from({ length: 12 }, (_, p) => placed.filter((x) => x === p).length);
      // Every partition, and evenly: each round of switches visits every partition once.
      expect(Math.min(...counts)).toBeGreaterThan(0.7 * (3000 / 12));
      // The batches of many partitions travel together: 3 MB in requests near 1 MiB, not one per stint.
      const produces = front.log.filter(isProduce);
      expect(produces.filter((e) => e.status !== 200)).toEqual([]);
      expect(produces.length).toBeLessThanOrEqual(5);
      const log = await readAll(kafka, 'spread');
      expect([...log.values()].map((r) => r.length)).toEqual(counts);
    } finally {
      await front.close();
    }
  });

  it("places keyed records with the server's murmur2 partitioner, batches them, and resolves offsets in order", async () => {
    const admin = kafka.admin();
    await admin.createTopics({ topics: [{ topic: 'keyed', numPartitions: 4 }] });
    const producer = kafka.producer({ lingerMs: 20 });
    const sends = Array.from({ length: 200 }, (_, i) =>
      producer.send({
        topic: 'keyed',
        messages: [{ key: `user-${i % 17}`, value: `v${i}`, headers: { n: String(i) } }],
      }),
    );
    const results = (await Promise.all(sends)).map(([m]) => m!);
    results.forEach((m, i) => expect(m.partition).toBe(partitionForKey(Buffer.from(`user-${i % 17}`), 4)));
    // Offsets grow by one per partition in send order: batching and pipelining kept the order.
    const next = new Map<number, number>();
    for (const m of results) {
      expect(m.offset).toBe(next.get(m.partition) ?? 0);
      next.set(m.partition, m.offset + 1);
    }
    expect(producer.idempotent).toBe(true);
    expect(producer.producerIdentity?.producerId).toBeGreaterThanOrEqual(0);
    const log = await readAll(kafka, 'keyed');
    for (const [p, records] of log)
      expect(records.map((r) => r.value)).toEqual(results.flatMap((m, i) => (m.partition === p ? [`v${i}`] : [])));
    await producer.close();
  });

  it("sends a send() call's messages together, honours explicit partitions, acks 0/1 and flush", async () => {
    await kafka.admin().createTopics({ topics: [{ topic: 'acks', numPartitions: 2 }] });
    for (const acks of [1, 0] as const) {
      const producer = kafka.producer({ acks, lingerMs: 1000 });
      expect(producer.idempotent).toBe(false);
      const pending = producer.send({
        topic: 'acks',
        messages: [
          { value: 'a', partition: 1 },
          { value: 'b', partition: 1 },
          { value: null, key: 'k', partition: 0 },
        ],
      });
      const t0 = Date.now();
      await producer.flush(); // does not wait for linger.ms
      expect(Date.now() - t0).toBeLessThan(900);
      const md = await pending;
      expect(md.map((m) => m.partition)).toEqual([1, 1, 0]);
      if (acks === 1) expect(md.map((m) => m.offset)).toEqual([0, 1, 0]);
      else expect(md.every((m) => m.offset === -1)).toBe(true);
      await producer.close();
    }
    // acks=0 is answered before the write: wait for it to land.
    for (let i = 0; i < 100 && (await kafka.admin().describeTopic('acks')).partitions[1]!.highWatermark < 4; i++)
      await new Promise((r) => setTimeout(r, 20));
    const log = await readAll(kafka, 'acks');
    expect(log.get(1)!.map((r) => r.value)).toEqual(['a', 'b', 'a', 'b']);
  });

  it('fails with typed errors: unknown topic, bad partition, bad config, closed producer', async () => {
    const producer = kafka.producer();
    const e = await producer.send({ topic: 'nope', messages: [{ value: 'x' }] }).catch((x: unknown) => x);
    expect(e).toBeInstanceOf(KafkaClientError);
    expect(e).toMatchObject({ type: 'UNKNOWN_TOPIC_OR_PARTITION', status: 404 });
    await kafka.admin().createTopics({ topics: [{ topic: 'small', numPartitions: 1 }] });
    await expect(producer.send({ topic: 'small', messages: [{ value: 'x', partition: 3 }] })).rejects.toMatchObject({
      type: 'UNKNOWN_TOPIC_OR_PARTITION',
      retriable: false,
    });
    expect(() => kafka.producer({ acks: 1, enableIdempotence: true })).toThrow(/requires acks='all'/);
    await producer.close();
    await expect(producer.send({ topic: 'small', messages: [{ value: 'x' }] })).rejects.toMatchObject({
      type: 'ILLEGAL_STATE',
    });
  });

  it("carries every ready partition's batch in one request, keyed records over 12 partitions", async () => {
    await kafka.admin().createTopics({ topics: [{ topic: 'together', numPartitions: 12 }] });
    const front = await proxy(server!.origin);
    try {
      // The client's defaults (idempotent) but for linger.ms, wide enough that on a loaded machine
      // every batch has lingered half of it (what joins a due one) when the first is due; its
      // producer id and metadata in hand first, so the batches' linger is the only wait.
      const producer = new Kafka({ url: front.origin }).producer({ lingerMs: 1000 });
      await producer.connect();
      await producer.send({ topic: 'together', messages: [{ value: 'warm', partition: 0 }] });
      const before = front.log.filter(isProduce).length;
      // Keys spread over every partition: 12 batches that linger from the same moment.
      const keys = Array.from({ length: 12 }, (_, p) => {
        for (let i = 0; ; i++) if (partitionForKey(Buffer.from(`k${i}`), 12) === p) return `k${i}`;
      });
      const sends = keys.flatMap((key) =>
        Array.from({ length: 10 }, (_, i) =>
          producer.send({ topic: 'together', messages: [{ key, value: `${key}-${i}` }] }),
        ),
      );
      const placed = (await Promise.all(sends)).map(([m]) => m!.partition);
      expect(new Set(placed).size).toBe(12);
      const produces = front.log.filter(isProduce).slice(before);
      // One request, Kafka's one ProduceRequest per broker: each partition's batch in it.
      expect(produces).toHaveLength(1);
      expect(isMultiPartitionProduce(produces[0]!.url)).toBe(true);
      const [topic] = decodeTopicData(produces[0]!.body);
      expect(topic!.partitions.map((p) => p.index).sort((a, b) => a - b)).toEqual(keys.map((_, p) => p));
      await producer.close();
      const log = await readAll(kafka, 'together');
      for (const [p, records] of log) expect(records.filter((r) => r.key === keys[p])).toHaveLength(10);
    } finally {
      await front.close();
    }
  });

  it('keeps up to max.in.flight requests in flight for one busy partition, in sequence order', async () => {
    await kafka.admin().createTopics({ topics: [{ topic: 'one-busy', numPartitions: 1 }] });
    // Produce requests are held at the proxy: whatever the producer sends before the first answer is
    // what one wake-up of its sender sent.
    const held = await proxy(server!.origin, { delayMs: (req) => (isProduce(req) ? 400 : 0) });
    try {
      const producer = new Kafka({ url: held.origin }).producer({ batchSize: 2000, lingerMs: 1000 });
      await producer.connect();
      await kafka.admin().describeTopic('one-busy');
      const sends = Array.from({ length: 40 }, (_, i) =>
        producer.send({ topic: 'one-busy', messages: [{ value: Buffer.alloc(500, i) }] }),
      );
      await until('5 produces held', () => held.log.filter(isProduce).length >= 5, 350).catch(() => {});
      await new Promise((r) => setTimeout(r, 50));
      expect(held.log.filter(isProduce).length).toBe(5);
      const acked = (await Promise.all(sends)).map(([m]) => m!.offset);
      expect(acked).toEqual(acked.map((_, i) => i));
      await producer.close();
    } finally {
      await held.close();
    }
  });

  it('applies buffer.memory back-pressure: send() waits, then times out after max.block.ms', async () => {
    // Nothing answers on this port: batches stay unacknowledged and hold their memory.
    const dead = new Kafka({ url: 'http://127.0.0.1:9', requestTimeoutMs: 1000 });
    const producer = dead.producer({
      bufferMemory: 1000,
      maxBlockMs: 200,
      enableIdempotence: false,
      deliveryTimeoutMs: 1500,
      requestTimeoutMs: 1000,
      lingerMs: 0,
    });
    // Metadata cannot be fetched either: the producer's metadata view is primed through the cache.
    (producer as unknown as { metadata: { counts: Map<string, unknown> } }).metadata.counts.set('t', {
      count: 1,
      at: Date.now(),
    });
    const first = producer.send({ topic: 't', messages: [{ value: Buffer.alloc(700) }] });
    first.catch(() => {});
    const t0 = Date.now();
    const second = await producer
      .send({ topic: 't', messages: [{ value: Buffer.alloc(700) }] })
      .catch((e: unknown) => e);
    expect(second).toMatchObject({ type: 'REQUEST_TIMED_OUT' });
    expect((second as Error).message).toMatch(/buffer.memory/);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(190);
    await expect(first).rejects.toMatchObject({ retriable: true }); // delivery.timeout.ms
    await producer.close({ timeoutMs: 100 });
  });

  it('idempotence: responses lost after the write are retried with the same sequences and written once', async () => {
    await kafka.admin().createTopics({ topics: [{ topic: 'lost-acks', numPartitions: 3 }] });
    let n = 0;
    const proxy = await flakyProxy(server!.origin, (req) => isProduce(req) && ++n % 3 === 0);
    try {
      const producer = new Kafka({ url: proxy.origin }).producer({
        lingerMs: 2,
        batchSize: 512,
        retryBackoffMs: 10,
        retryBackoffMaxMs: 50,
      });
      const sends: Promise<RecordMetadata[]>[] = [];
      for (let i = 0; i < 600; i++)
        sends.push(producer.send({ topic: 'lost-acks', messages: [{ key: `k${i % 7}`, value: `m${i}` }] }));
      const acked = (await Promise.all(sends)).map(([m]) => m!);
      await producer.close();
      expect(proxy.dropped()).toBeGreaterThan(3);
      const log = await readAll(kafka, 'lost-acks');
      const values = [...log.values()].flat().map((r) => r.value);
      expect(values.length).toBe(600); // exactly once
      expect(new Set(values).size).toBe(600);
      for (const [p, records] of log) {
        // Per partition, the log order is the send order, and each ack names the record's real offset.
        const sent = acked.flatMap((m, i) => (m.partition === p ? [{ value: `m${i}`, offset: m.offset }] : []));
        expect(records.map((r) => ({ value: r.value, offset: r.offset }))).toEqual(sent);
      }
    } finally {
      await proxy.close();
    }
  });

  it('idempotence: a batch that overtook the one before it is resent behind it, with no epoch bump', async () => {
    await kafka.admin().createTopics({ topics: [{ topic: 'overtaken', numPartitions: 1 }] });
    // The first request reaches the server late; the second gets there first (out of order, as
    // it is) but its answer comes back after the first one's success.
    let n = 0;
    const order = new WeakMap<object, number>();
    const nth = (req: object) => {
      if (!order.has(req)) order.set(req, isProduce(req as never) ? ++n : 0);
      return order.get(req)!;
    };
    const p = await proxy(server!.origin, {
      delayMs: (req) => (nth(req) === 1 ? 150 : 0),
      answerDelayMs: (req) => (nth(req) === 2 ? 400 : 0),
    });
    try {
      const producer = new Kafka({ url: p.origin }).producer({ lingerMs: 0, retryBackoffMs: 10 });
      const first = producer.send({ topic: 'overtaken', messages: [{ value: 'a' }] });
      await until('a request', () => n >= 1);
      const second = producer.send({ topic: 'overtaken', messages: [{ value: 'b' }] });
      const identity = producer.producerIdentity!;
      const [[ma], [mb]] = await Promise.all([first, second]);
      expect([ma!.offset, mb!.offset]).toEqual([0, 1]);
      expect(producer.producerIdentity).toEqual(identity); // no KIP-360 bump: nothing was missing
      await producer.close();
      expect([...(await readAll(kafka, 'overtaken')).values()].flat().map((r) => r.value)).toEqual(['a', 'b']);
    } finally {
      await p.close();
    }
  });

  it('idempotence: before an epoch bump, a batch whose answer was lost is resent as it was, so it is written once', async () => {
    await kafka.admin().createTopics({ topics: [{ topic: 'bumped', numPartitions: 2 }] });
    // Request 1 (partition 0) is written but its answer is lost; request 2 (partition 1) is
    // answered UNKNOWN_PRODUCER_ID, so the producer must bump its epoch (KIP-360).
    let n = 0;
    const order = new WeakMap<object, number>();
    const nth = (req: object) => {
      if (!order.has(req)) order.set(req, isProduce(req as never) ? ++n : 0);
      return order.get(req)!;
    };
    const p = await proxy(server!.origin, {
      delayMs: (req) => (nth(req) === 1 ? 200 : 0),
      dropResponse: (req) => nth(req) === 1,
      legacy: (req) =>
        nth(req) === 2
          ? { answer: { status: 400, body: { error_code: 59, error: 'UNKNOWN_PRODUCER_ID', message: 'lost' } } }
          : undefined,
    });
    try {
      const producer = new Kafka({ url: p.origin }).producer({ lingerMs: 0, retryBackoffMs: 10 });
      const first = producer.send({ topic: 'bumped', messages: [{ value: 'a', partition: 0 }] });
      await until('a request', () => n >= 1);
      const second = producer.send({ topic: 'bumped', messages: [{ value: 'b', partition: 1 }] });
      const epoch = producer.producerIdentity!.producerEpoch;
      await Promise.all([first, second]);
      expect(producer.producerIdentity!.producerEpoch).toBe(epoch + 1);
      await producer.close();
      const log = await readAll(kafka, 'bumped');
      expect(log.get(0)!.map((r) => r.value)).toEqual(['a']);
      expect(log.get(1)!.map((r) => r.value)).toEqual(['b']);
    } finally {
      await p.close();
    }
  });

  it('batches over 64 KiB go out in memory reused from earlier requests and arrive intact, retries too', async () => {
    await kafka.admin().createTopics({ topics: [{ topic: 'reused-memory', numPartitions: 3 }] });
    let n = 0;
    const proxy = await flakyProxy(server!.origin, (req) => isProduce(req) && ++n % 4 === 0);
    try {
      const producer = new Kafka({ url: proxy.origin }).producer({
        lingerMs: 5,
        batchSize: 200_000,
        // One batch per request: a drain sends several requests at once, before any is written out.
        maxRequestSize: 250_000,
        retryBackoffMs: 10,
        retryBackoffMaxMs: 50,
      });
      // Each value differs in every byte from the others around it, so a batch written over by a
      // later one (memory given back too early) would not read back as sent.
      const value = (i: number) => `${i}:`.padEnd(10_000, String.fromCharCode(97 + (i % 26)));
      const sends: Promise<RecordMetadata[]>[] = [];
      for (let i = 0; i < 300; i++) {
        sends.push(producer.send({ topic: 'reused-memory', messages: [{ key: `k${i % 3}`, value: value(i) }] }));
        if (i % 50 === 49) await Promise.all(sends);
      }
      await Promise.all(sends);
      await producer.close();
      expect(proxy.dropped()).toBeGreaterThan(1);
      // A batch altered on its way would fail its CRC at the server (CORRUPT_MESSAGE, then a retry).
      const corrupt = proxy.log.filter((e) => isProduce(e) && e.answer?.toString().includes('CORRUPT_MESSAGE'));
      expect(corrupt.length).toBe(0);
      const values = [...(await readAll(kafka, 'reused-memory')).values()].flat().map((r) => r.value);
      expect(values.sort()).toEqual(Array.from({ length: 300 }, (_, i) => value(i)).sort());
    } finally {
      await proxy.close();
    }
  });

  it('with the default batchSize a full batch fills one 1 MiB request and the server takes it as sent', async () => {
    await kafka.admin().createTopics({ topics: [{ topic: 'full-batches', numPartitions: 1 }] });
    const front = await proxy(server!.origin);
    try {
      // linger.ms long enough that only full batches leave before close (on a loaded machine the
      // default 50 ms can pass while the 3,000 sends are still being taken).
      const producer = new Kafka({ url: front.origin }).producer({ lingerMs: 3_000 });
      // Keys, headers and timestamps years apart: the records whose varints the size estimate
      // knows least well. 3 MiB of them, all to one partition.
      const sends: Promise<RecordMetadata[]>[] = [];
      for (let i = 0; i < 3000; i++) {
        sends.push(
          producer.send({
            topic: 'full-batches',
            messages: [
              {
                key: `key-${i}`,
                value: 'v'.repeat(900 + (i % 200)),
                headers: { h: `${i}` },
                timestamp: String(1_000_000_000_000 + (i % 2 ? 1 : -1) * i * 86_400_000),
              },
            ],
          }),
        );
      }
      await Promise.all(sends);
      await producer.close();
      const produces = front.log.filter(isProduce);
      // Every batch fit max.message.bytes: none was refused as too large and split again.
      expect(produces.filter((e) => e.status !== 200)).toEqual([]);
      // Each request but the last carried one full batch, just under 1 MiB.
      expect(produces.length).toBeGreaterThan(2);
      for (const e of produces.slice(0, -1)) {
        expect(e.body.byteLength).toBeGreaterThan(1_040_000);
        expect(e.body.byteLength).toBeLessThanOrEqual(1_048_576);
      }
      expect((await readAll(kafka, 'full-batches')).get(0)).toHaveLength(3000);
    } finally {
      await front.close();
    }
  });

  it('without idempotence the same lost responses do duplicate records (the control case)', async () => {
    await kafka.admin().createTopics({ topics: [{ topic: 'lost-acks-plain', numPartitions: 1 }] });
    let n = 0;
    const proxy = await flakyProxy(server!.origin, (req) => isProduce(req) && ++n % 3 === 0);
    try {
      const producer = new Kafka({ url: proxy.origin }).producer({
        enableIdempotence: false,
        lingerMs: 2,
        batchSize: 512,
        retryBackoffMs: 10,
      });
      await Promise.all(
        Array.from({ length: 100 }, (_, i) =>
          producer.send({ topic: 'lost-acks-plain', messages: [{ value: `m${i}` }] }),
        ),
      );
      await producer.close();
      const values = [...(await readAll(kafka, 'lost-acks-plain')).values()].flat().map((r) => r.value);
      expect(new Set(values).size).toBe(100);
      expect(values.length).toBeGreaterThan(100);
    } finally {
      await proxy.close();
    }
  });

  it('idempotence: a server killed mid-load and restarted keeps every record exactly once, in order', async () => {
    await kafka.admin().createTopics({ topics: [{ topic: 'restart', numPartitions: 2 }] });
    const producer = kafka.producer({
      lingerMs: 5,
      retryBackoffMs: 50,
      retryBackoffMaxMs: 300,
      requestTimeoutMs: 3000,
    });
    const sends: Promise<RecordMetadata[]>[] = [];
    let acked = 0;
    const total = 1500;
    const load = (async () => {
      for (let i = 0; i < total; i++) {
        const p = producer.send({ topic: 'restart', messages: [{ key: `k${i % 5}`, value: `r${i}` }] });
        p.then(
          () => acked++,
          () => {},
        );
        sends.push(p);
        if (i % 50 === 49) await new Promise((r) => setTimeout(r, 5));
      }
    })();
    while (acked < 300) await new Promise((r) => setTimeout(r, 5));
    const port = server!.port;
    await stopServer(server, 'SIGKILL');
    expect(acked).toBeLessThan(total);
    server = await startServer(dir.path, port);
    await load;
    const results = (await Promise.all(sends)).map(([m]) => m!);
    await producer.close();
    const log = await readAll(kafka, 'restart');
    const values = [...log.values()].flat().map((r) => r.value);
    expect(values.length).toBe(total);
    expect(new Set(values).size).toBe(total);
    for (const [p, records] of log) {
      expect(records.map((r) => r.value)).toEqual(results.flatMap((m, i) => (m.partition === p ? [`r${i}`] : [])));
    }
  }, 40_000);

  it('a restarted producer that takes over the previous producer id fences the old instance', async () => {
    await kafka.admin().createTopics({ topics: [{ topic: 'fenced', numPartitions: 1 }] });
    const old = kafka.producer();
    await old.send({ topic: 'fenced', messages: [{ value: 'before' }] });
    const identity = old.producerIdentity!;
    const restarted = kafka.producer({ producerId: identity });
    await restarted.connect();
    expect(restarted.producerIdentity).toEqual({
      producerId: identity.producerId,
      producerEpoch: identity.producerEpoch + 1,
    });
    await restarted.send({ topic: 'fenced', messages: [{ value: 'after' }] });
    await expect(old.send({ topic: 'fenced', messages: [{ value: 'zombie' }] })).rejects.toMatchObject({
      type: 'INVALID_PRODUCER_EPOCH',
      retriable: false,
    });
    await expect(old.send({ topic: 'fenced', messages: [{ value: 'zombie' }] })).rejects.toMatchObject({
      type: 'INVALID_PRODUCER_EPOCH',
    });
    await restarted.close();
    await old.close();
    expect([...(await readAll(kafka, 'fenced')).values()].flat().map((r) => r.value)).toEqual(['before', 'after']);
  });
});
