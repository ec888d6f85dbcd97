/**
 * Ending a transaction of many partitions (format 2): the end answers at Complete* with its entries
 * left, its state item says so (`tidyThrough`), and the maintenance function's tidy timer deletes
 * them a bounded page a firing, in batches of 25 at most in flight, paced at TIDY_RATE a second,
 * sparing the entries of the id's next transaction; a tidy that dies between batches is finished
 * by the timer's next firing. The id's expiry deletes its entries the same way.
 */
import { describe, expect, it } from 'vitest';
import type { Storage } from '../../src/compose.js';
import { TXN_STATE_SK, txnPartitionSk, txnPk } from '../../src/storage/key-layout.js';
import type { MetadataStore, MetaItem, QueryOptions } from '../../src/storage/ports.js';
import { DurableTimers } from '../../src/timer/durable-timers.js';
import { TXN_TIDY_KIND } from '../../src/transactions/index.js';
import {
  INLINE_TIDY,
  TIDY_PER_FIRING,
  TIDY_RATE,
  type TransactionCoordinator,
} from '../../src/transactions/transaction-coordinator.js';
import { memoryBackend } from '../support/backends.js';
import { coordinatorParts } from './support/coordinator.js';

/** More than a firing deletes: two firings. */
const PARTITIONS = TIDY_PER_FIRING + 200;

/** The store, counting the deletes in flight at once (their peak) and in all. */
class CountingDeletes implements MetadataStore {
  inFlight = 0;
  peak = 0;
  deletes = 0;
  constructor(private readonly inner: MetadataStore) {}
  get<T>(pk: string, sk: string): Promise<MetaItem<T> | undefined> {
    return this.inner.get<T>(pk, sk);
  }
  query<T>(pk: string, options?: QueryOptions): Promise<MetaItem<T>[]> {
    return this.inner.query<T>(pk, options);
  }
  put<T>(...args: Parameters<MetadataStore['put']>): Promise<MetaItem<T>> {
    return this.inner.put(...args) as Promise<MetaItem<T>>;
  }
  async delete(pk: string, sk: string, condition?: { ifVersion: number }): Promise<void> {
    this.deletes++;
    this.peak = Math.max(this.peak, ++this.inFlight);
    try {
      await this.inner.delete(pk, sk, condition);
    } finally {
      this.inFlight--;
    }
  }
}

async function setup() {
  const { storage } = (await memoryBackend.start()) as { storage: Storage };
  const metadata = new CountingDeletes(storage.metadata);
  let now = Date.now();
  const clock = { now: () => now };
  /** What each tidy asked to wait (the clock stands still: each wait is the whole pace so far). */
  const waits: number[] = [];
  let dieAtWait: number | undefined;
  const sleep = async (ms: number) => {
    waits.push(ms);
    if (waits.length === dieAtWait) throw new Error('the process died between two batches');
  };
  const { topics, coordinator } = coordinatorParts(storage, {
    metadata,
    clock,
    sleep,
    config: { idExpirationMs: 3_600_000 },
  });
  const timers = new DurableTimers(metadata);
  const t = await topics.create({ name: 't', partitionCount: PARTITIONS, replicationFactor: 1 });
  return {
    storage,
    metadata,
    t,
    waits,
    coordinator,
    /** The process dies at the n-th wait from now (a join's paced entries wait too: those before are not counted). */
    dieAt: (n: number | undefined) => {
      waits.length = 0;
      dieAtWait = n;
    },
    advance: (ms: number) => {
      now += ms;
    },
    /** One scheduler tick's timers, as the maintenance function fires them. */
    tick: (txns: TransactionCoordinator) => timers.fireDue(now, txns.timerHandlers(), { checkpoint: false }),
    entries: async () => (await storage.metadata.query(txnPk('x'))).filter((i) => i.sk !== TXN_STATE_SK),
    state: async () =>
      (await storage.metadata.get<{ seq: number; state: string; tidyThrough?: number }>(txnPk('x'), TXN_STATE_SK))!
        .value,
  };
}

describe('ending a transaction of many partitions (memory)', () => {
  it('the end answers at Complete* and leaves its entries to the tidy timer, which deletes them paced, a page a firing', async () => {
    const w = await setup();
    const txns = w.coordinator();
    // A timeout past the ticks below: the next transaction stays open across them.
    const producer = await txns.init('x', 600_000);
    const all = Array.from({ length: PARTITIONS }, (_, partition) => ({ topic: 't', partition }));
    for (let i = 0; i < all.length; i += 100) await txns.addPartitions('x', producer, all.slice(i, i + 100));
    const deletesBefore = w.metadata.deletes;
    expect(await txns.end('x', producer, true)).toMatchObject({ state: 'CompleteCommit', partitions: [] });
    // The end deleted nothing; its state item says what is left.
    expect(w.metadata.deletes).toBe(deletesBefore);
    const ended = await w.state();
    expect(ended).toMatchObject({ state: 'CompleteCommit', tidyThrough: ended.seq });
    expect(await w.entries()).toHaveLength(PARTITIONS);

    // The next transaction starts before the tidy: it keeps `tidyThrough`, and its entry (written
    // over one of the ended transaction's) is not deleted.
    await txns.addPartitions('x', producer, [{ topic: 't', partition: 5 }]);
    expect(await w.state()).toMatchObject({ state: 'Ongoing', seq: ended.seq + 1, tidyThrough: ended.seq });

    const first = await w.tick(txns);
    expect(first.byKind[TXN_TIDY_KIND]).toBe(1);
    // One page of 1,000 entries read: those of the ended transaction deleted (the next one's kept).
    const deleted = PARTITIONS - (await w.entries()).length;
    expect(deleted).toBeGreaterThanOrEqual(TIDY_PER_FIRING - 1);
    expect(deleted).toBeLessThanOrEqual(TIDY_PER_FIRING);
    // 25 deletes in flight at most, paced: after each batch the firing waited until its deletes
    // so far took 1 s per TIDY_RATE (the clock stands still, so each wait is the whole pace).
    expect(w.metadata.peak).toBeLessThanOrEqual(25);
    expect(w.waits).toHaveLength(Math.ceil(deleted / 25));
    expect(w.waits.at(-1)).toBe((deleted * 1000) / TIDY_RATE);
    expect((await w.state()).tidyThrough).toBe(ended.seq);

    w.advance(60_000); // the next tick: the rest, then the state forgets it
    const second = await w.tick(txns);
    expect(second.byKind[TXN_TIDY_KIND]).toBe(1);
    expect((await w.entries()).map((i) => i.sk)).toEqual([txnPartitionSk('t', 5)]);
    expect(await w.state()).not.toHaveProperty('tidyThrough');
    expect(await txns.describe('x')).toMatchObject({ state: 'Ongoing', partitions: [{ topic: 't', partition: 5 }] });
    w.advance(60_000);
    expect((await w.tick(txns)).byKind[TXN_TIDY_KIND]).toBeUndefined(); // no timer left
  });

  it('a tidy that dies between two batches is finished by the next firing, in another process', async () => {
    const w = await setup();
    const txns = w.coordinator();
    const producer = await txns.init('x', 60_000);
    const all = Array.from({ length: INLINE_TIDY + 50 }, (_, partition) => ({ topic: 't', partition }));
    await txns.addPartitions('x', producer, all);
    await txns.end('x', producer, false);
    w.dieAt(3); // after the third batch's deletes
    const died = await w.tick(txns);
    expect(died.failed).toBe(1);
    expect(await w.entries()).toHaveLength(all.length - 3 * 25);
    expect((await w.state()).tidyThrough).toBeDefined();

    w.dieAt(undefined);
    w.advance(10 * 60_000); // past the failed timer's back-off
    const again = await w.tick(w.coordinator());
    expect(again).toMatchObject({ failed: 0, byKind: { [TXN_TIDY_KIND]: 1 } });
    expect(await w.entries()).toEqual([]);
    expect(await w.state()).not.toHaveProperty('tidyThrough');
  });

  it('a tidy timer fired while the end still writes its markers waits for the Complete*', async () => {
    const w = await setup();
    const txns = w.coordinator();
    const producer = await txns.init('x', 60_000);
    await txns.addPartitions(
      'x',
      producer,
      Array.from({ length: INLINE_TIDY + 1 }, (_, partition) => ({ topic: 't', partition })),
    );
    const { seq } = await w.state();
    // The end's timer, fired as if the scheduler ran while the end was between Prepare* and Complete*.
    await w.metadata.put(txnPk('x'), TXN_STATE_SK, { ...(await w.state()), state: 'PrepareCommit' });
    await txns.onTidy({ kind: TXN_TIDY_KIND, id: 'x', expiry: 0, payload: { transactionalId: 'x', through: seq } });
    expect(await w.entries()).toHaveLength(INLINE_TIDY + 1);
    // The end completes (the retried EndTxn finishes the Prepare*): the timers delete the entries.
    expect((await txns.end('x', producer, true)).state).toBe('CompleteCommit');
    w.advance(60_000);
    await w.tick(txns);
    expect(await w.entries()).toEqual([]);
  });

  it('an expired id with many entries deletes them a page a firing before it goes', async () => {
    const w = await setup();
    const txns = w.coordinator();
    const producer = await txns.init('x', 60_000);
    const all = Array.from({ length: PARTITIONS }, (_, partition) => ({ topic: 't', partition }));
    for (let i = 0; i < all.length; i += 100) await txns.addPartitions('x', producer, all.slice(i, i + 100));
    await txns.end('x', producer, true);
    const expiry = { kind: 'txn-id-expiry', id: 'x', expiry: 0, payload: { transactionalId: 'x' } };
    w.advance(3_601_000);
    await txns.onIdExpiry(expiry);
    expect(await w.entries()).toHaveLength(PARTITIONS - TIDY_PER_FIRING);
    expect(await w.state()).toBeDefined(); // comes back for the rest
    expect(w.metadata.peak).toBeLessThanOrEqual(25);
    await txns.onIdExpiry(expiry);
    expect(await w.storage.metadata.query(txnPk('x'))).toEqual([]);
  });
});
