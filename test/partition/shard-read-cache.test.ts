/**
 * What a process's read of a shard's partitions costs when it resolved some of them before (a
 * Lambda environment serving requests over different partitions of one shard): the items of the
 * others only, on the fold mark it read moments ago, and the same states as a fresh reader's.
 */
import { describe, expect, it } from 'vitest';
import { MemoryMetadataStore } from '../../src/storage/memory-metadata-store.js';
import { MemoryObjectStore } from '../../src/storage/memory-object-store.js';
import type { MetadataStore } from '../../src/storage/ports.js';
import {
  FOLD_AFTER_ENTRIES,
  foldShard,
  MARK_KEPT_MS,
  RESOLVED_UNCHECKED_MS,
  readShardPartitions,
  updatePartitionState,
} from '../../src/partition/shard-state.js';
import { PartitionLog } from '../../src/log/partition-log.js';
import { ReplicaManager } from '../../src/replication/replica-manager.js';
import { clogTopic, newLog, rec } from '../support/partition-logs.js';

/** One process's handle on the shared table, its GetItems and Queries listed by key, and the items each Query found. */
function process(inner: MetadataStore) {
  const calls: string[] = [];
  const handle = Object.create(inner) as MetadataStore;
  handle.get = (pk, sk) => {
    calls.push(`get ${pk} ${sk}`);
    return inner.get(pk, sk);
  };
  const found: number[] = [];
  handle.query = ((pk, options) => {
    calls.push(`query ${pk}`);
    const answer = inner.query(pk, options);
    void answer.then((items) => found.push(items.length));
    return answer;
  }) as MetadataStore['query'];
  return { metadata: handle, calls, found };
}

describe("a read of a shard's partitions", () => {
  it('reads the items of the partitions this process has not resolved only, on the fold mark it read moments ago', async () => {
    const table = new MemoryMetadataStore();
    const stores = [new MemoryObjectStore()];
    const topic = await clogTopic(table, stores, 4);
    const writer = newLog(table, stores);
    await writer.append(
      topic,
      [0, 1, 2].map((p) => ({ partition: p, records: [rec(`a${p}`)] })),
    );
    const reader = process(table);
    let now = 1_000_000;
    const clock = () => now;
    await readShardPartitions(reader.metadata, topic, 0, [0, 1], 1, clock);
    expect(reader.calls.filter((c) => c.startsWith('get')).map((c) => c.split(' ')[2])).toEqual([
      'folded',
      'state',
      'state',
    ]);
    await writer.append(
      topic,
      [0, 2].map((p) => ({ partition: p, records: [rec(`b${p}`)] })),
    );
    reader.calls.length = 0;
    now += MARK_KEPT_MS;
    const { reads } = await readShardPartitions(reader.metadata, topic, 0, [0, 1, 2], 1, clock);
    // Partition 2's item and the entries since: no fold mark, no item of 0 or 1 again.
    expect(reader.calls).toEqual([`get part#${topic.name}#2 state`, `query clog#${topic.name}#0`]);
    expect([0, 1, 2].map((p) => reads.get(p)!.state.highWatermark)).toEqual([2, 1, 2]);

    // A mark read longer ago is read again before an item.
    reader.calls.length = 0;
    now += MARK_KEPT_MS + 1;
    await readShardPartitions(reader.metadata, topic, 0, [3], 1, clock);
    expect(reader.calls.map((c) => c.split(' ').slice(0, 1).concat(c.split(' ').slice(2)).join(' '))).toEqual([
      'get folded',
      'get state',
      'query',
    ]);
  });

  it('resolves the entries a fold wrote since its mark once, from its memory or from the folded items', async () => {
    const table = new MemoryMetadataStore();
    const stores = [new MemoryObjectStore()];
    const topic = await clogTopic(table, stores, 3);
    const writer = newLog(table, stores);
    const now = 1_000_000;
    // Two processes resolve partition 0 on the empty shard (fold mark 0).
    const kept = process(table);
    const late = process(table);
    await readShardPartitions(kept.metadata, topic, 0, [0], 1, () => now);
    await readShardPartitions(late.metadata, topic, 0, [0], 1, () => now);
    // More than a fold's worth of entries (the writer folds at the 64th), then a fold of the rest.
    const entries = FOLD_AFTER_ENTRIES + 6;
    for (let i = 0; i < entries; i++)
      await writer.append(
        topic,
        [0, 1, 2].map((p) => ({ partition: p, records: [rec(`v${i}`)] })),
      );
    await foldShard(table, topic, 0, 1);
    await writer.append(topic, [{ partition: 1, records: [rec('after')] }]);
    const gets = (calls: string[]) =>
      calls.filter((c) => c.startsWith('get')).map((c) => c.split(' ').slice(1).join(' '));
    const expectResolved = (
      reads: Map<number, { state: { highWatermark: number; pending?: { baseOffset: number }[] } }>,
    ) => {
      expect([0, 1, 2].map((p) => reads.get(p)!.state.highWatermark)).toEqual([entries, entries + 1, entries]);
      // The entry after the fold is pending (not in the index yet); the folded ones are not.
      expect(reads.get(1)!.state.pending?.map((c) => c.baseOffset)).toEqual([entries]);
      expect(reads.get(0)!.state.pending ?? []).toEqual([]);
    };

    // Its mark (0) kept: partition 0 from its memory and the entries since; 1 and 2 from their
    // items, folded through the last entry but one.
    kept.calls.length = 0;
    expectResolved((await readShardPartitions(kept.metadata, topic, 0, [0, 1, 2], 1, () => now)).reads);
    expect(gets(kept.calls)).toEqual([`part#${topic.name}#1 state`, `part#${topic.name}#2 state`]);

    // Its mark too old to keep: read again, and partition 0's resolution is more than a fold behind it.
    late.calls.length = 0;
    const later = () => now + MARK_KEPT_MS + 1;
    expectResolved((await readShardPartitions(late.metadata, topic, 0, [0, 1, 2], 1, later)).reads);
    expect(gets(late.calls)).toEqual([
      `clog#${topic.name}#0 folded`,
      `part#${topic.name}#0 state`,
      `part#${topic.name}#1 state`,
      `part#${topic.name}#2 state`,
    ]);
  });

  /**
   * A reader of a two-partition topic and a writer beside it; `away(n)` has the writer append n
   * entries and the reader's clock pass the 10 s after which it looks at the mark again.
   */
  async function backAfterAWhile() {
    const table = new MemoryMetadataStore();
    const stores = [new MemoryObjectStore()];
    const topic = await clogTopic(table, stores, 2);
    const writer = newLog(table, stores);
    const reader = process(table);
    const at = { now: 1_000_000 };
    const clock = { now: () => at.now };
    const away = async (entries: number) => {
      // The writer folds at the 64th entry past the mark.
      for (let i = 0; i < entries; i++)
        await writer.append(
          topic,
          [0, 1].map((p) => ({ partition: p, records: [rec(`v${i}`)] })),
        );
      reader.calls.length = 0;
      reader.found.length = 0;
      at.now += RESOLVED_UNCHECKED_MS + 1;
    };
    // Each call as its operation and item kind, without the key.
    const shape = () => reader.calls.map((c) => c.split(' ').slice(0, 1).concat(c.split(' ').slice(2)).join(' '));
    return { stores, topic, reader, clock, away, shape };
  }

  it('back after a while, looks at the fold mark before it Queries from its resolutions', async () => {
    const { topic, reader, clock, away, shape } = await backAfterAWhile();
    await readShardPartitions(reader.metadata, topic, 0, [0], 1, clock.now);
    // More than a fold's worth of entries while it was away.
    await away(FOLD_AFTER_ENTRIES + 1);
    const { reads } = await readShardPartitions(reader.metadata, topic, 0, [0], 1, clock.now);
    expect(reads.get(0)!.state.highWatermark).toBe(FOLD_AFTER_ENTRIES + 1);
    // The mark, the item the fold wrote, and the entries past it: not the 65 entries since its resolution.
    expect(shape()).toEqual(['get folded', 'get state', 'query']);
    expect(reader.found).toEqual([2]); // the entry past the fold, and the mark
  });

  it("reading one partition (a fetch's state, an update's read), back after a while, reads the mark and the entries past the fold only", async () => {
    const { stores, topic, reader, clock, away, shape } = await backAfterAWhile();
    const log = new PartitionLog({
      metadata: reader.metadata,
      stores,
      clock,
      leadership: new ReplicaManager({ metadata: reader.metadata, stores, clock }),
    });
    await log.state(topic, 0);
    await log.state(topic, 1);

    // More than a fold's worth of entries while it was away.
    await away(FOLD_AFTER_ENTRIES + 1);
    expect((await log.state(topic, 0)).highWatermark).toBe(FOLD_AFTER_ENTRIES + 1);
    // The mark, the item the fold wrote, and the entries past it: not the 65 entries since its resolution.
    expect(shape()).toEqual(['get folded', 'get state', 'query']);
    expect(reader.found).toEqual([2]); // the entry past the fold, and the mark

    // An update of the same partition's state, after more than two folds' worth (a resolution less
    // than a fold behind the mark is brought forward by the Query), reads it the same way.
    const more = 2 * FOLD_AFTER_ENTRIES + 2;
    await away(more);
    const { state } = await updatePartitionState({
      metadata: reader.metadata,
      topic,
      partition: 0,
      storeCount: 1,
      now: clock.now(),
      giveUp: { errorName: 'KAFKA_STORAGE_ERROR', message: 'contention' },
      decide: (s) => ({ write: { ...s, sizeInBytes: s.sizeInBytes + 1 }, answer: () => true }),
    });
    expect(state.highWatermark).toBe(FOLD_AFTER_ENTRIES + 1 + more);
    expect(shape().slice(0, 3)).toEqual(['get folded', 'get state', 'query']);
    // The 3 entries past the writer's last fold (through entry 192 of 195), and the mark: not the 130.
    expect(reader.found[0]).toBe(4);
  });
});
