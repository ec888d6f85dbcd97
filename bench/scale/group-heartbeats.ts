import { GroupCoordinator } from '../../src/groups/coordinator.js';
import { TopicRegistry } from '../../src/topics/topics.js';
import type { Scenario, ScenarioFigures, Simulation } from './scenario.js';

/**
 * A KIP-848 consumer group of 1,000 members on one topic of 1,000 partitions, every member
 * heart-beating at the interval the coordinator tells it (group.consumer.heartbeat.interval.ms,
 * 5 s), spread evenly over the interval. The members join with latency off; the heartbeats are
 * measured (60 s simulated, 15 s with --quick). Figures: heartbeats answered, failed, and their
 * latency.
 */
export const groupHeartbeats: Scenario = {
  name: 'group-heartbeats',
  description: 'A consumer group of 1,000 members heart-beating at the default interval',
  run,
};

const MEMBERS = 1_000;
const PARTITIONS = 1_000;

async function run(sim: Simulation): Promise<ScenarioFigures> {
  const { time } = sim;
  const s = sim.storage(1);
  const { metadata } = s.storage;
  const topics = new TopicRegistry(metadata, time, 1);
  await topics.create({ name: 'events', partitionCount: PARTITIONS, replicationFactor: 1, configs: {} });
  // group.consumer.max.size raised to the group's size, as an operator running such a group would.
  const coordinator = new GroupCoordinator({ metadata, clock: time, topics, limits: { consumerMaxSize: MEMBERS } });
  const groupId = 'big-group';
  const members: { memberId: string; memberEpoch: number; intervalMs: number }[] = [];
  for (let i = 0; i < MEMBERS; i++) {
    const a = await coordinator.heartbeat(groupId, {
      memberId: '',
      memberEpoch: 0,
      clientId: `member-${i}`,
      subscribedTopics: ['events'],
    });
    members.push({ memberId: a.memberId, memberEpoch: a.memberEpoch, intervalMs: a.heartbeatIntervalMs });
  }
  sim.log(`${MEMBERS} members joined`);

  s.setLatency(true);
  s.traffic.start();
  const span = (sim.quick ? 15 : 60) * 1000;
  const end = time.now() + span;
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
  await Promise.all(members.map(member));
  s.traffic.recording = false;
  latencies.sort((a, b) => a - b);
  return {
    members: MEMBERS,
    'simulated seconds': span / 1000,
    'heartbeats answered': answered,
    'heartbeats failed': failed,
    ...(errors.size > 0 ? { errors: [...errors].map(([k, v]) => `${k} x${v}`).join(', ') } : {}),
    'heartbeat latency p50 (ms)': latencies[Math.floor(latencies.length / 2)] ?? 0,
    'heartbeat latency p99 (ms)': latencies[Math.floor(latencies.length * 0.99)] ?? 0,
  };
}
