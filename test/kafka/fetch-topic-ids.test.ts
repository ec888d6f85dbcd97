/**
 * Fetch v13+ names topics by id (KIP-516), in the request and the answer; an id no topic has is
 * UNKNOWN_TOPIC_ID. No client on this machine fetches by id (librdkafka 2.0 and kafkajs stop
 * before v13), so a bare connection does, with the ids Metadata v10+ answers.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as m from '../../src/kafka/protocol/messages/index.js';
import { decodeRecordBatches } from '../../src/wire/record-batch.js';
import { ERRORS } from '../../src/wire/errors.js';
import { startKafkaServer, type TestKafkaServer } from './support/kafka-server.js';
import { fetchPartition, fetchRequest, RawClient } from './support/raw-client.js';

let s: TestKafkaServer;
let c: RawClient;
beforeAll(async () => {
  s = await startKafkaServer();
  await s.services.topics.create({ name: 'ids', partitionCount: 2, replicationFactor: 1 });
  await s.services.topics.create({ name: 'ids-gone', partitionCount: 1, replicationFactor: 1 });
  c = await RawClient.open(s.broker);
  const res = await fetch(`${s.http}/topics/ids/records:batch`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      entries: [0, 1, 2].map((i) => ({ id: String(i), partition_id: 0, value: { type: 'STRING', data: `r${i}` } })),
    }),
  });
  expect(res.status).toBe(207);
});
afterAll(async () => {
  c?.close();
  await s?.close();
});

const topicIdOf = async (name: string): Promise<Buffer> =>
  Buffer.from((await c.request(m.Metadata, 12, { topics: [{ name }] })).body.topics[0].topicId);

const partition = (p: number, fetchOffset = 0) => fetchPartition(p, fetchOffset);

const fetchById = async (
  version: number,
  topics: { topicId: Buffer; partitions: ReturnType<typeof partition>[] }[],
  wait: { maxWaitMs: number; minBytes: number } = { maxWaitMs: 0, minBytes: 0 },
) => (await c.request(m.Fetch, version, fetchRequest(topics, wait))).body;

const values = (records: Uint8Array) =>
  decodeRecordBatches(records).flatMap((b) => b.records.map((r) => Buffer.from(r.value!).toString()));

describe('Fetch by topic id', () => {
  it('reads by id from v13 to v17, answering each topic by its id', async () => {
    const id = await topicIdOf('ids');
    for (const version of [13, 14, 15, 16, 17]) {
      const answer = await fetchById(version, [{ topicId: id, partitions: [partition(0), partition(1)] }]);
      expect(answer).toMatchObject({ errorCode: 0, sessionId: 0 });
      expect(answer.responses).toHaveLength(1);
      const [topic] = answer.responses;
      expect(Buffer.from(topic.topicId).equals(id)).toBe(true);
      expect(topic.topic).toBe(''); // not in these versions
      expect(topic.partitions.map((p: any) => [p.partitionIndex, p.errorCode, p.highWatermark])).toEqual([
        [0, 0, 3],
        [1, 0, 0],
      ]);
      expect(values(topic.partitions[0].records)).toEqual(['r0', 'r1', 'r2']);
    }
    // From an offset, as before.
    const [later] = (await fetchById(13, [{ topicId: id, partitions: [partition(0, 2)] }])).responses;
    expect(values(later.partitions[0].records).at(-1)).toBe('r2');
  });

  it('answers an id no topic has UNKNOWN_TOPIC_ID, per partition, beside a known one', async () => {
    const id = await topicIdOf('ids');
    const unknown = Buffer.alloc(16, 0x5a);
    const answer = await fetchById(13, [
      { topicId: unknown, partitions: [partition(0), partition(1)] },
      { topicId: id, partitions: [partition(0)] },
    ]);
    expect(answer.errorCode).toBe(0);
    const [bad, good] = answer.responses;
    expect(Buffer.from(bad.topicId).equals(unknown)).toBe(true);
    expect(bad.partitions.map((p: any) => [p.partitionIndex, p.errorCode, p.records])).toEqual([
      [0, ERRORS.UNKNOWN_TOPIC_ID.code, null],
      [1, ERRORS.UNKNOWN_TOPIC_ID.code, null],
    ]);
    expect(good.partitions[0].errorCode).toBe(0);
    // The zero uuid names no topic either.
    const zero = await fetchById(17, [{ topicId: Buffer.alloc(16), partitions: [partition(0)] }]);
    expect(zero.responses[0].partitions[0].errorCode).toBe(ERRORS.UNKNOWN_TOPIC_ID.code);
  });

  it("a deleted topic's id is unknown, also once its name is taken again", async () => {
    const old = await topicIdOf('ids-gone');
    expect(
      (await fetchById(13, [{ topicId: old, partitions: [partition(0)] }])).responses[0].partitions[0].errorCode,
    ).toBe(0);
    await s.services.topics.delete('ids-gone');
    expect(
      (await fetchById(13, [{ topicId: old, partitions: [partition(0)] }])).responses[0].partitions[0].errorCode,
    ).toBe(ERRORS.UNKNOWN_TOPIC_ID.code);
    // The name is held a few seconds after the deletion; then a new incarnation gets a new id.
    const deadline = Date.now() + 10_000;
    for (;;) {
      try {
        await s.services.topics.create({ name: 'ids-gone', partitionCount: 1, replicationFactor: 1 });
        break;
      } catch (e) {
        if (Date.now() > deadline) throw e;
        await new Promise((r) => setTimeout(r, 250));
      }
    }
    const fresh = await topicIdOf('ids-gone');
    expect(fresh.equals(old)).toBe(false);
    const answer = await fetchById(13, [
      { topicId: old, partitions: [partition(0)] },
      { topicId: fresh, partitions: [partition(0)] },
    ]);
    expect(answer.responses.map((t: any) => t.partitions[0].errorCode)).toEqual([ERRORS.UNKNOWN_TOPIC_ID.code, 0]);
  });

  it('a long poll by id is answered when records arrive', async () => {
    const id = await topicIdOf('ids');
    const started = Date.now();
    const waiting = fetchById(13, [{ topicId: id, partitions: [partition(1)] }], { maxWaitMs: 5000, minBytes: 1 });
    await new Promise((r) => setTimeout(r, 100));
    const res = await fetch(`${s.http}/topics/ids/records:batch`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ entries: [{ id: 'late', partition_id: 1, value: { type: 'STRING', data: 'late' } }] }),
    });
    expect(res.status).toBe(207);
    const [topic] = (await waiting).responses;
    expect(values(topic.partitions[0].records)).toEqual(['late']);
    expect(Date.now() - started).toBeLessThan(4000);
  });

  it('v12 still names topics, and ApiVersions offers Fetch 4-17', async () => {
    const answer = (await c.request(m.Fetch, 12, fetchRequest([{ topic: 'ids', partitions: [partition(0)] }]))).body;
    expect(answer.responses[0]).toMatchObject({ topic: 'ids', partitions: [{ errorCode: 0, highWatermark: 3 }] });
    const keys = (await c.request(m.ApiVersions, 3, { clientSoftwareName: 't', clientSoftwareVersion: '1' })).body
      .apiKeys as { apiKey: number; minVersion: number; maxVersion: number }[];
    expect(keys.find((k) => k.apiKey === 1)).toMatchObject({ minVersion: 4, maxVersion: 17 });
  });
});
