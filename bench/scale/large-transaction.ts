import { createGroups } from '../../src/groups/index.js';
import { PartitionLog } from '../../src/log/partition-log.js';
import { ReplicaManager } from '../../src/replication/replica-manager.js';
import { groupPk, txnPk } from '../../src/storage/key-layout.js';
import { createTransactionCoordinator } from '../../src/transactions/index.js';
import { SystemTimer } from '../../src/timer/system-timer.js';
import { TopicRegistry } from '../../src/topics/topics.js';
import type { Scenario, ScenarioFigures, Simulation } from './scenario.js';
import { perOp, type TrafficSummary } from './simulated-storage.js';

/**
 * One transaction over 10,000 partitions (1,000 with --quick) with 1,000 pending offsets of 4 KB
 * of metadata each (Kafka's largest), as a producer that spans a whole big topic and commits a
 * consumer's offsets would make it: AddPartitionsToTxn 10 partitions a call, TxnOffsetCommit 100
 * offsets a call, then EndTxn (commit). At feature level 8 the partitions and offsets are items of
 * their own; below it they are lists in the transaction's one item, which passes DynamoDB's 400 KB
 * item limit (the memory store does not refuse it: the figure shows by how much). Figures: the
 * largest transaction item, and calls and units per AddPartitionsToTxn (the first and the last
 * 100 calls), per TxnOffsetCommit and for the commit, and the peak write units a second on the
 * transaction's key (its joins paced under DynamoDB's 1,000 a key); then the same 1,000 offsets
 * as one plain OffsetCommit, paced on its group's key as the end's are.
 */
export const largeTransaction: Scenario = {
  name: 'large-transaction',
  description: 'One transaction of 10,000 partitions and 1,000 offsets with 4 KB of metadata each',
  run,
};

const PARTITIONS_PER_ADD = 10;
const OFFSETS = 1_000;
const OFFSETS_PER_COMMIT = 100;
const METADATA_BYTES = 4096;

async function run(sim: Simulation): Promise<ScenarioFigures> {
  const { time } = sim;
  const partitions = sim.quick ? 1_000 : 10_000;
  const s = sim.storage(1);
  const { metadata, stores } = s.storage;
  const topics = new TopicRegistry(metadata, time, 1);
  await topics.create({ name: 'wide', partitionCount: partitions, replicationFactor: 1, configs: {} });
  await topics.create({ name: 'input', partitionCount: OFFSETS, replicationFactor: 1, configs: {} });
  const log = new PartitionLog({
    metadata,
    stores,
    clock: time,
    leadership: new ReplicaManager({ metadata, stores, clock: time }),
    featureLevel: () => Promise.resolve(sim.featureLevel),
  });
  const txns = createTransactionCoordinator({
    metadata,
    clock: time,
    topics,
    log,
    featureLevel: () => sim.featureLevel,
    // Paced writes wait in simulated time.
    sleep: (ms) => time.sleep(ms),
  });
  const id = 'wide-producer';
  const producer = await txns.init(id, 60_000);

  s.setLatency(true);
  s.traffic.start();
  const calls = partitions / PARTITIONS_PER_ADD;
  let first: TrafficSummary | undefined;
  let lastFrom: TrafficSummary | undefined;
  for (let c = 0; c < calls; c++) {
    if (c === 100) first = s.traffic.summary();
    if (c === calls - 100) lastFrom = s.traffic.summary();
    const batch = Array.from({ length: PARTITIONS_PER_ADD }, (_, i) => ({
      topic: 'wide',
      partition: c * PARTITIONS_PER_ADD + i,
    }));
    await txns.addPartitions(id, producer, batch);
  }
  // With --quick (100 adds in all) the first 100 are every add.
  first ??= s.traffic.summary();
  const added = s.traffic.summary();
  sim.log(`${partitions} partitions added`);
  const metadataText = 'm'.repeat(METADATA_BYTES);
  const offsetsStarted = time.now();
  for (let c = 0; c < OFFSETS / OFFSETS_PER_COMMIT; c++) {
    const offsets = Array.from({ length: OFFSETS_PER_COMMIT }, (_, i) => ({
      topic: 'input',
      partition: c * OFFSETS_PER_COMMIT + i,
      offset: 42,
      metadata: metadataText,
    }));
    await txns.commitOffsets(id, producer, 'consumers', offsets);
  }
  const committedOffsets = s.traffic.summary();
  const offsetsSeconds = (time.now() - offsetsStarted) / 1000;
  sim.log(`${OFFSETS} offsets committed to the transaction`);
  const commitStarted = time.now();
  const ended = await txns.end(id, producer, true);
  const commitMs = time.now() - commitStarted;
  const all = s.traffic.summary();
  // The same 1,000 offsets as one plain OffsetCommit of a consumer outside any group's membership
  // (an assign() consumer; GroupOffsets.write, as a classic member's), to a group of its own key.
  const groups = createGroups({
    metadata,
    clock: time,
    topics,
    log,
    timer: new SystemTimer(),
    sleep: (ms) => time.sleep(ms),
  });
  const plainStarted = time.now();
  await groups.offsets.commit('plain', {
    offsets: Array.from({ length: OFFSETS }, (_, p) => ({
      topic: 'input',
      partition: p,
      offset: 42,
      metadata: metadataText,
    })),
  });
  const plainMs = time.now() - plainStarted;
  const plain = s.traffic.summary();
  s.traffic.recording = false;
  return {
    partitions,
    offsets: `${OFFSETS} x ${METADATA_BYTES} B of metadata`,
    'end state': ended.state,
    'largest transaction item (bytes)': all.largestItem.key.startsWith('txn#') ? all.largestItem.bytes : '-',
    'per AddPartitionsToTxn of 10 (the first 100)': perOp(first!, undefined, 100),
    'per AddPartitionsToTxn of 10 (the last 100)': perOp(added, lastFrom, 100),
    [`per TxnOffsetCommit of ${OFFSETS_PER_COMMIT}`]: perOp(committedOffsets, added, OFFSETS / OFFSETS_PER_COMMIT),
    'TxnOffsetCommits simulated seconds': offsetsSeconds.toFixed(1),
    // DynamoDB takes 1,000 write units a second on one partition key (the joins are paced under it).
    'peak WCU/s on the transaction key': s.traffic.peakKeyWriteUnitsOf(txnPk(id)),
    // The end writes the offsets to the group's key, paced as the joins were.
    'peak WCU/s on the group key': s.traffic.peakKeyWriteUnitsOf(groupPk('consumers')),
    'EndTxn (commit)': perOp(all, committedOffsets, 1),
    'EndTxn simulated seconds': (commitMs / 1000).toFixed(1),
    [`OffsetCommit of ${OFFSETS} (no transaction)`]: perOp(plain, all, 1),
    'OffsetCommit simulated seconds': (plainMs / 1000).toFixed(1),
    // Paced as the end's offsets are.
    'peak WCU/s on the plain commit group key': s.traffic.peakKeyWriteUnitsOf(groupPk('plain')),
  };
}
