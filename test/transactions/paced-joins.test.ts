/**
 * A transaction's entries share its id's DynamoDB partition key (`txn#{id}`), which takes 1,000
 * write units a second. TxnOffsetCommits of many offsets with large metadata (4 KB, Kafka's most:
 * 5 units each) wrote ~5,000 units a second there, throttled; their writes are paced on the key
 * (transaction-items.ts), and the transaction still commits every offset, and still fences. Its
 * end writes those offsets to the group's key, paced the same way (transaction-coordinator.ts,
 * `materialiseOffsets`); an end that dies part way is finished by the next try, which writes only
 * what the first did not.
 *
 * Time is simulated: a sleep waits for the test's clock, which moves to the earliest sleeper once
 * nothing else can run, so the figures are the pace itself, not this machine's speed.
 */
import { describe, expect, it } from 'vitest';
import type { Storage } from '../../src/compose.js';
import { groupPk, OFFSET_PREFIX, offsetSk, txnPk } from '../../src/storage/key-layout.js';
import { PACED_WRITE_BURST, PACED_WRITE_RATE } from '../../src/storage/write-pace.js';
import { memoryBackend } from '../support/backends.js';
import { SimulatedTime, WriteUnitsPerKey } from '../support/paced-writes.js';
import { coordinatorParts } from './support/coordinator.js';

/** The offsets committed to group `consumers` for topic `input`, in order. */
const committedOffsets = async (storage: Storage) =>
  (
    await storage.metadata.query<{ offset: number }>(groupPk('consumers'), {
      beginsWith: offsetSk('input', 0).slice(0, -1),
    })
  )
    .map((i) => i.value.offset)
    .sort((a, b) => a - b);

const OFFSETS_PER_COMMIT = 100;
const COMMITS = 10;
const METADATA = 'm'.repeat(4096);

describe('TxnOffsetCommit writes paced on the transaction key, and EndTxn on the group key (memory)', () => {
  it('ten commits of 100 offsets with 4 KB of metadata keep under 1,000 write units a second on the key, and all commit', async () => {
    const { storage } = (await memoryBackend.start()) as { storage: Storage };
    const time = new SimulatedTime();
    const metadata = new WriteUnitsPerKey(storage.metadata, time);
    const { topics, txns } = coordinatorParts(storage, { metadata, clock: { now: time.now }, sleep: time.sleep });
    await topics.create({ name: 'input', partitionCount: OFFSETS_PER_COMMIT * COMMITS, replicationFactor: 1 });
    const producer = await txns.init('x', 600_000);
    const started = time.now();
    await time.run(
      (async () => {
        for (let c = 0; c < COMMITS; c++) {
          const offsets = Array.from({ length: OFFSETS_PER_COMMIT }, (_, i) => ({
            topic: 'input',
            partition: c * OFFSETS_PER_COMMIT + i,
            offset: 42,
            metadata: METADATA,
          }));
          await txns.commitOffsets('x', producer, 'consumers', offsets);
        }
      })(),
    );
    const units = [...metadata.perSecond.get(txnPk('x'))!.values()].reduce((a, b) => a + b, 0);
    expect(units).toBeGreaterThanOrEqual(5 * OFFSETS_PER_COMMIT * COMMITS);
    expect(metadata.peak(txnPk('x'))).toBeLessThanOrEqual(PACED_WRITE_RATE + PACED_WRITE_BURST + 10);
    expect(metadata.peak(txnPk('x'))).toBeLessThan(1000);
    // Each commit's 100 entries of 5 units are paced past its first PACED_WRITE_BURST: 1 s each.
    const entryUnits = 5 * OFFSETS_PER_COMMIT;
    expect(time.now() - started).toBeGreaterThanOrEqual(
      (COMMITS * (entryUnits - PACED_WRITE_BURST) * 1000) / PACED_WRITE_RATE,
    );

    // Fencing holds: a producer with the old epoch is refused, and its offsets join nothing.
    const newer = await time.run(txns.init('x', 600_000));
    await expect(
      time.run(
        txns.commitOffsets('x', producer, 'consumers', [{ topic: 'input', partition: 0, offset: 7, metadata: '' }]),
      ),
    ).rejects.toMatchObject({ errorName: 'PRODUCER_FENCED' });
    expect(newer.producerEpoch).toBeGreaterThan(producer.producerEpoch);
  });

  it('a transaction whose offsets were paced commits every one of them to the group', async () => {
    const { storage } = (await memoryBackend.start()) as { storage: Storage };
    const time = new SimulatedTime();
    const metadata = new WriteUnitsPerKey(storage.metadata, time);
    const { topics, txns } = coordinatorParts(storage, { metadata, clock: { now: time.now }, sleep: time.sleep });
    await topics.create({ name: 'input', partitionCount: 300, replicationFactor: 1 });
    const producer = await txns.init('y', 600_000);
    await time.run(
      (async () => {
        for (let c = 0; c < 3; c++) {
          const offsets = Array.from({ length: 100 }, (_, i) => ({
            topic: 'input',
            partition: c * 100 + i,
            offset: 1000 + c * 100 + i,
            metadata: METADATA,
          }));
          await txns.commitOffsets('y', producer, 'consumers', offsets);
        }
        const ending = time.now();
        expect(await txns.end('y', producer, true)).toMatchObject({ state: 'CompleteCommit' });
        // 300 offsets of 5 units on the group's key, past the first PACED_WRITE_BURST: 3.5 s.
        expect(time.now() - ending).toBeGreaterThanOrEqual(((5 * 300 - PACED_WRITE_BURST) * 1000) / PACED_WRITE_RATE);
      })(),
    );
    expect(await committedOffsets(storage)).toEqual(Array.from({ length: 300 }, (_, i) => 1000 + i));
    // The end wrote them to the group's key under what it takes (they were 1,500 units at once).
    expect(metadata.peak(groupPk('consumers'))).toBeLessThanOrEqual(PACED_WRITE_RATE + PACED_WRITE_BURST + 10);
    expect(metadata.peak(groupPk('consumers'))).toBeLessThan(1000);
  });

  it('an end that dies part way through its paced offsets is finished by the next try, which writes only the rest', async () => {
    const { storage } = (await memoryBackend.start()) as { storage: Storage };
    const time = new SimulatedTime();
    const metadata = new WriteUnitsPerKey(storage.metadata, time);
    const { topics, coordinator, txns } = coordinatorParts(storage, {
      metadata,
      clock: { now: time.now },
      sleep: time.sleep,
    });
    await topics.create({ name: 'input', partitionCount: 300, replicationFactor: 1 });
    const producer = await txns.init('z', 600_000);
    await time.run(
      (async () => {
        for (let c = 0; c < 3; c++)
          await txns.commitOffsets(
            'z',
            producer,
            'consumers',
            Array.from({ length: 100 }, (_, i) => ({
              topic: 'input',
              partition: c * 100 + i,
              offset: 2000 + c * 100 + i,
              metadata: METADATA,
            })),
          );
      })(),
    );
    const offsetPuts = () =>
      metadata.puts.filter((p) => p.pk === groupPk('consumers') && p.sk.startsWith(OFFSET_PREFIX)).length;
    // The end's process dies after 120 of the offsets are written.
    metadata.refuse = (pk, sk) => pk === groupPk('consumers') && sk.startsWith(OFFSET_PREFIX) && offsetPuts() >= 120;
    await expect(time.run(txns.end('z', producer, true))).rejects.toThrow(/injected/);
    time.kill();
    expect(offsetPuts()).toBe(120);
    expect(await txns.describe('z')).toMatchObject({ state: 'PrepareCommit' });

    // The client's retry, in another process: the other 180, then Complete*.
    metadata.refuse = () => false;
    expect(await time.run(coordinator().end('z', producer, true))).toMatchObject({ state: 'CompleteCommit' });
    expect(offsetPuts()).toBe(300);
    expect(await committedOffsets(storage)).toEqual(Array.from({ length: 300 }, (_, i) => 2000 + i));
  });
});
