/**
 * Group commit: single-partition appends without a producer that arrive together are committed
 * as one (one object, one conditional state write, one index entry), each answered with its own
 * offsets, and the group fails or succeeds as one commit.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Storage } from '../../src/compose.js';
import type { PartitionLog, AppendOptions, AppendOutcome, PartitionAppend } from '../../src/log/partition-log.js';
import { validateProducedBatches } from '../../src/log/produced-batches.js';
import { INDEX_PREFIX, partitionPk, STATE_SK } from '../../src/storage/key-layout.js';
import { observeStorage, type StorageCall } from '../../src/storage/observed-stores.js';
import type { MetadataStore } from '../../src/storage/ports.js';
import { TopicRegistry, type Topic } from '../../src/topics/topics.js';
import { encodeRecordBatch } from '../../src/wire/record-batch.js';
import { allBackends } from '../support/backends.js';
import { FaultyMetadataStore, FaultyObjectStore } from '../support/fault-injection.js';
import { clock, newLog, rec } from '../support/partition-logs.js';
import { readBatches, readRecords } from '../support/read-records.js';

const text = (b: Uint8Array | null) => (b === null ? null : Buffer.from(b).toString());
const isData = (key: string) => key.startsWith('data/');

/**
 * Member i's values: `${tag}${i}-0`, ... (1 to 3 records); every other member as a record batch
 * the producer encoded, whose offsets are relative to its own request.
 */
function members(tag: string, count: number): { values: string[]; append: PartitionAppend }[] {
  return Array.from({ length: count }, (_, i) => {
    const values = Array.from({ length: (i % 3) + 1 }, (_, j) => `${tag}${i}-${j}`);
    const records = values.map(rec);
    const append: PartitionAppend =
      i % 2 === 0
        ? { partition: 0, records }
        : {
            partition: 0,
            batches: validateProducedBatches(encodeRecordBatch(records), {
              maxMessageBytes: 1_000_000,
              requireKeys: false,
            }),
          };
    return { values, append };
  });
}

/** Appends every member at once, as requests read in one turn of the event loop. */
async function appendTogether(
  log: PartitionLog,
  topic: Topic,
  group: { append: PartitionAppend }[],
  options: AppendOptions = {},
): Promise<AppendOutcome[]> {
  const outs = await Promise.all(group.map((m) => log.append(topic, [m.append], options)));
  return outs.map((o) => o.get(0)!);
}

const indexEntries = (metadata: MetadataStore, topic: Topic) =>
  metadata.query(partitionPk(topic.name, 0), { beginsWith: INDEX_PREFIX });

/** Each member's values at the offsets it was answered with, the offsets contiguous from `from`, nothing else. */
async function expectAnsweredAndRead(
  log: PartitionLog,
  topic: Topic,
  group: { values: string[] }[],
  outs: AppendOutcome[],
  from: number,
) {
  const infos = outs.map((o) => {
    if (!o.ok) throw o.error;
    return o.info;
  });
  infos.forEach((info, i) => expect(info.lastOffset - info.baseOffset + 1).toBe(group[i]!.values.length));
  const sorted = [...infos].sort((a, b) => a.baseOffset - b.baseOffset);
  expect(sorted[0]!.baseOffset).toBe(from);
  for (let i = 1; i < sorted.length; i++) expect(sorted[i]!.baseOffset).toBe(sorted[i - 1]!.lastOffset + 1);
  const total = group.reduce((n, m) => n + m.values.length, 0);
  const read = await readRecords(log, topic, 0, from, 1 << 24);
  expect(read.records.map((r) => r.offset)).toEqual(Array.from({ length: total }, (_, i) => from + i));
  const byOffset = new Map(read.records.map((r) => [r.offset, text(r.value)]));
  infos.forEach((info, i) => group[i]!.values.forEach((v, j) => expect(byOffset.get(info.baseOffset + j)).toBe(v)));
  // The record-batch fetch answers the same offsets (the stored base offsets are the group's).
  const batches = await readBatches(log, topic, 0, from, 1 << 24);
  expect(batches).toMatchObject({ recordCount: total, nextOffset: from + total });
}

describe.each(allBackends)('group commit on $name', (backend) => {
  let storage: Storage;
  let stop: () => Promise<void>;
  let topics: TopicRegistry;
  let n = 0;
  const newTopic = (replicationFactor = 1) =>
    topics.create({ name: `g${n++}`, partitionCount: 1, replicationFactor, configs: {} });

  /** A log over the backend's stores whose every storage call is kept, and its data object puts counted. */
  const observedLog = () => {
    const calls: StorageCall[] = [];
    const observed = observeStorage(storage, (c) => calls.push(c));
    const objectPuts = () => calls.filter((c) => c.op === 'PutObject' && isData(c.key)).length;
    return { calls, log: newLog(observed.metadata, observed.stores), objectPuts };
  };

  beforeAll(async () => {
    ({ storage, stop } = await backend.start(2));
    topics = new TopicRegistry(storage.metadata, clock, storage.stores.length);
  });
  afterAll(() => stop());

  it('commits appends that arrive together as one object, one state write and one index entry, each answered with its own offsets', async () => {
    const { calls, log, objectPuts } = observedLog();
    const topic = await newTopic();
    const group = members('m', 8);
    calls.length = 0;
    const outs = await appendTogether(log, topic, group);
    const stateWrites = calls.filter(
      (c) => c.op === 'UpdateItem' && c.sk === STATE_SK && c.pk === partitionPk(topic.name, 0) && !c.conditionFailed,
    );
    expect(objectPuts()).toBe(1);
    expect(stateWrites).toHaveLength(1);
    expect(await indexEntries(storage.metadata, topic)).toHaveLength(1);
    await expectAnsweredAndRead(log, topic, group, outs, 0);
  });

  it("keeps appends made under another version of the topic's configs out of each other's group", async () => {
    const { calls, log, objectPuts } = observedLog();
    const topic = await newTopic();
    calls.length = 0;
    // As a request that read the topic after `message.timestamp.type` was altered would see it.
    const altered: Topic = { ...topic, version: topic.version + 1, config: { ...topic.config, logAppendTime: true } };
    const [plain, stamped] = members('v', 2);
    const [a, b] = await Promise.all([
      log.append(topic, [plain!.append]).then((o) => o.get(0)!),
      log.append(altered, [stamped!.append]).then((o) => o.get(0)!),
    ]);
    if (!a!.ok || !b!.ok) throw new Error('an append failed');
    expect(a.info.logAppendTime).toBe(-1);
    expect(b.info.logAppendTime).toBeGreaterThan(0);
    expect(objectPuts()).toBe(2);
  });

  it('commits acks=0 appends that arrive together as one, after their answers', async () => {
    const { log, objectPuts } = observedLog();
    const topic = await newTopic();
    const group = members('fire', 6);
    const outs = await appendTogether(log, topic, group, { acks: 0 });
    expect(outs.every((o) => o.ok && o.info.baseOffset === -1)).toBe(true);
    await log.idle();
    expect(objectPuts()).toBe(1);
    const read = await readRecords(log, topic, 0, 0, 1 << 24);
    expect(read.records.map((r) => text(r.value)).sort()).toEqual(group.flatMap((m) => m.values).sort());
  });

  it('starts a new group where a member would pass 64 KiB or 256 members', async () => {
    const { calls, log, objectPuts } = observedLog();
    const topic = await newTopic();
    // Two of 30,000 bytes share a group; the third would pass 64 KiB and starts another.
    const large = ['x', 'y', 'z'].map((v) => ({
      values: [v.repeat(30_000)],
      append: { partition: 0, records: [rec(v.repeat(30_000))] },
    }));
    await expectAnsweredAndRead(log, topic, large, await appendTogether(log, topic, large), 0);
    expect(objectPuts()).toBe(2);
    const many = members('many', 260).map((m) => ({
      values: m.values.slice(0, 1),
      append: { partition: 0, records: [rec(m.values[0]!)] },
    }));
    calls.length = 0;
    await expectAnsweredAndRead(log, topic, many, await appendTogether(log, topic, many), 3);
    expect(objectPuts()).toBe(2);
  });

  it("writes the object of a request of 64 KiB or more at once, not behind a slow group's", async () => {
    const stores = storage.stores.map((s) => new FaultyObjectStore(s));
    const log = newLog(storage.metadata, stores);
    const topic = await newTopic();
    const slow = stores[0]!.faults.gate('put', isData); // an S3 PUT that takes its time
    const first = log.append(topic, [{ partition: 0, records: [rec('a'.repeat(70_000))] }]);
    await slow.reached;
    const second = stores[0]!.faults.gate('put', isData);
    const next = log.append(topic, [{ partition: 0, records: [rec('b'.repeat(70_000))] }]);
    await second.reached; // written alongside the first, as without groups
    second.release();
    slow.release();
    const outs = [(await first).get(0)!, (await next).get(0)!];
    expect(outs.map((o) => o.ok && o.info.baseOffset).sort()).toEqual([0, 1]);
  });

  it('recognises a group whose state write applied and whose answer was lost, once, by its token', async () => {
    // With putAll the fault takes the state and its index entry together (SQLite).
    const metadata = new FaultyMetadataStore(storage.metadata, { putAll: storage.metadata.putAll !== undefined });
    const log = newLog(metadata, storage.stores);
    const topic = await newTopic();
    expect((await log.append(topic, [{ partition: 0, records: [rec('first')] }])).get(0)).toMatchObject({ ok: true });
    metadata.faults.fail('put', { when: 'retried', match: (k) => k === `${partitionPk(topic.name, 0)}|${STATE_SK}` });
    const group = members('lost', 5);
    const outs = await appendTogether(log, topic, group);
    expect(metadata.faults.injected).toBe(1);
    expect(await indexEntries(storage.metadata, topic)).toHaveLength(2);
    await expectAnsweredAndRead(newLog(storage.metadata, storage.stores), topic, group, outs, 1);
    expect((await log.state(topic, 0)).highWatermark).toBe(1 + group.reduce((k, m) => k + m.values.length, 0));
  });

  it('answers a group whose index write was lost, and repairs its one entry on read', async () => {
    // Without putAll, so that the index entry is a write of its own on every backend.
    const metadata = new FaultyMetadataStore(storage.metadata);
    const log = newLog(metadata, storage.stores);
    const topic = await newTopic();
    metadata.faults.fail('put', { match: (k) => k.startsWith(`${partitionPk(topic.name, 0)}|${INDEX_PREFIX}`) });
    const group = members('unindexed', 4);
    const outs = await appendTogether(log, topic, group);
    expect(metadata.faults.injected).toBe(1);
    expect(await indexEntries(storage.metadata, topic)).toHaveLength(0);
    await expectAnsweredAndRead(newLog(storage.metadata, storage.stores), topic, group, outs, 0);
    expect(await indexEntries(storage.metadata, topic)).toHaveLength(1);
  });

  it('shrinks the ISR once for a group whose object write failed on a follower, and answers every member', async () => {
    const stores = storage.stores.map((s) => new FaultyObjectStore(s));
    let shrinks = 0;
    const log = newLog(storage.metadata, stores, {
      add: (name, k) => void (name === 'IsrShrinks' && (shrinks += k)),
      gauge: () => {},
    });
    const topic = await newTopic(2);
    stores[1]!.faults.fail('put', { match: isData });
    const group = members('shrunk', 4);
    const outs = await appendTogether(log, topic, group, { acks: 'all' });
    expect(stores[1]!.faults.injected).toBe(1);
    expect(shrinks).toBe(1);
    expect(await log.state(topic, 0)).toMatchObject({ isr: [0], highWatermark: 7 }); // 1 + 2 + 3 + 1 records
    expect(await indexEntries(storage.metadata, topic)).toHaveLength(1);
    await expectAnsweredAndRead(log, topic, group, outs, 0);
  });

  it("fails every member with the same retriable error when the group's object write fails, and leaves nothing readable", async () => {
    const stores = storage.stores.map((s) => new FaultyObjectStore(s));
    const log = newLog(storage.metadata, stores);
    const topic = await newTopic();
    stores[0]!.faults.fail('put', { match: isData });
    const outs = await appendTogether(log, topic, members('failed', 4));
    expect(stores[0]!.faults.injected).toBe(1);
    // The leader's store took nothing: the answer a Kafka producer retries.
    expect(outs.map((o) => !o.ok && [o.error.errorName, o.error.retriable])).toEqual(
      Array(4).fill(['NOT_LEADER_OR_FOLLOWER', true]),
    );
    const state = await log.state(topic, 0);
    expect(state.highWatermark).toBe(0);
    expect((await readRecords(log, topic, 0, 0, 1 << 20)).records).toEqual([]);
    // The producers' retry commits them, once.
    const retry = members('retried', 4);
    await expectAnsweredAndRead(log, topic, retry, await appendTogether(log, topic, retry), 0);
  });

  it('answers acks=all members only once the high watermark covers the group, and REQUEST_TIMED_OUT while it cannot', async () => {
    const stores = storage.stores.map((s) => new FaultyObjectStore(s));
    const log = newLog(storage.metadata, stores);
    const topic = await newTopic(2);
    const first = members('w', 1);
    await expectAnsweredAndRead(log, topic, first, await appendTogether(log, topic, first, { acks: 'all' }), 0);
    // An acks=1 copy to the follower that never lands (its process stopped), and a catch-up copy
    // that fails: the follower stays in sync, with a hole, so the HW cannot move past offset 1.
    const held = stores[1]!.faults.gate('put', isData);
    expect((await log.append(topic, [{ partition: 0, records: [rec('a')] }], { acks: 1 })).get(0)).toMatchObject({
      ok: true,
      info: { baseOffset: 1 },
    });
    await held.reached;
    stores[1]!.faults.fail('head', { times: 10, match: isData });
    const outs = await appendTogether(log, topic, members('b', 4), { acks: 'all' });
    expect(outs.map((o) => (o.ok ? 'ok' : o.error.errorName))).toEqual(Array(4).fill('REQUEST_TIMED_OUT'));
    expect(await indexEntries(storage.metadata, topic)).toHaveLength(3);
    expect(await log.state(topic, 0)).toMatchObject({ isr: [0, 1], highWatermark: 1 });
    held.release();
    await log.idle();
    stores[1]!.faults.clear();
    // Caught up: the next group's members are answered with the HW past all of them.
    const next = members('c', 4);
    const answered = await appendTogether(log, topic, next, { acks: 'all' });
    const hw = (await log.state(topic, 0)).highWatermark;
    for (const o of answered) expect(o.ok && o.info.lastOffset < hw).toBe(true);
  });
});
