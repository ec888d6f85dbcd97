/**
 * Admin calls whose work grows with the number of partitions stay inside one admin request at any
 * partition count: the HTTP lists read at most a page of partition states per request (metadata.next
 * goes on), and every walk, Metadata on the Kafka listener included, reads a bounded number of
 * states at once instead of opening a read per partition together.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { createStorage, type Storage } from '../../src/compose.js';
import { Kafka } from '../../src/client/index.js';
import * as m from '../../src/kafka/protocol/messages/index.js';
import { STATE_SK } from '../../src/storage/key-layout.js';
import type { MetadataStore } from '../../src/storage/ports.js';
import { PARTITION_PAGE, PARTITION_READS } from '../../src/topics/partition-scan.js';
import { startKafkaServer, type TestKafkaServer } from '../kafka/support/kafka-server.js';
import { RawClient } from '../kafka/support/raw-client.js';
import { testApp } from '../support/test-app.js';

/** The memory storage, counting partition-state reads and the most in flight at once. */
function countedStorage(inner: Storage = createStorage({ kind: 'memory', replicaStores: 1 })) {
  const reads = { states: 0, inFlight: 0, maxInFlight: 0 };
  const metadata: MetadataStore = Object.create(inner.metadata);
  metadata.get = async (pk, sk) => {
    if (sk !== STATE_SK) return inner.metadata.get(pk, sk);
    reads.states++;
    reads.maxInFlight = Math.max(reads.maxInFlight, ++reads.inFlight);
    try {
      await new Promise((r) => setImmediate(r)); // let the other reads of a walk start meanwhile
      return await inner.metadata.get(pk, sk);
    } finally {
      reads.inFlight--;
    }
  };
  const storage: Storage = { ...inner, metadata };
  const reset = () => Object.assign(reads, { states: 0, maxInFlight: 0 });
  return { storage, reads, reset };
}

const WIDE = Math.floor(PARTITION_PAGE * 1.5);

/** Every page of a v3 list, checking each request's reads against the page bound. */
async function walk(
  t: ReturnType<typeof testApp>,
  counted: ReturnType<typeof countedStorage>,
  path: string,
): Promise<{ pages: number; data: any[] }> {
  const data: any[] = [];
  let pages = 0;
  for (let at: string | undefined = path; at !== undefined; pages++) {
    counted.reset();
    const res = await t.call('GET', at);
    expect(res.status).toBe(200);
    expect(counted.reads.states).toBeLessThanOrEqual(PARTITION_PAGE);
    expect(counted.reads.maxInFlight).toBeLessThanOrEqual(PARTITION_READS);
    data.push(...res.body.data);
    const next: string | null = res.body.metadata.next;
    at = next ? `${path.replace(/\?.*$/, '')}${new URL(next).search}` : undefined;
  }
  return { pages, data };
}

describe('partition lists in pages', () => {
  const counted = countedStorage();
  const t = testApp({ storage: counted.storage });

  it('GET /topics/{t}/partitions: every partition once, a page of reads per request', async () => {
    expect((await t.call('POST', 'topics', { topic_name: 'wide', partitions_count: WIDE })).status).toBe(201);
    const { pages, data } = await walk(t, counted, 'topics/wide/partitions');
    expect(pages).toBe(2);
    expect(data.map((p) => p.partition_id)).toEqual(Array.from({ length: WIDE }, (_, p) => p));
    // A token the server did not give is a Kafka error, not a 500.
    expect(await t.call('GET', 'topics/wide/partitions?page_token=bm9wZQ')).toMatchObject({
      status: 400,
      body: { error: 'INVALID_REQUEST' },
    });
  });

  it("GET /brokers/{id}/partition-replicas: every topic's replicas once, across topics and pages", async () => {
    expect((await t.call('POST', 'topics', { topic_name: 'narrow', partitions_count: 3 })).status).toBe(201);
    const { pages, data } = await walk(t, counted, 'brokers/0/partition-replicas');
    expect(pages).toBe(2);
    const seen = data.map((r) => `${r.topic_name}-${r.partition_id}`);
    expect(new Set(seen).size).toBe(WIDE + 3);
    expect(seen).toContain('narrow-2');
    expect(data.every((r) => r.broker_id === 0)).toBe(true);
  });

  it('an offset reset over a whole topic answers every partition in pages', async () => {
    const { pages, data } = await walk(
      t,
      counted,
      'consumer-groups/g/offsets?topic_name=wide&auto_offset_reset=earliest',
    );
    expect(pages).toBe(2);
    expect(data.map((o) => o.partition_id)).toEqual(Array.from({ length: WIDE }, (_, p) => p));
  });

  it("the client's describeTopic follows the pages", async () => {
    const kafka = new Kafka({
      url: 'http://test/v3/clusters/local',
      fetch: (url, init) => Promise.resolve(t.app.request(String(url), init)),
    });
    const described = await kafka.admin().describeTopic('wide');
    expect(described.partitions.map((p) => p.partition)).toEqual(Array.from({ length: WIDE }, (_, p) => p));
  });
});

describe('Metadata on the Kafka listener', () => {
  let s: TestKafkaServer | undefined;
  afterAll(() => s?.close());

  it('reads partition states a bounded number at a time and answers every partition', async () => {
    const counted = countedStorage();
    s = await startKafkaServer({}, {}, () => counted.storage);
    await s.services.topics.create({ name: 'wide', partitionCount: WIDE, replicationFactor: 1 });
    const c = await RawClient.open(s.broker);
    try {
      counted.reset();
      const answer = (await c.request(m.Metadata, 12, { topics: [{ name: 'wide' }] })).body;
      expect(counted.reads.maxInFlight).toBeLessThanOrEqual(PARTITION_READS);
      expect(counted.reads.maxInFlight).toBeGreaterThan(1); // bounded, not one by one
      const partitions = answer.topics[0].partitions;
      expect(partitions.map((p: any) => [p.partitionIndex, p.errorCode])).toEqual(
        Array.from({ length: WIDE }, (_, p) => [p, 0]),
      );
    } finally {
      c.close();
    }
  });
});
