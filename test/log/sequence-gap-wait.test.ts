/**
 * An idempotent producer's requests in flight, each served by its own Lambda on AWS, race: a later
 * batch may reach its commit while the one before it is still committing. The commit then waits for
 * the gap to fill (SEQUENCE_GAP_WAITS_MS) instead of refusing the batch out of order at once.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Storage } from '../../src/compose.js';
import { SEQUENCE_GAP_WAITS_MS, type PartitionLog } from '../../src/log/partition-log.js';
import { ProducerIds } from '../../src/producer/producer-ids.js';
import { COMMIT_LOG_LEVEL } from '../../src/storage/formats.js';
import { partitionPk, STATE_SK } from '../../src/storage/key-layout.js';
import type { MetadataStore } from '../../src/storage/ports.js';
import { TopicRegistry, type Topic } from '../../src/topics/topics.js';
import { memoryBackend } from '../support/backends.js';
import { FaultyMetadataStore } from '../support/fault-injection.js';
import { clock, newLog, rec } from '../support/partition-logs.js';
import { readRecords } from '../support/read-records.js';

/**
 * The metadata store as one Lambda sees it, counting its reads of partition states: the state item,
 * and on a topic with a commit log the Query of its shard's entries.
 */
function countingStateReads(inner: MetadataStore, onRead: (n: number) => void = () => {}) {
  let reads = 0;
  const store = Object.assign(Object.create(inner) as MetadataStore, {
    get: <T>(pk: string, sk: string) => {
      if (pk.startsWith('part#') && sk === STATE_SK) onRead(++reads);
      return inner.get<T>(pk, sk);
    },
    query: <T>(pk: string, options?: Parameters<MetadataStore['query']>[1]) => {
      if (pk.startsWith('clog#')) onRead(++reads);
      return inner.query<T>(pk, options);
    },
  });
  return { store, reads: () => reads };
}

// Both commit layouts: a commit per partition, and the commit log per shard of partitions.
const layouts = [
  { name: 'a commit per partition', level: COMMIT_LOG_LEVEL - 1 },
  { name: 'a commit log', level: COMMIT_LOG_LEVEL },
];

describe.each(layouts)('an idempotent batch ahead of the sequence its partition expects, $name', ({ level }) => {
  let storage: Storage;
  let stop: () => Promise<void>;
  let topics: TopicRegistry;
  let producers: ProducerIds;
  let n = 0;
  const newTopic = async () => {
    const topic = await topics.create({ name: `gap${n++}`, partitionCount: 1, replicationFactor: 1 });
    expect(topic.clog === true).toBe(level >= COMMIT_LOG_LEVEL);
    return topic;
  };
  const send = (
    log: PartitionLog,
    topic: Topic,
    producer: { producerId: number; producerEpoch: number },
    seq: number,
  ) =>
    log
      .append(topic, [{ partition: 0, records: [rec(`s${seq}`)] }], {
        producer: { ...producer, baseSequences: new Map([[0, seq]]) },
      })
      .then((r) => r.get(0)!);

  beforeAll(async () => {
    ({ storage, stop } = await memoryBackend.start());
    topics = new TopicRegistry(storage.metadata, clock, storage.stores.length, { featureLevel: async () => level });
    producers = new ProducerIds(storage.metadata);
  });
  afterAll(() => stop());

  it('commits after the batch before it, which another Lambda was still committing, in sequence order', async () => {
    const topic = await newTopic();
    const producer = await producers.init();
    // Lambda A's commit of sequence 0 (its state write, or its commit log entry) is held until
    // Lambda B has decided on sequence 1 and been refused (at most two state reads a decision: by
    // its fifth read B has paused at least once).
    const slow = new FaultyMetadataStore(storage.metadata);
    const commitKey = (key: string) =>
      topic.clog ? key.startsWith('clog#') && key.includes('|e#') : key === `${partitionPk(topic.name, 0)}|${STATE_SK}`;
    const held = slow.faults.gate('put', commitKey);
    const lambdaB = countingStateReads(storage.metadata, (reads) => {
      if (reads === 5) held.release();
    });
    const a = send(newLog(slow, storage.stores), topic, producer, 0);
    await held.reached;
    // Released when B is answered too: refused at once, B would otherwise hold A for ever.
    const b = send(newLog(lambdaB.store, storage.stores), topic, producer, 1).finally(() => held.release());
    const [first, second] = await Promise.all([a, b]);
    expect(lambdaB.reads()).toBeGreaterThanOrEqual(5);
    expect(first).toMatchObject({ ok: true, info: { baseOffset: 0, lastOffset: 0 } });
    expect(second).toMatchObject({ ok: true, info: { baseOffset: 1, lastOffset: 1 } });
    const read = await readRecords(newLog(storage.metadata, storage.stores), topic, 0, 0, 1 << 20);
    expect(read.records.map((r) => [r.offset, Buffer.from(r.value!).toString()])).toEqual([
      [0, 's0'],
      [1, 's1'],
    ]);
  });

  it('in one process, does not hold the partition while it waits: the batch before it commits meanwhile', async () => {
    const topic = await newTopic();
    const producer = await producers.init();
    const log = newLog(storage.metadata, storage.stores);
    // Sent in reverse: sequence 2 and 1 reach the partition's commit queue first.
    const answers = await Promise.all([2, 1, 0].map((seq) => send(log, topic, producer, seq)));
    expect(answers.map((a) => (a.ok ? a.info.baseOffset : a.error.errorName))).toEqual([2, 1, 0]);
  });

  it('waits in a request of several partitions, whose other partitions commit as they come', async () => {
    const topic = await topics.create({ name: `gap${n++}`, partitionCount: 3, replicationFactor: 1 });
    const producer = await producers.init();
    const log = newLog(storage.metadata, storage.stores);
    // The second request's partition 2 is its first batch there: it commits at once.
    const request = (seq: number, partitions: number[]) =>
      log.append(
        topic,
        partitions.map((p) => ({ partition: p, records: [rec(`p${p}s${seq}`)] })),
        { producer: { ...producer, baseSequences: new Map(partitions.map((p) => [p, p === 2 ? 0 : seq])) } },
      );
    const [later, first] = await Promise.all([request(1, [0, 1, 2]), request(0, [0, 1])]);
    for (const p of [0, 1]) {
      expect(first.get(p)).toMatchObject({ ok: true, info: { baseOffset: 0 } });
      expect(later.get(p)).toMatchObject({ ok: true, info: { baseOffset: 1 } });
    }
    expect(later.get(2)).toMatchObject({ ok: true, info: { baseOffset: 0 } });
  });

  it('is refused OUT_OF_ORDER_SEQUENCE_NUMBER once the pauses are over when nobody fills the gap', async () => {
    const topic = await newTopic();
    const producer = await producers.init();
    const lambda = countingStateReads(storage.metadata);
    const log = newLog(lambda.store, storage.stores);
    expect(await send(log, topic, producer, 0)).toMatchObject({ ok: true, info: { baseOffset: 0 } });
    const before = lambda.reads();
    expect(await send(log, topic, producer, 5)).toMatchObject({
      ok: false,
      error: { errorName: 'OUT_OF_ORDER_SEQUENCE_NUMBER' },
    });
    // Decided once, then again after each pause, each time on a state read afresh.
    expect(lambda.reads() - before).toBeGreaterThanOrEqual(SEQUENCE_GAP_WAITS_MS.length + 1);
    // Nothing was written for it: the next batch in sequence takes the next offset.
    expect(await send(log, topic, producer, 1)).toMatchObject({ ok: true, info: { baseOffset: 1 } });
    expect((await log.state(topic, 0)).highWatermark).toBe(2);
  });

  it('is refused at once, without a pause, when its epoch is fenced', async () => {
    const topic = await newTopic();
    const old = await producers.init();
    const lambda = countingStateReads(storage.metadata);
    const log = newLog(lambda.store, storage.stores);
    expect(await send(log, topic, old, 0)).toMatchObject({ ok: true });
    const bumped = await producers.init(old);
    expect(await send(log, topic, bumped, 0)).toMatchObject({ ok: true, info: { baseOffset: 1 } });
    const before = lambda.reads();
    // Sequence 3 of the old epoch would be a gap; the fence decides first.
    expect(await send(log, topic, old, 3)).toMatchObject({ ok: false, error: { errorName: 'INVALID_PRODUCER_EPOCH' } });
    expect(lambda.reads() - before).toBeLessThanOrEqual(2);
  });

  it('is refused at once when it overlaps the last batch (no earlier batch can fill that)', async () => {
    const topic = await newTopic();
    const producer = await producers.init();
    const lambda = countingStateReads(storage.metadata);
    const log = newLog(lambda.store, storage.stores);
    const batch = (seq: number, count: number) =>
      log
        .append(
          topic,
          Array.from({ length: 1 }, () => ({
            partition: 0,
            records: Array.from({ length: count }, (_, i) => rec(`r${seq + i}`)),
          })),
          { producer: { ...producer, baseSequences: new Map([[0, seq]]) } },
        )
        .then((r) => r.get(0)!);
    expect(await batch(0, 3)).toMatchObject({ ok: true });
    const before = lambda.reads();
    expect(await batch(2, 3)).toMatchObject({ ok: false, error: { errorName: 'OUT_OF_ORDER_SEQUENCE_NUMBER' } });
    expect(lambda.reads() - before).toBeLessThanOrEqual(2);
  });
});

describe('on a commit log, a batch that pauses for a sequence gap', () => {
  let storage: Storage;
  let stop: () => Promise<void>;
  beforeAll(async () => {
    ({ storage, stop } = await memoryBackend.start());
  });
  afterAll(() => stop());

  it("reads its shard's log once a decision: the read after a pause is the one its commit decides on", async () => {
    const topics = new TopicRegistry(storage.metadata, clock, storage.stores.length, {
      featureLevel: async () => COMMIT_LOG_LEVEL,
    });
    const topic = await topics.create({ name: 'gap-reads', partitionCount: 1, replicationFactor: 1 });
    expect(topic.clog).toBe(true);
    const producer = await new ProducerIds(storage.metadata).init();
    const lambda = countingStateReads(storage.metadata);
    const log = newLog(lambda.store, storage.stores);
    const send = (seq: number) =>
      log
        .append(topic, [{ partition: 0, records: [rec(`s${seq}`)] }], {
          producer: { ...producer, baseSequences: new Map([[0, seq]]) },
        })
        .then((r) => r.get(0)!);
    expect(await send(0)).toMatchObject({ ok: true });
    const before = lambda.reads();
    expect(await send(5)).toMatchObject({ ok: false, error: { errorName: 'OUT_OF_ORDER_SEQUENCE_NUMBER' } });
    // The read beside the PUT, the entries since once the PUT is done, then one read after each
    // pause, which the shard's commit decides on (it used to read the log again: two a pause).
    expect(lambda.reads() - before).toBe(SEQUENCE_GAP_WAITS_MS.length + 2);
    // A gap that fills while it pauses: committed on the read after the pause, in order.
    const late = send(2);
    await new Promise((r) => setTimeout(r, 15));
    expect(await send(1)).toMatchObject({ ok: true, info: { baseOffset: 1 } });
    expect(await late).toMatchObject({ ok: true, info: { baseOffset: 2 } });
  });

  it("reads the shard once a pause for all of a request's partitions that wait", async () => {
    const topics = new TopicRegistry(storage.metadata, clock, storage.stores.length, {
      featureLevel: async () => COMMIT_LOG_LEVEL,
    });
    const topic = await topics.create({ name: 'gap-reads-2', partitionCount: 2, replicationFactor: 1 });
    const producer = await new ProducerIds(storage.metadata).init();
    const request = (log: PartitionLog, seq: number) =>
      log.append(
        topic,
        [0, 1].map((p) => ({ partition: p, records: [rec(`p${p}s${seq}`)] })),
        {
          producer: {
            ...producer,
            baseSequences: new Map([
              [0, seq],
              [1, seq],
            ]),
          },
        },
      );
    const lambda = countingStateReads(storage.metadata);
    const log = newLog(lambda.store, storage.stores);
    for (const p of [0, 1]) expect((await request(log, 0)).get(p)).toMatchObject({ ok: true });
    const before = lambda.reads();
    const out = await request(log, 5);
    for (const p of [0, 1])
      expect(out.get(p)).toMatchObject({ ok: false, error: { errorName: 'OUT_OF_ORDER_SEQUENCE_NUMBER' } });
    // Both partitions' runs and their commit share one read a pause (a read for each run, and the
    // commit's own, took 17).
    expect(lambda.reads() - before).toBe(SEQUENCE_GAP_WAITS_MS.length + 2);
  });
});
