import fc from 'fast-check';
import { beforeEach, describe, expect, it } from 'vitest';
import { createStorage, type Storage } from '../../src/compose.js';
import type { CommitRecord } from '../../src/partition/partition-state.js';
import { validateProducedBatches } from '../../src/log/produced-batches.js';
import { CODEC, COMPRESSION_CODEC_MASK, encodeRecordBatch, readBatchHeader } from '../../src/wire/record-batch.js';
import { raiseFeatureLevel } from '../../src/storage/feature-level.js';
import type { Topic } from '../../src/topics/topics.js';
import { ConditionFailedError, type ByteRange, type MetadataStore } from '../../src/storage/ports.js';
import { allBackends, BACKEND_TEST_TIMEOUT_MS, storagePerTest } from '../support/backends.js';
import { testApp } from '../support/test-app.js';
import { readBatches } from '../support/read-records.js';
import { harness, listKeys, rec, TestClock } from './helpers.js';
import { partitionPk } from '../../src/storage/key-layout.js';

const T0 = 1_700_000_000_000;
const DELETE_RETENTION = 1000;
const COMPACT = {
  'cleanup.policy': 'compact',
  'min.cleanable.dirty.ratio': '0',
  'delete.retention.ms': String(DELETE_RETENTION),
};
/** Small entries and segments, so a pass writes several of each. */
const SMALL = { entryBytes: 300, maxSegmentBytes: 900 };

type Rec = { offset: number; key: string; value: string | null };

/**
 * The reference: what a compacted log must hold after a pass at time `now` that cleaned every
 * offset below `cleanedTo`. Below it, a record stays iff it is the latest of its key there, and a
 * tombstone only until delete.retention.ms after the pass that first saw it; at or above it,
 * everything stays. Offsets never change.
 */
function reference(all: Rec[], cleanedTo: number, firstSeen: Map<number, number>, now: number): Rec[] {
  const latest = new Map<string, number>();
  for (const r of all) if (r.offset < cleanedTo) latest.set(r.key, r.offset);
  return all.filter((r) => {
    if (r.offset >= cleanedTo) return true;
    if (latest.get(r.key) !== r.offset) return false;
    return r.value !== null || firstSeen.get(r.offset)! + DELETE_RETENTION > now;
  });
}

/** Produces batches and runs passes, checking the log against the reference after every pass. */
class Model {
  all: Rec[] = [];
  entryBases: number[] = [];
  firstSeen = new Map<number, number>();
  constructor(
    readonly h: ReturnType<typeof harness>,
    readonly topic: Topic,
  ) {}

  /** One produce request; `gzip` sends it as a producer's gzip batch, stored compressed as sent. */
  async produce(batch: { key: string; value: string | null }[], gzip = false) {
    this.h.clock.advance(1);
    const records = batch.map((b) => rec(b.key, b.value, this.h.clock.now()));
    const base = gzip ? await this.produceGzip(records) : await this.h.produce(this.topic, records);
    this.entryBases.push(base);
    batch.forEach((b, i) => this.all.push({ offset: base + i, ...b }));
  }

  private async produceGzip(records: ReturnType<typeof rec>[]): Promise<number> {
    const batches = validateProducedBatches(encodeRecordBatch(records, { compression: 'gzip' }), {
      maxMessageBytes: this.topic.config.maxMessageBytes,
      requireKeys: true,
    });
    const out = (await this.h.log.append(this.topic, [{ partition: 0, batches }])).get(0)!;
    if (!out.ok) throw out.error;
    return out.info.baseOffset;
  }

  async pass(advance: number) {
    this.h.clock.advance(Math.max(1, advance));
    const report = await this.h.run();
    // Every entry but the newest (the active segment) was cleanable.
    const cleanedTo = this.entryBases.at(-1) ?? 0;
    for (const r of this.all)
      if (r.value === null && r.offset < cleanedTo && !this.firstSeen.has(r.offset))
        this.firstSeen.set(r.offset, this.h.clock.now());
    const expected = reference(this.all, cleanedTo, this.firstSeen, this.h.clock.now());
    const actual = (await this.h.readAll(this.topic)).map(({ offset, key, value }) => ({ offset, key: key!, value }));
    expect(actual).toEqual(expected);
    return report;
  }
}

describe('compaction against a reference model (memory)', () => {
  it('keeps the latest record per key, drops tombstones after delete.retention.ms, never moves an offset (plain and gzip batches, any compression.type)', async () => {
    const keys = fc.constantFrom('a', 'b', 'c', 'd', 'e');
    const record = fc.record({
      key: keys,
      value: fc.option(fc.string({ minLength: 1, maxLength: 30 }), { nil: null, freq: 4 }),
    });
    const step = fc.oneof(
      {
        weight: 3,
        arbitrary: fc.record({
          kind: fc.constant('produce' as const),
          batch: fc.array(record, { minLength: 1, maxLength: 4 }),
          gzip: fc.boolean(),
        }),
      },
      {
        weight: 1,
        arbitrary: fc.record({ kind: fc.constant('pass' as const), advance: fc.integer({ min: 1, max: 1500 }) }),
      },
    );
    await fc.assert(
      fc.asyncProperty(
        fc.array(step, { minLength: 1, maxLength: 25 }),
        fc.constantFrom('producer', 'gzip', 'uncompressed'),
        async (steps, compression) => {
          const storage = createStorage({ kind: 'memory', replicaStores: 1 });
          const h = harness(storage, new TestClock(T0), SMALL);
          const model = new Model(h, await h.topic({ ...COMPACT, 'compression.type': compression }));
          for (const s of steps) {
            if (s.kind === 'produce') await model.produce(s.batch, s.gzip);
            else await model.pass(s.advance);
          }
          await model.pass(1);
          await model.pass(DELETE_RETENTION); // every tombstone seen so far is past its horizon now
        },
      ),
      { numRuns: 40 },
    );
  });
});

describe.each(allBackends)(
  'compaction on $name',
  (backend) => {
    const fresh = storagePerTest(backend);

    it('compacts a keyed log, keeps tombstones for delete.retention.ms, and frees the replaced objects', async () => {
      const h = harness(fresh.storage, new TestClock(T0), SMALL);
      const topic = await h.topic({ ...COMPACT, 'file.delete.delay.ms': '0' });
      const model = new Model(h, topic);
      for (let i = 0; i < 12; i++)
        await model.produce([
          { key: `k${i % 3}`, value: `v${i}` },
          { key: `x${i % 2}`, value: i === 10 ? null : `w${i}` },
        ]);
      await model.produce([{ key: 'k0', value: null }]);
      await model.produce([{ key: 'tail', value: 'active' }]);
      const first = await model.pass(1);
      expect(first).toMatchObject({ compactions: 1 });
      expect(first.recordsCompactedAway).toBeGreaterThan(0);
      // The tombstones stay until delete.retention.ms after this pass, then go.
      const survivors = (await h.readAll(topic)).filter((r) => r.value === null).map((r) => r.key);
      expect(survivors.sort()).toEqual(['k0', 'x0']);
      await model.pass(DELETE_RETENTION - 1);
      const horizon = await model.pass(1);
      expect(horizon).toMatchObject({ compactions: 1, tombstonesRemoved: 2 });
      // Segments replaced the request objects; once swept, only referenced objects remain.
      await h.run();
      h.clock.advance(1);
      await h.run();
      const referenced = new Set(
        (await fresh.storage.metadata.query<CommitRecord>(partitionPk(topic.name, 0), { beginsWith: 'idx#' })).map(
          (i) => i.value.objectKey,
        ),
      );
      const state = await h.log.state(topic, 0);
      referenced.add(state.lastCommit!.objectKey);
      const stored = [
        ...(await listKeys(fresh.storage.stores[0]!, `data/${topic.id}/`)),
        ...(await listKeys(fresh.storage.stores[0]!, `segments/${topic.id}/`)),
      ];
      expect(stored.sort()).toEqual([...referenced].sort());
      expect(stored.some((k) => k.startsWith('segments/'))).toBe(true);
      expect(state.sizeInBytes).toBe(
        (await fresh.storage.metadata.query<CommitRecord>(partitionPk(topic.name, 0), { beginsWith: 'idx#' })).reduce(
          (n, i) => n + i.value.end - i.value.start,
          0,
        ),
      );
    });

    it('a produce racing a compaction loses nothing', async () => {
      // Gated, so that the race does not depend on how appends and the pass interleave (a produce
      // that waits a turn to gather a group commit changed it): the appends start once the pass
      // loads the objects of the entries it read, its segment write waits until five have landed,
      // and the other five land while it writes its segment and swaps the index entries.
      let racing = false;
      let appended = 0;
      let appendedAtSegmentWrite = -1;
      let loading!: () => void;
      const passLoading = new Promise<void>((r) => (loading = r));
      let fiveLanded!: () => void;
      const firstHalf = new Promise<void>((r) => (fiveLanded = r));
      const stores = fresh.storage.stores.map((s) => ({
        ...s,
        name: s.name,
        get: (key: string, range?: ByteRange) => {
          if (racing) loading();
          return s.get(key, range);
        },
        head: s.head.bind(s),
        list: s.list.bind(s),
        delete: s.delete.bind(s),
        put: async (key: string, body: Uint8Array) => {
          if (key.startsWith('segments/') && appendedAtSegmentWrite < 0) {
            await firstHalf;
            appendedAtSegmentWrite = appended;
          }
          return s.put(key, body);
        },
      }));
      const h = harness({ ...fresh.storage, stores }, new TestClock(T0), SMALL);
      const topic = await h.topic(COMPACT);
      const model = new Model(h, topic);
      for (let i = 0; i < 10; i++) await model.produce([{ key: `k${i % 4}`, value: `before-${i}` }]);
      h.clock.advance(1);
      racing = true;
      // Appends from another process while the pass runs.
      const writer = harness(fresh.storage, h.clock, SMALL);
      const writing = (async () => {
        await passLoading;
        for (let i = 0; i < 10; i++) {
          const base = await writer.produce(topic, [rec(`k${i % 5}`, `during-${i}`, h.clock.now())]);
          model.all.push({ offset: base, key: `k${i % 5}`, value: `during-${i}` });
          model.entryBases.push(base);
          if (++appended === 5) fiveLanded();
        }
      })();
      const [report] = await Promise.all([h.run(), writing]);
      racing = false;
      expect(report.compactions).toBe(1);
      expect(appendedAtSegmentWrite).toBe(5);
      model.entryBases.sort((a, b) => a - b);
      model.all.sort((a, b) => a.offset - b.offset);
      // Every racing record is there (the pass cleaned only what was stable when it started).
      const read = await h.readAll(topic);
      for (let i = 0; i < 10; i++) expect(read.some((r) => r.value === `during-${i}`)).toBe(true);
      expect(read.at(-1)!.offset).toBe(19);
      await model.pass(1); // and a further pass matches the reference
    });
  },
  BACKEND_TEST_TIMEOUT_MS,
);

describe('compaction triggers and guards (memory)', () => {
  let storage: Storage;
  beforeEach(() => {
    storage = createStorage({ kind: 'memory', replicaStores: 1 });
  });

  it('respects min.cleanable.dirty.ratio, min.compaction.lag.ms and max.compaction.lag.ms', async () => {
    const h = harness(storage, new TestClock(T0), SMALL);
    const topic = await h.topic({
      'cleanup.policy': 'compact',
      'min.cleanable.dirty.ratio': '0.99',
      'min.compaction.lag.ms': '10000',
      'max.compaction.lag.ms': '60000',
    });
    for (let i = 0; i < 6; i++) {
      h.clock.advance(1);
      await h.produce(topic, [rec('k', `v${i}`, h.clock.now())]);
    }
    // Everything is younger than min.compaction.lag.ms: nothing is cleanable.
    h.clock.advance(1000);
    expect(await h.run()).not.toHaveProperty('compactions');
    // Old enough; all dirty (ratio 1 > 0.99): cleaned.
    h.clock.advance(10_000);
    expect(await h.run()).toMatchObject({ compactions: 1, recordsCompactedAway: 4 });
    // New dirty data, a small part of the log: the ratio is not met...
    for (let i = 0; i < 2; i++) {
      h.clock.advance(1);
      await h.produce(topic, [rec('k', `w${i}`, h.clock.now())]);
    }
    h.clock.advance(20_000);
    expect(await h.run()).not.toHaveProperty('compactions');
    // ... until the oldest dirty record is older than max.compaction.lag.ms.
    h.clock.advance(60_000);
    expect(await h.run()).toMatchObject({ compactions: 1 });
    expect((await h.readAll(topic)).map((r) => r.value)).toEqual(['w0', 'w1']);
  });

  it('rejects records without a key on compacted topics (INVALID_RECORD)', async () => {
    const { call } = testApp();
    await call('POST', 'topics', {
      topic_name: 'c',
      partitions_count: 1,
      configs: [{ name: 'cleanup.policy', value: 'compact' }],
    });
    const r = await call('POST', 'topics/c/records', { value: { type: 'STRING', data: 'no key' } });
    expect(r).toMatchObject({ status: 400, body: { error: 'INVALID_RECORD' } });
    expect(
      (
        await call('POST', 'topics/c/records', {
          key: { type: 'STRING', data: 'k' },
          value: { type: 'STRING', data: 'v' },
        })
      ).status,
    ).toBe(200);
  });

  it('gives up a swap when an entry changed under it, and loses nothing', async () => {
    // A store that, on the swap's first conditional put over an index entry, lets a concurrent
    // writer rewrite that entry first (as a repair would): the condition no longer holds.
    const inner = storage.metadata;
    let interfered = 0;
    const metadata: MetadataStore = {
      get: (pk, sk) => inner.get(pk, sk),
      query: (pk, o) => inner.query(pk, o),
      delete: (pk, sk, c) => inner.delete(pk, sk, c),
      put: async (pk, sk, value, condition) => {
        if (interfered === 0 && sk.startsWith('idx#') && condition && 'ifVersion' in condition) {
          interfered++;
          const current = await inner.get(pk, sk);
          await inner.put(pk, sk, current!.value);
        }
        return inner.put(pk, sk, value, condition);
      },
    };
    const wrapped: Storage = { ...storage, metadata };
    const h = harness(wrapped, new TestClock(T0), SMALL);
    const topic = await h.topic(COMPACT);
    const model = new Model(h, topic);
    for (let i = 0; i < 8; i++) await model.produce([{ key: `k${i % 2}`, value: `v${i}` }]);
    h.clock.advance(1);
    const report = await h.run();
    expect(interfered).toBe(1);
    expect(report.swapConflicts).toBeGreaterThanOrEqual(1);
    // Whatever was swapped and whatever was not, every latest value is readable.
    const read = await h.readAll(topic);
    expect(read.filter((r) => r.value === 'v6' || r.value === 'v7')).toHaveLength(2);
    // The next pass finishes the job and matches the reference.
    await model.pass(1);
    await expect(inner.put('x', 'y', 1, { ifVersion: 9 })).rejects.toBeInstanceOf(ConditionFailedError);
  });
});

describe('compaction and the feature level', () => {
  it('re-encodes as compression.type=zstd only from level 2: below it the cleaning waits, and runs once raised', async () => {
    const storage = createStorage({ kind: 'memory', replicaStores: 1 });
    const clock = new TestClock(T0);
    const h = harness(storage, clock, SMALL);
    // The harness's registry starts no cluster at a level: no level item, level 1 (as after v0.1.0).
    const topic = await h.topic(COMPACT);
    for (const v of ['1', '2', '3']) {
      clock.advance(1);
      await h.produce(topic, [rec('k', v, clock.now())]);
    }
    const zstd = await h.topics.alterConfigs(topic.name, { 'compression.type': 'zstd' });
    clock.advance(10);
    await h.run();
    expect(h.events).toContainEqual(
      expect.objectContaining({
        msg: 'maintenance failed',
        error: expect.stringContaining("Compression zstd needs the cluster's feature level 2 (it is 1)"),
      }),
    );
    expect((await h.readAll(zstd)).map((r) => r.value)).toEqual(['1', '2', '3']);

    await raiseFeatureLevel(storage.metadata, 2, clock.now(), 'User:ops');
    clock.advance(10);
    const report = await h.run();
    expect(report.compactions).toBe(1);
    // The newest entry is the active segment; below it only the latest record of k stays.
    expect((await h.readAll(zstd)).map((r) => r.value)).toEqual(['2', '3']);
    const stored = await readBatches(h.log, zstd, 0, 0, 1 << 20);
    expect(readBatchHeader(stored.batches, 0).attributes & COMPRESSION_CODEC_MASK).toBe(CODEC.zstd);
  });
});
