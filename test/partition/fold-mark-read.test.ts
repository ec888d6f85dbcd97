/**
 * A first read of a partition on a topic with a commit log takes its state item and the shard's
 * fold mark. A fold that lands between the two (the item read before its state write, the mark
 * after its mark write) must not make the reader skip the entries the old item lacks.
 */
import { expect, it } from 'vitest';
import { MemoryMetadataStore } from '../../src/storage/memory-metadata-store.js';
import { MemoryObjectStore } from '../../src/storage/memory-object-store.js';
import { TopicRegistry } from '../../src/topics/topics.js';
import { COMMIT_LOG_LEVEL } from '../../src/storage/formats.js';
import { foldShard, readPartitionState } from '../../src/partition/shard-state.js';
import { FaultyMetadataStore } from '../support/fault-injection.js';
import { clock, newLog, rec } from '../support/partition-logs.js';

it('a fold between the state read and the fold-mark read loses no entry of the reader', async () => {
  const inner = new MemoryMetadataStore();
  const stores = [new MemoryObjectStore()];
  const topics = new TopicRegistry(inner, clock, 1, { featureLevel: async () => COMMIT_LOG_LEVEL });
  const topic = await topics.create({ name: 'fm', partitionCount: 1, replicationFactor: 1 });
  const log = newLog(inner, stores);
  for (let i = 0; i < 3; i++) {
    const out = (await log.append(topic, [{ partition: 0, records: [rec(`v${i}`)] }])).get(0)!;
    expect(out.ok).toBe(true);
  }
  // Another process reads for the first time; its mark read is slow, and a fold lands meanwhile.
  const reader = new FaultyMetadataStore(inner);
  const held = reader.faults.gate('get', (k) => k.startsWith('clog#fm#') && k.endsWith('|folded'));
  const read = readPartitionState(reader, topic, 0, 1);
  await held.reached;
  await new Promise((r) => setTimeout(r, 10)); // the state item's read has answered by now
  await foldShard(inner, topic, 0, 1);
  held.release();
  expect((await read).state.highWatermark).toBe(3);
});
