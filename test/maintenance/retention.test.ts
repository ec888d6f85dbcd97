import { describe, expect, it } from 'vitest';

import { isKafkaError } from '../../src/wire/errors.js';
import type { CommitRecord } from '../../src/partition/partition-state.js';
import { allBackends, BACKEND_TEST_TIMEOUT_MS, storagePerTest } from '../support/backends.js';
import { harness, listKeys, rec, TestClock } from './helpers.js';
import { indexSk, partitionPk } from '../../src/storage/key-layout.js';
import { readRecords } from '../support/read-records.js';

const T0 = 1_700_000_000_000;

describe.each(allBackends)(
  'retention on $name',
  (backend) => {
    // A fresh storage per test: a scheduler pass covers every topic of its storage.
    const fresh = storagePerTest(backend);

    /** Five one-record requests at T0, T0+100, ..., one object each; returns their object keys in offset order. */
    async function fiveObjects(
      h: ReturnType<typeof harness>,
      configs: Record<string, string>,
      timestamps = [0, 100, 200, 300, 400],
    ) {
      const topic = await h.topic(configs);
      for (let i = 0; i < 5; i++) {
        h.clock.t = T0 + i * 100;
        await h.produce(topic, [rec(`k${i}`, `v${i}-${'x'.repeat(40)}`, T0 + timestamps[i]!)]);
      }
      const items = await fresh.storage.metadata.query<CommitRecord>(partitionPk(topic.name, 0), {
        beginsWith: 'idx#',
      });
      return { topic, keys: items.map((i) => i.value.objectKey) };
    }

    it('retention.ms: moves the log start offset past the expired entries, deletes exactly their objects after file.delete.delay.ms', async () => {
      const h = harness(fresh.storage, new TestClock(T0));
      // The last two records carry later timestamps: retention goes by record time, not append time.
      const { topic, keys } = await fiveObjects(
        h,
        { 'retention.ms': '1000', 'file.delete.delay.ms': '5000' },
        [0, 100, 200, 60_000, 60_100],
      );
      h.clock.t = T0 + 1250; // records at T0, T0+100, T0+200 are older than now - retention.ms
      const first = await h.run();
      expect(first).toMatchObject({
        logStartOffsetAdvances: 1,
        entriesRemovedByRetention: 3,
        objectsScheduledForDeletion: 3,
      });
      const state = await h.log.state(topic, 0);
      expect(state).toMatchObject({ logStartOffset: 3, highWatermark: 5 });
      // Below the log start offset is out of range at once; the rest reads as before.
      await expect(readRecords(h.log, topic, 0, 2, 1 << 20)).rejects.toSatisfy((e) =>
        isKafkaError(e, 'OFFSET_OUT_OF_RANGE'),
      );
      expect((await h.readAll(topic)).map((r) => r.key)).toEqual(['k3', 'k4']);
      expect(await fresh.storage.metadata.get(partitionPk(topic.name, 0), indexSk(0))).toBeUndefined();
      // The objects stay until file.delete.delay.ms has passed...
      h.clock.t += 4999;
      expect((await h.run()).objectsDeleted).toBeUndefined();
      expect((await listKeys(fresh.storage.stores[0]!, `data/${topic.id}/`)).sort()).toEqual([...keys].sort());
      // ... then exactly the expired ones go.
      h.clock.t += 1;
      const later = await h.run();
      expect(later.objectsDeleted).toBe(3);
      expect(later.bytesFreed).toBeGreaterThan(0);
      expect((await listKeys(fresh.storage.stores[0]!, `data/${topic.id}/`)).sort()).toEqual(keys.slice(3).sort());
      expect((await h.readAll(topic)).map((r) => r.key)).toEqual(['k3', 'k4']);
      // Nothing more to do: a further pass changes nothing.
      h.clock.t += 10_000;
      expect(await h.run()).not.toHaveProperty('logStartOffsetAdvances');
      expect(await listKeys(fresh.storage.stores[0]!, `data/${topic.id}/`)).toHaveLength(2);
    });

    it('retention.bytes: drops the oldest entries while at least retention.bytes remain, never the newest', async () => {
      const h = harness(fresh.storage, new TestClock(T0));
      const { topic, keys } = await fiveObjects(h, { 'file.delete.delay.ms': '0' });
      const state = await h.log.state(topic, 0);
      const each = state.sizeInBytes / 5; // five equal entries
      // Keep at least 2.5 entries' worth: Kafka's rule drops two (3 remain >= 2.5), not three.
      await h.topics.alterConfigs(topic.name, { 'retention.bytes': String(Math.floor(each * 2.5)) });
      h.clock.t += 1;
      expect(await h.run()).toMatchObject({ logStartOffsetAdvances: 1, entriesRemovedByRetention: 2 });
      expect(await h.log.state(topic, 0)).toMatchObject({ logStartOffset: 2, sizeInBytes: each * 3 });
      // retention.bytes=0 still keeps the newest entry (the active segment).
      await h.topics.alterConfigs(topic.name, { 'retention.bytes': '0' });
      h.clock.t += 1;
      expect((await h.run()).objectsDeleted).toBe(2); // the two the first pass scheduled
      expect(await h.log.state(topic, 0)).toMatchObject({ logStartOffset: 4, highWatermark: 5, sizeInBytes: each });
      expect((await h.readAll(topic)).map((r) => r.key)).toEqual(['k4']);
      // file.delete.delay.ms=0: each pass deletes what the one before scheduled.
      h.clock.t += 1;
      expect((await h.run()).objectsDeleted).toBe(2);
      expect(await listKeys(fresh.storage.stores[0]!, `data/${topic.id}/`)).toEqual([keys[4]]);
    });

    it('DeleteRecords: advances the log start offset (never past the HW, never backwards); storage is freed by the scheduler', async () => {
      const h = harness(fresh.storage, new TestClock(T0));
      const { topic, keys } = await fiveObjects(h, { 'file.delete.delay.ms': '1000' });
      await expect(h.log.advanceLogStartOffset(topic, 0, 6)).rejects.toSatisfy((e) =>
        isKafkaError(e, 'OFFSET_OUT_OF_RANGE'),
      );
      expect(await h.log.advanceLogStartOffset(topic, 0, 2)).toMatchObject({ logStartOffset: 2, previous: 0 });
      // Mid-entry is fine (records of an entry straddling it are simply not returned).
      expect(await h.log.advanceLogStartOffset(topic, 0, 1)).toMatchObject({ logStartOffset: 2 });
      expect((await h.readAll(topic)).map((r) => r.offset)).toEqual([2, 3, 4]);
      h.clock.t += 1;
      expect(await h.run()).toMatchObject({ entriesRemovedByRetention: 2, objectsScheduledForDeletion: 2 });
      h.clock.t += 1000;
      expect((await h.run()).objectsDeleted).toBe(2);
      expect((await listKeys(fresh.storage.stores[0]!, `data/${topic.id}/`)).sort()).toEqual(keys.slice(2).sort());
    });
  },
  BACKEND_TEST_TIMEOUT_MS,
);
