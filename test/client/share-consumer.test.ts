/**
 * The client's share consumer (Java's KafkaShareConsumer shape) against a local server: several
 * consumers of one share group split a topic's records, each record acknowledged once; released
 * records come back with their delivery count raised; explicit mode insists on acknowledgements.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Kafka, type ShareRecord } from '../../src/client/index.js';
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
    for (const g of ['split', 'explicit'])
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
    a.subscribe(['jobs']);
    const first = await a.poll(1000);
    expect(first).toHaveLength(2);
    expect(first.map((r) => r.deliveryCount)).toEqual([1, 1]);
    await expect(a.poll(0)).rejects.toThrow(/must be acknowledged/);
    a.acknowledge(first[0]!, 'accept');
    a.acknowledge(first[1]!, 'release');
    const results = await a.commitSync();
    expect([...results.values()]).toEqual([null, null]);
    // The released record comes back (to whoever asks first) with its delivery count raised.
    let again: ShareRecord | undefined;
    for (let i = 0; i < 10 && !again; i++) {
      const got = await a.poll(100);
      again = got.find((r) => r.partition === first[1]!.partition && r.offset === first[1]!.offset);
      for (const r of got) a.acknowledge(r, r === again ? 'accept' : 'release');
      await a.commitSync();
    }
    expect(again?.deliveryCount).toBe(2);
    expect(() => a.acknowledge(first[0]!)).toThrow(/not delivered by the last poll/);
    await a.close();
  });
});
