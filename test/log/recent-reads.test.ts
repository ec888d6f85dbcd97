/**
 * On a topic with a commit log, a read near the log end (a consumer that keeps up) takes the
 * commits its state read resolved from the shard's log (`PartitionState.pending`) and queries no
 * index; that read brings the fold mark with the entries, so a fold by another process since is
 * known and its commits are read from the index, never from what this process resolved before.
 */
import { expect, it } from 'vitest';
import { MemoryMetadataStore } from '../../src/storage/memory-metadata-store.js';
import { MemoryObjectStore } from '../../src/storage/memory-object-store.js';
import type { MetadataStore } from '../../src/storage/ports.js';
import { foldShard } from '../../src/partition/shard-state.js';
import { onlyPartition } from '../../src/log/partition-reader.js';
import { decodeRecordBatches } from '../../src/wire/record-batch.js';
import { FaultyMetadataStore } from '../support/fault-injection.js';
import { clogTopic, newLog, rec } from '../support/partition-logs.js';

/** A process's view of the table, counting its index Queries and its reads of the fold mark. */
function counted(inner: MetadataStore) {
  const metadata = new FaultyMetadataStore(inner);
  const seen = { indexQueries: 0, markGets: 0 };
  const query = metadata.query.bind(metadata);
  metadata.query = (pk, options) => {
    if (pk.startsWith('part#')) seen.indexQueries++;
    return query(pk, options);
  };
  const get = metadata.get.bind(metadata);
  metadata.get = (pk, sk) => {
    if (pk.startsWith('clog#') && sk === 'folded') seen.markGets++;
    return get(pk, sk);
  };
  return { metadata, seen };
}

const valuesOf = (batches: Uint8Array, base = 0) =>
  decodeRecordBatches(batches).flatMap((b) => b.records.map((r) => Buffer.from(r.value!).toString()).slice(base));

it('answers a fetch of recent offsets from the shard log read, with no index Query', async () => {
  const table = new MemoryMetadataStore();
  const stores = [new MemoryObjectStore()];
  const topic = await clogTopic(table, stores, 2);
  const writer = newLog(table, stores);
  for (let i = 0; i < 4; i++) await writer.append(topic, [{ partition: i % 2, records: [rec(`v${i}`)] }]);

  const reader = counted(table);
  const log = newLog(reader.metadata, stores);
  const fetch = (partition: number, offset: number) => ({ topic, partition, offset, maxBytes: 1 << 20 });
  // The first read of the process resolves the states from the stored items (the mark read first).
  const first = await log.reader.readBatchesMany([fetch(0, 0), fetch(1, 0)], 1 << 20);
  expect(first.map((o) => (o.ok ? valuesOf(o.batches) : o.error.message))).toEqual([
    ['v0', 'v2'],
    ['v1', 'v3'],
  ]);
  expect(reader.seen.indexQueries).toBe(0);

  await writer.append(topic, [{ partition: 0, records: [rec('v4')] }]);
  const before = { ...reader.seen };
  const next = onlyPartition(await log.reader.readBatchesMany([fetch(0, 2)], 1 << 20));
  expect(valuesOf(next.batches)).toEqual(['v4']);
  expect(next.highWatermark).toBe(3);
  // One Query of the shard's log since the last read: no index Query, no separate read of the mark.
  expect(reader.seen).toEqual(before);
});

it('reads what another process folded since from the index, not from its earlier resolution', async () => {
  const table = new MemoryMetadataStore();
  const stores = [new MemoryObjectStore()];
  const topic = await clogTopic(table, stores, 1);
  const writer = newLog(table, stores);
  for (let i = 0; i < 3; i++) await writer.append(topic, [{ partition: 0, records: [rec(`v${i}`)] }]);

  const reader = counted(table);
  const log = newLog(reader.metadata, stores);
  expect((await log.state(topic, 0)).pending?.length).toBe(3);
  await foldShard(table, topic, 0, 1);
  await writer.append(topic, [{ partition: 0, records: [rec('v3')] }]);
  // The read after the fold knows of it: only the commit since is pending.
  const state = await log.state(topic, 0);
  expect(state.pending?.map((c) => c.baseOffset)).toEqual([3]);
  const before = reader.seen.indexQueries;
  const answer = onlyPartition(
    await log.reader.readBatchesMany([{ topic, partition: 0, offset: 1, maxBytes: 1 << 20 }], 1 << 20),
  );
  expect(valuesOf(answer.batches, 0)).toEqual(['v1', 'v2', 'v3']);
  expect(reader.seen.indexQueries).toBeGreaterThan(before);
});
