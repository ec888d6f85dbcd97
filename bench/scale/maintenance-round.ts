import { PartitionLog } from '../../src/log/partition-log.js';
import { runMaintenance, type SchedulerReport } from '../../src/maintenance/scheduler.js';
import { ReplicaManager } from '../../src/replication/replica-manager.js';
import type { DurableTimer } from '../../src/timer/durable-timers.js';
import { DurableTimers } from '../../src/timer/durable-timers.js';
import { TopicRegistry } from '../../src/topics/topics.js';
import type { Scenario, ScenarioFigures, Simulation } from './scenario.js';

/**
 * A maintenance round over 10,000 partitions (100 topics of 100, one record in each), run the way
 * the stack runs it: the scheduled function invoked every minute (EventBridge, schedulerRateMinutes
 * 1), each invocation stopping 15 s before its 5-minute timeout (infra/log-functions.ts), each in
 * its own process (its own lease holder). Meanwhile durable timers come due every 5 s; each is
 * timed from its expiry to its firing. Figures: the round's wall time (from the first invocation
 * to the round's completion), the invocations it took, the timers' lateness.
 */
export function maintenanceRound(replicationFactor: 1 | 2): Scenario {
  return {
    name: `maintenance-round-rf${replicationFactor}`,
    description: `A maintenance round over 10,000 partitions (100 topics x 100, RF ${replicationFactor}), invoked every minute`,
    run: (sim) => run(sim, replicationFactor),
  };
}

const TOPICS = 100;
const PARTITIONS = 100;
const RATE_MS = 60_000;
const TIMEOUT_MS = 5 * 60_000;
const SAFETY_MARGIN_MS = 15_000;
const TIMER_EVERY_MS = 5_000;
const TIMER_KIND = 'simulated-timer';
/** At most this much simulated time: a round that has not completed by then is reported as such. */
const GIVE_UP_MS = 40 * 60_000;

async function run(sim: Simulation, rf: 1 | 2): Promise<ScenarioFigures> {
  const { time } = sim;
  const s = sim.storage(rf);
  const { metadata, stores } = s.storage;
  const topics = new TopicRegistry(metadata, time, stores.length);
  const leadership = new ReplicaManager({ metadata, stores, clock: time });
  const partitionLog = new PartitionLog({ metadata, stores, clock: time, leadership });

  for (let t = 0; t < TOPICS; t++) {
    const topic = await topics.create({
      name: `topic-${String(t).padStart(3, '0')}`,
      partitionCount: PARTITIONS,
      replicationFactor: rf,
      configs: {},
    });
    const record = { key: null, value: Buffer.from('x'), headers: [], timestamp: time.now() };
    await partitionLog.append(
      topic,
      Array.from({ length: PARTITIONS }, (_, partition) => ({ partition, records: [record] })),
    );
  }
  sim.log(`set up ${TOPICS * PARTITIONS} partitions at RF ${rf}`);

  // Timers due every few seconds over the measured span, fired through the scheduler's handlers.
  const started = time.now();
  const timers = new DurableTimers(metadata);
  const due = new Map<string, number>();
  for (let at = started + TIMER_EVERY_MS; at <= started + GIVE_UP_MS; at += TIMER_EVERY_MS) {
    const id = `t${at}`;
    due.set(id, at);
    await timers.schedule({ kind: TIMER_KIND, id, expiry: at, payload: null }, started);
  }
  const lateness: number[] = [];
  const onTimer = async (timer: DurableTimer) => {
    const at = due.get(timer.id);
    if (at !== undefined && at <= (roundDoneAt ?? Infinity)) lateness.push(time.now() - at);
    due.delete(timer.id);
  };

  s.setLatency(true);
  s.traffic.start();
  let roundDoneAt: number | undefined;
  let invocations = 0;
  let roundInvocations = 0;
  let leaseHeld = 0;
  const runs: Promise<void>[] = [];
  const invoke = async (n: number) => {
    const at = time.now();
    const report: SchedulerReport = await runMaintenance({
      storage: s.storage,
      clock: time,
      deadline: at + TIMEOUT_MS - SAFETY_MARGIN_MS,
      partitionLog,
      topics,
      timerHandlers: { [TIMER_KIND]: onTimer },
      runId: `invocation-${n}`,
      sleep: (ms, signal) => time.sleep(ms, signal),
    });
    if (report.leaseHeld) leaseHeld++;
    if (report.unitsDone && roundDoneAt === undefined) roundInvocations++;
    if (report.roundsCompleted && roundDoneAt === undefined) roundDoneAt = time.now();
  };
  // Until the round is done and the timers due by then have fired (or the simulation gives up).
  const timersLeft = () => [...due.values()].some((at) => at <= (roundDoneAt ?? Infinity));
  while (time.now() < started + GIVE_UP_MS && (roundDoneAt === undefined || timersLeft())) {
    runs.push(invoke(invocations++));
    await time.sleep(RATE_MS);
  }
  await Promise.all(runs);
  s.traffic.recording = false;
  // Timers due but never fired within the simulation count as late until its end.
  const unfired = [...due.values()].filter((at) => at <= (roundDoneAt ?? time.now()));
  for (const at of unfired) lateness.push(time.now() - at);
  const lateSorted = lateness.sort((a, b) => a - b);
  return {
    partitions: TOPICS * PARTITIONS,
    'round wall time (s)': roundDoneAt === undefined ? `> ${GIVE_UP_MS / 1000}` : (roundDoneAt - started) / 1000,
    'invocations with round work': roundInvocations,
    'invocations that found the lease held': leaseHeld,
    'timers due': lateness.length,
    'timers unfired at the end': unfired.length,
    'timer lateness p50 (s)': (lateSorted[Math.floor(lateSorted.length / 2)] ?? 0) / 1000,
    'timer lateness max (s)': (lateSorted.at(-1) ?? 0) / 1000,
  };
}
