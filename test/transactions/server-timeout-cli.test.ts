/**
 * The in-process server as `npm start` composes it (app, services, in-process scheduler), over
 * memory storage: a hanging transaction is aborted by its timeout with no request at all, and the
 * `kafka-log transactions` commands list, describe, find and abort transactions.
 */
import { serve, type ServerType } from '@hono/node-server';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { main } from '../../src/cli/main.js';
import { Kafka } from '../../src/client/index.js';
import { createServices, createStorage, startInProcessScheduler } from '../../src/compose.js';
import { serverConfigFromEnv } from '../../src/config/server-config.js';
import { createApp } from '../../src/http/app.js';
import type { SchedulerLoop } from '../../src/maintenance/scheduler.js';

const config = serverConfigFromEnv({ STORAGE_BACKEND: 'memory', SCHEDULER_INTERVAL_MS: '100' });
const storage = createStorage(config.backend);
const services = createServices(config, storage);
let server: ServerType;
let scheduler: SchedulerLoop | undefined;
let url = '';

async function cli(...args: string[]): Promise<{ code: number; out: string[]; err: string[] }> {
  const out: string[] = [];
  const err: string[] = [];
  const code = await main(args, {
    out: (l) => out.push(l),
    err: (l) => err.push(l),
    stdin: Readable.from([]),
    env: { KAFKA_LOG_URL: url },
    signal: new AbortController().signal,
  });
  return { code, out, err };
}

const partition = async (topic: string, p: number) =>
  (await fetch(`${url}/v3/clusters/local/topics/${topic}/partitions/${p}`)).json() as Promise<{
    high_watermark: number;
    last_stable_offset: number;
  }>;

beforeAll(async () => {
  const app = createApp(services, { logError: () => {} });
  await new Promise<void>((resolve) => {
    server = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }, (info) => {
      url = `http://127.0.0.1:${info.port}`;
      resolve();
    });
  });
  scheduler = startInProcessScheduler(config, storage, services);
  await new Kafka({ url }).admin().createTopics({ topics: [{ topic: 'tx', numPartitions: 2 }] });
});
afterAll(async () => {
  await scheduler?.stop();
  await new Promise((r) => server.close(r));
});

describe('transactions on a running server', () => {
  it('aborts a transaction open past transaction.timeout.ms with no request arriving; the LSO moves', async () => {
    const producer = new Kafka({ url }).producer({ transactionalId: 'hangs', transactionTimeoutMs: 1000 });
    const txn = await producer.transaction();
    await txn.send({ topic: 'tx', messages: [{ partition: 0, value: 'never committed' }] });
    expect(await partition('tx', 0)).toMatchObject({ high_watermark: 1, last_stable_offset: 0 });
    // Nothing is sent from here on: only the scheduler's timers can end it.
    await new Promise((r) => setTimeout(r, 2500));
    expect(await partition('tx', 0)).toMatchObject({ high_watermark: 2, last_stable_offset: 2 });
    await expect(txn.commit()).rejects.toMatchObject({ type: 'PRODUCER_FENCED' });
    // A new producer of the id goes on where the fenced one stopped.
    const next = new Kafka({ url }).producer({ transactionalId: 'hangs' });
    const t2 = await next.transaction();
    await t2.send({ topic: 'tx', messages: [{ partition: 0, value: 'committed' }] });
    await t2.commit();
    const consumer = new Kafka({ url }).consumer({ isolationLevel: 'read_committed' });
    consumer.assign([{ topic: 'tx', partition: 0 }]);
    consumer.seekToBeginning();
    const seen: string[] = [];
    for (let i = 0; i < 10 && seen.length < 1; i++)
      seen.push(...(await consumer.poll({ timeoutMs: 200 })).map((r) => r.value!.toString()));
    expect(seen).toEqual(['committed']);
    await Promise.all([consumer.close(), producer.close(), next.close()]);
  });

  it('fences a zombie producer of the same transactional id: its send and commit fail with PRODUCER_FENCED, its records never show', async () => {
    const kafka = new Kafka({ url });
    await kafka.admin().createTopics({ topics: [{ topic: 'zombie', numPartitions: 1 }] });
    const zombie = kafka.producer({ transactionalId: 'zz', retries: 1 });
    const zt = await zombie.transaction();
    await zt.send({ topic: 'zombie', messages: [{ partition: 0, value: 'from the zombie' }] });
    const successor = kafka.producer({ transactionalId: 'zz' });
    const st = await successor.transaction(); // fences the zombie and aborts its open transaction
    await expect(zt.send({ topic: 'zombie', messages: [{ partition: 0, value: 'late' }] })).rejects.toMatchObject({
      type: 'PRODUCER_FENCED',
    });
    await expect(zt.commit()).rejects.toMatchObject({ type: 'PRODUCER_FENCED' });
    await st.send({ topic: 'zombie', messages: [{ partition: 0, value: 'from the successor' }] });
    await st.commit();
    const consumer = kafka.consumer({ isolationLevel: 'read_committed', fetchMaxWaitMs: 50 });
    consumer.assign([{ topic: 'zombie', partition: 0 }]);
    consumer.seekToBeginning();
    const seen: string[] = [];
    for (let i = 0; i < 10 && seen.length < 1; i++)
      seen.push(...(await consumer.poll({ timeoutMs: 100 })).map((r) => r.value!.toString()));
    expect(seen).toEqual(['from the successor']);
    await Promise.all([consumer.close(), zombie.close().catch(() => {}), successor.close()]);
  });

  it('a read_committed consumer reset to latest starts at the LSO (with and without a group), so it sees the open transaction once committed', async () => {
    const kafka = new Kafka({ url });
    await kafka.admin().createTopics({ topics: [{ topic: 'reset', numPartitions: 1 }] });
    const producer = kafka.producer({ transactionalId: 'reset-tx' });
    const txn = await producer.transaction();
    await txn.send({ topic: 'reset', messages: [{ partition: 0, value: 'in flight' }] });
    for (const groupId of ['reset-group', undefined]) {
      const consumer = kafka.consumer({
        ...(groupId ? { groupId } : {}),
        isolationLevel: 'read_committed',
        autoOffsetReset: 'latest',
      });
      consumer.assign([{ topic: 'reset', partition: 0 }]);
      expect(await consumer.position({ topic: 'reset', partition: 0 })).toBe(0); // the HW is 1
      await consumer.close();
    }
    await txn.commit();
    await producer.close();
  });

  it("checks the consumer's member id and generation on a transactional offset commit (KIP-447)", async () => {
    const kafka = new Kafka({ url });
    await kafka.admin().createTopics({ topics: [{ topic: 'k447', numPartitions: 1 }] });
    const consumer = kafka.consumer({ groupId: 'g447', enableAutoCommit: false });
    await consumer.subscribe({ topics: ['k447'] });
    for (let i = 0; i < 50 && consumer.assignment().length === 0; i++) await consumer.poll({ timeoutMs: 100 });
    expect(consumer.assignment()).toEqual([{ topic: 'k447', partition: 0 }]);
    const producer = kafka.producer({ transactionalId: 'k447-tx' });
    const txn = await producer.transaction();
    const topics = [{ topic: 'k447', partitions: [{ partition: 0, offset: 0 }] }];
    await expect(
      txn.sendOffsets({
        consumerGroupId: 'g447',
        topics,
        consumer: { groupMetadata: () => ({ memberId: 'a-zombie', generationId: 1 }) },
      }),
    ).rejects.toMatchObject({ type: 'UNKNOWN_MEMBER_ID' });
    const { memberId, generationId } = consumer.groupMetadata();
    await expect(
      txn.sendOffsets({
        consumerGroupId: 'g447',
        topics,
        consumer: { groupMetadata: () => ({ memberId, generationId: generationId - 1 }) },
      }),
    ).rejects.toMatchObject({ type: 'ILLEGAL_GENERATION' });
    // A refused offset commit leaves the transaction abort-only, as in Kafka.
    await expect(txn.commit()).rejects.toMatchObject({ type: 'ILLEGAL_STATE' });
    await txn.abort();
    const next = await producer.transaction();
    await next.sendOffsets({
      consumerGroupId: 'g447',
      topics: [{ topic: 'k447', partitions: [{ partition: 0, offset: 0 }] }],
      consumer,
    });
    await next.commit();
    expect(await consumer.committed()).toEqual([{ topic: 'k447', partition: 0, offset: 0 }]);
    await Promise.all([consumer.close(), producer.close()]);
  });

  it('interleaved transactions of two producers: read_committed consumers (record batches and JSON) see only the committed one, in order', async () => {
    const kafka = new Kafka({ url });
    await kafka.admin().createTopics({ topics: [{ topic: 'mixed', numPartitions: 1 }] });
    const a = kafka.producer({ transactionalId: 'mix-a' });
    const b = kafka.producer({ transactionalId: 'mix-b' });
    const plain = kafka.producer();
    const ta = await a.transaction();
    const tb = await b.transaction();
    const send = (t: typeof ta, v: string) => t.send({ topic: 'mixed', messages: [{ partition: 0, value: v }] });
    await send(ta, 'a1');
    await send(tb, 'b1');
    await plain.send({ topic: 'mixed', messages: [{ partition: 0, value: 'p1' }] });
    await send(ta, 'a2');
    await send(tb, 'b2');
    // Both open: the LSO is a1's offset.
    expect(await partition('mixed', 0)).toMatchObject({ last_stable_offset: 0 });
    await tb.abort();
    expect(await partition('mixed', 0)).toMatchObject({ last_stable_offset: 0 });
    await ta.commit();
    const tb2 = await b.transaction();
    await send(tb2, 'b3');
    await tb2.commit();
    for (const format of ['record-batch', 'json'] as const) {
      for (const isolationLevel of ['read_committed', 'read_uncommitted'] as const) {
        const consumer = kafka.consumer({ isolationLevel, format, fetchMaxWaitMs: 50 });
        consumer.assign([{ topic: 'mixed', partition: 0 }]);
        consumer.seekToBeginning();
        const seen: string[] = [];
        for (let i = 0; i < 20 && seen.length < (isolationLevel === 'read_committed' ? 4 : 6); i++)
          seen.push(...(await consumer.poll({ timeoutMs: 100 })).map((r) => r.value!.toString()));
        await consumer.close();
        expect(seen, `${format} ${isolationLevel}`).toEqual(
          isolationLevel === 'read_committed' ? ['a1', 'p1', 'a2', 'b3'] : ['a1', 'b1', 'p1', 'a2', 'b2', 'b3'],
        );
      }
    }
    await Promise.all([a.close(), b.close(), plain.close()]);
  });

  it('kafka-log transactions: list, describe, find-hanging, abort', async () => {
    const producer = new Kafka({ url }).producer({ transactionalId: 'cli-tx' });
    const txn = await producer.transaction();
    await txn.send({ topic: 'tx', messages: [{ partition: 1, value: 'open' }] });
    const list = await cli('transactions', 'list');
    expect(list.code).toBe(0);
    expect(list.out[0]).toMatch(/TransactionalId\s+Coordinator\s+ProducerId\s+TransactionState/);
    expect(list.out.some((l) => /^cli-tx\s+0\s+\d+\s+Ongoing/.test(l))).toBe(true);
    const described = await cli('transactions', 'describe', '--transactional-id', 'cli-tx');
    expect(described.out[1]).toMatch(/cli-tx.*Ongoing.*60000.*tx-1/);
    // An open transaction the coordinator lists is not hanging.
    expect(
      (await cli('transactions', 'find-hanging', '--topic', 'tx', '--max-transaction-timeout', '0')).out,
    ).toHaveLength(1);
    await txn.commit();

    // A hanging one: a transactional batch in a partition that no coordinator knows of (a producer
    // whose coordinator state is gone), as KIP-890 describes them.
    const topic = await services.topics.get('tx');
    const out = (
      await services.log.append(
        topic,
        [{ partition: 1, records: [{ key: null, value: Buffer.from('hanging'), headers: [], timestamp: Date.now() }] }],
        { producer: { producerId: 9999, producerEpoch: 3, baseSequences: new Map([[1, 0]]), transactional: true } },
      )
    ).get(1)!;
    expect(out.ok).toBe(true);
    const hanging = await cli('transactions', 'find-hanging', '--topic', 'tx', '--max-transaction-timeout', '0');
    expect(hanging.out).toHaveLength(2);
    expect(hanging.out[1]).toMatch(/^tx\s+1\s+9999\s+3\s+0\s+2\s/);
    const before = await partition('tx', 1);
    expect(before.last_stable_offset).toBe(2);
    const aborted = await cli('transactions', 'abort', '--topic', 'tx', '--partition', '1', '--start-offset', '2');
    expect(aborted).toMatchObject({ code: 0, out: ['Aborted the transaction of producer 9999 in tx-1'] });
    expect(await partition('tx', 1)).toMatchObject({ high_watermark: 4, last_stable_offset: 4 });
    expect(
      (await cli('transactions', 'find-hanging', '--topic', 'tx', '--max-transaction-timeout', '0')).out,
    ).toHaveLength(1);
    // Aborting again writes nothing.
    expect(
      (
        await cli(
          'transactions',
          'abort',
          '--topic',
          'tx',
          '--partition',
          '1',
          '--producer-id',
          '9999',
          '--producer-epoch',
          '3',
        )
      ).out[0],
    ).toMatch(/nothing written/);
    expect((await cli('transactions', 'describe', '--transactional-id', 'nope')).err[0]).toMatch(
      /TRANSACTIONAL_ID_NOT_FOUND/,
    );
    await producer.close();
  });
});
