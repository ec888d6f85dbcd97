/**
 * The client's transactional producer and read_committed consumer over the multi-partition
 * requests: a transaction over several partitions is one `POST .../records?transactional_id=` per
 * drain, and a read_committed consumer fetches all its partitions in one `records:fetch` with
 * `isolation_level`, seeing committed transactions and nothing of aborted ones. Against a server
 * whose multi-partition fetch has no isolation level, the consumer falls back to per-partition
 * fetches rather than read uncommitted records.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Kafka, type ConsumerRecord } from '../../src/client/index.js';
import { proxy, type ProxiedRequest } from './support/flaky-proxy.js';
import { startServer, stopServer, tempDir, type LocalServer } from '../support/local-server.js';

const PARTITIONS = [0, 1, 2];

describe('transactions over the multi-partition requests', () => {
  let dir: Awaited<ReturnType<typeof tempDir>>;
  let server: LocalServer;

  beforeAll(async () => {
    dir = await tempDir('client-txn-multi-');
    server = await startServer(dir.path);
    await new Kafka({ url: server.origin }).admin().createTopics({ topics: [{ topic: 'txo', numPartitions: 3 }] });
  });
  afterAll(async () => {
    await stopServer(server);
    await dir.remove();
  });

  const isProduce = (r: ProxiedRequest) => r.method === 'POST' && /\/records(\?|$)/.test(r.url);
  const isPerPartition = (r: ProxiedRequest) => /\/partitions\/\d+\/records/.test(r.url);
  const isMultiFetch = (r: ProxiedRequest) => r.url.includes('/records:fetch');

  async function readAll(origin: string, isolationLevel: 'read_committed' | 'read_uncommitted', until: number) {
    const consumer = new Kafka({ url: origin }).consumer({ isolationLevel, fetchMaxWaitMs: 50 });
    consumer.assign(PARTITIONS.map((partition) => ({ topic: 'txo', partition })));
    consumer.seekToBeginning();
    const seen: ConsumerRecord[] = [];
    const deadline = Date.now() + 10_000;
    while (Date.now() < deadline) {
      const records = await consumer.poll({ timeoutMs: 200 });
      seen.push(...records);
      if (seen.length >= until && records.length === 0) break;
    }
    await consumer.close();
    return seen.map((r) => `${r.partition}:${r.value!.toString()}`).sort();
  }

  it('sends each transaction in multi-partition requests; read_committed reads committed ones in one fetch, never aborted ones', async () => {
    const front = await proxy(server.origin);
    try {
      const kafka = new Kafka({ url: front.origin });
      const producer = kafka.producer({ transactionalId: 'txo-writer', lingerMs: 20 });
      const send = async (tag: string, commit: boolean) => {
        const t = await producer.transaction();
        await t.send({
          topic: 'txo',
          messages: PARTITIONS.flatMap((partition) => [0, 1].map((i) => ({ partition, value: `${tag}-${i}` }))),
        });
        await (commit ? t.commit() : t.abort());
      };
      await send('c1', true);
      await send('a1', false);
      await send('c2', true);
      await producer.close();

      const produces = front.log.filter(isProduce);
      expect(produces.length).toBeGreaterThan(0);
      expect(produces.every((r) => r.url.includes('transactional_id=txo-writer'))).toBe(true);
      expect(front.log.filter((r) => r.method === 'POST' && isPerPartition(r))).toEqual([]);
      expect(produces.every((r) => r.status === 200)).toBe(true);

      const expected = PARTITIONS.flatMap((p) => ['c1-0', 'c1-1', 'c2-0', 'c2-1'].map((v) => `${p}:${v}`)).sort();
      front.log.length = 0;
      expect(await readAll(front.origin, 'read_committed', expected.length)).toEqual(expected);
      const fetches = front.log.filter(isMultiFetch);
      expect(fetches.length).toBeGreaterThan(0);
      for (const f of fetches) expect(JSON.parse(f.body.toString()).isolation_level).toBe('read_committed');
      expect(front.log.filter((r) => r.method === 'GET' && isPerPartition(r))).toEqual([]);

      // read_uncommitted sees the aborted transaction's records too (their batches are in the log).
      const all = await readAll(front.origin, 'read_uncommitted', expected.length + 6);
      expect(all).toEqual([...expected, ...PARTITIONS.flatMap((p) => ['a1-0', 'a1-1'].map((v) => `${p}:${v}`))].sort());
    } finally {
      await front.close();
    }
  });

  it('a read_committed consumer against a multi-partition fetch without isolation level goes per partition', async () => {
    // An older server: its records:fetch ignores isolation_level and answers no aborted_transactions.
    const older = await proxy(server.origin, {
      legacy: (req) =>
        req.url?.includes('/records:fetch')
          ? {
              answer: {
                status: 200,
                body: {
                  responses: [
                    {
                      topic: 'txo',
                      partitions: PARTITIONS.map((p) => ({
                        partition_index: p,
                        error_code: 0,
                        high_watermark: 100,
                        log_start_offset: 0,
                        next_offset: 0,
                        records: '',
                      })),
                    },
                  ],
                },
              },
            }
          : undefined,
    });
    try {
      const values = await readAll(older.origin, 'read_committed', 12);
      expect(values).toHaveLength(12);
      expect(values.some((v) => v.includes('a1'))).toBe(false);
      expect(older.log.filter(isMultiFetch)).toHaveLength(1);
      expect(older.log.filter((r) => r.method === 'GET' && isPerPartition(r)).length).toBeGreaterThanOrEqual(3);
    } finally {
      await older.close();
    }
  });

  it('a read_committed consumer waits for a transaction holding its group offset, then starts where it committed (KIP-447)', async () => {
    const kafka = new Kafka({ url: server.origin });
    await kafka.admin().createTopics({ topics: [{ topic: 'txs', numPartitions: 1 }] });
    const plain = kafka.producer();
    await plain.send({ topic: 'txs', messages: Array.from({ length: 10 }, (_, i) => ({ value: `r${i}` })) });
    await plain.close();
    const producer = kafka.producer({ transactionalId: 'txs-writer' });
    const commitOffset = async (offset: number, commit: boolean) => {
      const t = await producer.transaction();
      await t.sendOffsets({
        consumerGroupId: 'txs-g',
        topics: [{ topic: 'txs', partitions: [{ partition: 0, offset }] }],
      });
      if (commit) await t.commit();
      return t;
    };
    await commitOffset(2, true);
    const open = await commitOffset(6, false);
    const firstOffset = async (isolationLevel: 'read_committed' | 'read_uncommitted', until: number) => {
      const consumer = kafka.consumer({
        groupId: 'txs-g',
        isolationLevel,
        enableAutoCommit: false,
        retryBackoffMs: 50,
        fetchMaxWaitMs: 50,
      });
      consumer.assign([{ topic: 'txs', partition: 0 }]);
      try {
        while (Date.now() < until) {
          const records = await consumer.poll({ timeoutMs: 100 });
          if (records.length > 0) return records[0]!.offset;
        }
        return undefined;
      } finally {
        await consumer.close();
      }
    };
    // read_uncommitted takes the committed offset as it stands; read_committed gets nothing while
    // the transaction is open, rather than records the transaction is about to mark as processed.
    expect(await firstOffset('read_uncommitted', Date.now() + 5_000)).toBe(2);
    expect(await firstOffset('read_committed', Date.now() + 600)).toBeUndefined();
    // committed() likewise: read_uncommitted answers at once, read_committed once the transaction ends.
    const tp = [{ topic: 'txs', partition: 0 }];
    const uncommitted = kafka.consumer({ groupId: 'txs-g' });
    const committedOnly = kafka.consumer({ groupId: 'txs-g', isolationLevel: 'read_committed', retryBackoffMs: 50 });
    expect((await uncommitted.committed(tp)).map((o) => o.offset)).toEqual([2]);
    const stable = committedOnly.committed(tp);
    const waiting = firstOffset('read_committed', Date.now() + 10_000);
    await new Promise((r) => setTimeout(r, 300));
    await open.commit();
    expect(await waiting).toBe(6);
    expect((await stable).map((o) => o.offset)).toEqual([6]);
    await Promise.all([uncommitted.close(), committedOnly.close(), producer.close()]);
  });
});
