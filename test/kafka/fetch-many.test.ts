/**
 * Fetch reads all the request's partitions in one call of the reader (readBatchesMany): an object
 * holding several of them is read once, and Kafka's rules hold across them: each partition's max
 * bytes, the request's max bytes with only the first partition with data past it (KIP-74), an
 * error answering its partition alone.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createStorage } from '../../src/compose.js';
import * as m from '../../src/kafka/protocol/messages/index.js';
import type { ByteRange } from '../../src/storage/ports.js';
import { ERRORS } from '../../src/wire/errors.js';
import { decodeRecordBatches } from '../../src/wire/record-batch.js';
import { FaultyObjectStore } from '../support/fault-injection.js';
import { startKafkaServer, type TestKafkaServer } from './support/kafka-server.js';
import { fetchPartition, fetchRequest, RawClient } from './support/raw-client.js';

/** A replica store that counts its GETs. */
class CountingStore extends FaultyObjectStore {
  gets = 0;
  override get(key: string, range?: ByteRange) {
    this.gets++;
    return super.get(key, range);
  }
}

let s: TestKafkaServer;
let c: RawClient;
let stores: CountingStore[];
beforeAll(async () => {
  s = await startKafkaServer({}, {}, (config) => {
    const storage = createStorage(config.backend);
    stores = storage.stores.map((x) => new CountingStore(x));
    return { ...storage, stores };
  });
  await s.services.topics.create({ name: 'many', partitionCount: 3, replicationFactor: 1 });
  // One produce request: partitions 0 and 1 in one object, one batch each.
  const res = await fetch(`${s.http}/topics/many/records:batch`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      entries: [0, 1].map((p) => ({ id: String(p), partition_id: p, value: { type: 'STRING', data: `p${p}` } })),
    }),
  });
  expect(res.status).toBe(207);
  c = await RawClient.open(s.broker);
});
afterAll(async () => {
  c?.close();
  await s?.close();
});

const values = (records: Uint8Array | null) =>
  decodeRecordBatches(records ?? new Uint8Array(0)).flatMap((b) =>
    b.records.map((r) => Buffer.from(r.value!).toString()),
  );

const fetchMany = async (partitions: ReturnType<typeof fetchPartition>[], fields: Record<string, unknown> = {}) =>
  (await c.request(m.Fetch, 11, fetchRequest([{ topic: 'many', partitions }], fields))).body.responses[0]
    .partitions as { partitionIndex: number; errorCode: number; highWatermark: number; records: Uint8Array | null }[];

describe('Fetch over many partitions', () => {
  it('reads an object shared by the partitions once', async () => {
    const before = stores.reduce((n, x) => n + x.gets, 0);
    const answer = await fetchMany([fetchPartition(0), fetchPartition(1), fetchPartition(2)]);
    expect(answer.map((p) => [p.partitionIndex, p.errorCode, p.highWatermark, values(p.records)])).toEqual([
      [0, 0, 1, ['p0']],
      [1, 0, 1, ['p1']],
      [2, 0, 0, []],
    ]);
    expect(stores.reduce((n, x) => n + x.gets, 0) - before).toBe(1);
  });

  it("keeps to the request's max bytes: the first partition with data whole, nothing past it after", async () => {
    const answer = await fetchMany([fetchPartition(2), fetchPartition(0), fetchPartition(1)], { maxBytes: 1 });
    expect(answer.map((p) => [p.partitionIndex, p.errorCode, values(p.records)])).toEqual([
      [2, 0, []],
      [0, 0, ['p0']], // over max bytes, but the first with data: a consumer always progresses (KIP-74)
      [1, 0, []],
    ]);
  });

  it("keeps to a partition's max bytes past the first partition with data", async () => {
    const answer = await fetchMany([fetchPartition(0), fetchPartition(1, 0, 1)]);
    expect(answer.map((p) => values(p.records))).toEqual([['p0'], []]);
  });

  it('answers an error for its partition alone, at once, whatever the wait', async () => {
    const answer = await fetchMany([fetchPartition(0, 5), fetchPartition(1), fetchPartition(7)], {
      maxWaitMs: 10_000,
      minBytes: 1 << 20,
    });
    expect(answer.map((p) => [p.partitionIndex, p.errorCode, values(p.records)])).toEqual([
      [0, ERRORS.OFFSET_OUT_OF_RANGE.code, []],
      [1, 0, ['p1']],
      [7, ERRORS.UNKNOWN_TOPIC_OR_PARTITION.code, []],
    ]);
  });

  it('reads a partition named twice once, its repeat without records', async () => {
    const answer = await fetchMany([fetchPartition(0), fetchPartition(0)]);
    expect(answer.map((p) => [p.partitionIndex, p.errorCode, p.highWatermark, values(p.records)])).toEqual([
      [0, 0, 1, ['p0']],
      [0, 0, 1, []],
    ]);
  });
});
