/**
 * A topic's commit log shards grouped by the partitions' first leader (partition/shard-log.ts,
 * `ShardLayout`; docs/architecture.md, "One conditional write per request"): the rule, the layout
 * stored with a topic created from feature level 11 and kept for its life, each leader's request
 * committed to its own shard's log on every backend, topics made before the level still read and
 * written by floor(p / 128), the level's gate, an entry write whose answer was lost, an election
 * (the shard stays as the leader moves), and maintenance's round folding every shard.
 */
import { describe, expect, it } from 'vitest';
import { assignReplicas } from '../../src/partition/partition-state.js';
import {
  firstOfShard,
  SHARD_SIZE,
  ShardLog,
  shardOf,
  shardsOf,
  type ShardLayout,
} from '../../src/partition/shard-log.js';
import { foldShard, readPartitionState, updatePartitionState } from '../../src/partition/shard-state.js';
import { registerProcess, raiseFeatureLevel, REGISTRATION_TTL_MS } from '../../src/storage/feature-level.js';
import { itemFormatVersion, LEADER_SHARDS_LEVEL, PACKED_INDEX_LEVEL, writeVersion } from '../../src/storage/formats.js';
import { CLUSTER_PK, topicSk } from '../../src/storage/key-layout.js';
import { MemoryMetadataStore } from '../../src/storage/memory-metadata-store.js';
import { MemoryObjectStore } from '../../src/storage/memory-object-store.js';
import type { MetadataStore, ObjectStore } from '../../src/storage/ports.js';
import { TopicRegistry, type Topic } from '../../src/topics/topics.js';
import { allBackends, memoryBackend, storagePerTest } from '../support/backends.js';
import { harness, rec as record, TestClock } from '../maintenance/helpers.js';
import { FaultyMetadataStore } from '../support/fault-injection.js';
import { clock, clogTopic, newLog, rec } from '../support/partition-logs.js';
import { readRecords } from '../support/read-records.js';

const range = (n: number) => Array.from({ length: n }, (_, i) => i);

const values = async (metadata: MetadataStore, stores: ObjectStore[], topic: Topic, p: number) =>
  (await readRecords(newLog(metadata, stores), topic, p, 0, 1 << 22)).records.map((r) => [
    r.offset,
    Buffer.from(r.value!).toString(),
  ]);

/** The partitions each entry of a shard's log appends to, entry by entry. */
const entryPartitions = async (metadata: MetadataStore, topic: Topic, shard: number) =>
  (await new ShardLog(metadata).tail(topic.name, shard, 0)).entries.map((e) => e.entry.appends.map((a) => a.partition));

describe('the shard layout rule', () => {
  it("puts each partition in its first leader's group, cut at SHARD_SIZE, one folding partition per shard", () => {
    const twelve = { shardGroups: 3, partitionCount: 12 };
    for (const p of range(12)) expect(shardOf(twelve, p)).toBe(assignReplicas(p, 1, 3)[0]);
    expect(shardsOf(twelve)).toEqual([0, 1, 2]);

    const big = { shardGroups: 3, partitionCount: 1000 };
    const members = new Map<number, number[]>();
    for (const p of range(big.partitionCount))
      members.set(shardOf(big, p), [...(members.get(shardOf(big, p)) ?? []), p]);
    expect(shardsOf(big)).toEqual([...members.keys()].sort((a, b) => a - b));
    for (const ps of members.values()) {
      expect(ps.length).toBeLessThanOrEqual(SHARD_SIZE);
      expect(new Set(ps.map((p) => assignReplicas(p, 2, 3)[0])).size).toBe(1);
      expect(ps.filter((p) => firstOfShard(big, p))).toEqual([ps[0]]);
    }
    // 334 partitions led by store 0: 128 + 128 + 78.
    expect(members.get(0)!.length + members.get(3)!.length + members.get(6)!.length).toBe(334);
  });

  it('without a layout (topics made before level 11) is floor(p / SHARD_SIZE)', () => {
    const old: ShardLayout & { partitionCount: number } = { partitionCount: 300 };
    for (const p of range(300)) {
      expect(shardOf(old, p)).toBe(Math.floor(p / SHARD_SIZE));
      expect(firstOfShard(old, p)).toBe(p % SHARD_SIZE === 0);
    }
    expect(shardsOf(old)).toEqual([0, 1, 2]);
  });
});

describe("a topic's shard layout", () => {
  it('is stored when created from level 11 (the store count, topic format 2), kept as partitions are added', async () => {
    const metadata = new MemoryMetadataStore();
    const at = (level: number, stores = 3) =>
      new TopicRegistry(metadata, clock, stores, { featureLevel: async () => level });
    const created = await at(LEADER_SHARDS_LEVEL).create({ name: 'new', partitionCount: 12, replicationFactor: 1 });
    expect(created).toMatchObject({ clog: true, shardGroups: 3 });
    const item = await metadata.get(CLUSTER_PK, topicSk('new'));
    expect(item?.value).toMatchObject({ clog: true, shardGroups: 3 });
    expect(itemFormatVersion(item?.value)).toBe(2);

    const old = await at(PACKED_INDEX_LEVEL).create({ name: 'old', partitionCount: 12, replicationFactor: 1 });
    expect(old.clog).toBe(true);
    expect(old.shardGroups).toBeUndefined();
    expect(itemFormatVersion((await metadata.get(CLUSTER_PK, topicSk('old')))?.value)).toBe(1);

    // Four stores now: the layout is the topic's, not the store count's, and added partitions follow it.
    const grown = await at(LEADER_SHARDS_LEVEL, 4).addPartitions('new', 20);
    expect(grown).toMatchObject({ partitionCount: 20, shardGroups: 3 });
    expect(itemFormatVersion((await metadata.get(CLUSTER_PK, topicSk('new')))?.value)).toBe(2);
    expect(shardOf(grown, 13)).toBe(1);
  });

  it('waits for the level: not while a process that supports only level 10 runs, then at once', async () => {
    const metadata = new MemoryMetadataStore();
    const now = Date.now();
    const topics = new TopicRegistry(metadata, clock, 3, { maxAgeMs: 0 });
    const older = { id: 'older', release: '0.2.0', supportedLevel: PACKED_INDEX_LEVEL, role: 'http', seenAt: now };
    await registerProcess(metadata, older);
    await raiseFeatureLevel(metadata, PACKED_INDEX_LEVEL, now, 'test');
    await expect(raiseFeatureLevel(metadata, LEADER_SHARDS_LEVEL, now, 'test')).rejects.toMatchObject({
      errorName: 'INVALID_REQUEST',
    });
    const before = await topics.create({ name: 'before', partitionCount: 12, replicationFactor: 1 });
    expect(before.clog).toBe(true);
    expect(before.shardGroups).toBeUndefined();
    expect(writeVersion('topic', PACKED_INDEX_LEVEL)).toBe(1);

    // The older process gone (its registration expired), the level goes up and new topics get the layout.
    await registerProcess(metadata, { ...older, seenAt: now - REGISTRATION_TTL_MS - 1 });
    await raiseFeatureLevel(metadata, LEADER_SHARDS_LEVEL, now, 'test');
    const fresh = new TopicRegistry(metadata, clock, 3, { maxAgeMs: 0 });
    expect(await fresh.create({ name: 'after', partitionCount: 12, replicationFactor: 1 })).toMatchObject({
      shardGroups: 3,
    });
    expect(writeVersion('topic', LEADER_SHARDS_LEVEL)).toBe(2);
    expect((await fresh.get('before')).shardGroups).toBeUndefined();
  });

  for (const backend of allBackends)
    it(`commits each leader's request to its own shard, reads, folds and purges it (${backend.name})`, async () => {
      const { storage, stop } = await backend.start(3);
      try {
        const { metadata, stores } = storage;
        const topic = await clogTopic(metadata, stores, 12, LEADER_SHARDS_LEVEL);
        expect(topic.shardGroups).toBe(3);
        const log = newLog(metadata, stores);
        for (const leader of [0, 1, 2]) {
          const ps = range(12).filter((p) => p % 3 === leader);
          const out = await log.append(
            topic,
            ps.map((p) => ({ partition: p, records: [rec(`a${p}`)] })),
          );
          for (const p of ps) expect(out.get(p)).toMatchObject({ ok: true, info: { baseOffset: 0 } });
        }
        // A request over every partition: one entry in each shard.
        const all = await log.append(
          topic,
          range(12).map((p) => ({ partition: p, records: [rec(`b${p}`)] })),
        );
        for (const p of range(12)) expect(all.get(p)).toMatchObject({ ok: true, info: { baseOffset: 1 } });
        for (const shard of [0, 1, 2]) {
          const own = range(12).filter((p) => p % 3 === shard);
          expect(await entryPartitions(metadata, topic, shard)).toEqual([own, own]);
        }
        const expected = (p: number) => [
          [0, `a${p}`],
          [1, `b${p}`],
        ];
        for (const p of range(12)) expect(await values(metadata, stores, topic, p)).toEqual(expected(p));

        // Maintenance folds each shard from its first partition.
        const folders = range(12).filter((p) => firstOfShard(topic, p));
        expect(folders).toEqual([0, 1, 2]);
        for (const p of folders)
          expect(await foldShard(metadata, topic, shardOf(topic, p), stores.length)).toMatchObject({
            through: 2,
            partitions: 4,
          });
        for (const p of range(12)) expect(await values(metadata, stores, topic, p)).toEqual(expected(p));

        // A purge (the topic deleted) finds every shard's entries from the layout.
        await log.append(topic, [{ partition: 5, records: [rec('c5')] }]);
        await log.purge({ id: topic.id, name: topic.name, partitionCount: 12, shardGroups: topic.shardGroups });
        for (const shard of [0, 1, 2]) expect(await entryPartitions(metadata, topic, shard)).toEqual([]);
      } finally {
        await stop();
      }
    });

  it('leaves a topic made before level 11 on floor(p / 128), read and written beside a new one', async () => {
    const metadata = new MemoryMetadataStore();
    const stores = [new MemoryObjectStore(), new MemoryObjectStore(), new MemoryObjectStore()];
    const old = await clogTopic(metadata, stores, 12, PACKED_INDEX_LEVEL);
    const created = await clogTopic(metadata, stores, 12, LEADER_SHARDS_LEVEL);
    const log = newLog(metadata, stores);
    for (const topic of [old, created])
      for (const i of [0, 1])
        await log.append(
          topic,
          [1, 4, 7, 10].map((p) => ({ partition: p, records: [rec(`${i}`)] })),
        );
    expect(await entryPartitions(metadata, old, 0)).toEqual([
      [1, 4, 7, 10],
      [1, 4, 7, 10],
    ]);
    expect(await entryPartitions(metadata, created, 0)).toEqual([]);
    expect(await entryPartitions(metadata, created, 1)).toHaveLength(2);
    await foldShard(metadata, old, 0, stores.length);
    for (const topic of [old, created])
      for (const p of [1, 4, 7, 10])
        expect(await values(metadata, stores, topic, p)).toEqual([
          [0, '0'],
          [1, '1'],
        ]);
  });

  it('takes an entry write whose answer was lost (applied, sent again) as committed once, in its own shard', async () => {
    const metadata = new FaultyMetadataStore(new MemoryMetadataStore());
    const stores = [new MemoryObjectStore(), new MemoryObjectStore(), new MemoryObjectStore()];
    const topic = await clogTopic(metadata, stores, 12, LEADER_SHARDS_LEVEL);
    const log = newLog(metadata, stores);
    const ps = [2, 5, 8, 11];
    await log.append(
      topic,
      ps.map((p) => ({ partition: p, records: [rec('first')] })),
    );
    metadata.faults.fail('put', { when: 'retried', match: (k) => k.startsWith(`clog#${topic.name}#2|e#`) });
    const out = await log.append(
      topic,
      ps.map((p) => ({ partition: p, records: [rec('second')] })),
    );
    expect(metadata.faults.injected).toBe(1);
    for (const p of ps) {
      expect(out.get(p)).toMatchObject({ ok: true, info: { baseOffset: 1 } });
      expect(await values(metadata, stores, topic, p)).toEqual([
        [0, 'first'],
        [1, 'second'],
      ]);
    }
    expect(await entryPartitions(metadata, topic, 2)).toEqual([ps, ps]);
  });
});

describe('an election on a topic with a shard per leader', () => {
  it("is an entry of the partition's own shard; the shard stays as the leader moves, a request over both commits to each", async () => {
    const metadata = new MemoryMetadataStore();
    const stores = [new MemoryObjectStore(), new MemoryObjectStore(), new MemoryObjectStore()];
    const topics = new TopicRegistry(metadata, clock, 3, { featureLevel: async () => LEADER_SHARDS_LEVEL });
    const topic = await topics.create({ name: 'moved', partitionCount: 12, replicationFactor: 2 });
    expect(topic.shardGroups).toBe(3);
    const log = newLog(metadata, stores);
    await log.append(topic, [{ partition: 4, records: [rec('a')] }]);
    // Partition 4 (replicas 1 and 2) gets store 2 for its leader: shard 1 still, its election an entry there.
    const known = await readPartitionState(metadata, topic, 4, 3);
    expect(known.state).toMatchObject({ leader: 1, replicas: [1, 2] });
    const elected = await updatePartitionState({
      metadata,
      topic,
      partition: 4,
      storeCount: 3,
      now: clock.now(),
      known,
      attempts: 2,
      giveUp: { errorName: 'LEADER_NOT_AVAILABLE', message: 'changed' },
      decide: (state) => ({
        write: { ...state, leader: 2, leaderEpoch: state.leaderEpoch + 1 },
        answer: (s) => s,
      }),
    });
    expect(elected.result).toMatchObject({ leader: 2 });
    const shardOne = (await new ShardLog(metadata).tail(topic.name, 1, 0)).entries.map((e) => e.entry);
    expect(shardOne.map((e) => e.states.map((c) => c.partition))).toEqual([[], [4]]);
    expect(shardOf(topic, 4)).toBe(1);
    // Store 2 now leads partitions 4 and 5: their request writes one entry in each one's shard.
    const out = await log.append(topic, [
      { partition: 4, records: [rec('b')] },
      { partition: 5, records: [rec('c')] },
    ]);
    expect(out.get(4)).toMatchObject({ ok: true, info: { baseOffset: 1 } });
    expect(out.get(5)).toMatchObject({ ok: true, info: { baseOffset: 0 } });
    expect(await entryPartitions(metadata, topic, 1)).toEqual([[4], [], [4]]);
    expect(await entryPartitions(metadata, topic, 2)).toEqual([[5]]);
    expect(await values(metadata, stores, topic, 4)).toEqual([
      [0, 'a'],
      [1, 'b'],
    ]);
    expect((await readPartitionState(metadata, topic, 4, 3)).state).toMatchObject({ leader: 2 });
  });
});

describe("maintenance's round on a topic with a shard per leader", () => {
  const s = storagePerTest(memoryBackend, 3);
  it('folds every shard, each from its first partition, and the records read as before', async () => {
    const clock = new TestClock(1_700_000_000_000);
    const h = harness(s.storage, clock);
    // The round of the empty cluster starts it at the newest level: the topic gets the layout.
    await h.run();
    const topic = await h.topic({}, 12);
    expect(topic.shardGroups).toBe(3);
    for (const p of range(12)) await h.produce(topic, [record(null, `v${p}`, clock.now())], p);
    const log = new ShardLog(s.storage.metadata);
    for (const shard of [0, 1, 2]) expect(await log.foldedThrough(topic.name, shard)).toBe(0);
    await h.run();
    for (const shard of [0, 1, 2]) expect(await log.foldedThrough(topic.name, shard)).toBe(4);
    for (const p of range(12)) expect((await h.readAll(topic, p)).map((r) => r.value)).toEqual([`v${p}`]);
  });
});
