/**
 * Issue 35: a maintenance round in shards, each with its own lease and cursor, worked by several
 * runs at once; leases renewed while a unit runs; durable timers fired while a long round runs; a
 * shard resumed after a run died at any of its steps.
 */
import { describe, expect, it, vi } from 'vitest';
import { createStorage } from '../../src/compose.js';
import type { SchedulerReport } from '../../src/maintenance/scheduler.js';
import { shardOf } from '../../src/maintenance/round-shards.js';
import { MemoryObjectStore } from '../../src/storage/memory-object-store.js';
import { DurableTimers } from '../../src/timer/durable-timers.js';
import type { Topic } from '../../src/topics/topics.js';
import { FaultyMetadataStore } from '../support/fault-injection.js';
import { harness, rec, SHARD_0, TestClock } from './helpers.js';

const T0 = 1_700_000_000_000;
const SHARDS = { shards: 4, shardConcurrency: 2 };

/** Topics whose every partition holds one expired record: a partition whose unit ran starts at offset 1. */
async function expiredPartitions(h: ReturnType<typeof harness>, topics = 3, partitions = 4) {
  const made: Topic[] = [];
  for (let i = 0; i < topics; i++) {
    const topic = await h.topics.create({
      name: `topic-${i}`,
      partitionCount: partitions,
      replicationFactor: 1,
      configs: { 'retention.ms': '1000' },
    });
    for (let p = 0; p < partitions; p++) {
      await h.produce(topic, [rec(null, 'old', T0 - 10_000)], p);
      await h.produce(topic, [rec(null, 'new', T0 + 1_000_000)], p);
    }
    made.push(topic);
  }
  const pending = async () => {
    const out: string[] = [];
    for (const t of made)
      for (let p = 0; p < t.partitionCount; p++)
        if ((await h.log.state(t, p)).logStartOffset !== 1) out.push(`${t.name}/${p}`);
    return out;
  };
  return { topics: made, units: topics * (partitions + 1), pending };
}

const sum = (reports: SchedulerReport[], name: string) => reports.reduce((n, r) => n + (r[name] ?? 0), 0);

describe('a maintenance round in shards', () => {
  it('spreads the units over the shards, and two runs at once do each unit once and complete the round once', async () => {
    const h = harness(createStorage({ kind: 'memory', replicaStores: 1 }), new TestClock(T0), SHARDS);
    const { units, pending, topics } = await expiredPartitions(h);
    const used = new Set(topics.flatMap((t) => [0, 1, 2, 3, 4].map((u) => shardOf(t.name, u, SHARDS.shards))));
    expect(used.size).toBeGreaterThan(1);
    const reports = await Promise.all([h.run({ runId: 'a' }), h.run({ runId: 'b' })]);
    expect(sum(reports, 'unitsDone')).toBe(units);
    expect(sum(reports, 'roundsCompleted')).toBe(1);
    expect(await pending()).toEqual([]);
    // The next round is a new one: every unit again, once.
    const again = await Promise.all([h.run({ runId: 'a' }), h.run({ runId: 'b' })]);
    expect(sum(again, 'unitsDone')).toBe(units);
    expect(sum(again, 'roundsCompleted')).toBe(1);
  });

  it('resumes a shard after a run died at any of its writes, without skipping a unit', async () => {
    // Every write the first run makes, in turn, is the one it dies at (the store fails it and every later one).
    for (let dieAt = 1; ; dieAt++) {
      const storage = createStorage({ kind: 'memory', replicaStores: 1 });
      const clock = new TestClock(T0);
      const setup = harness(storage, clock, SHARDS);
      const { pending } = await expiredPartitions(setup, 2, 3);
      const metadata = new FaultyMetadataStore(storage.metadata);
      const dying = harness({ ...storage, metadata }, clock, SHARDS);
      let writes = 0;
      const dies = (k: string) => k.startsWith('cluster|') || k.startsWith('part#') || k.startsWith('timer#');
      const died = () => ++writes >= dieAt;
      metadata.faults.fail('put', { match: (k) => dies(k) && died(), times: 1_000 });
      metadata.faults.fail('delete', { match: (k) => dies(k) && died(), times: 1_000 });
      const first = await dying.run({ runId: 'dying' }).catch(() => undefined);
      if (writes < dieAt) {
        // The run made fewer writes than dieAt: every step has been a death point.
        expect(first).toMatchObject({ roundsCompleted: 1 });
        expect(dieAt).toBeGreaterThan(10);
        break;
      }
      // Another process, once the dead run's leases lapsed, finishes the round.
      clock.advance(30_001);
      const next = harness(storage, clock, SHARDS);
      const report = await next.run({ runId: 'next' });
      expect(report.leaseHeld, `died at write ${dieAt}`).toBeUndefined();
      expect(await pending(), `died at write ${dieAt}`).toEqual([]);
      const round = await storage.metadata.get<{ doneRound?: number; round: number }>('cluster', 'scheduler');
      expect(round?.value.doneRound, `died at write ${dieAt}`).toBe(round?.value.round);
    }
  });

  it("renews a shard's lease while a unit runs past the TTL, and fires due timers meanwhile", async () => {
    const storage = createStorage({ kind: 'memory', replicaStores: 1 });
    const metadata = new FaultyMetadataStore(storage.metadata);
    const clock = new TestClock(T0);
    const h = harness({ metadata, stores: [new MemoryObjectStore()], close: () => {} }, clock, { shards: 1 });
    const { pending } = await expiredPartitions(h, 1, 2);
    const timers = new DurableTimers(metadata);
    await timers.schedule({ kind: 'probe', id: 'late', expiry: T0 + 45_000, payload: 0 }, T0);
    const probe = vi.fn(async () => {});
    // The first unit's partition state read is held: the unit lasts as long as the test says.
    const gate = metadata.faults.gate('get', (k) => k === 'part#topic-0#0|state');
    // Sleeps pass at once in real time (a few ms); the test moves the clock.
    const sleep = () => new Promise<void>((r) => setTimeout(r, 2));
    const running = h.run({ runId: 'long', leaseTtlMs: 30_000, sleep, timerHandlers: { probe } });
    await gate.reached;
    for (let i = 0; i < 12; i++) {
      clock.advance(5_000); // 60 s in all: twice the TTL
      await new Promise((r) => setTimeout(r, 20));
    }
    const lease = await storage.metadata.get<{ holder: string; leaseUntil: number }>(SHARD_0.pk, SHARD_0.sk);
    expect(lease?.value.holder).toBe('long');
    expect(lease?.value.leaseUntil).toBeGreaterThan(clock.now());
    // Another run finds the shard held (renewed, not lapsed) ...
    expect(await h.run({ runId: 'other', timerHandlers: { probe } })).toMatchObject({ leaseHeld: 1 });
    // ... and the timer due during the long unit fired before the unit ended, once.
    expect(probe).toHaveBeenCalledTimes(1);
    gate.release();
    expect(await running).toMatchObject({ roundsCompleted: 1, timersFired: 1 });
    expect(await pending()).toEqual([]);
  });
});
