/**
 * On a topic with a commit log, a produce request reads its shard's entries once, beside the
 * object's PUT, and its commit decides on that read: nothing is read between the PUT and the
 * entry's conditional write. Entries other processes wrote meanwhile are learned from the failed
 * condition and one Query, and a refusal (a sequence gap) is only answered on a read made after
 * the PUT.
 */
import { describe, expect, it, vi } from 'vitest';
import { MemoryMetadataStore } from '../../src/storage/memory-metadata-store.js';
import { MemoryObjectStore } from '../../src/storage/memory-object-store.js';
import type { MetadataStore, ObjectStore } from '../../src/storage/ports.js';
import { TopicRegistry, type Topic } from '../../src/topics/topics.js';
import { COMMIT_LOG_LEVEL } from '../../src/storage/formats.js';
import { ProducerIds } from '../../src/producer/producer-ids.js';
import { FaultyMetadataStore, FaultyObjectStore } from '../support/fault-injection.js';
import { clock, newLog, rec } from '../support/partition-logs.js';
import { readRecords } from '../support/read-records.js';

/** One process's view of the shared table: its own caches, its Queries and entry writes counted. */
function process(inner: MetadataStore) {
  const metadata = new FaultyMetadataStore(inner);
  const seen = { queries: 0, entryWrites: 0 };
  const query = metadata.query.bind(metadata);
  metadata.query = (pk, options) => {
    if (pk.startsWith('clog#')) seen.queries++;
    return query(pk, options);
  };
  const put = metadata.put.bind(metadata);
  metadata.put = (pk, sk, value, condition, options) => {
    if (pk.startsWith('clog#') && sk.startsWith('e#')) seen.entryWrites++;
    return put(pk, sk, value, condition, options);
  };
  return { metadata, seen };
}

async function setup(partitionCount: number) {
  const table = new MemoryMetadataStore();
  const store = new MemoryObjectStore();
  const topics = new TopicRegistry(table, clock, 1, { featureLevel: async () => COMMIT_LOG_LEVEL });
  const topic = await topics.create({
    name: `ra${Math.random().toString(36).slice(2)}`,
    partitionCount,
    replicationFactor: 1,
  });
  expect(topic.clog).toBe(true);
  return { table, store, topic };
}

/** A process whose object PUT is held: `append` runs until its PUT is reached and the shard is read. */
async function heldAtPut(
  table: MetadataStore,
  store: ObjectStore,
  append: (log: ReturnType<typeof newLog>) => Promise<unknown>,
) {
  const p = process(table);
  const slow = new FaultyObjectStore(store);
  const held = slow.faults.gate('put', () => true);
  const answer = append(newLog(p.metadata, [slow]));
  await held.reached;
  await vi.waitFor(() => expect(p.seen.queries).toBe(1));
  return { ...p, answer, release: held.release };
}

const values = async (table: MetadataStore, store: ObjectStore, topic: Topic, partition: number) =>
  (await readRecords(newLog(table, [store]), topic, partition, 0, 1 << 20)).records.map((r) => [
    r.offset,
    Buffer.from(r.value!).toString(),
  ]);

describe('the commit of a request on a commit log', () => {
  it('reads the shard once, beside the PUT, and reads nothing between the PUT and its entry', async () => {
    const { table, store, topic } = await setup(12);
    const parts = Array.from({ length: 12 }, (_, p) => p);
    const a = await heldAtPut(table, store, (log) =>
      log.append(
        topic,
        parts.map((p) => ({ partition: p, records: [rec(`p${p}`)] })),
      ),
    );
    const beforePut = a.seen.queries;
    a.release();
    const out = (await a.answer) as Map<number, unknown>;
    for (const p of parts) expect(out.get(p)).toMatchObject({ ok: true, info: { baseOffset: 0 } });
    expect(beforePut).toBe(1);
    expect(a.seen.queries).toBe(1);
    expect(a.seen.entryWrites).toBe(1);
  });

  it('learns the entries another process wrote during its PUT from the failed condition and one Query', async () => {
    const { table, store, topic } = await setup(3);
    const a = await heldAtPut(table, store, (log) =>
      log.append(
        topic,
        [0, 1].map((p) => ({ partition: p, records: [rec(`a${p}`)] })),
      ),
    );
    const other = newLog(process(table).metadata, [store]);
    for (const v of ['b', 'c'])
      await other.append(
        topic,
        [1, 2].map((p) => ({ partition: p, records: [rec(`${v}${p}`)] })),
      );
    a.release();
    const out = (await a.answer) as Map<number, unknown>;
    expect(out.get(0)).toMatchObject({ ok: true, info: { baseOffset: 0 } });
    expect(out.get(1)).toMatchObject({ ok: true, info: { baseOffset: 2 } });
    // One write lost to the entries it had not read, one Query of them, and its own entry.
    expect(a.seen.entryWrites).toBe(2);
    expect(a.seen.queries).toBe(2);
    expect(await values(table, store, topic, 1)).toEqual([
      [0, 'b1'],
      [1, 'c1'],
      [2, 'a1'],
    ]);
  });

  it('on a busy shard, reads the entries written during its PUT before its write rather than lose the race', async () => {
    const { table, store, topic } = await setup(3);
    const other = newLog(process(table).metadata, [store]);
    // Five entries in the moments before its read: at that rate, one or more are expected during
    // a PUT of 150 ms.
    for (const v of ['b', 'c', 'd', 'e', 'f']) await other.append(topic, [{ partition: 1, records: [rec(v)] }]);
    const a = await heldAtPut(table, store, (log) => log.append(topic, [{ partition: 0, records: [rec('a0')] }]));
    await other.append(topic, [{ partition: 1, records: [rec('g')] }]);
    await new Promise((r) => setTimeout(r, 150));
    a.release();
    expect(await a.answer).toEqual(new Map([[0, expect.objectContaining({ ok: true })]]));
    // The read beside the PUT, the entries since, and one write: no race lost.
    expect(a.seen.queries).toBe(2);
    expect(a.seen.entryWrites).toBe(1);
    expect(await values(table, store, topic, 0)).toEqual([[0, 'a0']]);
  });

  it("takes its own process's entries written during its PUT from memory, not from a lost race", async () => {
    const { table, store, topic } = await setup(2);
    const p = process(table);
    const slow = new FaultyObjectStore(store);
    const held = slow.faults.gate('put', () => true);
    const log = newLog(p.metadata, [slow]);
    const a = log.append(topic, [
      { partition: 0, records: [rec('a')] },
      { partition: 1, records: [rec('a')] },
    ]);
    await held.reached;
    await vi.waitFor(() => expect(p.seen.queries).toBe(1));
    // Another request of the same process (a local server's) commits while the first one's PUT is held.
    const b = await log.append(topic, [{ partition: 1, records: [rec('b')] }]);
    expect(b.get(1)).toMatchObject({ ok: true, info: { baseOffset: 0 } });
    held.release();
    expect((await a).get(1)).toMatchObject({ ok: true, info: { baseOffset: 1 } });
    // One read and one entry write per request.
    expect(p.seen).toEqual({ queries: 2, entryWrites: 2 });
  });

  it('does not refuse a batch for a sequence gap another process filled during its PUT', async () => {
    const { table, store, topic } = await setup(1);
    const producer = await new ProducerIds(table).init();
    const send = (log: ReturnType<typeof newLog>, seq: number) =>
      log.append(topic, [{ partition: 0, records: [rec(`s${seq}`)] }], {
        producer: { ...producer, baseSequences: new Map([[0, seq]]) },
      });
    // Sequence 1 reads the shard before sequence 0 commits: on that read it is a gap.
    const a = await heldAtPut(table, store, (log) => send(log, 1));
    expect((await send(newLog(process(table).metadata, [store]), 0)).get(0)).toMatchObject({ ok: true });
    a.release();
    expect(((await a.answer) as Map<number, unknown>).get(0)).toMatchObject({ ok: true, info: { baseOffset: 1 } });
    // Decided again on the entries since, at once: no pause and no read of its own state again.
    expect(a.seen.queries).toBe(2);
    expect(await values(table, store, topic, 0)).toEqual([
      [0, 's0'],
      [1, 's1'],
    ]);
  });
});
