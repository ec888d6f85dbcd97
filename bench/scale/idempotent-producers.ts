import { PartitionLog } from '../../src/log/partition-log.js';
import { ProducerIds, type ProducerIdAndEpoch } from '../../src/producer/producer-ids.js';
import { ReplicaManager } from '../../src/replication/replica-manager.js';
import { partitionPk, STATE_SK } from '../../src/storage/key-layout.js';
import { TopicRegistry } from '../../src/topics/topics.js';
import type { Scenario, ScenarioFigures, Simulation } from './scenario.js';

/**
 * 500 idempotent producers on one partition: each has produced once (set-up, latency off), so the
 * partition knows 500 producers; then each produces again, 10 requests a second in all (the
 * commits do not contend). Figures: the write units of one commit of the partition state item,
 * and all the metadata write units one produce request costs.
 */
export const idempotentProducers: Scenario = {
  name: 'idempotent-producers',
  description: '500 idempotent producers on one partition: the write units of a commit',
  run,
};

const PRODUCERS = 500;

async function run(sim: Simulation): Promise<ScenarioFigures> {
  const { time } = sim;
  const s = sim.storage(1);
  const { metadata, stores } = s.storage;
  const topics = new TopicRegistry(metadata, time, 1);
  const topic = await topics.create({ name: 'orders', partitionCount: 1, replicationFactor: 1, configs: {} });
  const leadership = new ReplicaManager({ metadata, stores, clock: time });
  const log = new PartitionLog({
    metadata,
    stores,
    clock: time,
    leadership,
    featureLevel: () => Promise.resolve(sim.featureLevel),
  });
  const ids = new ProducerIds(metadata);
  const producers: ProducerIdAndEpoch[] = [];
  for (let p = 0; p < PRODUCERS; p++) producers.push(await ids.init());
  const produce = async (p: number, sequence: number) => {
    const { producerId, producerEpoch } = producers[p]!;
    const record = { key: null, value: Buffer.from(`p${p}`), headers: [], timestamp: time.now() };
    const out = (
      await log.append(topic, [{ partition: 0, records: [record] }], {
        producer: { producerId, producerEpoch, baseSequences: new Map([[0, sequence]]) },
      })
    ).get(0);
    if (!out?.ok) throw out?.error ?? new Error('no answer');
  };
  for (let p = 0; p < PRODUCERS; p++) await produce(p, 0);
  sim.log(`${PRODUCERS} producers have produced once`);

  s.setLatency(true);
  s.traffic.start();
  const requests = sim.quick ? 50 : PRODUCERS;
  for (let i = 0; i < requests; i++) {
    await produce(i % PRODUCERS, 1 + Math.floor(i / PRODUCERS));
    await time.sleep(100);
  }
  s.traffic.recording = false;
  const commits = s.traffic.writesOf(`${partitionPk(topic.name, 0)}|${STATE_SK}`);
  const summary = s.traffic.summary();
  return {
    producers: PRODUCERS,
    'produce requests': requests,
    'WCU per commit of the partition state (mean)': round(commits.reduce((a, b) => a + b, 0) / commits.length),
    'WCU per commit of the partition state (max)': Math.max(...commits),
    'metadata WCU per produce request': round(summary.writeUnits / requests),
  };
}

const round = (n: number) => Math.round(n * 100) / 100;
