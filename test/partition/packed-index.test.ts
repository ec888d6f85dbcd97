/**
 * The commit log's fold from PACKED_INDEX_LEVEL (docs/architecture.md, "One conditional write per
 * request"): one packed index item per partition per fold, read by every reader as the commits it
 * holds; a fold whose write's answer was lost, a fold that dies between its writes and two folds at
 * once leave every commit readable once; an idempotent retry of a folded batch finds its offsets.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Storage } from '../../src/compose.js';
import type { MetadataStore, ObjectStore } from '../../src/storage/ports.js';
import { TopicRegistry, type Topic as TopicMeta } from '../../src/topics/topics.js';
import { PACKED_INDEX_LEVEL } from '../../src/storage/formats.js';
import { raiseFeatureLevel } from '../../src/storage/feature-level.js';
import { INDEX_PREFIX, partitionPk } from '../../src/storage/key-layout.js';
import { shardOf } from '../../src/partition/shard-log.js';
import { foldShard } from '../../src/partition/shard-state.js';
import { isPacked, itemRange, type StoredIndexValue } from '../../src/partition/index-item.js';
import { removeEntriesBelowLogStart } from '../../src/maintenance/retention.js';
import { loadPartitionView } from '../../src/maintenance/partition-view.js';
import { mergeSegments } from '../../src/maintenance/segment-merge.js';
import { MemoryMetadataStore } from '../../src/storage/memory-metadata-store.js';
import { MemoryObjectStore } from '../../src/storage/memory-object-store.js';
import { allBackends } from '../support/backends.js';
import { FaultyMetadataStore } from '../support/fault-injection.js';
import { clock, clogTopic, newLog, rec } from '../support/partition-logs.js';
import { readRecords } from '../support/read-records.js';

async function packedTopic(metadata: MetadataStore, stores: ObjectStore[], partitionCount: number) {
  await raiseFeatureLevel(metadata, PACKED_INDEX_LEVEL, Date.now(), 'test');
  return clogTopic(metadata, stores, partitionCount);
}

const values = async (metadata: MetadataStore, stores: ObjectStore[], topic: TopicMeta, p: number) =>
  (await readRecords(newLog(metadata, stores), topic, p, 0, 1 << 22)).records.map((r) => [
    r.offset,
    Buffer.from(r.value!).toString(),
  ]);

const indexItems = (metadata: MetadataStore, topic: TopicMeta, p: number) =>
  metadata.query<StoredIndexValue>(partitionPk(topic.name, p), { beginsWith: INDEX_PREFIX });

/** `requests` requests of one record per partition, `r{i}` from `from` on, and what each partition then reads. */
async function produce(
  metadata: MetadataStore,
  stores: ObjectStore[],
  topic: TopicMeta,
  from: number,
  requests: number,
) {
  const log = newLog(metadata, stores);
  for (let i = from; i < from + requests; i++) {
    const out = await log.append(
      topic,
      Array.from({ length: topic.partitionCount }, (_, p) => ({ partition: p, records: [rec(`r${i}`)] })),
    );
    for (const o of out.values()) expect(o.ok).toBe(true);
  }
}

const expected = (n: number) => Array.from({ length: n }, (_, i) => [i, `r${i}`]);

describe.each(allBackends)('the packed index on $name', (backend) => {
  let storage: Storage;
  let stop: () => Promise<void>;
  beforeAll(async () => {
    ({ storage, stop } = await backend.start());
  });
  afterAll(() => stop());

  it('folds a partition into one packed item, read as the commits it holds, by a new process too', async () => {
    const { metadata, stores } = storage;
    const topic = await packedTopic(metadata, stores, 3);
    await produce(metadata, stores, topic, 0, 20);
    const report = await foldShard(metadata, topic, shardOf(topic, 0), stores.length);
    expect(report).toMatchObject({ through: 20, partitions: 3, indexEntries: 60, indexItems: 3 });
    for (const p of [0, 1, 2]) {
      const items = await indexItems(metadata, topic, p);
      expect(items.length).toBe(1);
      expect(isPacked(items[0]!.value)).toBe(true);
      expect(await values(new FaultyMetadataStore(metadata), stores, topic, p)).toEqual(expected(20));
    }
    // A read from the middle of the item starts at its offset.
    const mid = await readRecords(newLog(new FaultyMetadataStore(metadata), stores), topic, 1, 7, 1 << 20);
    expect(mid.records[0]!.offset).toBe(7);
    // And on after the fold: the next fold packs the next commits in an item of their own.
    await produce(metadata, stores, topic, 20, 5);
    await foldShard(metadata, topic, shardOf(topic, 0), stores.length);
    expect((await indexItems(metadata, topic, 2)).length).toBe(2);
    expect(await values(new FaultyMetadataStore(metadata), stores, topic, 2)).toEqual(expected(25));
    // A purge of the topic's incarnation takes packed items too.
    await newLog(metadata, stores).purge(topic);
    for (const p of [0, 1, 2]) expect(await indexItems(metadata, topic, p)).toEqual([]);
  });
});

describe('a fold writing packed items under faults', () => {
  const setup = async (partitions = 2) => {
    const metadata = new FaultyMetadataStore(new MemoryMetadataStore());
    const stores = [new MemoryObjectStore()];
    const topic = await packedTopic(metadata, stores, partitions);
    return { metadata, stores, topic };
  };
  const readBack = async (metadata: MetadataStore, stores: ObjectStore[], topic: TopicMeta, n: number) => {
    for (let p = 0; p < topic.partitionCount; p++)
      expect(await values(new FaultyMetadataStore(metadata), stores, topic, p)).toEqual(expected(n));
  };

  it('takes a packed write whose answer was lost (applied, sent again) as written, once', async () => {
    const { metadata, stores, topic } = await setup();
    await produce(metadata, stores, topic, 0, 10);
    metadata.faults.fail('put', { when: 'retried', match: (k) => k.includes('|idx#') });
    await foldShard(metadata, topic, shardOf(topic, 0), stores.length);
    expect(metadata.faults.injected).toBe(1);
    for (const p of [0, 1]) expect((await indexItems(metadata, topic, p)).length).toBe(1);
    await readBack(metadata, stores, topic, 10);
  });

  it('loses nothing when a fold dies between its index write and its state write', async () => {
    const { metadata, stores, topic } = await setup();
    await produce(metadata, stores, topic, 0, 10);
    metadata.faults.fail('put', { when: 'before', match: (k) => k.endsWith('|state'), times: 100 });
    await expect(foldShard(metadata, topic, shardOf(topic, 0), stores.length)).rejects.toThrow();
    metadata.faults.clear();
    // The commits are in the index and still past the state's fold position: read once.
    await readBack(metadata, stores, topic, 10);
    await produce(metadata, stores, topic, 10, 3);
    await foldShard(metadata, topic, shardOf(topic, 0), stores.length);
    await readBack(metadata, stores, topic, 13);
    // The second fold found its first commits packed already and packed the rest after them.
    for (const p of [0, 1]) expect((await indexItems(metadata, topic, p)).length).toBe(2);
  });

  it.each([
    ['the shorter fold', 'first'],
    ['the longer fold', 'second'],
  ])('keeps every commit once when two folds of different tails race (%s writes its index first)', async (_, held) => {
    const { metadata, stores, topic } = await setup();
    await produce(metadata, stores, topic, 0, 6);
    // One fold holds its first index write; more commits land; another folds everything.
    const gate = metadata.faults.gate('put', (k) => k.includes('|idx#'));
    const first = foldShard(metadata, topic, shardOf(topic, 0), stores.length);
    await gate.reached;
    await produce(metadata, stores, topic, 6, 4);
    if (held === 'first') {
      // The held (shorter) fold writes first, then the longer one packs what it left.
      gate.release();
      await first;
      await foldShard(metadata, topic, shardOf(topic, 0), stores.length);
    } else {
      await foldShard(metadata, topic, shardOf(topic, 0), stores.length);
      gate.release();
      await first;
    }
    await readBack(metadata, stores, topic, 10);
    await produce(metadata, stores, topic, 10, 2);
    await foldShard(metadata, topic, shardOf(topic, 0), stores.length);
    await readBack(metadata, stores, topic, 12);
  });

  it('moves the commits from the log start on out of a packed item across it, once, then drops the item', async () => {
    const { metadata, stores, topic } = await setup(1);
    await produce(metadata, stores, topic, 0, 10);
    await foldShard(metadata, topic, shardOf(topic, 0), stores.length);
    await newLog(metadata, stores).advanceLogStartOffset(topic, 0, 4);
    // Dies after moving them, before the old item goes: both hold offsets 4..9, read once.
    metadata.faults.fail('delete', { when: 'before', match: (k) => k.includes('|idx#') });
    await expect(removeEntriesBelowLogStart(metadata, topic, 0, 4)).rejects.toThrow();
    expect((await indexItems(metadata, topic, 0)).length).toBe(2);
    const fromStart = async () =>
      (await readRecords(newLog(new FaultyMetadataStore(metadata), stores), topic, 0, 4, 1 << 20)).records.map(
        (r) => r.offset,
      );
    expect(await fromStart()).toEqual([4, 5, 6, 7, 8, 9]);
    expect(await removeEntriesBelowLogStart(metadata, topic, 0, 4)).toBe(1);
    expect(await removeEntriesBelowLogStart(metadata, topic, 0, 4)).toBe(0);
    const [left] = await indexItems(metadata, topic, 0);
    expect(itemRange(left!.value)).toMatchObject({ first: 4, last: 9 });
    expect(await fromStart()).toEqual([4, 5, 6, 7, 8, 9]);
  });

  it('merges the stable part of a packed item into a segment and keeps the rest in an item of its own', async () => {
    const { metadata, stores, topic } = await setup(1);
    await produce(metadata, stores, topic, 0, 10);
    await foldShard(metadata, topic, shardOf(topic, 0), stores.length);
    // Far in the future: every commit but the last is stable, so the piece ends inside the item.
    const now = Date.now() + 3_600_000;
    const view = await loadPartitionView(metadata, topic, 0, stores.length, now, 1000);
    expect(view.stableCount).toBe(9);
    const out = await mergeSegments(
      { metadata, stores, now, entryBytes: 1 << 20, maxSegmentBytes: 1 << 30, mergeMinEntries: 2 },
      view,
      await new TopicRegistry(metadata, clock, 1).get(topic.name),
    );
    expect(out).toMatchObject({ segmentsWritten: 1, entriesReplaced: 9, conflicts: 0 });
    const items = (await indexItems(metadata, topic, 0)).map((i) => i.value);
    expect(items.map((v) => [isPacked(v), itemRange(v).first, itemRange(v).last])).toEqual([
      [false, 0, 8],
      [true, 9, 9],
    ]);
    await readBack(metadata, stores, topic, 10);
  });

  it("answers an idempotent producer's retry of a folded batch with its first offsets", async () => {
    const { metadata, stores, topic } = await setup(1);
    const log = newLog(metadata, stores);
    await metadata.put('pid#7', 'meta', { epoch: 0 });
    const producer = (seq: number) => ({
      producer: { producerId: 7, producerEpoch: 0, baseSequences: new Map([[0, seq]]) },
    });
    for (let i = 0; i < 8; i++) await log.append(topic, [{ partition: 0, records: [rec(`r${i}`)] }], producer(i));
    await foldShard(metadata, topic, shardOf(topic, 0), stores.length);
    const again = await newLog(new FaultyMetadataStore(metadata), stores).append(
      topic,
      [{ partition: 0, records: [rec('r3')] }],
      producer(3),
    );
    expect(again.get(0)).toMatchObject({ ok: true, info: { baseOffset: 3, lastOffset: 3, duplicate: true } });
    await readBack(metadata, stores, topic, 8);
  });
});
