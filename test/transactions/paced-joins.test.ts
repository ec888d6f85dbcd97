/**
 * A transaction's entries share its id's DynamoDB partition key (`txn#{id}`), which takes 1,000
 * write units a second. TxnOffsetCommits of many offsets with large metadata (4 KB, Kafka's most:
 * 5 units each) wrote ~5,000 units a second there, throttled; their writes are paced on the key
 * (transaction-items.ts), and the transaction still commits every offset, and still fences.
 *
 * Time is simulated: a sleep waits for the test's clock, which moves to the earliest sleeper once
 * nothing else can run, so the figures are the pace itself, not this machine's speed.
 */
import { describe, expect, it } from 'vitest';
import type { Storage } from '../../src/compose.js';
import { groupPk, offsetSk, txnPk } from '../../src/storage/key-layout.js';
import type { MetadataStore, MetaItem, QueryOptions } from '../../src/storage/ports.js';
import { JOIN_WRITE_BURST, JOIN_WRITE_RATE, writeUnitsOf } from '../../src/transactions/transaction-items.js';
import { memoryBackend } from '../support/backends.js';
import { coordinatorParts } from './support/coordinator.js';

/** Simulated time: sleepers woken in time order once the event loop is idle. */
class SimulatedTime {
  t = Date.UTC(2026, 0, 1);
  private sleepers: { at: number; wake: () => void }[] = [];
  now = () => this.t;
  sleep = (ms: number) => new Promise<void>((wake) => this.sleepers.push({ at: this.t + ms, wake }));
  async run<T>(work: Promise<T>): Promise<T> {
    let settled = false;
    const done = work.finally(() => {
      settled = true;
    });
    done.catch(() => {}); // answered below, once settled
    while (!settled) {
      for (let i = 0; i < 3; i++) await new Promise((r) => setImmediate(r));
      if (settled || this.sleepers.length === 0) continue;
      this.sleepers.sort((a, b) => a.at - b.at);
      const next = this.sleepers.shift()!;
      this.t = Math.max(this.t, next.at);
      next.wake();
    }
    return done;
  }
}

/** The store, adding up each partition key's write units per second of the simulated clock. */
class WriteUnitsPerKey implements MetadataStore {
  readonly perSecond = new Map<string, Map<number, number>>();
  constructor(
    private readonly inner: MetadataStore,
    private readonly time: SimulatedTime,
  ) {}
  peak(pk: string): number {
    return Math.max(0, ...(this.perSecond.get(pk)?.values() ?? []));
  }
  get<T>(pk: string, sk: string): Promise<MetaItem<T> | undefined> {
    return this.inner.get<T>(pk, sk);
  }
  query<T>(pk: string, options?: QueryOptions): Promise<MetaItem<T>[]> {
    return this.inner.query<T>(pk, options);
  }
  put<T>(...args: Parameters<MetadataStore['put']>): Promise<MetaItem<T>> {
    const [pk, sk, value] = args;
    const seconds = this.perSecond.get(pk) ?? new Map<number, number>();
    this.perSecond.set(pk, seconds);
    const second = Math.floor(this.time.now() / 1000);
    seconds.set(second, (seconds.get(second) ?? 0) + writeUnitsOf(pk, sk, value));
    return this.inner.put(...args) as Promise<MetaItem<T>>;
  }
  delete(pk: string, sk: string, condition?: { ifVersion: number }): Promise<void> {
    return this.inner.delete(pk, sk, condition);
  }
}

const OFFSETS_PER_COMMIT = 100;
const COMMITS = 10;
const METADATA = 'm'.repeat(4096);

describe('TxnOffsetCommit writes paced on the transaction key (memory)', () => {
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
    expect(metadata.peak(txnPk('x'))).toBeLessThanOrEqual(JOIN_WRITE_RATE + JOIN_WRITE_BURST + 10);
    expect(metadata.peak(txnPk('x'))).toBeLessThan(1000);
    // Each commit's 100 entries of 5 units are paced past its first JOIN_WRITE_BURST: 1 s each.
    const entryUnits = 5 * OFFSETS_PER_COMMIT;
    expect(time.now() - started).toBeGreaterThanOrEqual(
      (COMMITS * (entryUnits - JOIN_WRITE_BURST) * 1000) / JOIN_WRITE_RATE,
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
        expect(await txns.end('y', producer, true)).toMatchObject({ state: 'CompleteCommit' });
      })(),
    );
    const committed = await storage.metadata.query<{ offset: number }>(groupPk('consumers'), {
      beginsWith: offsetSk('input', 0).slice(0, -1),
    });
    expect(committed).toHaveLength(300);
    expect(committed.map((i) => i.value.offset).sort((a, b) => a - b)).toEqual(
      Array.from({ length: 300 }, (_, i) => 1000 + i),
    );
  });
});
