/**
 * Transactions over the Kafka listener, on the transaction coordinator the HTTP API uses: kafkajs
 * and librdkafka (python3-confluent-kafka) transactional producers send, commit offsets in the
 * transaction and commit or abort; read_committed consumers see only committed records, up to the
 * last stable offset; a second producer of the same transactional id fences the first.
 */
import { execFile, spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Kafka, logLevel } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as m from '../../src/kafka/protocol/messages/index.js';
import { ERRORS } from '../../src/wire/errors.js';
import { startKafkaServer, type TestKafkaServer } from './support/kafka-server.js';
import { RawClient } from './support/raw-client.js';

process.env.KAFKAJS_NO_PARTITIONER_WARNING = '1';
const run = promisify(execFile);
const PYTHON = '/usr/bin/python3';
const hasConfluentKafka = spawnSync(PYTHON, ['-c', 'import confluent_kafka']).status === 0;

let s: TestKafkaServer;
let kafka: Kafka;
beforeAll(async () => {
  s = await startKafkaServer({}, { DEFAULT_PARTITIONS: '1' });
  kafka = new Kafka({ brokers: [s.broker], clientId: 'txn-test', logLevel: logLevel.NOTHING, retry: { retries: 5 } });
});
afterAll(async () => {
  await s?.close();
});

async function consume(topic: string, groupId: string, readUncommitted: boolean, want: number): Promise<string[]> {
  const consumer = kafka.consumer({
    groupId,
    readUncommitted,
    sessionTimeout: 6000,
    heartbeatInterval: 300,
    maxWaitTimeInMs: 100,
  });
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  const seen: string[] = [];
  await consumer.run({ eachMessage: async ({ message }) => void seen.push(message.value!.toString()) });
  const end = Date.now() + 15_000;
  while (seen.length < want && Date.now() < end) await new Promise((r) => setTimeout(r, 50));
  await new Promise((r) => setTimeout(r, 500)); // anything beyond `want` would arrive now
  await consumer.disconnect();
  return seen.sort();
}

describe('kafkajs transactions', () => {
  it('send, sendOffsets and commit or abort; read_committed sees only what committed', async () => {
    await s.services.topics.create({ name: 'tx-out', partitionCount: 2, replicationFactor: 1 });
    await s.services.topics.create({ name: 'tx-in', partitionCount: 1, replicationFactor: 1 });
    const producer = kafka.producer({ transactionalId: 'kjs-tx', maxInFlightRequests: 1, idempotent: true });
    await producer.connect();
    const t1 = await producer.transaction();
    await t1.send({
      topic: 'tx-out',
      messages: [
        { partition: 0, value: 'c1' },
        { partition: 1, value: 'c2' },
      ],
    });
    await t1.sendOffsets({
      consumerGroupId: 'kjs-eos',
      topics: [{ topic: 'tx-in', partitions: [{ partition: 0, offset: '5' }] }],
    });
    await t1.commit();
    const t2 = await producer.transaction();
    await t2.send({
      topic: 'tx-out',
      messages: [
        { partition: 0, value: 'a1' },
        { partition: 1, value: 'a2' },
      ],
    });
    await t2.sendOffsets({
      consumerGroupId: 'kjs-eos',
      topics: [{ topic: 'tx-in', partitions: [{ partition: 0, offset: '9' }] }],
    });
    await t2.abort();
    const t3 = await producer.transaction();
    await t3.send({ topic: 'tx-out', messages: [{ partition: 0, value: 'c3' }] });
    await t3.commit();

    // Offsets of the committed transaction only.
    expect((await s.services.groups.offsets.committed('kjs-eos')).map((o) => [o.topic, o.partition, o.offset])).toEqual(
      [['tx-in', 0, 5]],
    );
    expect(await consume('tx-out', 'kjs-rc', false, 3)).toEqual(['c1', 'c2', 'c3']);
    expect(await consume('tx-out', 'kjs-ru', true, 5)).toEqual(['a1', 'a2', 'c1', 'c2', 'c3']);

    // An open transaction holds read_committed at its first offset: the LSO is below the HW.
    const t4 = await producer.transaction();
    await t4.send({ topic: 'tx-out', messages: [{ partition: 0, value: 'open' }] });
    const c = await RawClient.open(s.broker);
    const fetchAt = async (isolationLevel: number) =>
      (
        await c.request(m.Fetch, 11, {
          maxWaitMs: 0,
          minBytes: 0,
          isolationLevel,
          sessionId: 0,
          topics: [{ topic: 'tx-out', partitions: [{ partition: 0, fetchOffset: 0, partitionMaxBytes: 1 << 20 }] }],
        })
      ).body.responses[0].partitions[0];
    const open = await fetchAt(1);
    expect(open.lastStableOffset).toBeLessThan(open.highWatermark);
    // ListOffsets latest, read_committed: the last stable offset, where such a consumer starts.
    const latest = async (isolationLevel: number) =>
      (
        await c.request(m.ListOffsets, 6, {
          replicaId: -1,
          isolationLevel,
          topics: [{ name: 'tx-out', partitions: [{ partitionIndex: 0, currentLeaderEpoch: -1, timestamp: -1 }] }],
        })
      ).body.topics[0].partitions[0].offset;
    expect(await latest(1)).toBe(open.lastStableOffset);
    expect(await latest(0)).toBe(open.highWatermark);
    expect(open.abortedTransactions).toHaveLength(1); // the aborted one
    await t4.commit();
    const done = await fetchAt(1);
    expect(done.lastStableOffset).toBe(done.highWatermark);
    c.close();
    await producer.disconnect();
  }, 60_000);

  it('OffsetFetch with requireStable answers UNSTABLE_OFFSET_COMMIT while sendOffsets waits in a transaction (KIP-447)', async () => {
    await s.services.topics.create({ name: 'tx-stable', partitionCount: 2, replicationFactor: 1 });
    const producer = kafka.producer({ transactionalId: 'kjs-stable', maxInFlightRequests: 1, idempotent: true });
    await producer.connect();
    const c = await RawClient.open(s.broker);
    const partitionIndexes = [0, 1];
    const v7 = async (requireStable: boolean) =>
      (
        await c.request(m.OffsetFetch, 7, {
          groupId: 'kjs-stable-g',
          topics: [{ name: 'tx-stable', partitionIndexes }],
          requireStable,
        })
      ).body.topics[0].partitions.map((p: { committedOffset: number; errorCode: number }) => [
        p.committedOffset,
        p.errorCode,
      ]);
    const v8 = async () =>
      (
        await c.request(m.OffsetFetch, 8, {
          groups: [{ groupId: 'kjs-stable-g', topics: [{ name: 'tx-stable', partitionIndexes }] }],
          requireStable: true,
        })
      ).body.groups[0].topics[0].partitions.map((p: { errorCode: number }) => p.errorCode);
    try {
      const t = await producer.transaction();
      await t.send({ topic: 'tx-stable', messages: [{ partition: 0, value: 'x' }] });
      await t.sendOffsets({
        consumerGroupId: 'kjs-stable-g',
        topics: [{ topic: 'tx-stable', partitions: [{ partition: 0, offset: '4' }] }],
      });
      expect(await v7(true)).toEqual([
        [-1, 88],
        [-1, 0],
      ]);
      expect(await v8()).toEqual([88, 0]);
      expect(await v7(false)).toEqual([
        [-1, 0],
        [-1, 0],
      ]);
      await t.commit();
      expect(await v7(true)).toEqual([
        [4, 0],
        [-1, 0],
      ]);
    } finally {
      c.close();
      await producer.disconnect();
    }
  }, 60_000);

  it('a second producer of the same transactional id fences the first and aborts its open transaction', async () => {
    await s.services.topics.create({ name: 'tx-fence', partitionCount: 1, replicationFactor: 1 });
    const first = kafka.producer({ transactionalId: 'kjs-fence', maxInFlightRequests: 1, idempotent: true });
    await first.connect();
    const t = await first.transaction();
    await t.send({ topic: 'tx-fence', messages: [{ value: 'zombie' }] });
    const second = kafka.producer({ transactionalId: 'kjs-fence', maxInFlightRequests: 1, idempotent: true });
    await second.connect();
    const t2 = await second.transaction(); // kafkajs's InitProducerId: fences the first producer
    await expect(t.commit()).rejects.toMatchObject({
      type: expect.stringMatching(/PRODUCER_FENCED|INVALID_PRODUCER_EPOCH/),
    });
    await t2.send({ topic: 'tx-fence', messages: [{ value: 'kept' }] });
    await t2.commit();
    expect(await consume('tx-fence', 'kjs-fence-rc', false, 1)).toEqual(['kept']);
    await first.disconnect().catch(() => {});
    await second.disconnect();
  }, 40_000);

  it('an unknown transactional id is INVALID_PRODUCER_ID_MAPPING on AddPartitionsToTxn, AddOffsetsToTxn and EndTxn, as Kafka', async () => {
    await s.services.topics.create({ name: 'no-txn', partitionCount: 1, replicationFactor: 1 });
    const c = await RawClient.open(s.broker);
    const mapping = ERRORS.INVALID_PRODUCER_ID_MAPPING.code;
    try {
      const producer = { transactionalId: 'never-initialised', producerId: 4242, producerEpoch: 0 };
      const added = await c.request(m.AddPartitionsToTxn, 3, {
        v3AndBelowTransactionalId: producer.transactionalId,
        v3AndBelowProducerId: producer.producerId,
        v3AndBelowProducerEpoch: producer.producerEpoch,
        v3AndBelowTopics: [{ name: 'no-txn', partitions: [0] }],
      });
      expect(added.body.resultsByTopicV3AndBelow[0].resultsByPartition[0].partitionErrorCode).toBe(mapping);
      const offsets = await c.request(m.AddOffsetsToTxn, 3, { ...producer, groupId: 'g' });
      expect(offsets.body.errorCode).toBe(mapping);
      const ended = await c.request(m.EndTxn, 3, { ...producer, committed: true });
      expect(ended.body.errorCode).toBe(mapping);
    } finally {
      c.close();
    }
    // DescribeTransactions' answer stays TRANSACTIONAL_ID_NOT_FOUND (the HTTP API's describe).
    expect(((await (await fetch(`${s.http}/transactions/never-initialised`)).json()) as any).error).toBe(
      'TRANSACTIONAL_ID_NOT_FOUND',
    );
  });

  it('HTTP sees the transaction the listener ran', async () => {
    const res = await fetch(`${s.http}/transactions/kjs-tx`);
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ transactional_id: 'kjs-tx', state: 'CompleteCommit' });
  });
});

describe.skipIf(!hasConfluentKafka)(
  hasConfluentKafka ? 'librdkafka transactions' : 'python3-confluent-kafka (Debian package) is not installed: skipped',
  () => {
    it('a transactional producer commits and aborts; read_committed consumers skip the aborted records; offsets commit in a transaction', async () => {
      await s.services.topics.create({ name: 'rdk-tx', partitionCount: 2, replicationFactor: 1 });
      const { stdout } = await run(
        PYTHON,
        [join(import.meta.dirname, 'support/librdkafka-transactions.py'), s.broker, 'rdk-tx'],
        {
          timeout: 60_000,
        },
      );
      const steps = Object.fromEntries(
        stdout
          .trim()
          .split('\n')
          .map((l) => JSON.parse(l))
          .map((o) => [o.step, o]),
      );
      const committed = Array.from({ length: 10 }, (_, i) => `c${i}`).sort();
      expect(steps.read_committed.values).toEqual(committed);
      expect(steps.read_uncommitted.values).toEqual([...committed, 'a0', 'a1', 'a2', 'a3', 'a4'].sort());
      const offsets = await s.services.groups.offsets.committed('rdk-tx-rc');
      expect(offsets.map((o) => [o.partition, o.offset])).toEqual(steps.sent_offsets.offsets);
    }, 70_000);
  },
);
