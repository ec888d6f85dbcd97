/**
 * Request objects' keys across the layout change (src/storage/key-layout.ts): format 1 (v0.1.0's,
 * `data/{topicId}/{ms}-{hex}`) keeps a topic's objects in one key range, which S3 serves at about
 * 3,500 PUT/s; from feature level 3 they are written in format 2, spread over 16 prefixes
 * (`data/{topicId}/{shard}/{ms}-{hex}.v2`). A topic written in both is read back whole, and
 * retention, the orphan sweep and the topic purge take both.
 */
import { describe, expect, it } from 'vitest';
import { FEATURE_LEVEL_MAX_AGE_MS, raiseFeatureLevel } from '../../src/storage/feature-level.js';
import { DATA_SHARDS, dataPrefix } from '../../src/storage/key-layout.js';
import { pendingTopicPurges } from '../../src/topics/topic-purges.js';
import { allBackends, BACKEND_TEST_TIMEOUT_MS } from '../support/backends.js';
import { harness, listKeys, rec, TestClock } from './helpers.js';

const T0 = 1_700_000_000_000;
const OLD_LAYOUT = /^data\/[^/]+\/\d{13}-[0-9a-f]{12}$/;
const SPREAD_LAYOUT = /^data\/[^/]+\/([0-9a-f])\/\d{13}-([0-9a-f]{12})\.v2$/;

describe.each(allBackends)(
  'request object keys across the layout change ($name)',
  (backend) => {
    it('spreads a topic over prefixes from level 3, reads both layouts back, and sweeps and purges both', async () => {
      const { storage, stop } = await backend.start();
      try {
        const clock = new TestClock(T0);
        const h = harness(storage, clock, { orphanGraceMs: 60_000 });
        const topic = await h.topic({ 'file.delete.delay.ms': '1000' }, 2);
        const produce = async (n: number, from: number) => {
          for (let i = from; i < from + n; i++) await h.produce(topic, [rec(null, `v${i}`, clock.now())], i % 2);
        };
        const keys = () => listKeys(storage.stores[0]!, dataPrefix(topic.id));

        // Level 1 (a store v0.1.0 wrote has no level item): v0.1.0's layout.
        await produce(10, 0);
        const before = await keys();
        expect(before).toHaveLength(10);
        for (const k of before) expect(k).toMatch(OLD_LAYOUT);

        await raiseFeatureLevel(storage.metadata, 3, clock.now(), 'test');
        clock.advance(FEATURE_LEVEL_MAX_AGE_MS); // the log's cached level
        await produce(160, 10);
        const spread = (await keys()).filter((k) => !before.includes(k));
        expect(spread).toHaveLength(160);
        const perPrefix = new Map<string, number>();
        for (const k of spread) {
          const m = SPREAD_LAYOUT.exec(k);
          expect(m, k).not.toBeNull();
          expect(m![1]).toBe(m![2]![0]); // the shard is the key's own random digit
          perPrefix.set(m![1]!, (perPrefix.get(m![1]!) ?? 0) + 1);
        }
        // 160 random objects over 16 prefixes: about 10 each. Half of S3's per-prefix PUT rate at
        // 10,000 PUT/s a topic is 17.5% of them (28 here); one key range took them all before.
        expect(perPrefix.size).toBeGreaterThanOrEqual(DATA_SHARDS - 4);
        expect(Math.max(...perPrefix.values())).toBeLessThanOrEqual(28);

        // Both layouts read back, in order, through both fetches.
        for (const p of [0, 1]) {
          const values = (await h.readAll(topic, p)).map((r) => r.value);
          expect(values).toEqual(Array.from({ length: 85 }, (_, i) => `v${2 * i + p}`));
        }

        // Retention (DeleteRecords up to the HW): the sweep deletes both layouts' objects but the
        // ones the partition states still point at (their last commits).
        for (const p of [0, 1]) await h.log.advanceLogStartOffset(topic, p, 85);
        clock.advance(60_001);
        expect(await h.run()).toMatchObject({ objectsScheduledForDeletion: 168 });
        clock.advance(1000);
        expect(await h.run()).toMatchObject({ objectsDeleted: 168 });
        const left = await keys();
        expect(left).toHaveLength(2);
        for (const k of left) expect(k).toMatch(SPREAD_LAYOUT);

        // An old-layout orphan beside them, then the topic's purge: nothing of either layout is left.
        await storage.stores[0]!.put(`${dataPrefix(topic.id)}${clock.now()}-00aa00bb00cc`, new Uint8Array(3));
        await h.topics.delete(topic.name);
        clock.advance(5000);
        await h.run();
        expect(await pendingTopicPurges(storage.metadata)).toEqual([]);
        expect(await keys()).toEqual([]);
      } finally {
        await stop();
      }
    });
  },
  BACKEND_TEST_TIMEOUT_MS,
);
