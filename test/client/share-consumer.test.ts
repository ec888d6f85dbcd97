/**
 * The client's share consumer (Java's KafkaShareConsumer shape) against a local server: several
 * consumers of one share group split a topic's records, each record acknowledged once; released
 * records come back with their delivery count raised; explicit mode insists on acknowledgements.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Kafka } from '../../src/client/index.js';
import { startServer, stopServer, tempDir, type LocalServer } from '../support/local-server.js';

describe('kafka.shareConsumer', () => {
  let dir: Awaited<ReturnType<typeof tempDir>>;
  let server: LocalServer;
  let kafka: Kafka;

  beforeAll(async () => {
    dir = await tempDir('share-consumer-');
    server = await startServer(dir.path);
    kafka = new Kafka({ url: `${server.origin}/v3/clusters/local` });
    const admin = kafka.admin();
    await admin.createTopics({ topics: [{ topic: 'jobs', numPartitions: 3 }] });
    for (const g of ['split', 'explicit', 'ranges'])
      await fetch(`${server.origin}/v3/clusters/local/share-groups/${g}/configs/share.auto.offset.reset`, {
        method: 'PUT',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ value: 'earliest' }),
      });
    const producer = kafka.producer();
    await producer.send({
      topic: 'jobs',
      messages: Array.from({ length: 60 }, (_, i) => ({ key: `k${i}`, value: `job-${i}` })),
    });
    await admin.createTopics({ topics: [{ topic: 'one', numPartitions: 1 }] });
    await producer.send({ topic: 'one', messages: Array.from({ length: 8 }, (_, i) => ({ value: `r${i}` })) });
    await producer.disconnect();
  }, 60_000);
  afterAll(async () => {
    await stopServer(server);
    await dir.remove();
  });

  it('splits the records among consumers, each accepted once (implicit acknowledgement)', async () => {
    const consumers = [0, 1, 2].map((i) => {
      const c = kafka.shareConsumer({ groupId: 'split', memberId: `c${i}`, maxPollRecords: 7 });
      c.subscribe(['jobs']);
      return c;
    });
    const seen: string[] = [];
    let polls = 0;
    while (seen.length < 60 && polls++ < 100) {
      const batches = await Promise.all(consumers.map((c) => c.poll(100)));
      for (const b of batches) for (const r of b) seen.push(r.value!.toString());
    }
    await Promise.all(consumers.map((c) => c.close()));
    expect(seen.sort()).toEqual(Array.from({ length: 60 }, (_, i) => `job-${i}`).sort());
    const group = (await (await fetch(`${server.origin}/v3/clusters/local/share-groups/split`)).json()) as {
      lag: number;
    };
    expect(group.lag).toBe(0);
  });

  it('redelivers what a consumer releases, and explicit mode refuses a poll with records unacknowledged', async () => {
    const a = kafka.shareConsumer({
      groupId: 'explicit',
      memberId: 'a',
      maxPollRecords: 2,
      acknowledgementMode: 'explicit',
    });
    // One partition: a receive starts at a random partition, so on 'jobs' the released record
    // would be met only by chance within the polls below.
    a.subscribe(['one']);
    const first = await a.poll(1000);
    expect(first).toHaveLength(2);
    expect(first.map((r) => r.deliveryCount)).toEqual([1, 1]);
    await expect(a.poll(0)).rejects.toThrow(/must be acknowledged/);
    a.acknowledge(first[0]!, 'accept');
    a.acknowledge(first[1]!, 'release');
    const results = await a.commitSync();
    expect([...results.values()]).toEqual([null, null]);
    // The released record comes back first, before newer records, with its delivery count raised.
    const got = await a.poll(1000);
    expect(got.map((r) => [r.offset, r.deliveryCount])).toEqual([
      [first[1]!.offset, 2],
      [first[1]!.offset + 1, 1],
    ]);
    for (const r of got) a.acknowledge(r, 'accept');
    await a.commitSync();
    expect(() => a.acknowledge(first[0]!)).toThrow(/not delivered by the last poll/);
    await a.close();
  });

  it('sends a commit as offset ranges of one type and delivery, and answers it per record', async () => {
    const sent: unknown[] = [];
    const spying = new Kafka({
      url: `${server.origin}/v3/clusters/local`,
      fetch: async (url, init) => {
        if (String(url).endsWith('records:acknowledge')) sent.push(JSON.parse(String(init?.body)).acknowledgements);
        return fetch(url, init);
      },
    });
    const c = spying.shareConsumer({
      groupId: 'ranges',
      memberId: 'r',
      maxPollRecords: 8,
      acknowledgementMode: 'explicit',
    });
    c.subscribe(['one']);
    const got = await c.poll(1000);
    expect(got.map((r) => r.offset)).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    // Acknowledged out of order: ranges by offset, a new one where the type changes.
    for (const r of [...got].reverse()) c.acknowledge(r, r.offset === 3 || r.offset === 4 ? 'release' : 'accept');
    const results = await c.commitSync();
    const range = (offset: number, last: number, type: string) => ({
      topic_name: 'one',
      partition_id: 0,
      offset,
      ...(last > offset ? { last_offset: last } : {}),
      type,
      delivery_count: 1,
    });
    expect(sent).toEqual([[range(0, 2, 'accept'), range(3, 4, 'release'), range(5, 7, 'accept')]]);
    expect(results).toEqual(new Map(got.map((r) => [`one-0@${r.offset}`, null])));
    // The released two come back with their delivery raised: another range, its own delivery count.
    const again = await c.poll(1000);
    expect(again.map((r) => [r.offset, r.deliveryCount])).toEqual([
      [3, 2],
      [4, 2],
    ]);
    for (const r of again) c.acknowledge(r, 'accept');
    expect([...(await c.commitSync()).values()]).toEqual([null, null]);
    expect(sent[1]).toEqual([{ ...range(3, 4, 'accept'), delivery_count: 2 }]);
    await c.close();
  });
});
