/**
 * Finding 2 of issue 12: an acknowledged offset below the HW that no fetch returned. After an
 * election truncated the log, a new-epoch commit reused a base offset another process had indexed in
 * the old epoch; that commit's index write was lost, and the other process, whose in-memory note was
 * keyed by base offset only, skipped the repair and moved the last-commit pointer on.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { isKafkaError } from '../../src/wire/errors.js';
import type { PartitionLog } from '../../src/log/partition-log.js';
import { runMaintenance } from '../../src/maintenance/scheduler.js';
import { indexSk, partitionPk } from '../../src/storage/key-layout.js';
import { TopicRegistry, type Topic } from '../../src/topics/topics.js';
import { allBackends } from '../support/backends.js';
import { FaultyMetadataStore, FaultyObjectStore } from '../support/fault-injection.js';
import { clock, newLog, rec } from '../support/partition-logs.js';
import { readRecords } from '../support/read-records.js';
import { eventLogger } from '../support/event-logger.js';

describe.each(allBackends)('index repair across a leader epoch change on $name', (backend) => {
  let stop: () => Promise<void>;
  let stores: FaultyObjectStore[];
  let metaA: FaultyMetadataStore;
  let metaB: FaultyMetadataStore;
  let a: PartitionLog;
  let b: PartitionLog;
  let topic: Topic;

  beforeEach(async () => {
    const started = await backend.start(2);
    stop = started.stop;
    stores = started.storage.stores.map((s) => new FaultyObjectStore(s));
    // Two processes: nothing in memory is shared, only the stores.
    metaA = new FaultyMetadataStore(started.storage.metadata);
    metaB = new FaultyMetadataStore(started.storage.metadata);
    a = newLog(metaA, stores);
    b = newLog(metaB, stores);
    const topics = new TopicRegistry(started.storage.metadata, clock, 2);
    topic = await topics.create({
      name: 'trunc',
      partitionCount: 1,
      replicationFactor: 2,
      configs: { 'unclean.leader.election.enable': 'true' },
    });
  });
  afterEach(async () => {
    await Promise.all([a.idle(), b.idle()]);
    await stop();
  });

  const append = async (log: PartitionLog, value: string, acks: 1 | 'all') => {
    const out = (await log.append(topic, [{ partition: 0, records: [rec(value)] }], { acks })).get(0)!;
    if (!out.ok) throw out.error;
    await log.idle();
    return out.info.baseOffset;
  };
  const readAll = async (log: PartitionLog) => {
    const values: [number, string][] = [];
    const { highWatermark } = await log.state(topic, 0);
    for (let offset = 0; offset < highWatermark; ) {
      const r = await readRecords(log, topic, 0, offset, 1 << 20);
      if (r.nextOffset === offset) break;
      values.push(...r.records.map((x): [number, string] => [x.offset, Buffer.from(x.value!).toString()]));
      offset = r.nextOffset;
    }
    return { values, highWatermark };
  };

  it('writes the new-epoch entry at a reused base offset, so every offset below the HW is fetched', async () => {
    expect(await append(b, 'a', 'all')).toBe(0);
    stores[1]!.faults.down = true;
    expect(await append(b, 'lost', 1)).toBe(1); // epoch 0, on store 0 only: B indexed base offset 1
    stores[1]!.faults.down = false;
    stores[0]!.faults.down = true;
    // A elects store 1 (unclean: it left the ISR), truncating offset 1, and commits there in epoch 1;
    // its index write is lost.
    metaA.faults.fail('put', { match: (k) => k === `${partitionPk('trunc', 0)}|${indexSk(1)}` });
    expect(await append(a, 'b', 1)).toBe(1);
    expect(metaA.faults.injected).toBe(1);
    expect(await append(b, 'c', 1)).toBe(2);
    const read = await readAll(newLog(metaB, stores));
    expect(read).toEqual({
      values: [
        [0, 'a'],
        [1, 'b'],
        [2, 'c'],
      ],
      highWatermark: 3,
    });
  });

  it('fails loudly, never with a silent empty answer, when an entry below the HW is missing', async () => {
    for (const v of ['a', 'b', 'c']) await append(b, v, 'all');
    await metaB.delete(partitionPk('trunc', 0), indexSk(1));
    const read = readRecords(b, topic, 0, 1, 1 << 20);
    await expect(read).rejects.toSatisfy(
      (e) => isKafkaError(e, 'KAFKA_STORAGE_ERROR') && /offset 1/.test((e as Error).message),
    );
    // What lies before the gap is still served, up to the gap.
    expect((await readRecords(b, topic, 0, 0, 1 << 20)).records.map((r) => r.offset)).toEqual([0]);
    // A maintenance pass reports it as an error and rewrites nothing around it.
    const events: Record<string, unknown>[] = [];
    const report = await runMaintenance({
      storage: { metadata: metaB, stores },
      clock,
      deadline: Date.now() + 60_000,
      partitionLog: b,
      topics: new TopicRegistry(metaB, clock, 2),
      logger: eventLogger(events),
    });
    expect(report).toMatchObject({ indexGaps: 1 });
    expect(events).toContainEqual(expect.objectContaining({ level: 'error', topic: 'trunc', partition: 0, offset: 1 }));
  });
});
