/**
 * A transaction left open across more than one page (1,000) of later aborts, then aborted: each
 * abort item keeps Kafka's AbortedTxn lastStableOffset, which bounds where a read of the index in
 * marker order is known whole. Read_committed readers must never take its records for committed,
 * and must still reach the end. The index's own bounds (items written before the offset was kept,
 * the repair from `lastCommit`) are checked against the store directly.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Storage } from '../../src/compose.js';
import { PartitionLog } from '../../src/log/partition-log.js';
import { isAborted, OffsetIndex } from '../../src/partition/offset-index.js';
import { initialPartitionState, type PartitionState } from '../../src/partition/partition-state.js';
import { ReplicaManager } from '../../src/replication/replica-manager.js';
import { abortSk, partitionPk } from '../../src/storage/key-layout.js';
import type { MetadataStore } from '../../src/storage/ports.js';
import { TopicRegistry, type Topic } from '../../src/topics/topics.js';
import { CONTROL_FLAG_MASK, decodeRecordBatches, type LogRecord } from '../../src/wire/record-batch.js';
import { allBackends, memoryBackend, BACKEND_TEST_TIMEOUT_MS } from '../support/backends.js';
import { FaultyMetadataStore } from '../support/fault-injection.js';
import { readBatches, readRecords } from '../support/read-records.js';

const clock = { now: () => Date.now() };
const rec = (value: string): LogRecord => ({ key: null, value: Buffer.from(value), headers: [], timestamp: 1 });
const text = (b: Uint8Array | null) => (b === null ? null : Buffer.from(b).toString());
/** One page of the aborted-transactions index, and a few more. */
const LATER_ABORTS = 1_010;
const OPEN_PRODUCER = 5_000_000;

const newLog = (storage: Storage, metadata: MetadataStore = storage.metadata) =>
  new PartitionLog({
    metadata,
    stores: storage.stores,
    clock,
    leadership: new ReplicaManager({ metadata, stores: storage.stores, clock }),
  });

const inTransaction = (producerId: number) => ({
  producer: { producerId, producerEpoch: 0, baseSequences: new Map([[0, 0]]), transactional: true },
});

async function appendTo(log: PartitionLog, topic: Topic, value: string, producerId?: number) {
  const out = (
    await log.append(
      topic,
      [{ partition: 0, records: [rec(value)] }],
      producerId === undefined ? {} : inTransaction(producerId),
    )
  ).get(0)!;
  if (!out.ok) throw out.error;
  return out.info.baseOffset;
}

const abort = (log: PartitionLog, topic: Topic, producerId: number) =>
  log.writeMarker(topic, 0, { type: 'ABORT', producerId, producerEpoch: 0, coordinatorEpoch: 0 });

describe.each(allBackends)(
  'a transaction open across more than 1,000 later aborts on $name',
  (backend) => {
    let storage: Storage;
    let stop: () => Promise<void>;
    let log: PartitionLog;
    let topic: Topic;
    let end: number;

    beforeAll(async () => {
      ({ storage, stop } = await backend.start());
      log = newLog(storage);
      topic = await new TopicRegistry(storage.metadata, clock, 1).create({
        name: 'open-long',
        partitionCount: 1,
        replicationFactor: 1,
      });
      await appendTo(log, topic, 'before');
      expect(await appendTo(log, topic, 'open', OPEN_PRODUCER)).toBe(1);
      for (let p = 1; p <= LATER_ABORTS; p++) {
        await appendTo(log, topic, `aborted-${p}`, OPEN_PRODUCER + p);
        await abort(log, topic, OPEN_PRODUCER + p);
      }
      expect(await abort(log, topic, OPEN_PRODUCER)).toMatchObject({ written: true });
      end = (await appendTo(log, topic, 'after')) + 1;
    }, 300_000);
    afterAll(() => stop());

    it('never shows its records to a read_committed reader, which reaches the end', async () => {
      const seen: string[] = [];
      let fetches = 0;
      for (let offset = 0; offset < end; fetches++) {
        expect(fetches).toBeLessThan(10);
        const r = await readRecords(log, topic, 0, offset, 1 << 20, 'read_committed');
        expect(r.nextOffset).toBeGreaterThan(offset);
        seen.push(...r.records.map((x) => text(x.value)!));
        offset = r.nextOffset;
      }
      expect(seen).toEqual(['before', 'after']);
    });

    it.each([
      ['the per-partition fetch', 'one'],
      ['the multi-partition fetch', 'many'],
    ] as const)('%s lists it beside its batches in every answer that carries them', async (_, path) => {
      const fetch = async (offset: number) => {
        if (path === 'one') return readBatches(log, topic, 0, offset, 1 << 20, { isolation: 'read_committed' });
        const [r] = await log.reader.readBatchesMany(
          [{ topic, partition: 0, offset, maxBytes: 1 << 20 }],
          1 << 20,
          Infinity,
          'read_committed',
        );
        if (!r?.ok) throw r?.error;
        return r;
      };
      let openBatches = 0;
      for (let offset = 0, fetches = 0; offset < end; fetches++) {
        expect(fetches).toBeLessThan(10);
        const r = await fetch(offset);
        expect(r.nextOffset).toBeGreaterThan(offset);
        for (const b of decodeRecordBatches(r.batches)) {
          const { producerId, baseOffset, attributes } = b.header;
          if (producerId !== OPEN_PRODUCER || attributes & CONTROL_FLAG_MASK) continue;
          openBatches++;
          expect(isAborted(r.abortedTransactions!, producerId, baseOffset)).toBe(true);
        }
        offset = r.nextOffset;
      }
      expect(openBatches).toBe(1);
    });
  },
  BACKEND_TEST_TIMEOUT_MS,
);

describe('the bound of a full page of abort items (memory)', () => {
  let storage: Storage;
  let stop: () => Promise<void>;
  beforeAll(async () => ({ storage, stop } = await memoryBackend.start()));
  afterAll(() => stop());

  /**
   * A partition of 1,000 aborted one-batch transactions (markers at 2, 4, ...), a producer's
   * batch at 1 and its abort marker after them, written as items; with `lastStableOffset` as the
   * commit records now carry it (the open transaction's first offset, 1, until its own abort).
   */
  async function partitionOfItems(name: string, withLso: boolean): Promise<PartitionState> {
    const topicId = `${name}-id`;
    const pk = partitionPk(name, 0);
    const items = Array.from({ length: 1_000 }, (_, i) => ({
      topicId,
      producerId: 10 + i,
      firstOffset: 2 * i + 2,
      lastOffset: 2 * i + 3,
      ...(withLso && { lastStableOffset: 1 }),
    }));
    const last = 2 * 1_000 + 2;
    items.push({
      topicId,
      producerId: 1,
      firstOffset: 1,
      lastOffset: last,
      ...(withLso && { lastStableOffset: last + 1 }),
    });
    await Promise.all(items.map((a) => storage.metadata.put(pk, abortSk(a.lastOffset), a)));
    return { ...initialPartitionState(topicId, 0, 1, 1), replicaLeo: { '0': last + 1 }, highWatermark: last + 1 };
  }

  it('ends an item without lastStableOffset (as written before) at its marker + 1, as before', async () => {
    const state = await partitionOfItems('old-items', false);
    const read = await new OffsetIndex(storage.metadata).abortedTransactionsRead('old-items', 0, state, 0, 2_003);
    expect(read.completeBelow).toBe(2 * 999 + 3 + 1);
    expect(read.aborted).toHaveLength(1_000);
    expect(read.aborted.some((a) => a.producerId === 1)).toBe(false); // the case those items miss
  });

  it('ends an item with it at its lastStableOffset, and reads on until that passes the fetch offset', async () => {
    const state = await partitionOfItems('new-items', true);
    const index = new OffsetIndex(storage.metadata);
    expect((await index.abortedTransactionsRead('new-items', 0, state, 0, 2_003)).completeBelow).toBe(1);
    const from1 = await index.abortedTransactionsRead('new-items', 0, state, 1, 2_003);
    expect(from1.completeBelow).toBe(2_003);
    expect(from1.aborted).toHaveLength(1_001);
    expect(from1.aborted[0]).toMatchObject({ producerId: 1, firstOffset: 1 });
  });
});

describe.each(allBackends)(
  'the abort item of an ABORT commit whose index writes were lost, on $name',
  (backend) => {
    let storage: Storage;
    let stop: () => Promise<void>;
    beforeAll(async () => ({ storage, stop } = await backend.start()));
    afterAll(() => stop());

    it('is repaired from lastCommit with the same lastStableOffset', async () => {
      const metadata = new FaultyMetadataStore(storage.metadata);
      const log = newLog(storage, metadata);
      const topic = await new TopicRegistry(storage.metadata, clock, 1).create({
        name: 'lost-abort',
        partitionCount: 1,
        replicationFactor: 1,
      });
      await appendTo(log, topic, 'held', 1);
      await appendTo(log, topic, 'aborted', 2);
      const pk = partitionPk(topic.name, 0);
      metadata.faults.fail('put', { match: (k) => k.startsWith(`${pk}|abort#`) });
      const { offset } = await abort(log, topic, 2);
      expect(metadata.faults.injected).toBe(1);
      expect(await storage.metadata.get(pk, abortSk(offset))).toBeUndefined();
      const { lastCommit } = await log.state(topic, 0);
      expect(lastCommit?.control).toMatchObject({ type: 'ABORT', firstOffset: 1, lastStableOffset: 0 });

      // The next reader finds the last commit unindexed and writes its items.
      await readRecords(log, topic, 0, 0, 1 << 20);
      expect((await storage.metadata.get(pk, abortSk(offset)))?.value).toEqual({
        topicId: topic.id,
        producerId: 2,
        firstOffset: 1,
        lastOffset: offset,
        lastStableOffset: 0,
        leaderEpoch: 0,
      });
    });
  },
  BACKEND_TEST_TIMEOUT_MS,
);
