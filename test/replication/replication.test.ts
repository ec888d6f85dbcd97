import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createStorage, type Storage } from '../../src/compose.js';
import { isKafkaError } from '../../src/wire/errors.js';
import { commitToShard } from '../../src/partition/shard-commit.js';
import { updatePartitionState } from '../../src/partition/shard-state.js';
import { FaultyMetadataStore, FaultyObjectStore } from '../support/fault-injection.js';
import { testApp } from '../support/test-app.js';

/** Three replica stores (and the metadata store) behind fault injection, served over HTTP. */
function cluster(options: { clock?: { now(): number }; env?: Record<string, string> } = {}) {
  const inner = createStorage({ kind: 'memory', replicaStores: 3 });
  const stores = inner.stores.map((s) => new FaultyObjectStore(s));
  const metadata = new FaultyMetadataStore(inner.metadata);
  const storage: Storage = { metadata, stores, close: () => {} };
  const app = testApp({
    storage,
    ...(options.clock ? { clock: options.clock } : {}),
    ...(options.env ? { env: options.env } : {}),
  });
  return { ...app, stores, metadata };
}

const entries = (n: number, tag: string, partition = 0) =>
  Array.from({ length: n }, (_, i) => ({
    id: `${tag}-${i}`,
    partition_id: partition,
    value: { type: 'STRING', data: `${tag}-${i}` },
  }));

describe('replication over storage replicas', () => {
  let c: ReturnType<typeof cluster>;
  beforeEach(() => {
    c = cluster();
  });
  afterEach(() => c.services.log.idle());

  const describePartition = async (topic: string, p = 0) =>
    (await c.call('GET', `topics/${topic}/partitions/${p}`)).body;
  const produce = (topic: string, body: unknown, acks = 'all') =>
    c.call('POST', `topics/${topic}/records:batch?acks=${acks}`, body);

  it('rejects a replication factor above the number of stores', async () => {
    const res = await c.call('POST', 'topics', { topic_name: 'rf4', partitions_count: 1, replication_factor: 4 });
    expect(res).toMatchObject({ status: 400, body: { error: 'INVALID_REPLICATION_FACTOR' } });
  });

  it('places replica j of partition i on store (i + j) mod n', async () => {
    await c.call('POST', 'topics', { topic_name: 'placed', partitions_count: 3, replication_factor: 2 });
    const parts = (await c.call('GET', 'topics/placed/partitions')).body.data.map(
      (p: { replica_ids: number[]; leader_id: number }) => [p.leader_id, p.replica_ids],
    );
    expect(parts).toEqual([
      [0, [0, 1]],
      [1, [1, 2]],
      [2, [2, 0]],
    ]);
  });

  it('RF=3, min.insync=2, acks=all: one store down shrinks the ISR, two stop writes, reads go on, recovery grows the ISR', async () => {
    await c.call('POST', 'topics', {
      topic_name: 'seed',
      partitions_count: 1,
      replication_factor: 3,
      configs: [{ name: 'min.insync.replicas', value: '2' }],
    });
    let ok = 0;
    for (let i = 0; i < 5; i++) {
      const r = await produce('seed', { entries: entries(10, `a${i}`) });
      ok += r.body.successes.length;
    }
    expect(await describePartition('seed')).toMatchObject({ isr: [0, 1, 2], high_watermark: 50, leader_id: 0 });

    // First failure: a follower's store. Writes keep going; the ISR shrinks; the HW keeps rising.
    c.stores[2]!.faults.down = true;
    for (let i = 0; i < 5; i++) {
      const r = await produce('seed', { entries: entries(10, `b${i}`) });
      expect(r.body.failures).toEqual([]);
      ok += r.body.successes.length;
    }
    const afterFirst = await describePartition('seed');
    expect(afterFirst).toMatchObject({ isr: [0, 1], high_watermark: 100 });
    expect(afterFirst.replica_log_end_offsets).toEqual([
      { replica_id: 0, log_end_offset: 100 },
      { replica_id: 1, log_end_offset: 100 },
      { replica_id: 2, log_end_offset: 50 },
    ]);

    // Second failure: |ISR| would fall below min.insync.replicas. Writes fail, nothing is appended.
    c.stores[1]!.faults.down = true;
    const first = await produce('seed', { entries: entries(10, 'c0') });
    expect(first.body.failures[0]).toMatchObject({ error: 'NOT_ENOUGH_REPLICAS_AFTER_APPEND' }); // leader took it, follower 1 did not
    ok += 10; // appended, as Kafka does; the producer was told it may be under-replicated
    const refused = await produce('seed', { entries: entries(10, 'c1') });
    expect(refused.body.successes).toEqual([]);
    expect(refused.body.failures[0]).toMatchObject({ error_code: 50304, error: 'NOT_ENOUGH_REPLICAS' });
    expect(await describePartition('seed')).toMatchObject({ isr: [0], high_watermark: 110, log_end_offset: 110 });

    // Reads still work from the leader.
    const read = await c.call('GET', 'topics/seed/partitions/0/records?offset=0&format=string');
    expect(read.status).toBe(200);
    expect(read.body.records[0].value.data).toBe('a0-0');

    // The stores come back: the catch-up step copies what they miss and they rejoin the ISR.
    c.stores[1]!.faults.down = false;
    c.stores[2]!.faults.down = false;
    const sync = await c.call('POST', 'topics/seed/replicas:sync');
    expect(sync.body.partitions[0].added_to_isr.sort()).toEqual([1, 2]);
    expect(await describePartition('seed')).toMatchObject({ isr: [0, 1, 2], high_watermark: 110 });
    const again = await produce('seed', { entries: entries(10, 'd0') });
    expect(again.body.successes).toHaveLength(10);
    expect(await describePartition('seed')).toMatchObject({ high_watermark: 120 });

    // The follower stores really hold the data: read with the leader's store down.
    c.stores[0]!.faults.down = true;
    const fromFollower = await c.call('GET', 'topics/seed/partitions/0/records?offset=100&format=string');
    expect(fromFollower.body.records.map((r: { value: { data: string } }) => r.value.data)[0]).toBe('c0-0');
    expect(ok).toBe(110);
  });

  it('acks=1 answers once the leader has it; followers are copied after and then the HW advances', async () => {
    await c.call('POST', 'topics', { topic_name: 'one', partitions_count: 1, replication_factor: 3 });
    c.stores[1]!.faults.delayMs = 30;
    const r = await produce('one', { entries: entries(5, 'x') }, '1');
    expect(r.body.successes).toHaveLength(5);
    expect(await describePartition('one')).toMatchObject({ high_watermark: 0, log_end_offset: 5 });
    expect((await c.call('GET', 'topics/one/partitions/0/records?offset=0')).body.records).toEqual([]); // nothing above the HW
    await c.services.log.idle();
    expect(await describePartition('one')).toMatchObject({ high_watermark: 5, isr: [0, 1, 2] });
  });

  it('acks=0 answers before anything is durable, with offset -1', async () => {
    await c.call('POST', 'topics', { topic_name: 'zero', partitions_count: 1 });
    const r = await produce('zero', { entries: entries(3, 'z') }, '0');
    expect(r.body.successes.map((s: { offset: number }) => s.offset)).toEqual([-1, -1, -1]);
    await c.services.log.idle();
    expect(await describePartition('zero')).toMatchObject({ high_watermark: 3 });
    expect(await produce('zero', { entries: entries(1, 'q') }, '2')).toMatchObject({
      status: 400,
      body: { error: 'INVALID_REQUIRED_ACKS' },
    });
  });

  it('elects a new leader when the leader store fails, bumps the epoch and fences the old epoch; the old leader comes back truncated', async () => {
    await c.call('POST', 'topics', { topic_name: 'elect', partitions_count: 1, replication_factor: 3 });
    await produce('elect', { entries: entries(10, 'e0') });
    // acks=1 writes to the leader only: these 5 reach store 0 and nobody else while followers are slow.
    c.stores[1]!.faults.fail('put', { times: 1 });
    c.stores[2]!.faults.fail('put', { times: 1 });
    await produce('elect', { entries: entries(5, 'e1') }, '1');
    await c.services.log.idle();
    expect(await describePartition('elect')).toMatchObject({ isr: [0], high_watermark: 15, log_end_offset: 15 });
    await c.call('POST', 'topics/elect/replicas:sync');
    expect(await describePartition('elect')).toMatchObject({ isr: [0, 1, 2] });

    c.stores[0]!.faults.down = true;
    const r = await produce('elect', { entries: entries(5, 'e2') });
    expect(r.body.failures).toEqual([]);
    const after = await describePartition('elect');
    expect(after).toMatchObject({ leader_id: 1, leader_epoch: 1, isr: [1, 2], high_watermark: 20 });

    // A writer still holding epoch 0 is fenced.
    const topic = await c.services.topics.get('elect');
    const plan = {
      pending: { objectKey: 'data/x', start: 0, end: 1, recordCount: 1, maxTimestamp: 0 },
      leaderEpoch: 0,
      holders: [0],
      failedFollowers: [],
    };
    expect(topic.clog).toBe(true);
    const stale = await commitToShard({ metadata: c.metadata, storeCount: 3, now: () => Date.now() }, topic, [
      { partition: 0, plan },
    ]);
    const refused = stale.get(0);
    expect(refused?.kind === 'refused' && isKafkaError(refused.error, 'FENCED_LEADER_EPOCH')).toBe(true);

    // The old leader returns and is caught up from the new leader under epoch 1.
    c.stores[0]!.faults.down = false;
    await c.call('POST', 'topics/elect/replicas:sync');
    const healed = await describePartition('elect');
    expect(healed).toMatchObject({ leader_id: 1, isr: [0, 1, 2], high_watermark: 20 });
    expect(healed.replica_log_end_offsets).toEqual([0, 1, 2].map((r) => ({ replica_id: r, log_end_offset: 20 })));
    const all = await c.call('GET', 'topics/elect/partitions/0/records?offset=0&format=string');
    expect(all.body.records.map((x: { value: { data: string } }) => x.value.data)).toEqual([
      ...entries(10, 'e0').map((e) => e.value.data),
      ...entries(5, 'e1').map((e) => e.value.data),
      ...entries(5, 'e2').map((e) => e.value.data),
    ]);
  });

  it('truncates a returning leader to the end of its last epoch (acks=1 data that never reached a follower is gone)', async () => {
    await c.call('POST', 'topics', { topic_name: 'trunc', partitions_count: 1, replication_factor: 2 });
    await produce('trunc', { entries: entries(4, 't0') });
    c.stores[1]!.faults.down = true;
    await produce('trunc', { entries: entries(3, 'lost') }, '1'); // only on store 0; store 1 leaves the ISR
    await c.services.log.idle();
    c.stores[1]!.faults.down = false;
    c.stores[0]!.faults.down = true;
    // Store 1 is not in the ISR: a clean election is impossible.
    const refused = await produce('trunc', { entries: entries(1, 'x') });
    expect(refused.body.failures[0]).toMatchObject({ error: 'LEADER_NOT_AVAILABLE' });
    await c.call('PUT', 'topics/trunc/configs/unclean.leader.election.enable', { value: 'true' });
    const r = await produce('trunc', { entries: entries(2, 't1') });
    expect(r.body.successes.map((s: { offset: number }) => s.offset)).toEqual([4, 5]);
    expect(await describePartition('trunc')).toMatchObject({ leader_id: 1, leader_epoch: 1, high_watermark: 6 });
    c.stores[0]!.faults.down = false;
    await c.call('POST', 'topics/trunc/replicas:sync');
    const all = await c.call('GET', 'topics/trunc/partitions/0/records?offset=0&format=string');
    expect(all.body.records.map((x: { value: { data: string } }) => x.value.data)).toEqual(
      [...entries(4, 't0'), ...entries(2, 't1')].map((e) => e.value.data),
    );
    expect((await describePartition('trunc')).replica_log_end_offsets).toEqual([
      { replica_id: 0, log_end_offset: 6 },
      { replica_id: 1, log_end_offset: 6 },
    ]);
  });

  it('removes a follower that failed a write at once, and one that lagged longer than replica.lag.time.max.ms', async () => {
    let now = 1_000_000;
    c = cluster({ clock: { now: () => now } });
    await c.call('POST', 'topics', { topic_name: 'lag', partitions_count: 1, replication_factor: 2 });
    const topic = await c.services.topics.get('lag');
    await produce('lag', { entries: entries(2, 'l0') });
    c.stores[1]!.faults.fail('put', { times: 1 });
    await produce('lag', { entries: entries(2, 'l1') }, '1'); // the follower copy fails: out at once
    await c.services.log.idle();
    expect((await describePartition('lag')).isr).toEqual([0]);
    await c.call('POST', 'topics/lag/replicas:sync');
    expect(await describePartition('lag')).toMatchObject({ isr: [0, 1], high_watermark: 4 });

    // A slow follower: in the ISR but behind the leader, its copies not completing. Made by letting
    // it miss an acks=1 append and then putting it back into the ISR, as if it had never failed.
    c.stores[1]!.faults.fail('put', { times: 1 });
    await produce('lag', { entries: entries(2, 'l2') }, '1');
    await c.services.log.idle();
    // On a topic with a commit log a state is changed by an entry of its shard's log.
    await updatePartitionState({
      metadata: c.metadata,
      topic,
      partition: 0,
      storeCount: 3,
      now: Date.now(),
      giveUp: { errorName: 'KAFKA_STORAGE_ERROR', message: 'contention' },
      decide: (s) => ({ write: { ...s, isr: [0, 1] }, answer: () => undefined }),
    });
    c.stores[1]!.faults.fail('put', { times: 10 });
    now += 10_000; // within replica.lag.time.max.ms (30 s): stays in the ISR
    expect((await c.call('POST', 'topics/lag/replicas:sync')).body.partitions[0].removed_from_isr).toEqual([]);
    expect((await describePartition('lag')).isr).toEqual([0, 1]);
    now += 25_000; // 35 s behind: out
    expect((await c.call('POST', 'topics/lag/replicas:sync')).body.partitions[0].removed_from_isr).toEqual([1]);
    expect((await describePartition('lag')).isr).toEqual([0]);
  });
});

describe('idempotent producer over HTTP', () => {
  let c: ReturnType<typeof cluster>;
  beforeEach(async () => {
    c = cluster();
    await c.call('POST', 'topics', { topic_name: 'idem', partitions_count: 2 });
  });

  const init = async (body?: unknown) => (await c.call('POST', 'producers:init', body)).body;
  const send = (pid: number, epoch: number, seq: number, tag: string, n = 3, partition = 0) =>
    c.call('POST', 'topics/idem/records:batch', {
      producer_id: pid,
      producer_epoch: epoch,
      sequences: [{ partition_id: partition, base_sequence: seq }],
      entries: entries(n, tag, partition),
    });
  const values = async (p = 0) =>
    (await c.call('GET', `topics/idem/partitions/${p}/records?offset=0&format=string`)).body.records.map(
      (r: { value: { data: string } }) => r.value.data,
    );

  it('allocates producer ids and bumps epochs', async () => {
    const a = await init();
    const b = await init();
    expect(a).toMatchObject({ producer_id: 0, producer_epoch: 0 });
    expect(b.producer_id).toBe(1);
    expect(await init({ producer_id: 0, producer_epoch: 0 })).toMatchObject({ producer_id: 0, producer_epoch: 1 });
    expect((await c.call('POST', 'producers:init', { producer_id: 0, producer_epoch: 0 })).body.error).toBe(
      'INVALID_PRODUCER_EPOCH',
    );
    expect((await c.call('POST', 'producers:init', { producer_id: 99, producer_epoch: 0 })).body.error).toBe(
      'UNKNOWN_PRODUCER_ID',
    );
  });

  it('answers a retried batch with its original offsets and appends it once', async () => {
    const { producer_id: pid } = await init();
    const first = await send(pid, 0, 0, 'a');
    const second = await send(pid, 0, 3, 'b');
    const retryLast = await send(pid, 0, 3, 'b');
    const retryOlder = await send(pid, 0, 0, 'a');
    expect(retryLast.body.successes.map((s: { offset: number }) => s.offset)).toEqual(
      second.body.successes.map((s: { offset: number }) => s.offset),
    );
    expect(retryLast.body.successes[0].duplicate).toBe(true);
    expect(retryOlder.body.successes.map((s: { offset: number }) => s.offset)).toEqual(
      first.body.successes.map((s: { offset: number }) => s.offset),
    );
    expect(await values()).toEqual(['a-0', 'a-1', 'a-2', 'b-0', 'b-1', 'b-2']);
  });

  it('rejects a sequence gap with OUT_OF_ORDER_SEQUENCE_NUMBER and a fenced epoch with INVALID_PRODUCER_EPOCH', async () => {
    const { producer_id: pid } = await init();
    await send(pid, 0, 0, 'a');
    expect((await send(pid, 0, 7, 'gap')).body.failures[0]).toMatchObject({ error: 'OUT_OF_ORDER_SEQUENCE_NUMBER' });
    await init({ producer_id: pid, producer_epoch: 0 });
    expect((await send(pid, 0, 3, 'zombie')).body.failures[0]).toMatchObject({ error: 'INVALID_PRODUCER_EPOCH' });
    expect((await send(pid, 1, 5, 'new-epoch-must-start-at-0')).body.failures[0]).toMatchObject({
      error: 'OUT_OF_ORDER_SEQUENCE_NUMBER',
    });
    expect((await send(pid, 1, 0, 'n')).body.successes).toHaveLength(3);
    expect(await values()).toEqual(['a-0', 'a-1', 'a-2', 'n-0', 'n-1', 'n-2']);
  });

  it('needs explicit partitions and all three fields together', async () => {
    const res = await c.call('POST', 'topics/idem/records:batch', {
      producer_id: 0,
      producer_epoch: 0,
      sequences: [],
      entries: [{ id: '1', value: { data: 1 } }],
    });
    expect(res).toMatchObject({ status: 400, body: { error: 'INVALID_REQUEST' } });
    expect(
      (await c.call('POST', 'topics/idem/records:batch', { producer_id: 0, entries: entries(1, 'x') })).status,
    ).toBe(400);
  });

  it('retries after an ambiguous failure: zero duplicates with idempotence, duplicates without', async () => {
    const { producer_id: pid } = await init();
    // The state write lands, then the store reports failure (e.g. a timeout after DynamoDB applied it).
    // (On a topic with a commit log, the write that commits is the entry of its shard's log.)
    const ambiguous = () =>
      c.metadata.faults.fail('put', { when: 'after', match: (k) => k.endsWith('|state') || k.includes('|e#') });
    const sendUntilOk = async (send: () => Promise<{ body: { successes: unknown[] } }>) => {
      for (let i = 0; i < 3; i++) if ((await send()).body.successes.length > 0) return;
      throw new Error('never succeeded');
    };

    for (let i = 0; i < 4; i++) {
      ambiguous();
      await sendUntilOk(() => send(pid, 0, i * 3, `i${i}`));
    }
    expect(await values(0)).toEqual([0, 1, 2, 3].flatMap((i) => [0, 1, 2].map((j) => `i${i}-${j}`)));

    for (let i = 0; i < 4; i++) {
      ambiguous();
      await sendUntilOk(() => c.call('POST', 'topics/idem/records:batch', { entries: entries(3, `p${i}`, 1) }));
    }
    const plain = await values(1);
    expect(plain.length).toBe(24); // every batch twice: the failed-looking first try was appended
    expect(new Set(plain).size).toBe(12);
  });
});

describe('work that outlives its answer is bounded (MAX_BACKGROUND_BYTES)', () => {
  // Any work held is at the bound: the second request meets it.
  const bounded = () => cluster({ env: { MAX_BACKGROUND_BYTES: '1' } });
  const records = (tag: string) => ({ entries: entries(10, tag) });

  it('acks=1: past the bound the answer waits for its follower copies', async () => {
    const c = bounded();
    await c.call('POST', 'topics', { topic_name: 'slow', partitions_count: 1, replication_factor: 3 });
    c.stores[1]!.faults.delayMs = 150;
    c.stores[2]!.faults.delayMs = 150;
    expect((await c.call('POST', 'topics/slow/records:batch?acks=1', records('a'))).body.failures).toEqual([]);
    expect(c.services.log.heldBackgroundBytes).toBeGreaterThan(0); // the first one's copies run on
    expect((await c.call('POST', 'topics/slow/records:batch?acks=1', records('b'))).body.failures).toEqual([]);
    const p = (await c.call('GET', 'topics/slow/partitions/0')).body;
    expect(p.replica_log_end_offsets).toEqual([
      { replica_id: 0, log_end_offset: 20 },
      { replica_id: 1, log_end_offset: 20 },
      { replica_id: 2, log_end_offset: 20 },
    ]);
    await c.services.log.idle();
    expect(c.services.log.heldBackgroundBytes).toBe(0);
  });

  it('acks=0: past the bound the answer waits until the earlier append is done', async () => {
    const c = bounded();
    await c.call('POST', 'topics', { topic_name: 'fast', partitions_count: 1 });
    c.stores[0]!.faults.delayMs = 150;
    await c.call('POST', 'topics/fast/records:batch?acks=0', records('a'));
    expect(c.services.log.heldBackgroundBytes).toBeGreaterThan(0);
    await c.call('POST', 'topics/fast/records:batch?acks=0', records('b'));
    // The first append finished before the second was answered; the second's runs on, alone.
    expect((await c.call('GET', 'topics/fast/partitions/0')).body.high_watermark).toBeGreaterThanOrEqual(10);
    await c.services.log.idle();
    expect((await c.call('GET', 'topics/fast/partitions/0')).body.high_watermark).toBe(20);
  });
});
