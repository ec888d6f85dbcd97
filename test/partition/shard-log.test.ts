/**
 * The commit log per shard (docs/architecture.md, "One conditional write per request"): a request
 * over many partitions commits with one entry; racing writers (two processes) get gap-free offsets;
 * a write whose answer was lost counts once; readers see unfolded commits, and the fold changes
 * nothing they see; an idempotent retry behind unfolded entries is answered with its offsets.
 */
import { describe, expect, it } from 'vitest';
import { MemoryMetadataStore } from '../../src/storage/memory-metadata-store.js';
import { MemoryObjectStore } from '../../src/storage/memory-object-store.js';
import type { MetadataStore, ObjectStore } from '../../src/storage/ports.js';
import { packEntry, shardOf, type ShardEntry } from '../../src/partition/shard-log.js';
import { foldShard, readPartitionState, updatePartitionState } from '../../src/partition/shard-state.js';
import { FaultyMetadataStore } from '../support/fault-injection.js';
import { clock, clogTopic, newLog, rec } from '../support/partition-logs.js';
import { TopicRegistry } from '../../src/topics/topics.js';
import { readRecords } from '../support/read-records.js';

const values = async (
  metadata: MetadataStore,
  stores: ObjectStore[],
  topic: Awaited<ReturnType<typeof clogTopic>>,
  p: number,
) =>
  (await readRecords(newLog(metadata, stores), topic, p, 0, 1 << 22)).records.map((r) => [
    r.offset,
    Buffer.from(r.value!).toString(),
  ]);

const entryPuts = (metadata: FaultyMetadataStore) => {
  let n = 0;
  const put = metadata.put.bind(metadata);
  metadata.put = (pk, sk, value, condition, options) => {
    if (pk.startsWith('clog#') && sk.startsWith('e#')) n++;
    return put(pk, sk, value, condition, options);
  };
  return () => n;
};

describe('the commit log per shard', () => {
  it('packs an append per partition small: under 1 KB at 12 partitions, 4 KB at 100', () => {
    const entry = (parts: number): ShardEntry => ({
      topicId: '0b6f5c1e-6f0e-4d4e-9a55-2f1d3c4b5a69',
      token: 'AbCdEfGh',
      at: 1_765_000_000_000,
      objectKey: 'data/0b6f5c1e-6f0e-4d4e-9a55-2f1d3c4b5a69/7/1765000000000-0123456789ab.v2',
      producer: { producerId: 123456, producerEpoch: 3 },
      appends: Array.from({ length: parts }, (_, p) => ({
        partition: p,
        baseOffset: 12_345_678 + p,
        recordCount: 1024,
        start: p * 87_381,
        end: (p + 1) * 87_381,
        maxTimestamp: 1_765_000_000_000 - 5,
        leaderEpoch: 2,
        holders: [0],
        baseSequence: 40_960 + p,
      })),
      states: [],
    });
    expect(JSON.stringify(packEntry(entry(12))).length).toBeLessThan(1024);
    expect(JSON.stringify(packEntry(entry(100))).length).toBeLessThan(4096);
  });

  it('commits a request over 12 partitions with one entry, and readers see it before and after the fold', async () => {
    const metadata = new FaultyMetadataStore(new MemoryMetadataStore());
    const stores = [new MemoryObjectStore()];
    const topic = await clogTopic(metadata, stores, 12);
    const puts = entryPuts(metadata);
    const log = newLog(metadata, stores);
    const parts = Array.from({ length: 12 }, (_, p) => p);
    for (let i = 0; i < 3; i++) {
      const out = await log.append(
        topic,
        parts.map((p) => ({ partition: p, records: [rec(`r${i}-p${p}`)] })),
      );
      for (const p of parts) expect(out.get(p)).toMatchObject({ ok: true, info: { baseOffset: i, lastOffset: i } });
    }
    expect(puts()).toBe(3);
    const expected = [0, 1, 2].map((i) => [i, `r${i}-p5`]);
    expect(await values(metadata, stores, topic, 5)).toEqual(expected);
    expect((await log.state(topic, 5)).highWatermark).toBe(3);
    const report = await foldShard(metadata, topic, shardOf(topic, 5), 1);
    expect(report).toMatchObject({ through: 3, partitions: 12, indexEntries: 36 });
    expect(await values(metadata, stores, topic, 5)).toEqual(expected);
    // Another process reads the folded state item: nothing pending, folded through entry 3.
    const state = await newLog(new FaultyMetadataStore(metadata), stores).state(topic, 5);
    expect(state.pending).toBeUndefined();
    expect(state.clog).toBe(3);
    expect(state.highWatermark).toBe(3);
    // And this process, which resolved the entries before the fold, sees them in the index now.
    expect((await log.state(topic, 5)).pending).toBeUndefined();
    // And on after the fold.
    await log.append(topic, [{ partition: 5, records: [rec('after')] }]);
    expect(await values(metadata, stores, topic, 5)).toEqual([...expected, [3, 'after']]);
  });

  it('folds a partition added after the folder read the topic: the mark never passes its entries unfolded', async () => {
    const metadata = new MemoryMetadataStore();
    const stores = [new MemoryObjectStore()];
    const stale = await clogTopic(metadata, stores, 2);
    const registry = new TopicRegistry(metadata, clock, stores.length);
    const grown = await registry.addPartitions(stale.name, 4);
    const log = newLog(metadata, stores);
    const out = await log.append(grown, [
      { partition: 0, records: [rec('p0')] },
      { partition: 3, records: [rec('p3')] },
    ]);
    for (const o of out.values()) expect(o.ok).toBe(true);
    // A folder whose topic is the one read before the partitions were added (a cached topic).
    expect(await foldShard(metadata, stale, 0, 1)).toMatchObject({ through: 1, partitions: 2 });
    // A process with nothing cached reads partition 3 from its folded state.
    expect(await values(new FaultyMetadataStore(metadata), stores, grown, 3)).toEqual([[0, 'p3']]);
  });

  it('gives racing processes gap-free, unique offsets per partition', async () => {
    const metadata = new MemoryMetadataStore();
    const stores = [new MemoryObjectStore()];
    const topic = await clogTopic(metadata, stores, 4);
    const writers = [newLog(metadata, stores), newLog(metadata, stores), newLog(metadata, stores)];
    await Promise.all(
      writers.map(async (log, w) => {
        for (let i = 0; i < 10; i++) {
          const out = await log.append(
            topic,
            [0, 1, 2, 3].map((p) => ({ partition: p, records: [rec(`w${w}-${i}`), rec(`w${w}-${i}b`)] })),
          );
          for (const o of out.values()) expect(o.ok).toBe(true);
        }
      }),
    );
    for (const p of [0, 1, 2, 3]) {
      const read = await values(metadata, stores, topic, p);
      expect(read.map(([o]) => o)).toEqual(Array.from({ length: 60 }, (_, i) => i));
      expect(new Set(read.map(([, v]) => v)).size).toBe(60);
    }
  });

  it('takes an entry write whose answer was lost (applied, sent again) as committed, once', async () => {
    const metadata = new FaultyMetadataStore(new MemoryMetadataStore());
    const stores = [new MemoryObjectStore()];
    const topic = await clogTopic(metadata, stores, 3);
    const log = newLog(metadata, stores);
    await log.append(
      topic,
      [0, 1, 2].map((p) => ({ partition: p, records: [rec('first')] })),
    );
    metadata.faults.fail('put', { when: 'retried', match: (k) => k.includes('|e#') });
    const out = await log.append(
      topic,
      [0, 1, 2].map((p) => ({ partition: p, records: [rec('second')] })),
    );
    for (const p of [0, 1, 2]) {
      expect(out.get(p)).toMatchObject({ ok: true, info: { baseOffset: 1 } });
      expect(await values(metadata, stores, topic, p)).toEqual([
        [0, 'first'],
        [1, 'second'],
      ]);
    }
    expect(metadata.faults.injected).toBe(1);
  });

  it("answers an idempotent producer's retry behind unfolded entries with the first offsets", async () => {
    const metadata = new MemoryMetadataStore();
    const stores = [new MemoryObjectStore()];
    const topic = await clogTopic(metadata, stores, 2);
    const log = newLog(metadata, stores);
    await metadata.put('pid#7', 'meta', { epoch: 0 });
    const producer = (seq: number) => ({
      producer: {
        producerId: 7,
        producerEpoch: 0,
        baseSequences: new Map([
          [0, seq],
          [1, seq],
        ]),
      },
    });
    const batch = (v: string) => [0, 1].map((p) => ({ partition: p, records: [rec(v), rec(`${v}b`)] }));
    const first = await log.append(topic, batch('a'), producer(0));
    await log.append(topic, batch('b'), producer(2));
    const again = await log.append(topic, batch('a'), producer(0));
    for (const p of [0, 1]) {
      expect(first.get(p)).toMatchObject({ ok: true, info: { baseOffset: 0, lastOffset: 1 } });
      expect(again.get(p)).toMatchObject({ ok: true, info: { baseOffset: 0, lastOffset: 1, duplicate: true } });
    }
    const gap = await log.append(topic, batch('c'), producer(9));
    expect(gap.get(0)).toMatchObject({ ok: false, error: { errorName: 'OUT_OF_ORDER_SEQUENCE_NUMBER' } });
    expect(await values(metadata, stores, topic, 1)).toEqual([
      [0, 'a'],
      [1, 'ab'],
      [2, 'b'],
      [3, 'bb'],
    ]);
  });
  it('does not write a whole new state decided on a read older than an append (an election)', async () => {
    const metadata = new MemoryMetadataStore();
    const stores = [new MemoryObjectStore()];
    const topic = await clogTopic(metadata, stores, 1);
    const log = newLog(metadata, stores);
    await log.append(topic, [{ partition: 0, records: [rec('a')] }]);
    const known = await readPartitionState(metadata, topic, 0, 1);
    // Committed after the election's read: an election decided on that read must not drop it.
    await log.append(topic, [{ partition: 0, records: [rec('b')] }]);
    const elected = await updatePartitionState({
      metadata,
      topic,
      partition: 0,
      storeCount: 1,
      now: clock.now(),
      known,
      attempts: 2,
      giveUp: { errorName: 'LEADER_NOT_AVAILABLE', message: 'changed' },
      decide: (_, attempt) =>
        attempt === 0
          ? { write: { ...known.state, leaderEpoch: known.state.leaderEpoch + 1 }, answer: (s) => s }
          : { done: undefined },
    });
    expect(elected.result).toBeUndefined();
    expect(elected.state.highWatermark).toBe(2);
    expect(await values(metadata, stores, topic, 0)).toEqual([
      [0, 'a'],
      [1, 'b'],
    ]);
    // Decided on the state as it is, the same change is written.
    const current = await readPartitionState(metadata, topic, 0, 1);
    const again = await updatePartitionState({
      metadata,
      topic,
      partition: 0,
      storeCount: 1,
      now: clock.now(),
      known: current,
      attempts: 2,
      giveUp: { errorName: 'LEADER_NOT_AVAILABLE', message: 'changed' },
      decide: (_, attempt) =>
        attempt === 0
          ? { write: { ...current.state, leaderEpoch: current.state.leaderEpoch + 1 }, answer: (s) => s }
          : { done: undefined },
    });
    expect(again.result?.leaderEpoch).toBe(current.state.leaderEpoch + 1);
    expect(await values(metadata, stores, topic, 0)).toEqual([
      [0, 'a'],
      [1, 'b'],
    ]);
  });
});
