/**
 * Finding 1 of issue 12: a partition-state write that applied, whose answer was lost and which the
 * SDK retried, fails its condition against its own write. It must be taken as the success it is,
 * not as a lost race that commits the same object range again at new offsets.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PartitionLog } from '../../src/log/partition-log.js';
import { STATE_SK } from '../../src/storage/key-layout.js';
import type { LogRecord } from '../../src/wire/record-batch.js';
import { TopicRegistry } from '../../src/topics/topics.js';
import { DynamoDbMetadataStore } from '../../src/storage/dynamodb-metadata-store.js';
import type { MetadataStore, ObjectStore } from '../../src/storage/ports.js';
import { localBackend, memoryBackend } from '../support/backends.js';
import { installAnswerDropper, type AnswerDropper } from '../support/dynamodb-faults.js';
import { createDynamoDbClient } from '../../src/storage/dynamodb-metadata-store.js';
import { dynamoDbClientOptions, startDynalite, type DynaliteHandle } from '../support/emulators.js';
import { FaultyMetadataStore } from '../support/fault-injection.js';
import { MemoryObjectStore } from '../../src/storage/memory-object-store.js';
import { clock, newLog } from '../support/partition-logs.js';
import { readRecords } from '../support/read-records.js';

const rec = (value: string): LogRecord => ({
  key: null,
  value: Buffer.from(value),
  headers: [],
  timestamp: 1_700_000_000_000,
});

/** Produces 'first', then 'second' with its state write's answer lost once; checks the log and the answer. */
async function produceThroughLostAnswer(
  metadata: MetadataStore,
  stores: ObjectStore[],
  loseNextStateAnswer: () => void,
) {
  const topics = new TopicRegistry(metadata, clock, stores.length);
  const topic = await topics.create({
    name: `t-${Math.random().toString(36).slice(2)}`,
    partitionCount: 1,
    replicationFactor: 1,
  });
  const log = newLog(metadata, stores);
  const first = (await log.append(topic, [{ partition: 0, records: [rec('first')] }])).get(0)!;
  expect(first).toMatchObject({ ok: true, info: { baseOffset: 0 } });
  loseNextStateAnswer();
  const second = (await log.append(topic, [{ partition: 0, records: [rec('second')] }])).get(0)!;
  const read = await readRecords(newLog(metadata, stores), topic, 0, 0, 1 << 20);
  expect(read.records.map((r) => [r.offset, Buffer.from(r.value!).toString()])).toEqual([
    [0, 'first'],
    [1, 'second'],
  ]);
  expect(read.highWatermark).toBe(2);
  expect(second).toMatchObject({ ok: true, info: { baseOffset: 1, lastOffset: 1 } });
}

describe('a partition commit whose answer was lost and which the SDK retried', () => {
  let ddb: DynaliteHandle;
  beforeAll(async () => {
    ddb = await startDynalite();
  });
  afterAll(() => ddb.stop());

  it('is committed once on the DynamoDB adapter (dynalite, answer dropped under the SDK retry)', async () => {
    const client = createDynamoDbClient(dynamoDbClientOptions(ddb.endpoint));
    const dropper: AnswerDropper = installAnswerDropper(client);
    try {
      const metadata = new DynamoDbMetadataStore({ table: ddb.table, client });
      await produceThroughLostAnswer(metadata, [new MemoryObjectStore()], () =>
        dropper.drop({ command: 'UpdateItemCommand', match: (k) => k.pk.startsWith('part#') && k.sk === STATE_SK }),
      );
      expect(dropper.dropped).toBe(1);
    } finally {
      client.destroy();
    }
  });

  it('the DynamoDB adapter tells a failed condition of a retried request from a plain lost race', async () => {
    const client = createDynamoDbClient(dynamoDbClientOptions(ddb.endpoint));
    const dropper = installAnswerDropper(client);
    try {
      const metadata = new DynamoDbMetadataStore({ table: ddb.table, client });
      await metadata.put('flag', 'x', 1, { ifAbsent: true });
      const plain = await metadata.put('flag', 'x', 2, { ifVersion: 7 }).catch((e: unknown) => e);
      expect(plain).toMatchObject({ name: 'ConditionFailedError', retried: false });
      dropper.drop({ command: 'UpdateItemCommand', match: (k) => k.pk === 'flag' });
      const repeat = await metadata.put('flag', 'x', 3, { ifVersion: 1 }).catch((e: unknown) => e);
      expect(repeat).toMatchObject({ name: 'ConditionFailedError', retried: true, current: { version: 2, value: 3 } });
    } finally {
      client.destroy();
    }
  });

  // With putAll the index entry is written in the state's own write (SQLite); the fault then
  // takes both, and the repeat that fails against them is recognised the same way.
  for (const backend of [memoryBackend, localBackend])
    for (const putAll of backend === localBackend ? [false, true] : [false]) {
      it(`is committed once on ${backend.name} (the write applied, then sent again${putAll ? '; state and index entry in one write' : ''})`, async () => {
        const { storage, stop } = await backend.start();
        try {
          const metadata = new FaultyMetadataStore(storage.metadata, { putAll });
          await produceThroughLostAnswer(metadata, storage.stores, () =>
            metadata.faults.fail('put', {
              when: 'retried',
              match: (k) => k.startsWith('part#') && k.endsWith(`|${STATE_SK}`),
            }),
          );
          expect(metadata.faults.injected).toBe(1);
        } finally {
          await stop();
        }
      });
    }

  it('is recognised behind commits of other writers that landed before the repeat, by its token or (past eight) by its index entry', async () => {
    const { storage, stop } = await memoryBackend.start();
    try {
      const metadata = new FaultyMetadataStore(storage.metadata);
      const topics = new TopicRegistry(storage.metadata, clock, 1);
      const topic = await topics.create({ name: 'behind', partitionCount: 1, replicationFactor: 1 });
      const mine = newLog(metadata, storage.stores);
      const other = newLog(storage.metadata, storage.stores);
      const appendBy = async (log: PartitionLog, value: string) =>
        (await log.append(topic, [{ partition: 0, records: [rec(value)] }])).get(0)!;
      const isState = (k: string) => k.endsWith(`|${STATE_SK}`);
      metadata.faults.fail('put', {
        when: 'retried',
        match: isState,
        between: async () => void (await appendBy(other, 'other')),
      });
      expect(await appendBy(mine, 'mine')).toMatchObject({ ok: true, info: { baseOffset: 0 } });
      metadata.faults.fail('put', {
        when: 'retried',
        match: isState,
        between: async () => {
          for (let i = 0; i < 8; i++) await appendBy(other, `other-${i}`);
        },
      });
      // Eight commits on top rotate its token out; the first of them wrote its index entry.
      expect(await appendBy(mine, 'behind-eight')).toMatchObject({ ok: true, info: { baseOffset: 2 } });
      const read = await readRecords(newLog(storage.metadata, storage.stores), topic, 0, 0, 1 << 20);
      const values = read.records.map((r) => Buffer.from(r.value!).toString());
      expect(values).toEqual(['mine', 'other', 'behind-eight', ...Array.from({ length: 8 }, (_, i) => `other-${i}`)]);
    } finally {
      await stop();
    }
  });
});
