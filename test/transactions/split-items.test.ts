/**
 * Transaction format 2 (feature level 8): a transaction's partitions, groups and pending offsets
 * in items of their own under its key (src/transactions/transaction-items.ts). A transaction past
 * what one DynamoDB item holds commits on the emulators; format 1 is written below level 8 and
 * read at every level, and a transaction open in it stays in it; a join that dies or races an end
 * leaves nothing an end misses, and what it leaves is tidied.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Storage } from '../../src/compose.js';
import type { PartitionLog } from '../../src/log/partition-log.js';
import { groupPk, OFFSET_PREFIX, TXN_STATE_SK, txnPartitionSk, txnPk } from '../../src/storage/key-layout.js';
import type { MetadataStore } from '../../src/storage/ports.js';
import type { TransactionCoordinator } from '../../src/transactions/index.js';
import { DurableTimers } from '../../src/timer/durable-timers.js';
import type { Topic } from '../../src/topics/topics.js';
import type { OffsetRecord } from '../../src/groups/offsets.js';
import { awsBackend, memoryBackend } from '../support/backends.js';
import { FaultyMetadataStore } from '../support/fault-injection.js';
import { coordinatorParts } from './support/coordinator.js';

const clock = { now: () => Date.now() };
const PARTITIONS = 40;
/** 120 offsets of 4 KB of metadata: about 490 KB, past DynamoDB's 400 KB item limit in format 1. */
const OFFSETS = 120;
const METADATA = 'm'.repeat(4096);

const parts = (storage: Storage, metadata: MetadataStore = storage.metadata, level = () => 8) =>
  coordinatorParts(storage, { metadata, clock, featureLevel: level });

/** A transactional append of one record, as a produce does it (the coordinator's check first). */
async function produce(
  p: { log: PartitionLog; txns: TransactionCoordinator },
  id: string,
  producer: { producerId: number; producerEpoch: number },
  topic: Topic,
  partition: number,
) {
  await p.txns.verifyProduce(id, producer, [{ topic: topic.name, partition }]);
  const out = (
    await p.log.append(
      topic,
      [{ partition, records: [{ key: null, value: Buffer.from('v'), headers: [], timestamp: 1 }] }],
      { producer: { ...producer, baseSequences: new Map([[partition, 0]]), transactional: true } },
    )
  ).get(partition)!;
  if (!out.ok) throw out.error;
}

/** How many of the topic's partitions have a transaction open. */
const openTxns = async (log: PartitionLog, topic: Topic) =>
  (await Promise.all(Array.from({ length: topic.partitionCount }, (_, i) => log.state(topic, i)))).filter(
    (s) => Object.keys(s.openTxns ?? {}).length > 0,
  ).length;

/** The group's committed offsets as stored. */
const committed = async (metadata: MetadataStore, groupId: string) =>
  (await metadata.query<OffsetRecord>(groupPk(groupId), { beginsWith: OFFSET_PREFIX })).map((i) => i.value);

describe.each([memoryBackend, awsBackend])('a transaction past one item on $name', (backend) => {
  let storage: Storage;
  let stop: () => Promise<void>;
  beforeAll(async () => {
    ({ storage, stop } = await backend.start());
  });
  afterAll(() => stop());

  it(`${PARTITIONS} partitions and ${OFFSETS} offsets of 4 KB metadata commit; the state item stays small`, async () => {
    const p = parts(storage);
    const wide = await p.topics.create({ name: 'wide', partitionCount: PARTITIONS, replicationFactor: 1 });
    await p.topics.create({ name: 'input', partitionCount: OFFSETS, replicationFactor: 1 });
    const producer = await p.txns.init('big', 60_000);
    for (let i = 0; i < PARTITIONS; i++) await produce(p, 'big', producer, wide, i);
    for (const half of [0, 1])
      await p.txns.commitOffsets(
        'big',
        producer,
        'consumers',
        Array.from({ length: OFFSETS / 2 }, (_, i) => ({
          topic: 'input',
          partition: half * (OFFSETS / 2) + i,
          offset: 7,
          metadata: METADATA,
        })),
      );
    const open = await p.txns.describe('big');
    expect(open).toMatchObject({ state: 'Ongoing', groups: ['consumers'] });
    expect(open.partitions).toHaveLength(PARTITIONS);
    expect(open.offsets).toHaveLength(OFFSETS);
    expect(await p.txns.unstableOffsets('consumers')).toHaveProperty('size', OFFSETS);
    const state = await storage.metadata.get(txnPk('big'), TXN_STATE_SK);
    expect(JSON.stringify(state!.value).length).toBeLessThan(400);
    expect(await openTxns(p.log, wide)).toBe(PARTITIONS);

    expect(await p.txns.end('big', producer, true)).toMatchObject({ state: 'CompleteCommit', partitions: [] });
    expect(await openTxns(p.log, wide)).toBe(0);
    const offsets = await committed(storage.metadata, 'consumers');
    expect(offsets).toHaveLength(OFFSETS);
    expect(offsets.every((o) => o.offset === 7 && o.metadata === METADATA)).toBe(true);
    expect(await p.txns.unstableOffsets('consumers')).toHaveProperty('size', 0);
    // The entries (more than an end deletes itself) go with the maintenance function's next tick:
    // then only the state item is left.
    expect((await storage.metadata.query(txnPk('big'))).length).toBe(1 + PARTITIONS + OFFSETS);
    await new DurableTimers(storage.metadata).fireDue(Date.now(), p.txns.timerHandlers(), { checkpoint: false });
    expect((await storage.metadata.query(txnPk('big'))).map((i) => i.sk)).toEqual([TXN_STATE_SK]);
  }, 120_000);
});

describe('format 1 and 2 side by side (memory)', () => {
  it('below level 8 the lists stay in the state item; a transaction open in format 1 ends in it; the next is format 2', async () => {
    const storage = memoryBackend.start();
    const { storage: s } = await storage;
    let level = 7;
    const p = parts(s, s.metadata, () => level);
    const t = await p.topics.create({ name: 't', partitionCount: 3, replicationFactor: 1 });
    await p.topics.create({ name: 'in', partitionCount: 1, replicationFactor: 1 });
    const producer = await p.txns.init('old', 60_000);
    await produce(p, 'old', producer, t, 0);
    await p.txns.commitOffsets('old', producer, 'g', [{ topic: 'in', partition: 0, offset: 3, metadata: '' }]);
    const stateItem = () => s.metadata.get<Record<string, unknown>>(txnPk('old'), TXN_STATE_SK);
    expect((await stateItem())!.value).toMatchObject({ partitions: [{ topic: 't', partition: 0 }], groups: ['g'] });
    expect((await stateItem())!.value.fv).toBeUndefined();

    level = 8; // raised with the transaction open: it goes on in format 1
    await produce(p, 'old', producer, t, 1);
    expect((await stateItem())!.value).toMatchObject({ partitions: [{ partition: 0 }, { partition: 1 }] });
    expect((await p.txns.end('old', producer, true)).state).toBe('CompleteCommit');
    expect(await openTxns(p.log, t)).toBe(0);
    expect((await committed(s.metadata, 'g')).map((o) => o.offset)).toEqual([3]);

    await produce(p, 'old', producer, t, 2);
    const next = (await stateItem())!.value;
    expect(next).toMatchObject({ fv: 2, state: 'Ongoing' });
    expect(next.partitions).toBeUndefined();
    expect((await p.txns.describe('old')).partitions).toEqual([{ topic: 't', partition: 2 }]);
    // A process still at level 7 (its cache not refreshed) keeps a format 2 item in format 2.
    level = 7;
    await produce(p, 'old', producer, t, 0);
    expect((await stateItem())!.value.fv).toBe(2);
    expect((await p.txns.describe('old')).partitions).toHaveLength(2);
    expect((await p.txns.end('old', producer, false)).state).toBe('CompleteAbort');
    expect(await openTxns(p.log, t)).toBe(0);
  });
});

describe('joins that die or race an end (memory)', () => {
  async function setup() {
    const { storage } = await memoryBackend.start();
    const metadata = new FaultyMetadataStore(storage.metadata);
    const p = parts(storage, metadata);
    const t = await p.topics.create({ name: 't', partitionCount: 4, replicationFactor: 1 });
    const producer = await p.txns.init('x', 60_000);
    return { storage, metadata, p, t, producer };
  }
  const entryOf = (partition: number) => (k: string) => k === `${txnPk('x')}|${txnPartitionSk('t', partition)}`;

  it('an entry whose writer died before its confirming read is tidied by the end; a marker for it writes nothing', async () => {
    const { storage, metadata, p, t, producer } = await setup();
    await produce(p, 'x', producer, t, 0);
    // The join of partition 1 dies right after its entry is written (its confirming read fails): no answer, no produce.
    const held = metadata.faults.gate('put', entryOf(1));
    const dead = p.txns.addPartitions('x', producer, [{ topic: 't', partition: 1 }]);
    await held.reached;
    metadata.faults.fail('get', { match: (k) => k === `${txnPk('x')}|${TXN_STATE_SK}` });
    held.release();
    await expect(dead).rejects.toThrow(/injected/);
    metadata.faults.clear();
    expect(await p.txns.end('x', producer, true)).toMatchObject({ state: 'CompleteCommit' });
    expect(await openTxns(p.log, t)).toBe(0);
    expect((await p.log.state(t, 1)).highWatermark).toBe(0); // no marker: it had no open transaction
    expect((await storage.metadata.query(txnPk('x'))).map((i) => i.sk)).toEqual([TXN_STATE_SK]);
  });

  it('a join whose entry lands after the end read the entries is not answered joined to the ended transaction', async () => {
    const { metadata, p, t, producer } = await setup();
    await produce(p, 'x', producer, t, 0);
    // The join of partition 2 is held just before its entry is written; the commit runs meanwhile.
    const held = metadata.faults.gate('put', entryOf(2));
    const join = p.txns.addPartitions('x', producer, [{ topic: 't', partition: 2 }]);
    await held.reached;
    expect(await p.txns.end('x', producer, true)).toMatchObject({ state: 'CompleteCommit' });
    held.release();
    await join;
    // Its confirming read found the transaction ended: the partition joined the next one instead.
    expect(await p.txns.describe('x')).toMatchObject({ state: 'Ongoing', partitions: [{ topic: 't', partition: 2 }] });
    await produce(p, 'x', producer, t, 2);
    expect(await p.txns.end('x', producer, false)).toMatchObject({ state: 'CompleteAbort' });
    expect(await openTxns(p.log, t)).toBe(0);
  });

  it('a join held while the end prepares answers CONCURRENT_TRANSACTIONS', async () => {
    const { metadata, p, t, producer } = await setup();
    await produce(p, 'x', producer, t, 0);
    const held = metadata.faults.gate('put', entryOf(3));
    const join = p.txns.addPartitions('x', producer, [{ topic: 't', partition: 3 }]);
    await held.reached;
    // The end stops after Prepare (its first marker write fails): the transaction is completing.
    metadata.faults.fail('put', { match: (k) => k.startsWith('part#t#0|') });
    await expect(p.txns.end('x', producer, true)).rejects.toThrow(/injected/);
    held.release();
    await expect(join).rejects.toMatchObject({ errorName: 'CONCURRENT_TRANSACTIONS' });
    expect((await p.txns.describe('x')).state).toBe('PrepareCommit');
    // The next request for the id finishes it (partition 3's entry, found or not, had nothing open).
    expect(await p.txns.end('x', producer, true)).toMatchObject({ state: 'CompleteCommit' });
    expect(await openTxns(p.log, t)).toBe(0);
  });

  it('an id expired with entries left deletes them first; made again, it starts clean', async () => {
    const { storage } = await memoryBackend.start();
    let now = Date.now();
    const { topics, log, txns } = coordinatorParts(storage, {
      clock: { now: () => now },
      config: { idExpirationMs: 60_000 },
    });
    const t = await topics.create({ name: 't', partitionCount: 4, replicationFactor: 1 });
    const producer = await txns.init('x', 10_000);
    await produce({ log, txns }, 'x', producer, t, 0);
    expect((await txns.end('x', producer, true)).state).toBe('CompleteCommit');
    // An entry a writer that died long ago left, in the transaction that just ended.
    const seq = (await storage.metadata.get<{ seq: number }>(txnPk('x'), TXN_STATE_SK))!.value.seq;
    await storage.metadata.put(txnPk('x'), txnPartitionSk('t', 3), { seq, topic: 't', partition: 3 });
    now += 61_000;
    await txns.onIdExpiry({ payload: { transactionalId: 'x' } } as Parameters<TransactionCoordinator['onIdExpiry']>[0]);
    expect(await storage.metadata.query(txnPk('x'))).toEqual([]);
    const again = await txns.init('x', 10_000);
    await txns.addPartitions('x', again, [{ topic: 't', partition: 1 }]);
    expect((await txns.describe('x')).partitions).toEqual([{ topic: 't', partition: 1 }]);
  });
});
