/**
 * acks=all is answered only when the high watermark covers the records. Found by the fault suite
 * (docs/faults.md): an acks=1 follower copy lost with its process left an in-sync follower with a
 * hole, later acks=all appends did not advance it, the HW stood still, and they were acknowledged.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createStorage, type Storage } from '../../src/compose.js';
import { FaultyMetadataStore, FaultyObjectStore } from '../support/fault-injection.js';
import { testApp } from '../support/test-app.js';

/** A store whose next put waits until released: a copy whose process stopped before it. */
class HeldStore extends FaultyObjectStore {
  private held: Promise<void> | undefined;
  release: () => void = () => {};
  /** Resolves once the held put has started. */
  reached: Promise<void> = Promise.resolve();
  private arrive: () => void = () => {};
  holdNextPut(): void {
    this.held = new Promise((r) => (this.release = r));
    this.reached = new Promise((r) => (this.arrive = r));
  }
  override async put(key: string, body: Uint8Array): Promise<void> {
    const held = this.held;
    this.held = undefined;
    if (held) {
      this.arrive();
      await held;
    }
    return super.put(key, body);
  }
}

describe('acks=all and the high watermark', () => {
  let release = () => {};
  afterEach(() => release());

  it('catches an in-sync follower with a hole up before answering, so the HW covers what was acknowledged', async () => {
    const inner = createStorage({ kind: 'memory', replicaStores: 2 });
    const stores = inner.stores.map((s) => new HeldStore(s));
    const storage: Storage = { metadata: new FaultyMetadataStore(inner.metadata), stores, close: () => {} };
    const { call, services } = testApp({ storage });
    release = () => stores[1]!.release();
    await call('POST', 'topics', { topic_name: 't', partitions_count: 1, replication_factor: 2 });
    const batch = (tag: string) => ({
      entries: Array.from({ length: 10 }, (_, i) => ({
        id: `${tag}${i}`,
        partition_id: 0,
        value: { type: 'STRING', data: `${tag}${i}` },
      })),
    });

    stores[1]!.holdNextPut(); // the acks=1 copy to the follower never happens (yet)
    expect((await call('POST', 'topics/t/records:batch?acks=1', batch('a'))).body.failures).toEqual([]);
    await stores[1]!.reached;
    const acked = await call('POST', 'topics/t/records:batch?acks=all', batch('b'));
    expect(acked.body.failures).toEqual([]);
    expect(acked.body.successes.map((s: { offset: number }) => s.offset)).toEqual([
      10, 11, 12, 13, 14, 15, 16, 17, 18, 19,
    ]);
    const state = (await call('GET', 'topics/t/partitions/0')).body;
    expect(state).toMatchObject({ isr: [0, 1], high_watermark: 20 });
    expect(state.replica_log_end_offsets).toEqual([
      { replica_id: 0, log_end_offset: 20 },
      { replica_id: 1, log_end_offset: 20 },
    ]);
    release();
    await services.log.idle();
  });

  it('answers REQUEST_TIMED_OUT, not success, when the follower cannot be caught up and is still in sync', async () => {
    const inner = createStorage({ kind: 'memory', replicaStores: 2 });
    const stores = inner.stores.map((s) => new HeldStore(s));
    const storage: Storage = { metadata: new FaultyMetadataStore(inner.metadata), stores, close: () => {} };
    const { call, services } = testApp({ storage });
    release = () => stores[1]!.release();
    await call('POST', 'topics', { topic_name: 't', partitions_count: 1, replication_factor: 2 });
    const batch = (tag: string) => ({ entries: [{ id: tag, partition_id: 0, value: { type: 'STRING', data: tag } }] });
    // The follower is in sync and caught up a moment ago (so not lagging by replica.lag.time.max.ms).
    expect((await call('POST', 'topics/t/records:batch?acks=all', batch('w'))).body.failures).toEqual([]);

    stores[1]!.holdNextPut();
    await call('POST', 'topics/t/records:batch?acks=1', batch('a'));
    await stores[1]!.reached;
    // The catch-up copy fails too: the follower's store is up, but refuses to take the object it misses.
    stores[1]!.faults.fail('head', { times: 10, match: (key) => key.startsWith('data/') });
    const r = await call('POST', 'topics/t/records:batch?acks=all', batch('b'));
    expect(r.body.successes).toEqual([]);
    expect(r.body.failures[0]).toMatchObject({ error: 'REQUEST_TIMED_OUT' });
    expect((await call('GET', 'topics/t/partitions/0')).body).toMatchObject({ isr: [0, 1], high_watermark: 1 });
    release();
    await services.log.idle();
  });
});
