/**
 * Fold by age (docs/architecture.md, "One conditional write per request", Lifetime): a shard's
 * commit-log entries expire a week after they are written, so a shard nobody writes to again and
 * no maintenance round reaches is folded all the same, by the durable timer its writer armed
 * before the entry (partition/fold-watch.ts). Here no round runs after the writes (the round
 * interval is a month): only the timer folds. Entries are then deleted as their TTL would, and a
 * process with nothing cached reads every record back. A fold that dies between its steps is
 * finished by the timer's retry; a writer whose timer write fails writes no entry.
 */
import { describe, expect, it } from 'vitest';
import type { Storage } from '../../src/compose.js';
import { FOLD_SHARD_KIND, FOLD_WITHIN_MS, foldExpiry } from '../../src/partition/fold-watch.js';
import { ShardLog } from '../../src/partition/shard-log.js';
import { CLOG_ENTRY_PREFIX, clogPk } from '../../src/storage/key-layout.js';
import { COMMIT_LOG_LEVEL, SUPPORTED_FEATURE_LEVEL } from '../../src/storage/formats.js';
import { raiseFeatureLevel } from '../../src/storage/feature-level.js';
import type { MetadataStore } from '../../src/storage/ports.js';
import { DurableTimers } from '../../src/timer/durable-timers.js';
import { TopicRegistry, type Topic } from '../../src/topics/topics.js';
import { allBackends, BACKEND_TEST_TIMEOUT_MS, storagePerTest } from '../support/backends.js';
import { FaultyMetadataStore } from '../support/fault-injection.js';
import { harness, rec, TestClock } from './helpers.js';

const T0 = 1_700_000_000_000;
const DAY = 86_400_000;
const MONTH = 30 * DAY;
const PARTITIONS = 3;

/** A storage whose metadata writes can be made to fail, a clog topic on it, and a round done before it. */
async function setup(storage: Storage) {
  const metadata = new FaultyMetadataStore(storage.metadata);
  const clock = new TestClock(T0);
  const faulty = { ...storage, metadata };
  const h = harness(faulty, clock, { roundIntervalMs: MONTH });
  // The round of the empty cluster: the next one is a month away, so only timers fold.
  expect((await h.run()).roundsCompleted).toBe(1);
  // At least PACKED_INDEX_LEVEL (the round started the new cluster at the newest level: a no-op then).
  await raiseFeatureLevel(metadata, SUPPORTED_FEATURE_LEVEL, T0, 'test');
  const registry = new TopicRegistry(metadata, clock, storage.stores.length, {
    featureLevel: async () => COMMIT_LOG_LEVEL,
  });
  const topic = await registry.create({ name: 'aged', partitionCount: PARTITIONS, replicationFactor: 1 });
  expect(topic.clog).toBe(true);
  return { metadata, clock, h, topic };
}

/** Writes `n` requests round the partitions, a minute apart; answers the values per partition. */
async function produce(h: ReturnType<typeof harness>, clock: TestClock, topic: Topic, n: number) {
  const written: string[][] = Array.from({ length: PARTITIONS }, () => []);
  for (let i = 0; i < n; i++) {
    const p = i % PARTITIONS;
    await h.produce(topic, [rec(null, `v${i}`, clock.now())], p);
    written[p]!.push(`v${i}`);
    clock.advance(60_000);
  }
  return written;
}

/** Deletes the shard's entries, as their TTL does a week after they were written. */
async function expireEntries(metadata: MetadataStore, topic: Topic): Promise<number> {
  const items = await metadata.query(clogPk(topic.name, 0), { beginsWith: CLOG_ENTRY_PREFIX });
  await Promise.all(items.map((i) => metadata.delete(i.pk, i.sk)));
  return items.length;
}

/** Every record of every partition, read by a process with nothing cached (another store object). */
async function readBack(storage: Storage, clock: TestClock, topic: Topic) {
  const fresh = harness({ ...storage, metadata: new FaultyMetadataStore(storage.metadata) }, clock);
  const out: string[][] = [];
  for (let p = 0; p < PARTITIONS; p++) out.push((await fresh.readAll(topic, p)).map((r) => r.value!));
  return out;
}

const foldTimers = (metadata: MetadataStore, clock: TestClock) =>
  new DurableTimers(metadata).pending(T0 - DAY, clock.now() + 2 * FOLD_WITHIN_MS, [FOLD_SHARD_KIND]);

describe.each(allBackends)('fold by age on $name', (backend) => {
  const s = storagePerTest(backend);

  it(
    'folds a shard nobody writes to again within FOLD_WITHIN_MS, so its records outlive the entries',
    async () => {
      const { metadata, clock, h, topic } = await setup(s.storage);
      const written = await produce(h, clock, topic, 10);
      const log = new ShardLog(metadata);
      const last = (await log.tail(topic.name, 0, 0)).last;
      expect(last).toBe(10);
      // One timer for the ten requests: armed once, not per request.
      expect(await foldTimers(metadata, clock)).toHaveLength(1);
      // Not due yet: nothing folds.
      clock.t = foldExpiry(T0) - 60_000;
      expect((await h.run()).partitionsFoldedByAge).toBeUndefined();
      expect(await log.foldedThrough(topic.name, 0)).toBe(0);
      // Due: the timer folds the shard (no round runs), and is gone.
      clock.t = T0 + FOLD_WITHIN_MS + 60_000;
      const report = await h.run();
      expect(report.roundsCompleted).toBeUndefined();
      expect(report.partitionsFoldedByAge).toBe(PARTITIONS);
      expect(await log.foldedThrough(topic.name, 0)).toBe(last);
      expect(await foldTimers(metadata, clock)).toHaveLength(0);
      // A week on, the entries are gone; the records are all in the states and the index.
      clock.advance(8 * DAY);
      expect(await expireEntries(s.storage.metadata, topic)).toBe(10);
      expect(await readBack(s.storage, clock, topic)).toEqual(written);
    },
    BACKEND_TEST_TIMEOUT_MS,
  );

  it(
    'arms the next timer once the last one is within half of FOLD_WITHIN_MS, and folds what came since',
    async () => {
      const { metadata, clock, h, topic } = await setup(s.storage);
      const first = await produce(h, clock, topic, 3);
      clock.t = T0 + FOLD_WITHIN_MS / 2 + 60_000;
      const second = await produce(h, clock, topic, 3);
      expect(await foldTimers(metadata, clock)).toHaveLength(2);
      clock.t = T0 + FOLD_WITHIN_MS + 60_000;
      expect((await h.run()).partitionsFoldedByAge).toBe(PARTITIONS);
      // Written after the first timer fired: the second folds them (the third, armed as the
      // second's expiry came within half of FOLD_WITHIN_MS, finds nothing left).
      const third = await produce(h, clock, topic, 3);
      expect(await foldTimers(metadata, clock)).toHaveLength(2);
      clock.t = T0 + 2 * FOLD_WITHIN_MS + 5 * 60_000;
      expect((await h.run()).partitionsFoldedByAge).toBe(PARTITIONS);
      expect(await foldTimers(metadata, clock)).toHaveLength(0);
      clock.advance(8 * DAY);
      expect(await expireEntries(s.storage.metadata, topic)).toBe(9);
      expect(await readBack(s.storage, clock, topic)).toEqual(
        first.map((vs, p) => [...vs, ...second[p]!, ...third[p]!]),
      );
    },
    BACKEND_TEST_TIMEOUT_MS,
  );

  it(
    'processes that write a shard within a step of the grid arm one timer: the later ones read it and write none',
    async () => {
      const { metadata, clock, h, topic } = await setup(s.storage);
      await h.produce(topic, [rec(null, 'first', clock.now())], 0);
      clock.advance(60_000);
      // Another process (its own caches over the same store), whose timer writes would fail: its
      // request succeeds, so it wrote none.
      const other = new FaultyMetadataStore(s.storage.metadata);
      other.faults.fail('put', { match: (key) => key.startsWith('timer#'), times: 10 });
      await harness({ ...s.storage, metadata: other }, clock).produce(topic, [rec(null, 'second', clock.now())], 1);
      expect(other.faults.injected).toBe(0);
      expect(await foldTimers(metadata, clock)).toHaveLength(1);
      expect((await new ShardLog(metadata).tail(topic.name, 0, 0)).last).toBe(2);
    },
    BACKEND_TEST_TIMEOUT_MS,
  );

  it.each([
    ['after its index items, before a state', (key: string) => key.endsWith('|state'), 'before'],
    ['with a state written and its answer lost', (key: string) => key.endsWith('|state'), 'after'],
    [
      'after the states, before the fold mark',
      (key: string) => key.startsWith('clog#') && key.endsWith('|folded'),
      'before',
    ],
  ] as const)(
    'a timer fold that dies %s is finished by the timer again',
    async (_, match, when) => {
      const { metadata, clock, h, topic } = await setup(s.storage);
      const written = await produce(h, clock, topic, 6);
      clock.t = T0 + FOLD_WITHIN_MS + 60_000;
      metadata.faults.fail('put', { match, when });
      const failed = await h.run();
      expect(failed.timerFailures).toBe(1);
      expect(metadata.faults.injected).toBe(1);
      expect(await new ShardLog(metadata).foldedThrough(topic.name, 0)).toBe(0);
      // The timer was moved to its retry (a minute on), not lost.
      expect(await foldTimers(metadata, clock)).toHaveLength(1);
      clock.advance(2 * 60_000);
      expect((await h.run()).partitionsFoldedByAge).toBe(PARTITIONS);
      expect(await new ShardLog(metadata).foldedThrough(topic.name, 0)).toBe(6);
      clock.advance(8 * DAY);
      expect(await expireEntries(s.storage.metadata, topic)).toBe(6);
      expect(await readBack(s.storage, clock, topic)).toEqual(written);
    },
    BACKEND_TEST_TIMEOUT_MS,
  );

  it(
    'writes no entry without its timer: a failed timer write fails the request; a writer that dies after it leaves a timer with nothing to do',
    async () => {
      const { metadata, clock, h, topic } = await setup(s.storage);
      metadata.faults.fail('put', { match: (key) => key.startsWith('timer#'), times: 10 });
      await expect(h.produce(topic, [rec(null, 'lost', clock.now())], 0)).rejects.toThrow();
      metadata.faults.clear();
      expect((await new ShardLog(metadata).tail(topic.name, 0, 0)).last).toBe(0);
      // The timer is written, then the writer dies before its entry.
      metadata.faults.fail('put', { match: (key) => key.startsWith('clog#') && key.includes('|e#'), times: 10 });
      await expect(h.produce(topic, [rec(null, 'died', clock.now())], 0)).rejects.toThrow();
      metadata.faults.clear();
      expect(await foldTimers(metadata, clock)).toHaveLength(1);
      expect((await new ShardLog(metadata).tail(topic.name, 0, 0)).last).toBe(0);
      clock.t = T0 + FOLD_WITHIN_MS + 60_000;
      const report = await h.run();
      expect(report.timerFailures).toBeUndefined();
      expect(report.partitionsFoldedByAge).toBeUndefined();
      expect(await foldTimers(metadata, clock)).toHaveLength(0);
    },
    BACKEND_TEST_TIMEOUT_MS,
  );
});
