import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Storage } from '../../src/compose.js';
import { isKafkaError } from '../../src/wire/errors.js';
import { PartitionLog } from '../../src/log/partition-log.js';
import { ReplicaManager } from '../../src/replication/replica-manager.js';
import type { LogRecord } from '../../src/wire/record-batch.js';
import { TOPIC_DELETION_HOLD_MS, TopicRegistry, type Topic } from '../../src/topics/topics.js';
import type { MetadataStore } from '../../src/storage/ports.js';
import { allBackends, BACKEND_TEST_TIMEOUT_MS } from '../support/backends.js';
import { COMMIT_LOG_LEVEL, PACKED_INDEX_LEVEL } from '../../src/storage/formats.js';
import { raiseFeatureLevel } from '../../src/storage/feature-level.js';
import { FaultyMetadataStore, FaultyObjectStore } from '../support/fault-injection.js';
import { indexSk, partitionPk } from '../../src/storage/key-layout.js';
import { FOLD_AFTER_ENTRIES } from '../../src/partition/shard-state.js';
import { ProducerIds } from '../../src/producer/producer-ids.js';
import { sweepTopic } from '../../src/maintenance/object-gc.js';
import { DurableTimers } from '../../src/timer/durable-timers.js';
import { readRecords } from '../support/read-records.js';

const clock = { now: () => Date.now() };
const rec = (value: string, timestamp = 1_700_000_000_000, key: string | null = null): LogRecord => ({
  key: key === null ? null : Buffer.from(key),
  value: Buffer.from(value),
  headers: [],
  timestamp,
});
const text = (b: Uint8Array | null) => (b === null ? null : Buffer.from(b).toString());

// Each backend with both commit layouts: a commit per partition (topics made below
// COMMIT_LOG_LEVEL) and the commit log per shard of partitions, whose fold writes an index item
// per commit, or from PACKED_INDEX_LEVEL one packed item per partition (partition/index-item.ts).
const layouts = allBackends.flatMap((backend) => [
  { backend, name: backend.name, commitLog: false, packed: false },
  { backend, name: `${backend.name}, commit log`, commitLog: true, packed: false },
  { backend, name: `${backend.name}, commit log, packed index`, commitLog: true, packed: true },
]);

describe.each(layouts)('partition log on $name', ({ backend, commitLog, packed }) => {
  let storage: Storage;
  let stop: () => Promise<void>;
  let topics: TopicRegistry;
  let log: PartitionLog;
  const newLog = (metadata: MetadataStore, stores = storage.stores) =>
    new PartitionLog({
      metadata,
      stores,
      clock,
      leadership: new ReplicaManager({ metadata, stores: storage.stores, clock }),
    });
  let n = 0;
  const newTopic = (partitions = 1, configs: Record<string, string> = {}) =>
    topics.create({ name: `t${n++}`, partitionCount: partitions, replicationFactor: 1, configs });

  beforeAll(async () => {
    ({ storage, stop } = await backend.start());
    if (packed) await raiseFeatureLevel(storage.metadata, PACKED_INDEX_LEVEL, Date.now(), 'test');
    topics = new TopicRegistry(
      storage.metadata,
      clock,
      storage.stores.length,
      commitLog ? { featureLevel: async () => COMMIT_LOG_LEVEL } : {},
    );
    log = newLog(storage.metadata);
  });
  afterAll(() => stop());

  // 140 appends read back twice: on the emulators of a loaded machine, past the default 30 s.
  it("reads every record across the writers' fold (at 64 entries), a new process too", {
    timeout: BACKEND_TEST_TIMEOUT_MS,
  }, async () => {
    const topic = await newTopic(2);
    const requests = FOLD_AFTER_ENTRIES + 6;
    for (let i = 0; i < requests; i++) {
      const out = await log.append(
        topic,
        [0, 1].map((p) => ({ partition: p, records: [rec(`r${i}`)] })),
      );
      for (const o of out.values()) expect(o.ok).toBe(true);
    }
    const items = await storage.metadata.query(partitionPk(topic.name, 1), { beginsWith: 'idx#' });
    // One item per commit, or (packed) one for the fold's 64.
    expect(items.length).toBe(!commitLog ? requests : packed ? 1 : FOLD_AFTER_ENTRIES);
    for (const p of [0, 1]) {
      const read = await readRecords(newLog(new FaultyMetadataStore(storage.metadata)), topic, p, 0, 1 << 22);
      expect(read.records.map((r) => [r.offset, text(r.value)])).toEqual(
        Array.from({ length: requests }, (_, i) => [i, `r${i}`]),
      );
    }
  });

  it('writes one object for a request that touches several partitions, and reads each back', async () => {
    const topic = await newTopic(3);
    const before = (await storage.stores[0]!.list(`data/${topic.id}/`)).objects.length;
    const out = await log.append(topic, [
      { partition: 0, records: [rec('a0'), rec('a1')] },
      { partition: 2, records: [rec('c0')] },
    ]);
    expect((await storage.stores[0]!.list(`data/${topic.id}/`)).objects.length).toBe(before + 1);
    expect(out.get(0)).toMatchObject({ ok: true, info: { baseOffset: 0, lastOffset: 1 } });
    expect(out.get(2)).toMatchObject({ ok: true, info: { baseOffset: 0, lastOffset: 0 } });
    const p0 = await readRecords(log, topic, 0, 0, 1 << 20);
    expect(p0.records.map((r) => [r.offset, text(r.value)])).toEqual([
      [0, 'a0'],
      [1, 'a1'],
    ]);
    expect(p0).toMatchObject({ nextOffset: 2, highWatermark: 2, logStartOffset: 0 });
    expect((await readRecords(log, topic, 2, 0, 1 << 20)).records.map((r) => text(r.value))).toEqual(['c0']);
    expect((await readRecords(log, topic, 1, 0, 1 << 20)).records).toEqual([]);
  });

  it('keeps offsets gap-free and unique under concurrent writers in separate processes', async () => {
    const topic = await newTopic(1);
    // Separate PartitionLog instances share nothing in memory, as separate Lambdas would.
    const writers = Array.from({ length: 6 }, () => newLog(storage.metadata));
    const acked: { value: string; offset: number }[] = [];
    await Promise.all(
      Array.from({ length: 30 }, async (_, i) => {
        const values = [0, 1, 2].map((j) => `w${i}-${j}`);
        const out = (
          await writers[i % writers.length]!.append(topic, [{ partition: 0, records: values.map((v) => rec(v)) }])
        ).get(0)!;
        if (!out.ok) throw out.error;
        values.forEach((value, j) => {
          acked.push({ value, offset: out.info.baseOffset + j });
        });
      }),
    );
    const read: { value: string | null; offset: number }[] = [];
    for (let offset = 0; offset < 90; ) {
      const r = await readRecords(log, topic, 0, offset, 64);
      read.push(...r.records.map((x) => ({ value: text(x.value), offset: x.offset })));
      offset = r.nextOffset;
    }
    expect(read.map((r) => r.offset)).toEqual(Array.from({ length: 90 }, (_, i) => i));
    expect(new Set(read.map((r) => r.value)).size).toBe(90);
    const byOffset = new Map(read.map((r) => [r.offset, r.value]));
    for (const a of acked) expect(byOffset.get(a.offset)).toBe(a.value);
    // Records of one request stay contiguous and in order.
    expect((await log.state(topic, 0)).highWatermark).toBe(90);
  });

  it('appends an idempotent batch whose predecessor another writer committed while it was being written', async () => {
    const topic = await newTopic(1);
    const producer = await new ProducerIds(storage.metadata).init();
    const withSequence = (baseSequence: number) => ({
      producer: { ...producer, baseSequences: new Map([[0, baseSequence]]) },
    });
    // Writer 2 (another Lambda) reads the state, then its object write waits until writer 1 has
    // committed the batch before it: the state writer 2 read is stale by the time it commits.
    let entered!: () => void;
    const inPut = new Promise<void>((r) => (entered = r));
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const gated = storage.stores.map((s) =>
      Object.assign(Object.create(s) as typeof s, {
        put: async (key: string, body: Uint8Array) => {
          entered();
          await gate;
          return s.put(key, body);
        },
      }),
    );
    const second = new PartitionLog({
      metadata: storage.metadata,
      stores: gated,
      clock,
      leadership: new ReplicaManager({ metadata: storage.metadata, stores: gated, clock }),
    });
    const b = second.append(topic, [{ partition: 0, records: [rec('b')] }], withSequence(1));
    await Promise.race([inPut, b]); // before the fix, b was refused here, out of order, without a write
    const a = (await log.append(topic, [{ partition: 0, records: [rec('a')] }], withSequence(0))).get(0)!;
    expect(a).toMatchObject({ ok: true, info: { baseOffset: 0 } });
    release();
    expect((await b).get(0)).toMatchObject({ ok: true, info: { baseOffset: 1 } });
    expect((await readRecords(log, topic, 0, 0, 1 << 20)).records.map((r) => text(r.value))).toEqual(['a', 'b']);
  });

  it("starts the object's PUT beside the state reads, not after them, and commits from the read", async () => {
    const topic = await newTopic(2);
    // A metadata store whose reads take 20 ms, and an object store noting when each PUT starts.
    const readsEnded: number[] = [];
    const slowReads = Object.assign(Object.create(storage.metadata) as MetadataStore, {
      get: async (pk: string, sk: string) => {
        await new Promise((r) => setTimeout(r, 20));
        const item = await storage.metadata.get(pk, sk);
        if (pk.startsWith('part#')) readsEnded.push(performance.now());
        return item;
      },
    });
    const putsStarted: number[] = [];
    const stores = storage.stores.map((s) =>
      Object.assign(Object.create(s) as typeof s, {
        put: (key: string, body: Uint8Array) => {
          putsStarted.push(performance.now());
          return s.put(key, body);
        },
      }),
    );
    const writer = new PartitionLog({
      metadata: slowReads,
      stores,
      clock,
      leadership: new ReplicaManager({ metadata: slowReads, stores, clock }),
    });
    const out = await writer.append(
      topic,
      [0, 1].map((partition) => ({ partition, records: [rec(`v${partition}`)] })),
    );
    for (const p of [0, 1]) expect(out.get(p)).toMatchObject({ ok: true, info: { baseOffset: 0 } });
    // One PUT for the request, begun before any state read had returned.
    expect(putsStarted).toHaveLength(1);
    expect(putsStarted[0]).toBeLessThan(Math.min(...readsEnded));
    for (const p of [0, 1])
      expect((await readRecords(log, topic, p, 0, 1 << 20)).records.map((r) => text(r.value))).toEqual([`v${p}`]);
  });

  it('fences an idempotent producer of an older epoch on every partition, committing nothing, reading its epoch beside the states', async () => {
    const topic = await newTopic(2);
    const ids = new ProducerIds(storage.metadata);
    const old = await ids.init();
    await ids.init(old); // a newer instance of the producer bumped the epoch
    // A metadata store whose reads take 20 ms, noting when each starts and ends.
    const spans: { pk: string; start: number; end: number }[] = [];
    const slowReads = Object.assign(Object.create(storage.metadata) as MetadataStore, {
      get: async (pk: string, sk: string) => {
        const start = performance.now();
        await new Promise((r) => setTimeout(r, 20));
        const item = await storage.metadata.get(pk, sk);
        spans.push({ pk, start, end: performance.now() });
        return item;
      },
    });
    // And whose PUTs end after the refusal is known: the answer still waits for them, as a Lambda
    // is frozen once it has answered.
    const slowPuts = storage.stores.map((store) =>
      Object.assign(Object.create(store) as typeof store, {
        put: async (key: string, body: Uint8Array) => {
          await new Promise((r) => setTimeout(r, 80));
          return store.put(key, body);
        },
      }),
    );
    const before = (await storage.stores[0]!.list(`data/${topic.id}/`)).objects.length;
    const out = await newLog(slowReads, slowPuts).append(
      topic,
      [0, 1].map((partition) => ({ partition, records: [rec('zombie')] })),
      {
        producer: {
          ...old,
          baseSequences: new Map([
            [0, 0],
            [1, 0],
          ]),
        },
      },
    );
    for (const p of [0, 1])
      expect(out.get(p)).toMatchObject({ ok: false, error: { errorName: 'INVALID_PRODUCER_EPOCH' } });
    // Its object was written beside the reads (one PUT for the request, ended before the answer),
    // and no commit names it: an orphan, which the sweep deletes once past the grace.
    const objects = (await storage.stores[0]!.list(`data/${topic.id}/`)).objects;
    expect(objects).toHaveLength(before + 1);
    for (const p of [0, 1]) expect((await log.state(topic, p)).highWatermark).toBe(0);
    const swept = await sweepTopic(
      {
        metadata: storage.metadata,
        stores: storage.stores,
        timers: new DurableTimers(storage.metadata),
        now: Date.now() + 1,
        graceMs: 0,
      },
      topic,
    );
    expect(swept.scheduled).toBe(1);
    // The epoch read began before the first state read ended: one round trip, not two in a row.
    const epochRead = spans.find((s) => s.pk.startsWith('pid#'))!;
    const stateReads = spans.filter(
      (s) => s.pk === partitionPk(topic.name, 0) || s.pk === partitionPk(topic.name, 1) || s.pk.startsWith('clog#'),
    );
    expect(stateReads.length).toBeGreaterThan(0);
    expect(epochRead.start).toBeLessThan(Math.min(...stateReads.map((s) => s.end)));
  });

  it("an idempotent append whose epoch check fails after its object's PUT began: nothing committed, its retry commits once", async () => {
    const topic = await newTopic(1);
    const producer = await new ProducerIds(storage.metadata).init();
    const faulty = new FaultyMetadataStore(storage.metadata);
    // The producer's epoch read fails (the process died there, or DynamoDB failed it): the PUT has
    // started beside it, the commit never happens.
    faulty.faults.fail('get', { match: (k) => k.startsWith('pid#') });
    const options = { producer: { ...producer, baseSequences: new Map([[0, 0]]) } };
    // A failed epoch read fails the request as a whole.
    await expect(newLog(faulty).append(topic, [{ partition: 0, records: [rec('once')] }], options)).rejects.toThrow(
      /injected fault/,
    );
    const listed = async () => (await storage.stores[0]!.list(`data/${topic.id}/`)).objects.length;
    for (let i = 0; i < 100 && (await listed()) === 0; i++) await new Promise((r) => setTimeout(r, 5));
    expect(await listed()).toBe(1);
    expect((await log.state(topic, 0)).highWatermark).toBe(0);
    // The client's retry (same sequence), through another process: one commit, one record.
    const retried = (
      await newLog(storage.metadata).append(topic, [{ partition: 0, records: [rec('once')] }], options)
    ).get(0)!;
    expect(retried).toMatchObject({ ok: true, info: { baseOffset: 0, lastOffset: 0 } });
    expect((await readRecords(log, topic, 0, 0, 1 << 20)).records.map((r) => text(r.value))).toEqual(['once']);
  });

  it("fences a transactional producer's old epoch once an abort marker of a newer epoch has landed", async () => {
    const topic = await newTopic(1);
    const txn = (producerEpoch: number, baseSequence: number) => ({
      producer: {
        producerId: 7_000_001,
        producerEpoch,
        baseSequences: new Map([[0, baseSequence]]),
        transactional: true,
      },
    });
    expect((await log.append(topic, [{ partition: 0, records: [rec('t1')] }], txn(0, 0))).get(0)).toMatchObject({
      ok: true,
    });
    // The coordinator timed the transaction out: it bumped the epoch and aborted with epoch 1.
    expect(
      await log.writeMarker(topic, 0, { type: 'ABORT', producerId: 7_000_001, producerEpoch: 1, coordinatorEpoch: 0 }),
    ).toMatchObject({ written: true });
    const zombie = (await log.append(topic, [{ partition: 0, records: [rec('late')] }], txn(0, 1))).get(0)!;
    expect(zombie).toMatchObject({ ok: false, error: { errorName: 'INVALID_PRODUCER_EPOCH' } });
    // The new epoch starts again at sequence 0.
    expect((await log.append(topic, [{ partition: 0, records: [rec('t2')] }], txn(1, 0))).get(0)).toMatchObject({
      ok: true,
      info: { baseOffset: 2 },
    });
  });

  it('commits concurrent appends of one process to one partition without losing a race to itself', async () => {
    const topic = await newTopic(1);
    let retries = 0;
    const indexReads: string[] = [];
    const m = storage.metadata;
    const metadata: MetadataStore = {
      get: <T>(pk: string, sk: string) => {
        if (sk.startsWith('idx#')) indexReads.push(sk);
        return m.get<T>(pk, sk);
      },
      query: (pk, o) => m.query(pk, o),
      put: (pk, sk, value, condition, options) => m.put(pk, sk, value, condition, options),
      delete: (pk, sk, condition) => m.delete(pk, sk, condition),
    };
    const counted = new PartitionLog({
      metadata,
      stores: storage.stores,
      clock,
      leadership: new ReplicaManager({ metadata: storage.metadata, stores: storage.stores, clock }),
      metrics: { add: (name, n) => void (name === 'CommitRetries' && (retries += n)), gauge: () => {} },
    });
    const outs = await Promise.all(
      Array.from({ length: 16 }, (_, i) => counted.append(topic, [{ partition: 0, records: [rec(`c${i}`)] }])),
    );
    expect(outs.map((o) => o.get(0)!.ok)).toEqual(Array(16).fill(true));
    // Each commit queued behind the process's own previous one starts from the state it left, and
    // knows the index entry of that one is written: no read to check whether it needs a repair.
    expect(retries).toBe(0);
    expect(indexReads).toEqual([]);
  });

  it('refuses a writer holding a deleted topic instead of resetting the partition of the topic that took its name', async () => {
    const registry = new TopicRegistry(storage.metadata, clock, storage.stores.length, {
      deletionHoldMs: 0,
      featureLevel: async () => (packed ? PACKED_INDEX_LEVEL : commitLog ? COMMIT_LOG_LEVEL : 1),
    });
    const name = `reborn${n++}`;
    const old = await registry.create({ name, partitionCount: 1, replicationFactor: 1, configs: {} });
    await registry.delete(name);
    const reborn = await registry.create({ name, partitionCount: 1, replicationFactor: 1, configs: {} });
    expect((await log.append(reborn, [{ partition: 0, records: [rec('new-0'), rec('new-1')] }])).get(0)).toMatchObject({
      ok: true,
    });
    // A writer that read the old topic before its deletion.
    const stale = (await log.append(old, [{ partition: 0, records: [rec('from-the-old-topic')] }])).get(0)!;
    expect(stale).toMatchObject({ ok: false, error: { errorName: 'UNKNOWN_TOPIC_OR_PARTITION' } });
    expect(old.clog === true).toBe(commitLog);
    const read = await readRecords(log, reborn, 0, 0, 1 << 20);
    expect(read.records.map((r) => text(r.value))).toEqual(['new-0', 'new-1']);
    expect(read.highWatermark).toBe(2);
  });

  it('bounds a read by max bytes but always returns at least one batch', async () => {
    const topic = await newTopic(1);
    for (let i = 0; i < 5; i++) await log.append(topic, [{ partition: 0, records: [rec('x'.repeat(200) + i)] }]);
    const one = await readRecords(log, topic, 0, 0, 1);
    expect(one.records.map((r) => r.offset)).toEqual([0]);
    const some = await readRecords(log, topic, 0, 1, 600);
    expect(some.records.length).toBeGreaterThanOrEqual(2);
    expect(some.records.length).toBeLessThan(4);
    expect(some.nextOffset).toBe(1 + some.records.length);
    const fromMiddle = await readRecords(log, topic, 0, 3, 1 << 20);
    expect(fromMiddle.records.map((r) => r.offset)).toEqual([3, 4]);
  });

  it('answers OFFSET_OUT_OF_RANGE past the high watermark and empty at it', async () => {
    const topic = await newTopic(1);
    await log.append(topic, [{ partition: 0, records: [rec('a')] }]);
    await expect(readRecords(log, topic, 0, 2, 100)).rejects.toSatisfy((e) => isKafkaError(e, 'OFFSET_OUT_OF_RANGE'));
    expect((await readRecords(log, topic, 0, 1, 100)).records).toEqual([]);
    await expect(readRecords(log, topic, 5, 0, 100)).rejects.toSatisfy((e) =>
      isKafkaError(e, 'UNKNOWN_TOPIC_OR_PARTITION'),
    );
  });

  it('lists earliest, latest and the first offset at or after a timestamp', async () => {
    const topic = await newTopic(1);
    await log.append(topic, [{ partition: 0, records: [rec('a', 1000), rec('b', 2000)] }]);
    await log.append(topic, [{ partition: 0, records: [rec('c', 3000), rec('d', 2500)] }]);
    expect(await log.reader.listOffset(topic, 0, 'earliest')).toEqual({ offset: 0, timestamp: -1 });
    expect(await log.reader.listOffset(topic, 0, 'latest')).toEqual({ offset: 4, timestamp: -1 });
    expect(await log.reader.listOffset(topic, 0, { timestamp: 1500 })).toEqual({ offset: 1, timestamp: 2000 });
    expect(await log.reader.listOffset(topic, 0, { timestamp: 2001 })).toEqual({ offset: 2, timestamp: 3000 });
    expect(await log.reader.listOffset(topic, 0, { timestamp: 0 })).toEqual({ offset: 0, timestamp: 1000 });
    expect(await log.reader.listOffset(topic, 0, { timestamp: 3001 })).toEqual({ offset: -1, timestamp: -1 });
  });

  // A commit per partition writes its index entry with its state; a commit log's fold writes it.
  if (!commitLog)
    it('repairs a commit whose index write was lost, on read and on the next write', async () => {
      const topic = await newTopic(2);
      const lossy = dropFirstIndexWrite(storage.metadata);
      const crashy = newLog(lossy.store);
      for (const p of [0, 1]) {
        const out = (await crashy.append(topic, [{ partition: p, records: [rec('lost-index')] }])).get(p)!;
        expect(out.ok).toBe(true); // committed: the state write landed, so the producer is told so
        lossy.rearm();
      }
      expect(lossy.dropped).toBe(2);
      expect(await storage.metadata.get(partitionPk(topic.name, 0), indexSk(0))).toBeUndefined();

      // A reader repairs partition 0 from the last-commit pointer.
      expect((await readRecords(log, topic, 0, 0, 100)).records.map((r) => text(r.value))).toEqual(['lost-index']);
      expect(await storage.metadata.get(partitionPk(topic.name, 0), indexSk(0))).toBeDefined();

      // The next writer repairs partition 1 before it moves the pointer on.
      await log.append(topic, [{ partition: 1, records: [rec('next')] }]);
      expect(await storage.metadata.get(partitionPk(topic.name, 1), indexSk(0))).toBeDefined();
      expect((await readRecords(log, topic, 1, 0, 1 << 20)).records.map((r) => text(r.value))).toEqual([
        'lost-index',
        'next',
      ]);
    });

  it('splits a large request into batches within max.message.bytes and rejects a record over it', async () => {
    const topic = await newTopic(1, { 'max.message.bytes': '2000' });
    const many = Array.from({ length: 20 }, (_, i) => rec(`${i}`.padEnd(300, '.')));
    const ok = (await log.append(topic, [{ partition: 0, records: many }])).get(0)!;
    expect(ok).toMatchObject({ ok: true, info: { baseOffset: 0, lastOffset: 19 } });
    const read = await readRecords(log, topic, 0, 0, 1 << 20);
    expect(read.records.map((r) => text(r.value))).toEqual(many.map((r) => text(r.value)));
    const tooBig = (await log.append(topic, [{ partition: 0, records: [rec('y'.repeat(3000))] }])).get(0)!;
    expect(tooBig.ok).toBe(false);
    expect(!tooBig.ok && tooBig.error.errorName).toBe('MESSAGE_TOO_LARGE');
    expect((await log.state(topic, 0)).highWatermark).toBe(20);
  });

  it('stamps LogAppendTime topics with the append time', async () => {
    const topic = await newTopic(1, { 'message.timestamp.type': 'LogAppendTime' });
    const before = Date.now();
    const out = (await log.append(topic, [{ partition: 0, records: [rec('a', 5)] }])).get(0)!;
    expect(out.ok && out.info.logAppendTime).toBeGreaterThanOrEqual(before);
    const [r] = (await readRecords(log, topic, 0, 0, 100)).records;
    expect(r!.timestamp).toBeGreaterThanOrEqual(before);
  });

  it('shows nothing of a deleted topic to a new topic of the same name', async () => {
    const first = await topics.create({ name: 'reused', partitionCount: 1, replicationFactor: 1 });
    await log.append(first, [{ partition: 0, records: [rec('old-1'), rec('old-2')] }]);
    await log.purge(await topics.delete('reused'));
    // The name is taken while the topic is marked for deletion (TOPIC_DELETION_HOLD_MS): re-created after that.
    const later = new TopicRegistry(storage.metadata, { now: () => Date.now() + TOPIC_DELETION_HOLD_MS }, 1);
    const second: Topic = await later.create({ name: 'reused', partitionCount: 1, replicationFactor: 1 });
    expect(second.id).not.toBe(first.id);
    expect((await log.state(second, 0)).highWatermark).toBe(0);
    await log.append(second, [{ partition: 0, records: [rec('new')] }]);
    expect((await readRecords(log, second, 0, 0, 1 << 20)).records.map((r) => [r.offset, text(r.value)])).toEqual([
      [0, 'new'],
    ]);
    expect((await storage.stores[0]!.list(`data/${first.id}/`)).objects).toEqual([]);
  });

  it('fails a purge whose object deletes fail, leaving the objects for a later purge', async () => {
    // One object per listing page, and every delete fails: the purge must end (and say so), not
    // read the same page for ever.
    class OnePerPage extends FaultyObjectStore {
      override list(prefix: string, page: { startAfter?: string; limit?: number } = {}) {
        return super.list(prefix, { ...page, limit: 1 });
      }
    }
    const store = new OnePerPage(storage.stores[0]!);
    const stuck = new PartitionLog({
      metadata: storage.metadata,
      stores: [store],
      clock,
      leadership: new ReplicaManager({ metadata: storage.metadata, stores: [store], clock }),
    });
    const topic = await topics.create({ name: 'undeletable', partitionCount: 1, replicationFactor: 1 });
    for (const v of ['a', 'b', 'c']) await stuck.append(topic, [{ partition: 0, records: [rec(v)] }]);
    store.faults.fail('delete', { times: Number.POSITIVE_INFINITY });
    const deleted = await topics.delete('undeletable');
    await expect(stuck.purge(deleted)).rejects.toThrow(/injected fault/);
    expect((await storage.stores[0]!.list(`data/${topic.id}/`)).objects).toHaveLength(3);
    store.faults.clear();
    expect(await stuck.purge(deleted)).toEqual({ done: true, nextPartition: 1 });
    expect((await storage.stores[0]!.list(`data/${topic.id}/`)).objects).toHaveLength(0);
  });
});

/** A metadata store that loses the first index-entry write, as a crash between steps 3 and 4 would. */
function dropFirstIndexWrite(inner: MetadataStore) {
  let armed = true;
  const state = { dropped: 0 };
  const store: MetadataStore = {
    get: (pk, sk) => inner.get(pk, sk),
    query: (pk, o) => inner.query(pk, o),
    delete: (pk, sk, c) => inner.delete(pk, sk, c),
    put: async (pk, sk, value, c) => {
      if (armed && sk.startsWith('idx#')) {
        armed = false;
        state.dropped++;
        throw new Error('crash before the index write');
      }
      return inner.put(pk, sk, value, c);
    },
  };
  return {
    store,
    rearm: () => (armed = true),
    get dropped() {
      return state.dropped;
    },
  };
}
