import { describe, expect, it } from 'vitest';
import { createStorage } from '../../src/compose.js';
import type { CommitRecord } from '../../src/partition/partition-state.js';
import type { MetadataStore, ObjectStore } from '../../src/storage/ports.js';
import { allBackends, BACKEND_TEST_TIMEOUT_MS, storagePerTest } from '../support/backends.js';
import { FaultyMetadataStore } from '../support/fault-injection.js';
import { harness, listKeys, rec, TestClock, text } from './helpers.js';
import { newRequestObjectKey, partitionPk } from '../../src/storage/key-layout.js';
import { readRecords } from '../support/read-records.js';

const T0 = 1_700_000_000_000;

/** Counts GETs, to show what a read costs. */
function countingGets(stores: ObjectStore[]) {
  const counter = { gets: 0 };
  const wrapped = stores.map((s) => ({
    name: s.name,
    put: s.put.bind(s),
    head: s.head.bind(s),
    list: s.list.bind(s),
    delete: s.delete.bind(s),
    get: (key: string, range?: { start: number; end: number }) => {
      counter.gets++;
      return s.get(key, range);
    },
  }));
  return { counter, wrapped };
}

describe.each(allBackends)(
  'segment merge and orphan GC on $name',
  (backend) => {
    const fresh = storagePerTest(backend);

    it('rewrites shared request objects into per-partition segments: same records, far fewer GETs, old objects freed after the delay', async () => {
      const { counter, wrapped } = countingGets(fresh.storage.stores);
      const h = harness({ ...fresh.storage, stores: wrapped }, new TestClock(T0), {
        mergeMinEntries: 8,
        entryBytes: 2048,
      });
      const topic = await h.topic({ 'file.delete.delay.ms': '1000' }, 2);
      // 30 requests, each writing one object shared by both partitions.
      for (let i = 0; i < 30; i++) {
        h.clock.advance(10);
        const out = await h.log.append(
          topic,
          [0, 1].map((p) => ({ partition: p, records: [rec(`k${i}`, `p${p}-v${i}`, h.clock.now())] })),
        );
        expect([...out.values()].every((o) => o.ok)).toBe(true);
      }
      const before = [await h.readAll(topic, 0), await h.readAll(topic, 1)];
      const dataKeys = await listKeys(fresh.storage.stores[0]!, `data/${topic.id}/`);
      expect(dataKeys).toHaveLength(30);
      counter.gets = 0;
      await h.readAll(topic, 0, { jsonOnly: true });
      const getsBefore = counter.gets;

      h.clock.advance(1);
      const report = await h.run();
      expect(report.segmentsWritten).toBe(2); // one per partition
      expect(report.entriesMerged).toBe(58); // all but each partition's newest entry (the active segment)
      expect([await h.readAll(topic, 0), await h.readAll(topic, 1)]).toEqual(before);
      counter.gets = 0;
      await h.readAll(topic, 0, { jsonOnly: true });
      expect(getsBefore).toBe(30);
      expect(counter.gets).toBeLessThanOrEqual(2); // the segment, and the newest request object

      // The 29 merged objects are no longer referenced by either partition: freed after the delay.
      expect(report.objectsScheduledForDeletion).toBe(29);
      h.clock.advance(999);
      await h.run();
      expect(await listKeys(fresh.storage.stores[0]!, `data/${topic.id}/`)).toHaveLength(30);
      h.clock.advance(1);
      expect((await h.run()).objectsDeleted).toBe(29);
      expect(await listKeys(fresh.storage.stores[0]!, `data/${topic.id}/`)).toEqual([dataKeys.at(-1)]);
      expect(await listKeys(fresh.storage.stores[0]!, `segments/${topic.id}/`)).toHaveLength(2);
      expect([await h.readAll(topic, 0), await h.readAll(topic, 1)]).toEqual(before);
    });

    it('a swap whose writes the store sent twice (answers lost) is taken as done: no conflict, nothing left covered', async () => {
      const metadata = new FaultyMetadataStore(fresh.storage.metadata);
      const h = harness({ ...fresh.storage, metadata }, new TestClock(T0), { mergeMinEntries: 8, entryBytes: 2048 });
      const topic = await h.topic({}, 1);
      for (let i = 0; i < 12; i++) {
        h.clock.advance(10);
        await h.produce(topic, [rec(`k${i}`, `v${i}`, h.clock.now())]);
      }
      const before = await h.readAll(topic);
      const isIndex = (k: string) => k.startsWith(`${partitionPk(topic.name, 0)}|idx#`);
      // The covering put over the first entry, and the first delete of a replaced one: applied, then repeated.
      metadata.faults.fail('put', { when: 'retried', match: isIndex });
      metadata.faults.fail('delete', { when: 'retried', match: isIndex });
      h.clock.advance(1);
      const report = await h.run();
      expect(metadata.faults.injected).toBe(2);
      expect(report).toMatchObject({ segmentsWritten: 1, entriesMerged: 11 });
      expect(report.swapConflicts ?? 0).toBe(0);
      // One covering entry and the active one: every replaced entry went in the same pass.
      const index = await fresh.storage.metadata.query<CommitRecord>(partitionPk(topic.name, 0), {
        beginsWith: 'idx#',
      });
      expect(index.map((i) => [i.value.baseOffset, i.value.lastOffset])).toEqual([
        [0, 10],
        [11, 11],
      ]);
      expect(await h.readAll(topic)).toEqual(before);
    });

    it('keeps a shared object while another partition still references it', async () => {
      const h = harness(fresh.storage, new TestClock(T0), { mergeMinEntries: 8 });
      const topic = await h.topic({ 'file.delete.delay.ms': '0' }, 2);
      // Six objects shared by both partitions, then six of partition 0 alone: partition 0 has enough
      // entries to merge, partition 1 (five stable entries) not yet.
      for (let i = 0; i < 12; i++) {
        h.clock.advance(10);
        await h.log.append(
          topic,
          (i < 6 ? [0, 1] : [0]).map((p) => ({ partition: p, records: [rec(null, `p${p}-v${i}`, h.clock.now())] })),
        );
      }
      expect(await listKeys(fresh.storage.stores[0]!, `data/${topic.id}/`)).toHaveLength(12);
      h.clock.advance(1);
      expect(await h.run()).toMatchObject({ segmentsWritten: 1, entriesMerged: 11 });
      h.clock.advance(1);
      expect(await h.run()).toMatchObject({ objectsDeleted: 5 });
      // Every object an index entry references is still there.
      for (const p of [0, 1]) {
        const items = await fresh.storage.metadata.query<CommitRecord>(partitionPk(topic.name, p), {
          beginsWith: 'idx#',
        });
        for (const i of items) expect(await fresh.storage.stores[0]!.head(i.value.objectKey)).toBeDefined();
      }
      // Partition 1 still needs the six shared objects; partition 0 only its newest.
      expect(await listKeys(fresh.storage.stores[0]!, `data/${topic.id}/`)).toHaveLength(7);
      expect((await h.readAll(topic, 1)).map((r) => r.value)).toEqual([0, 1, 2, 3, 4, 5].map((i) => `p1-v${i}`));
    });

    it('deletes never-committed objects after the orphan grace and file.delete.delay.ms, and nothing referenced', async () => {
      const h = harness(fresh.storage, new TestClock(T0), { orphanGraceMs: 60_000 });
      const topic = await h.topic({ 'file.delete.delay.ms': '5000' });
      await h.produce(topic, [rec(null, 'committed', T0)]);
      // Produces that died after their PUT, before their commit: one in each key layout (format 1,
      // v0.1.0's, and format 2, spread over prefixes).
      const orphans = [newRequestObjectKey(topic.id, T0, 1), newRequestObjectKey(topic.id, T0, 2)];
      for (const orphan of orphans) await fresh.storage.stores[0]!.put(orphan, new Uint8Array(100));
      // The sweep runs at most every file.delete.delay.ms: at T0+55 s the orphans are younger than the grace.
      h.clock.advance(55_000);
      expect(await h.run()).toMatchObject({ sweeps: 1 });
      for (const orphan of orphans) expect(await fresh.storage.stores[0]!.head(orphan)).toBeDefined();
      h.clock.advance(5001); // now more than the grace after their write
      expect(await h.run()).toMatchObject({ sweeps: 1, objectsScheduledForDeletion: 2 });
      h.clock.advance(5000);
      expect(await h.run()).toMatchObject({ objectsDeleted: 2, bytesFreed: 200 });
      for (const orphan of orphans) expect(await fresh.storage.stores[0]!.head(orphan)).toBeUndefined();
      expect((await h.readAll(topic)).map((r) => r.value)).toEqual(['committed']);
      expect(await listKeys(fresh.storage.stores[0]!, `data/${topic.id}/`)).toHaveLength(1);
    });
  },
  BACKEND_TEST_TIMEOUT_MS,
);

describe('the index swap, step by step (memory)', () => {
  it('every offset stays readable between the covering put and each delete of the entries it replaced', async () => {
    const storage = createStorage({ kind: 'memory', replicaStores: 1 });
    const inner = storage.metadata;
    let check: (() => Promise<void>) | undefined;
    let checks = 0;
    const metadata: MetadataStore = {
      get: (pk, sk) => inner.get(pk, sk),
      query: (pk, o) => inner.query(pk, o),
      put: (pk, sk, v, c) => inner.put(pk, sk, v, c),
      delete: async (pk, sk, c) => {
        if (check && sk.startsWith('idx#')) {
          checks++;
          await check();
        }
        return inner.delete(pk, sk, c);
      },
    };
    const h = harness({ ...storage, metadata }, new TestClock(T0), { mergeMinEntries: 4, entryBytes: 1 << 20 });
    const topic = await h.topic();
    for (let i = 0; i < 12; i++) {
      h.clock.advance(10);
      await h.produce(topic, [rec(null, `a${i}`, h.clock.now()), rec(null, `b${i}`, h.clock.now())]);
    }
    const expected = await h.readAll(topic);
    const wrong: string[] = [];
    check = async () => {
      for (let offset = 0; offset < 24; offset++) {
        const first = (await readRecords(h.log, topic, 0, offset, 1)).records[0];
        if (first?.offset !== offset || text(first.value) !== expected[offset]!.value)
          wrong.push(`step ${checks}: offset ${offset} read ${first?.offset}`);
      }
    };
    h.clock.advance(1);
    expect(await h.run()).toMatchObject({ segmentsWritten: 1, entriesMerged: 11 });
    expect(wrong).toEqual([]);
    expect(checks).toBe(10); // one covering put, then ten deletes, each checked before it ran
    check = undefined;
    expect(await h.readAll(topic)).toEqual(expected);
  });
});
