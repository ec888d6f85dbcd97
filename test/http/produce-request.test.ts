/**
 * The multi-partition produce (`POST /v3/clusters/{c}/records`, Kafka's ProduceRequest topic_data)
 * on the three backends: one object per topic per request, answers per partition with partial
 * failures, and idempotent resends across partitions appended exactly once under injected faults.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RECENT_FULL } from '../../src/partition/producer-state.js';
import { encodeTopicData, PRODUCE_REQUEST_MEDIA_TYPE, type TopicData } from '../../src/wire/produce-request.js';
import { clogPk } from '../../src/storage/key-layout.js';
import { decodeRecordBatches, encodeRecordBatch, type EncodeBatchOptions } from '../../src/wire/record-batch.js';
import { RECORD_BATCH_MEDIA_TYPE } from '../../src/http/record-batch-body.js';
import { allBackends } from '../support/backends.js';
import { FaultyMetadataStore } from '../support/fault-injection.js';
import { BASE, testApp } from '../support/test-app.js';

const batch = (values: string[], options: EncodeBatchOptions = {}) =>
  encodeRecordBatch(
    values.map((v) => ({ key: null, value: Buffer.from(v), headers: [], timestamp: Date.now() })),
    { partitionLeaderEpoch: -1, ...options },
  );

interface PartitionAnswer {
  index: number;
  error_code: number;
  error?: string;
  base_offset: number;
  last_offset: number;
  duplicate?: boolean;
}

describe.each(allBackends)('multi-partition produce on $name', (backend) => {
  let stop: () => Promise<void>;
  let t: ReturnType<typeof testApp>;
  let metadata: FaultyMetadataStore;

  beforeAll(async () => {
    const started = await backend.start();
    stop = started.stop;
    metadata = new FaultyMetadataStore(started.storage.metadata);
    t = testApp({ storage: { ...started.storage, metadata } });
  }, 30_000);
  afterAll(() => stop());

  const produce = async (topics: TopicData[], query = '') => {
    const res = await t.app.request(`${BASE}/records${query}`, {
      method: 'POST',
      headers: { 'content-type': PRODUCE_REQUEST_MEDIA_TYPE },
      body: encodeTopicData(topics),
    });
    const body = (await res.json()) as { responses: { name: string; partition_responses: PartitionAnswer[] }[] };
    return {
      status: res.status,
      body,
      of: (topic: string, p: number) =>
        body.responses.find((r) => r.name === topic)!.partition_responses.find((r) => r.index === p)!,
    };
  };
  const values = async (topic: string, p: number) => {
    const res = await t.app.request(`${BASE}/topics/${topic}/partitions/${p}/records?offset=0`, {
      headers: { accept: RECORD_BATCH_MEDIA_TYPE },
    });
    expect(res.status).toBe(200);
    return decodeRecordBatches(new Uint8Array(await res.arrayBuffer())).flatMap((b) =>
      b.records.map((r) => Buffer.from(r.value!).toString()),
    );
  };
  const objectsOf = async (topic: string) => {
    const meta = (await t.storage.metadata.get<{ id: string }>('cluster', `topic#${topic}`))!.value;
    return (await t.storage.stores[0]!.list(`data/${meta.id}/`)).objects.length;
  };

  it('stores each topic of a request as one object and answers per partition; failed partitions do not fail the others', async () => {
    expect((await t.call('POST', 'topics', { topic_name: 'a', partitions_count: 3 })).status).toBe(201);
    expect((await t.call('POST', 'topics', { topic_name: 'b', partitions_count: 2 })).status).toBe(201);
    const corrupt = batch(['x']);
    corrupt[corrupt.byteLength - 1]! ^= 0xff;
    const r = await produce([
      {
        name: 'a',
        partitions: [
          { index: 0, records: batch(['a0-0', 'a0-1']) },
          { index: 2, records: batch(['a2-0']) },
          { index: 7, records: batch(['no']) },
        ],
      },
      {
        name: 'b',
        partitions: [
          { index: 1, records: batch(['b1-0']) },
          { index: 0, records: corrupt },
        ],
      },
      { name: 'nope', partitions: [{ index: 0, records: batch(['no']) }] },
    ]);
    expect(r.status).toBe(200);
    expect(r.of('a', 0)).toMatchObject({ error_code: 0, base_offset: 0, last_offset: 1 });
    expect(r.of('a', 2)).toMatchObject({ error_code: 0, base_offset: 0, last_offset: 0 });
    expect(r.of('a', 7)).toMatchObject({ error_code: 3, error: 'UNKNOWN_TOPIC_OR_PARTITION', base_offset: -1 });
    expect(r.of('b', 1)).toMatchObject({ error_code: 0, base_offset: 0 });
    expect(r.of('b', 0)).toMatchObject({ error_code: 2, error: 'CORRUPT_MESSAGE' });
    expect(r.of('nope', 0)).toMatchObject({ error_code: 3, error: 'UNKNOWN_TOPIC_OR_PARTITION' });
    // The answer lists partitions in the request's order.
    expect(r.body.responses.map((t) => [t.name, t.partition_responses.map((p) => p.index)])).toEqual([
      ['a', [0, 2, 7]],
      ['b', [1, 0]],
      ['nope', [0]],
    ]);
    expect(await values('a', 0)).toEqual(['a0-0', 'a0-1']);
    expect(await values('a', 2)).toEqual(['a2-0']);
    expect(await values('b', 1)).toEqual(['b1-0']);
    expect(await objectsOf('a')).toBe(1); // two partitions, one PUT
    expect(await objectsOf('b')).toBe(1);
  });

  it('refuses a malformed body, a partition named twice and another media type as a whole, writing nothing', async () => {
    const bad = await t.app.request(`${BASE}/records`, {
      method: 'POST',
      headers: { 'content-type': PRODUCE_REQUEST_MEDIA_TYPE },
      body: new Uint8Array([0, 0, 0, 1, 0]),
    });
    expect(bad.status).toBe(400);
    expect(await bad.json()).toMatchObject({ error: 'INVALID_REQUEST' });
    const twice = await produce([
      {
        name: 'a',
        partitions: [
          { index: 1, records: batch(['x']) },
          { index: 1, records: batch(['y']) },
        ],
      },
    ]);
    expect(twice.status).toBe(400);
    const json = await t.app.request(`${BASE}/records`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{}',
    });
    expect(json.status).toBe(415);
    expect(await values('a', 1)).toEqual([]);
  });

  it('an idempotent request resent after a failed and an ambiguous commit is appended exactly once in every partition', async () => {
    expect((await t.call('POST', 'topics', { topic_name: 'idem', partitions_count: 3 })).status).toBe(201);
    const { body: id } = await t.call('POST', 'producers:init', {});
    const producer = { producerId: id.producer_id as number, producerEpoch: id.producer_epoch as number };
    const request = (seq: number, tag: string): TopicData[] => [
      {
        name: 'idem',
        partitions: [0, 1, 2].map((p) => ({
          index: p,
          records: batch([`${tag}-${p}-a`, `${tag}-${p}-b`], { ...producer, baseSequence: seq }),
        })),
      },
    ];
    // The topic commits a request's partitions in one entry of its shard's log (feature level 9):
    // the first request's entry fails before it lands, the second's lands but its answer is lost.
    const entry = (k: string) => k.startsWith(`${clogPk('idem', 0)}|e#`);
    metadata.faults.fail('put', { when: 'before', match: entry });
    const first = await produce(request(0, 'r1'));
    for (const p of [0, 1, 2]) expect(first.of('idem', p).error_code).not.toBe(0);
    // The producer resends the request as it was (same sequences).
    const again = await produce(request(0, 'r1'));
    for (const p of [0, 1, 2]) {
      expect(again.of('idem', p)).toMatchObject({ error_code: 0, base_offset: 0, last_offset: 1 });
      expect(again.of('idem', p).duplicate).toBeUndefined();
    }
    metadata.faults.fail('put', { when: 'after', match: entry });
    const lost = await produce(request(2, 'r2'));
    for (const p of [0, 1, 2]) expect(lost.of('idem', p).error_code).not.toBe(0);
    const next = await produce(request(2, 'r2'));
    for (const p of [0, 1, 2])
      expect(next.of('idem', p)).toMatchObject({ error_code: 0, base_offset: 2, last_offset: 3, duplicate: true });
    for (const p of [0, 1, 2])
      expect(await values('idem', p)).toEqual([`r1-${p}-a`, `r1-${p}-b`, `r2-${p}-a`, `r2-${p}-b`]);
    // A sequence gap in one partition fails that partition only.
    const gap = await produce([
      {
        name: 'idem',
        partitions: [
          { index: 0, records: batch(['g'], { ...producer, baseSequence: 9 }) },
          { index: 1, records: batch(['ok'], { ...producer, baseSequence: 4 }) },
        ],
      },
    ]);
    expect(gap.of('idem', 0)).toMatchObject({ error: 'OUT_OF_ORDER_SEQUENCE_NUMBER' });
    expect(gap.of('idem', 1)).toMatchObject({ error_code: 0, base_offset: 4 });
  });
  it('a producer past the most recent ones (kept short in the state) resending its last batch gets its offsets from the index, once', async () => {
    expect((await t.call('POST', 'topics', { topic_name: 'many', partitions_count: 1 })).status).toBe(201);
    const ids: { producerId: number; producerEpoch: number }[] = [];
    for (let i = 0; i < RECENT_FULL + 2; i++) {
      const { body } = await t.call('POST', 'producers:init', {});
      ids.push({ producerId: body.producer_id as number, producerEpoch: body.producer_epoch as number });
    }
    const send = (p: (typeof ids)[0], seq: number, tag: string) =>
      produce([{ name: 'many', partitions: [{ index: 0, records: batch([tag], { ...p, baseSequence: seq }) }] }]);
    const first = await send(ids[0]!, 0, 'p0-a');
    for (const [i, p] of ids.slice(1).entries())
      expect((await send(p, 0, `p${i + 1}-a`)).of('many', 0).error_code).toBe(0);
    const retry = await send(ids[0]!, 0, 'p0-a');
    expect(retry.of('many', 0)).toMatchObject({
      error_code: 0,
      duplicate: true,
      base_offset: first.of('many', 0).base_offset,
    });
    expect((await send(ids[0]!, 1, 'p0-b')).of('many', 0)).toMatchObject({ error_code: 0, base_offset: ids.length });
    expect(await values('many', 0)).toEqual([...ids.map((_, i) => `p${i}-a`), 'p0-b']);
  });

  it('a retry of an older batch (five in flight) is answered with its offsets from the index; one behind its predecessor is DUPLICATE_SEQUENCE_NUMBER; the commits write no producer item', async () => {
    expect((await t.call('POST', 'topics', { topic_name: 'older', partitions_count: 2 })).status).toBe(201);
    const { body: id } = await t.call('POST', 'producers:init', {});
    const producer = { producerId: id.producer_id as number, producerEpoch: id.producer_epoch as number };
    const { body: other } = await t.call('POST', 'producers:init', {});
    const otherProducer = { producerId: other.producer_id as number, producerEpoch: other.producer_epoch as number };
    const send = (p: typeof producer, part: number, seq: number, tags: string[]) =>
      produce([{ name: 'older', partitions: [{ index: part, records: batch(tags, { ...p, baseSequence: seq }) }] }]);
    const firsts = [];
    for (let i = 0; i < 5; i++) {
      firsts.push((await send(producer, 0, i * 2, [`a${i}`, `b${i}`])).of('older', 0));
      await send(otherProducer, 0, i, [`o${i}`]); // other producers' commits in between
    }
    for (let i = 0; i < 4; i++) {
      const retry = (await send(producer, 0, i * 2, [`a${i}`, `b${i}`])).of('older', 0);
      expect(retry).toMatchObject({ error_code: 0, duplicate: true, base_offset: firsts[i]!.base_offset });
      expect(retry.last_offset).toBe(firsts[i]!.last_offset);
    }
    // The same sequences cut differently were never a batch of the log: appended before, offsets unknown.
    expect((await send(producer, 0, 1, ['x'])).of('older', 0)).toMatchObject({ error: 'DUPLICATE_SEQUENCE_NUMBER' });
    expect(await values('older', 0)).toHaveLength(15);
    const producerItems = await t.storage.metadata.query(`pid#${producer.producerId}`);
    expect(producerItems.map((i) => i.sk)).toEqual(['meta']);
    // Another partition knows nothing of these batches: a retry there is out of order.
    expect((await send(producer, 1, 2, ['c'])).of('older', 1)).toMatchObject({ error: 'OUT_OF_ORDER_SEQUENCE_NUMBER' });
  });
});
