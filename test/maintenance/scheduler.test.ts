import { describe, expect, it, vi } from 'vitest';
import { createServices, createStorage, runMaintenancePass } from '../../src/compose.js';
import { serverConfigFromEnv } from '../../src/config/server-config.js';
import type { Topic } from '../../src/topics/topics.js';
import { startSchedulerLoop } from '../../src/maintenance/scheduler.js';
import { DurableTimers } from '../../src/timer/durable-timers.js';
import { awsBackend, BACKEND_TEST_TIMEOUT_MS } from '../support/backends.js';
import { harness, rec, SHARD_0, TestClock } from './helpers.js';
import { eventLogger } from '../support/event-logger.js';

const T0 = 1_700_000_000_000;

/**
 * Three topics of two partitions: 3 * (2 + 1) = 9 units. Each partition holds one expired record
 * under retention.ms, so a unit that ran leaves its partition's log start offset at 1.
 */
async function nineUnits(h: ReturnType<typeof harness>) {
  const topics: Topic[] = [];
  for (let i = 0; i < 3; i++) {
    const topic = await h.topics.create({
      name: `topic-${i}`,
      partitionCount: 2,
      replicationFactor: 1,
      configs: { 'retention.ms': '1000' },
    });
    for (const p of [0, 1]) {
      await h.produce(topic, [rec(null, 'old', T0 - 10_000)], p);
      await h.produce(topic, [rec(null, 'new', T0 + 1_000_000)], p);
    }
    topics.push(topic);
  }
  const done = async () => {
    const out: string[] = [];
    for (const t of topics)
      for (const p of [0, 1]) if ((await h.log.state(t, p)).logStartOffset === 1) out.push(`${t.name}/${p}`);
    return out;
  };
  return { topics, done };
}

describe('scheduler', () => {
  it('an interrupted run resumes where it stopped, without redoing or skipping a unit', async () => {
    const storage = createStorage({ kind: 'memory', replicaStores: 1 });
    const h = harness(storage, new TestClock(T0));
    const { done } = await nineUnits(h);
    const advances = () => h.events.filter((e) => e.msg === 'retention').map((e) => `${e.topic}/${e.partition}`);

    expect(await h.run({ maxUnits: 4 })).toMatchObject({ unitsDone: 4, incomplete: 1, logStartOffsetAdvances: 3 });
    expect(await done()).toEqual(['topic-0/0', 'topic-0/1', 'topic-1/0']);
    // The next run starts at topic-1's second partition, and stops at its deadline: the clock
    // passes it during topic-2/0 (its third unit, after topic-1's sweep); no fourth unit starts.
    let units = 0;
    const clock = { now: () => h.clock.now() + (units >= 2 ? 10_000 : 0) };
    const second = await h.run({
      clock,
      deadline: h.clock.now() + 5_000,
      logger: eventLogger((e) => {
        if (e.msg === 'retention') units++;
        h.events.push(e);
      }),
    });
    expect(second).toMatchObject({ unitsDone: 3, incomplete: 1 });
    expect(await h.run()).toMatchObject({ unitsDone: 2, roundsCompleted: 1 });
    expect(advances()).toEqual(['topic-0/0', 'topic-0/1', 'topic-1/0', 'topic-1/1', 'topic-2/0', 'topic-2/1']);
    // A new round starts from the first topic; nothing is left to do.
    expect(await h.run()).toMatchObject({ unitsDone: 9, roundsCompleted: 1 });
    expect(advances()).toHaveLength(6);
  });

  it('a run that died holding the lease blocks others until the lease ends, then its work resumes', async () => {
    const storage = createStorage({ kind: 'memory', replicaStores: 1 });
    const h = harness(storage, new TestClock(T0));
    const { done } = await nineUnits(h);
    // The first run dies after its second unit: its lease (written here as it would be left) stays.
    const dying = h.run({ maxUnits: 2, runId: 'dead', deadline: T0 + 60_000 });
    await dying;
    await storage.metadata.put(SHARD_0.pk, SHARD_0.sk, {
      ...(await storage.metadata.get<Record<string, unknown>>(SHARD_0.pk, SHARD_0.sk))!.value,
      holder: 'dead',
      leaseUntil: T0 + 60_000,
    });
    expect(await h.run({ runId: 'other' })).toEqual({ leaseHeld: 1 });
    h.clock.t = T0 + 60_000;
    expect(await h.run({ runId: 'other' })).toMatchObject({ unitsDone: 7, roundsCompleted: 1 });
    expect(await done()).toHaveLength(6);
  });

  it("fires due durable timers, the groups' session timers among them, and logs one structured line per pass", async () => {
    const storage = createStorage({ kind: 'memory', replicaStores: 1 });
    const h = harness(storage, new TestClock(T0));
    const timers = new DurableTimers(storage.metadata);
    await timers.schedule({ kind: 'probe', id: 'p1', expiry: T0 - 5, payload: 42 }, T0);
    const probe = vi.fn(async () => {});
    const report = await h.run({ timerHandlers: { probe } });
    expect(probe).toHaveBeenCalledWith(expect.objectContaining({ id: 'p1', payload: 42 }), expect.any(Function));
    expect(report).toMatchObject({ timersFired: 1, roundsCompleted: 1 });
    const line = h.events.find((e) => e.msg === 'scheduler pass');
    expect(line).toMatchObject({ level: 'info', timersFired: 1, durationMs: expect.any(Number) });
    // The composition root's pass fires the session timers of the process's own group coordinator:
    // a member whose heartbeats stopped is removed with no request reaching its group (a group id
    // with '#', which a timer id may not hold: the coordinator encodes it).
    const services = createServices(serverConfigFromEnv({}), storage, h.clock);
    await services.topics.create({ name: 'joined', partitionCount: 1, replicationFactor: 1 });
    const { coordinator } = services.groups;
    await coordinator.heartbeat('billing#eu', {
      memberId: '',
      memberEpoch: 0,
      subscribedTopics: ['joined'],
      sessionTimeoutMs: 10_000,
    });
    h.clock.advance(60_000);
    expect(
      await runMaintenancePass(storage, services, {
        deadline: h.clock.now() + 1000,
        options: { orphanGraceMs: 0, roundIntervalMs: 0 },
      }),
    ).toMatchObject({ timersFired: 1, membersExpired: 1, roundsCompleted: 1 });
    expect((await coordinator.get('billing#eu')).members).toEqual({});
  });

  it('starts a round at most every roundIntervalMs (log.retention.check.interval.ms); the runs between only fire timers', async () => {
    const storage = createStorage({ kind: 'memory', replicaStores: 1 });
    const h = harness(storage, new TestClock(T0), { roundIntervalMs: 300_000 });
    await nineUnits(h);
    const writes = vi.spyOn(storage.metadata, 'put');
    expect(await h.run()).toMatchObject({ unitsDone: 9, roundsCompleted: 1 });
    const timers = new DurableTimers(storage.metadata);
    await timers.schedule({ kind: 'probe', id: 'p', expiry: T0 + 60_000, payload: 0 }, T0);
    const probe = vi.fn(async () => {});
    h.clock.advance(60_000);
    writes.mockClear();
    const between = await h.run({ timerHandlers: { probe } });
    expect(between).toEqual({ timersFired: 1 });
    expect(probe).toHaveBeenCalledTimes(1);
    // Between rounds a run reads no partition and writes only its lease (take and release) and the timer's slot.
    expect(writes.mock.calls.filter(([pk]) => String(pk).startsWith('part#'))).toEqual([]);
    h.clock.advance(240_000);
    expect(await h.run()).toMatchObject({ unitsDone: 9, roundsCompleted: 1 });
    // An interrupted round goes on at the next run, due or not.
    h.clock.advance(300_000);
    expect(await h.run({ maxUnits: 4 })).toMatchObject({ unitsDone: 4, incomplete: 1 });
    expect(await h.run()).toMatchObject({ unitsDone: 5, roundsCompleted: 1 });
  });

  it('writes the cursor every cursorWriteIntervalMs, not per unit', async () => {
    const storage = createStorage({ kind: 'memory', replicaStores: 1 });
    const h = harness(storage, new TestClock(T0), { cursorWriteIntervalMs: 10_000 });
    await nineUnits(h);
    const leaseWrites = () => writes.mock.calls.filter(([pk, sk]) => pk === SHARD_0.pk && sk === SHARD_0.sk).length;
    const writes = vi.spyOn(storage.metadata, 'put');
    expect(await h.run()).toMatchObject({ unitsDone: 9, roundsCompleted: 1 });
    expect(leaseWrites()).toBe(3); // take, shard done, release: none per unit within 10 s
    writes.mockClear();
    // A slow run: every reading of this clock is a second later, so the 9 units span tens of seconds.
    let t = h.clock.now();
    await h.run({ clock: { now: () => (t += 1_000) }, deadline: t + 1_000_000 });
    expect(leaseWrites()).toBeGreaterThan(3);
    expect(leaseWrites()).toBeLessThan(3 + 9);
  });

  it(
    'runs on the S3/DynamoDB adapters',
    async () => {
      const { storage, stop } = await awsBackend.start();
      try {
        const h = harness(storage, new TestClock(T0));
        const { done } = await nineUnits(h);
        expect(await h.run({ maxUnits: 5 })).toMatchObject({ unitsDone: 5, incomplete: 1 });
        expect(await h.run()).toMatchObject({ unitsDone: 4, roundsCompleted: 1 });
        expect(await done()).toHaveLength(6);
      } finally {
        await stop();
      }
    },
    BACKEND_TEST_TIMEOUT_MS,
  );

  it('the in-process loop runs every interval, one run at a time, until stopped', async () => {
    const starts: number[] = [];
    let running = 0;
    let overlapped = false;
    const loop = startSchedulerLoop({
      intervalMs: 10,
      clock: { now: () => Date.now() },
      run: async () => {
        if (running++ > 0) overlapped = true;
        starts.push(Date.now());
        await new Promise((r) => setTimeout(r, 15));
        running--;
        return {};
      },
    });
    // A few runs, however late a loaded machine fires the timers (the bound only ends a failing test).
    for (const bound = Date.now() + 20_000; starts.length < 3 && Date.now() < bound; )
      await new Promise((r) => setTimeout(r, 5));
    await loop.stop();
    const count = starts.length;
    expect(count).toBeGreaterThanOrEqual(3);
    expect(overlapped).toBe(false);
    // Stopped: no run in the time of several intervals and runs.
    await new Promise((r) => setTimeout(r, 100));
    expect(starts.length).toBe(count);
  });
});
