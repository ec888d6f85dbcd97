import { beforeEach, describe, expect, it } from 'vitest';
import { fetchedRecords } from '../../src/log/fetched-records.js';
import type { PartitionLog } from '../../src/log/partition-log.js';
import { READ_GETS } from '../../src/log/partition-reader.js';
import { MemoryMetadataStore } from '../../src/storage/memory-metadata-store.js';
import { MemoryObjectStore } from '../../src/storage/memory-object-store.js';
import type { ByteRange } from '../../src/storage/ports.js';
import { TopicRegistry, type Topic } from '../../src/topics/topics.js';
import { isKafkaError } from '../../src/wire/errors.js';
import { decodeRecordBatches } from '../../src/wire/record-batch.js';
import { FaultyObjectStore } from '../support/fault-injection.js';
import { clock, clogTopic, newLog, rec } from '../support/partition-logs.js';
import { readBatches } from '../support/read-records.js';

/** A replica store that counts its GETs (and the most in flight at once) and can be taken down. */
class CountingStore extends FaultyObjectStore {
  gets = 0;
  inFlight = 0;
  mostInFlight = 0;
  override async get(key: string, range?: ByteRange) {
    this.gets++;
    this.mostInFlight = Math.max(this.mostInFlight, ++this.inFlight);
    try {
      return await super.get(key, range);
    } finally {
      this.inFlight--;
    }
  }
}

const text = (b: Uint8Array | null) => (b === null ? null : Buffer.from(b).toString());
const values = (batches: Uint8Array) =>
  decodeRecordBatches(batches).flatMap((b) => b.records.map((r) => [r.offset, text(r.value)]));
const rejects = async (p: Promise<unknown>, name: Parameters<typeof isKafkaError>[1]) => {
  let error: unknown;
  try {
    await p;
  } catch (e) {
    error = e;
  }
  expect(isKafkaError(error, name), `expected ${name}, got ${String(error)}`).toBe(true);
};

describe('PartitionReader: the read path', () => {
  let stores: CountingStore[];
  let log: PartitionLog;
  let topic: Topic;

  beforeEach(async () => {
    const metadata = new MemoryMetadataStore();
    stores = [new CountingStore(new MemoryObjectStore('s0')), new CountingStore(new MemoryObjectStore('s1'))];
    log = newLog(metadata, stores);
    const topics = new TopicRegistry(metadata, clock, stores.length);
    topic = await topics.create({ name: 't', partitionCount: 2, replicationFactor: 2, configs: {} });
    // Offsets 0-1 of both partitions in one object, then 2-4 of partition 0 in another.
    await log.append(topic, [
      { partition: 0, records: [rec('a0'), rec('a1')] },
      { partition: 1, records: [rec('b0'), rec('b1')] },
    ]);
    await log.append(topic, [{ partition: 0, records: [rec('a2'), rec('a3'), rec('a4')] }]);
  });

  it('answers the stored batches from the one holding the offset, with absolute offsets and the leader epoch', async () => {
    const state = await log.state(topic, 0);
    const r = await readBatches(log, topic, 0, 3, 1 << 20);
    expect(values(r.batches)).toEqual([
      [2, 'a2'],
      [3, 'a3'],
      [4, 'a4'],
    ]);
    expect(decodeRecordBatches(r.batches).map((b) => b.header.partitionLeaderEpoch)).toEqual([state.leaderEpoch]);
    expect(r).toMatchObject({ recordCount: 3, nextOffset: 5, highWatermark: 5, logStartOffset: 0 });
    expect(r.abortedTransactions).toBeUndefined(); // read_uncommitted lists none
    // At the high watermark: an empty answer; past it, or below the log start: OFFSET_OUT_OF_RANGE.
    expect((await readBatches(log, topic, 0, 5, 1 << 20)).batches.byteLength).toBe(0);
    await rejects(readBatches(log, topic, 0, 6, 1 << 20), 'OFFSET_OUT_OF_RANGE');
    await rejects(readBatches(log, topic, 0, -1, 1 << 20), 'OFFSET_OUT_OF_RANGE');
    await rejects(readBatches(log, topic, 2, 0, 1 << 20), 'UNKNOWN_TOPIC_OR_PARTITION');
  });

  it('keeps to max bytes in whole batches, one batch at least', async () => {
    const r = await readBatches(log, topic, 0, 0, 1);
    expect(values(r.batches)).toEqual([
      [0, 'a0'],
      [1, 'a1'],
    ]);
    expect(r.nextOffset).toBe(2);
  });

  it('JSON callers decode the answer: the records from the offset on, not those of the first batch below it', async () => {
    const r = fetchedRecords(await readBatches(log, topic, 0, 3, 1 << 20), 3, 'read_uncommitted');
    expect(r.records.map((x) => [x.offset, text(x.value)])).toEqual([
      [3, 'a3'],
      [4, 'a4'],
    ]);
    expect(r).toMatchObject({ nextOffset: 5, highWatermark: 5, lastStableOffset: 5 });
    expect(r.bytes).toBeGreaterThan(0);
  });

  it("reads from the leader's store, from an in-sync follower when the leader's fails, and fails with KAFKA_STORAGE_ERROR when none can", async () => {
    const [leader, follower] = stores as [CountingStore, CountingStore];
    const r = await readBatches(log, topic, 0, 0, 1 << 20);
    expect(values(r.batches).length).toBe(5);
    expect([leader.gets, follower.gets]).toEqual([2, 0]); // one GET per object, both from the leader
    leader.faults.down = true;
    const again = await readBatches(log, topic, 0, 0, 1 << 20);
    expect(values(again.batches)).toEqual(values(r.batches));
    expect(follower.gets).toBe(2);
    follower.faults.down = true;
    await rejects(readBatches(log, topic, 0, 0, 1 << 20), 'KAFKA_STORAGE_ERROR');
  });

  it('Fetch over many partitions: one GET for partitions sharing an object, an error answers its partition alone', async () => {
    const [leader] = stores as [CountingStore];
    const fetch = (partition: number, offset: number) => ({ topic, partition, offset, maxBytes: 1 << 20 });
    const [p0, p1] = await log.reader.readBatchesMany([fetch(0, 0), fetch(1, 0)], 1 << 20);
    expect(p0!.ok && values(p0!.batches).map(([o]) => o)).toEqual([0, 1, 2, 3, 4]);
    expect(p1!.ok && values(p1!.batches)).toEqual([
      [0, 'b0'],
      [1, 'b1'],
    ]);
    expect(leader.gets).toBe(2); // the shared object once (both partitions' ranges), the second object once
    const [ok, bad, missing] = await log.reader.readBatchesMany([fetch(0, 2), fetch(1, 9), fetch(5, 0)], 1 << 20);
    expect(ok!.ok && values(ok!.batches).map(([o]) => o)).toEqual([2, 3, 4]);
    expect(!bad!.ok && isKafkaError(bad!.error, 'OFFSET_OUT_OF_RANGE')).toBe(true);
    expect(!missing!.ok && isKafkaError(missing!.error, 'UNKNOWN_TOPIC_OR_PARTITION')).toBe(true);
  });

  it('a read of many objects has READ_GETS GETs in flight at most, and answers them all', async () => {
    const [leader] = stores as [CountingStore];
    const more = READ_GETS + 8;
    for (let i = 0; i < more; i++) await log.append(topic, [{ partition: 0, records: [rec(`c${i}`)] }]);
    const r = await readBatches(log, topic, 0, 0, 1 << 20);
    expect(r.nextOffset).toBe(5 + more);
    expect(leader.gets).toBe(2 + more); // an object per append: none merged
    expect(leader.mostInFlight).toBe(READ_GETS);
  });

  it("one reader: a partition's current leader epoch is checked in the multi-partition fetch, its error its answer alone", async () => {
    const { leaderEpoch } = await log.state(topic, 0);
    const fetch = (partition: number, currentLeaderEpoch: number) => ({
      topic,
      partition,
      offset: 0,
      maxBytes: 1 << 20,
      currentLeaderEpoch,
    });
    const [newer, current] = await log.reader.readBatchesMany(
      [fetch(0, leaderEpoch + 1), fetch(1, leaderEpoch)],
      1 << 20,
    );
    expect(!newer!.ok && isKafkaError(newer!.error, 'UNKNOWN_LEADER_EPOCH')).toBe(true);
    expect(current!.ok && values(current!.batches)).toEqual([
      [0, 'b0'],
      [1, 'b1'],
    ]);
    // The one-partition read is the same path, its error thrown.
    await rejects(
      readBatches(log, topic, 0, 0, 1 << 20, { currentLeaderEpoch: leaderEpoch + 1 }),
      'UNKNOWN_LEADER_EPOCH',
    );
  });

  it('Fetch over many partitions keeps to the request max bytes: past the first partition with data, nothing that does not fit', async () => {
    const one = await readBatches(log, topic, 0, 0, 1);
    const [p0, p1] = await log.reader.readBatchesMany(
      [
        { topic, partition: 0, offset: 0, maxBytes: 1 << 20 },
        { topic, partition: 1, offset: 0, maxBytes: 1 << 20 },
      ],
      one.batches.byteLength,
    );
    expect(p0!.ok && p0!.nextOffset).toBe(2);
    expect(p1!.ok && p1!.batches.byteLength).toBe(0);
    expect(p1!.ok && p1!.nextOffset).toBe(0);
  });

  it('lists offsets: earliest, latest, and the first at or after a timestamp', async () => {
    expect(await log.reader.listOffset(topic, 0, 'earliest')).toEqual({ offset: 0, timestamp: -1 });
    expect(await log.reader.listOffset(topic, 0, 'latest')).toEqual({ offset: 5, timestamp: -1 });
    expect(await log.reader.listOffset(topic, 0, { timestamp: 0 })).toMatchObject({ offset: 0 });
    expect(await log.reader.listOffset(topic, 0, { timestamp: Date.now() + 60_000 })).toEqual({
      offset: -1,
      timestamp: -1,
    });
  });
});

describe('PartitionReader on a topic with a commit log', () => {
  it("a fetch of a shard's partitions reads its log once for all of them, and answers each partition's records", async () => {
    const metadata = new MemoryMetadataStore();
    const stores = [new MemoryObjectStore('s0')];
    const topic = await clogTopic(metadata, stores, 12);
    const writer = newLog(metadata, stores);
    await writer.append(
      topic,
      Array.from({ length: 12 }, (_, p) => ({ partition: p, records: [rec(`p${p}-0`), rec(`p${p}-1`)] })),
    );
    // Another process's reader (its own view of the store: nothing resolved yet), counting Queries per item key.
    const queries: string[] = [];
    const counting = new Proxy(metadata, {
      get(target, prop) {
        const value = Reflect.get(target, prop, target) as unknown;
        if (prop === 'query')
          return (pk: string, ...rest: unknown[]) => {
            queries.push(pk);
            return (value as (...a: unknown[]) => unknown).call(target, pk, ...rest);
          };
        return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
      },
    });
    const reader = newLog(counting, stores);
    const answers = await reader.reader.readBatchesMany(
      Array.from({ length: 12 }, (_, p) => ({ topic, partition: p, offset: 0, maxBytes: 1 << 20 })),
      1 << 20,
    );
    expect(answers.map((a) => a.ok && values(a.batches))).toEqual(
      Array.from({ length: 12 }, (_, p) => [
        [0, `p${p}-0`],
        [1, `p${p}-1`],
      ]),
    );
    expect(queries.filter((pk) => pk.startsWith('clog#'))).toHaveLength(1);
  });
});
