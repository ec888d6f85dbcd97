import { GroupCoordinator } from '../../src/groups/coordinator.js';
import { TopicRegistry } from '../../src/topics/topics.js';
import type { Scenario, ScenarioFigures, Simulation } from './scenario.js';
import { perOp, type TrafficSummary } from './simulated-storage.js';

/**
 * A KIP-848 consumer group of 1,000 members on one topic of 1,000 partitions, every member
 * heart-beating at the interval the coordinator tells it (group.consumer.heartbeat.interval.ms,
 * 5 s), spread evenly over the interval. The members join one after the other with latency off
 * (the last 100 joins are counted: calls and units per join), asking for the uniform assignor
 * (KIP-848's default server assignor; `sticky` here) as a Kafka client that names none gets. The
 * heartbeats are measured (60 s simulated, 15 s with --quick): the first ones reconcile the group
 * the joins left (each member joined holding only what nobody held), the last 15 s are steady.
 * Figures: heartbeats answered and failed, their latency, and calls and units per join, per
 * heartbeat and per steady heartbeat.
 */
export const groupHeartbeats: Scenario = {
  name: 'group-heartbeats',
  description: 'A consumer group of 1,000 members heart-beating at the default interval',
  run,
};

const MEMBERS = 1_000;
const PARTITIONS = 1_000;
const COUNTED_JOINS = 100;
/** The steady span at the end of the measured heart-beating. */
const STEADY_MS = 15_000;

async function run(sim: Simulation): Promise<ScenarioFigures> {
  const { time } = sim;
  const s = sim.storage(1);
  const { metadata } = s.storage;
  const topics = new TopicRegistry(metadata, time, 1);
  await topics.create({ name: 'events', partitionCount: PARTITIONS, replicationFactor: 1, configs: {} });
  // group.consumer.max.size raised to the group's size, as an operator running such a group would.
  const coordinator = new GroupCoordinator({
    metadata,
    clock: time,
    topics,
    limits: { consumerMaxSize: MEMBERS },
    featureLevel: () => sim.featureLevel,
  });
  const groupId = 'big-group';
  const members: { memberId: string; memberEpoch: number; intervalMs: number }[] = [];
  for (let i = 0; i < MEMBERS; i++) {
    if (i === MEMBERS - COUNTED_JOINS) s.traffic.start();
    const a = await coordinator.heartbeat(groupId, {
      memberId: '',
      memberEpoch: 0,
      clientId: `member-${i}`,
      subscribedTopics: ['events'],
      assignor: 'sticky',
    });
    members.push({ memberId: a.memberId, memberEpoch: a.memberEpoch, intervalMs: a.heartbeatIntervalMs });
    if (i % 100 === 99) sim.log(`${i + 1} members joined`);
  }
  const joins = s.traffic.summary();
  sim.log(`${MEMBERS} members joined; per join (the last ${COUNTED_JOINS}): ${perOp(joins, undefined, COUNTED_JOINS)}`);

  s.setLatency(true);
  s.traffic.start();
  const span = (sim.quick ? 15 : 60) * 1000;
  const end = time.now() + span;
  const steadyFrom = end - STEADY_MS;
  let steady: { traffic: TrafficSummary; answered: number } | undefined;
  const sampler = time.until(steadyFrom).then(() => {
    steady = { traffic: s.traffic.summary(), answered };
  });
  let answered = 0;
  let failed = 0;
  const latencies: number[] = [];
  const errors = new Map<string, number>();
  const member = async (m: (typeof members)[number], i: number) => {
    await time.sleep(Math.floor((i * m.intervalMs) / MEMBERS));
    while (time.now() < end) {
      const sent = time.now();
      try {
        const a = await coordinator.heartbeat(groupId, { memberId: m.memberId, memberEpoch: m.memberEpoch });
        m.memberEpoch = a.memberEpoch;
        m.intervalMs = a.heartbeatIntervalMs || m.intervalMs;
        answered++;
      } catch (e) {
        failed++;
        const name = (e as { errorName?: string }).errorName ?? (e instanceof Error ? e.message : String(e));
        errors.set(name, (errors.get(name) ?? 0) + 1);
      }
      latencies.push(time.now() - sent);
      await time.until(sent + m.intervalMs);
    }
  };
  await Promise.all([...members.map(member), sampler]);
  s.traffic.recording = false;
  latencies.sort((a, b) => a - b);
  const all = s.traffic.summary();
  return {
    members: MEMBERS,
    'simulated seconds': span / 1000,
    'heartbeats answered': answered,
    'heartbeats failed': failed,
    ...(errors.size > 0 ? { errors: [...errors].map(([k, v]) => `${k} x${v}`).join(', ') } : {}),
    'heartbeat latency p50 (ms)': latencies[Math.floor(latencies.length / 2)] ?? 0,
    'heartbeat latency p99 (ms)': latencies[Math.floor(latencies.length * 0.99)] ?? 0,
    [`per join (the last ${COUNTED_JOINS})`]: perOp(joins, undefined, COUNTED_JOINS),
    'per heartbeat (all)': perOp(all, undefined, answered + failed),
    [`per heartbeat (the last ${STEADY_MS / 1000} s)`]: steady
      ? perOp(all, steady.traffic, answered - steady.answered)
      : '-',
  };
}
