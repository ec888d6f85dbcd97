/**
 * The multi-partition fetch (`POST /v3/clusters/{c}/records:fetch`, Kafka's FetchRequest) on the
 * three backends: answers per partition with their errors, one object read once for the
 * partitions it holds, max bytes per partition and per request, and a long poll over several
 * partitions that an append to any of them completes; read_committed over a transactional
 * multi-partition produce (LSO, aborted transactions) as Kafka's FetchRequest isolation_level.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encodeTopicData, PRODUCE_REQUEST_MEDIA_TYPE, type TopicData } from '../../src/wire/produce-request.js';
import {
  CONTROL_FLAG_MASK,
  decodeRecordBatches,
  encodeRecordBatch,
  type EncodeBatchOptions,
} from '../../src/wire/record-batch.js';
import type { ObjectStore } from '../../src/storage/ports.js';
import { decodeFetchResponse, FETCH_RESPONSE_MEDIA_TYPE } from '../../src/wire/fetch-response.js';
import { allBackends } from '../support/backends.js';
import { BASE, testApp } from '../support/test-app.js';

const batch = (values: string[], options: EncodeBatchOptions = {}) =>
  encodeRecordBatch(
    values.map((v) => ({ key: null, value: Buffer.from(v), headers: [], timestamp: Date.now() })),
    { partitionLeaderEpoch: -1, ...options },
  );

interface FetchedPartition {
  partition_index: number;
  error_code: number;
  error?: string;
  high_watermark: number;
  last_stable_offset: number;
  log_start_offset: number;
  next_offset: number;
  records: string | { offset: number; value: { data: string } }[];
  aborted_transactions?: { producer_id: number; first_offset: number; last_offset: number }[];
}

/** Counts GETs per object key. */
function counting(store: ObjectStore, gets: Map<string, number>): ObjectStore {
  return new Proxy(store, {
    get(target, prop, receiver) {
      if (prop === 'get')
        return (key: string, range?: { start: number; end: number }) => {
          gets.set(key, (gets.get(key) ?? 0) + 1);
          return target.get(key, range);
        };
      const v = Reflect.get(target, prop, receiver);
      return typeof v === 'function' ? v.bind(target) : v;
    },
  });
}

describe.each(allBackends)('multi-partition fetch on $name', (backend) => {
  let stop: () => Promise<void>;
  let t: ReturnType<typeof testApp>;
  const gets = new Map<string, number>();

  beforeAll(async () => {
    const started = await backend.start();
    stop = started.stop;
    t = testApp({
      storage: { ...started.storage, stores: started.storage.stores.map((s) => counting(s, gets)) },
      env: { MAX_FETCH_WAIT_MS: '5000' },
    });
    expect((await t.call('POST', 'topics', { topic_name: 'a', partitions_count: 3 })).status).toBe(201);
    expect((await t.call('POST', 'topics', { topic_name: 'b', partitions_count: 1 })).status).toBe(201);
  }, 30_000);
  afterAll(() => stop());

  const produce = async (topics: TopicData[], query = '') => {
    const res = await t.app.request(`${BASE}/records${query}`, {
      method: 'POST',
      headers: { 'content-type': PRODUCE_REQUEST_MEDIA_TYPE },
      body: encodeTopicData(topics),
    });
    expect(res.status).toBe(200);
    const body = (await res.json()) as {
      responses: { name: string; partition_responses: { index: number; error_code: number; error?: string }[] }[];
    };
    return body.responses.flatMap((r) => r.partition_responses.map((p) => ({ topic: r.name, ...p })));
  };
  const fetch = async (body: unknown) => {
    const res = await t.app.request(`${BASE}/records:fetch`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    const json = (await res.json()) as { responses: { topic: string; partitions: FetchedPartition[] }[] };
    const of = (topic: string, p: number) =>
      json.responses.find((r) => r.topic === topic)!.partitions.find((x) => x.partition_index === p)!;
    const values = (topic: string, p: number) => {
      const records = of(topic, p).records as string;
      return decodeRecordBatches(Buffer.from(records, 'base64')).flatMap((b) =>
        b.records.map((r) => [r.offset, Buffer.from(r.value!).toString()]),
      );
    };
    return { status: res.status, json, of, values };
  };
  const at = (topic: string, partitions: [number, number, number?][]) => ({
    topic,
    partitions: partitions.map(([partition, fetch_offset, partition_max_bytes]) => ({
      partition,
      fetch_offset,
      ...(partition_max_bytes ? { partition_max_bytes } : {}),
    })),
  });

  it('answers every partition of the request, errors per partition, reading a shared object once', async () => {
    await produce([
      {
        name: 'a',
        partitions: [
          { index: 0, records: batch(['a0-0', 'a0-1', 'a0-2']) },
          { index: 1, records: batch(['a1-0', 'a1-1']) },
        ],
      },
      { name: 'b', partitions: [{ index: 0, records: batch(['b0-0']) }] },
    ]);
    gets.clear();
    const r = await fetch({
      topics: [
        at('a', [
          [0, 1],
          [1, 0],
          [2, 0],
          [9, 0],
        ]),
        at('b', [[0, 5]]),
        at('nope', [[0, 0]]),
      ],
    });
    expect(r.status).toBe(200);
    expect(r.values('a', 0)).toEqual([
      [0, 'a0-0'],
      [1, 'a0-1'],
      [2, 'a0-2'],
    ]); // the batch holding offset 1, whole
    expect(r.of('a', 0)).toMatchObject({ error_code: 0, high_watermark: 3, next_offset: 3 });
    expect(r.values('a', 1)).toEqual([
      [0, 'a1-0'],
      [1, 'a1-1'],
    ]);
    expect(r.of('a', 2)).toMatchObject({ error_code: 0, high_watermark: 0, next_offset: 0, records: '' });
    expect(r.of('a', 9)).toMatchObject({ error: 'UNKNOWN_TOPIC_OR_PARTITION', error_code: 3 });
    expect(r.of('b', 0)).toMatchObject({ error: 'OFFSET_OUT_OF_RANGE', error_code: 1 });
    expect(r.of('nope', 0)).toMatchObject({ error: 'UNKNOWN_TOPIC_OR_PARTITION' });
    // a-0 and a-1 lie in one object: one GET for both.
    expect([...gets.values()]).toEqual([1]);
    const json = await fetch({ format: 'string', topics: [at('a', [[0, 1]])] });
    expect(
      (json.of('a', 0).records as { offset: number; value: { data: string } }[]).map((x) => [x.offset, x.value.data]),
    ).toEqual([
      [1, 'a0-1'],
      [2, 'a0-2'],
    ]);
    const twice = await fetch({
      topics: [
        at('a', [
          [0, 0],
          [0, 1],
        ]),
      ],
    });
    expect(twice.status).toBe(400);
  });

  it('answers the same fetch in binary (Kafka-framed) with Accept: application/vnd.kafka.fetch-response', async () => {
    const body = {
      topics: [
        at('a', [
          [0, 1],
          [1, 0],
          [2, 0],
          [9, 0],
        ]),
        at('nope', [[0, 0]]),
      ],
    };
    const json = await fetch(body);
    const res = await t.app.request(`${BASE}/records:fetch`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: `${FETCH_RESPONSE_MEDIA_TYPE}, application/json` },
      body: JSON.stringify(body),
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe(FETCH_RESPONSE_MEDIA_TYPE);
    const binary = decodeFetchResponse(new Uint8Array(await res.arrayBuffer()));
    expect(binary.map((x) => x.topic)).toEqual(['a', 'nope']);
    for (const topic of binary)
      for (const p of topic.partitions) {
        const j = json.of(topic.topic, p.partitionIndex);
        expect({
          error_code: p.errorCode,
          error: p.error ?? undefined,
          high_watermark: p.highWatermark,
          log_start_offset: p.logStartOffset,
          next_offset: p.nextOffset,
        }).toEqual({
          error_code: j.error_code,
          error: j.error,
          high_watermark: j.high_watermark,
          log_start_offset: j.log_start_offset,
          next_offset: j.next_offset,
        });
        if (p.errorCode !== 0) expect(p.records).toBeNull();
        else expect(Buffer.from(p.records!).toString('base64')).toBe(j.records);
        expect(p.abortedTransactions).toBeNull(); // read_uncommitted
      }
    expect(binary[0]!.partitions[0]!.records!.byteLength).toBeGreaterThan(0);
    expect(binary[1]!.partitions[0]).toMatchObject({ error: 'UNKNOWN_TOPIC_OR_PARTITION', errorCode: 3 });
  });

  it('keeps to max bytes per partition and per request, at batch granularity (one batch at least, in the first partition with data)', async () => {
    const big = (tag: string) => batch([tag.padEnd(1000, '.')]); // ~1.1 KB per batch
    for (const k of [0, 1, 2])
      await produce([
        {
          name: 'a',
          partitions: [
            { index: 1, records: big(`a1-${k}`) },
            { index: 2, records: big(`a2-${k}`) },
          ],
        },
      ]);
    const size = batch(['x'.padEnd(1000, '.')]).byteLength;
    // Per partition: 1.5 batches of room is one batch.
    const perPartition = await fetch({
      topics: [
        at('a', [
          [1, 2, Math.floor(size * 1.5)],
          [2, 0, Math.floor(size * 1.5)],
        ]),
      ],
    });
    expect(perPartition.values('a', 1).map(([o]) => o)).toEqual([2]);
    expect(perPartition.values('a', 2).map(([o]) => o)).toEqual([0]);
    expect(perPartition.of('a', 2).next_offset).toBe(1);
    // Per request: 2.5 batches over both partitions: two from a-1, none from a-2.
    const perRequest = await fetch({
      max_bytes: Math.floor(size * 2.5),
      topics: [
        at('a', [
          [1, 2],
          [2, 0],
        ]),
      ],
    });
    expect(perRequest.values('a', 1).map(([o]) => o)).toEqual([2, 3]);
    expect(perRequest.of('a', 2)).toMatchObject({ error_code: 0, records: '', next_offset: 0, high_watermark: 3 });
    // A first batch larger than both limits still comes back alone.
    const tiny = await fetch({
      max_bytes: 10,
      topics: [
        at('a', [
          [2, 0, 10],
          [1, 2, 10],
        ]),
      ],
    });
    expect(tiny.values('a', 2).map(([o]) => o)).toEqual([0]);
    expect(tiny.of('a', 1).records).toBe('');
  });

  it("reads no object of the partitions that the request's max bytes has no room left for", async () => {
    expect((await t.call('POST', 'topics', { topic_name: 'c', partitions_count: 3 })).status).toBe(201);
    const value = (p: number) => `c${p}`.padEnd(1000, '.');
    // One request, and so one object, per partition.
    for (const p of [0, 1, 2]) await produce([{ name: 'c', partitions: [{ index: p, records: batch([value(p)]) }] }]);
    const size = batch([value(0)]).byteLength;
    gets.clear();
    const one = await fetch({
      max_bytes: Math.floor(size * 1.5),
      topics: [
        at('c', [
          [0, 0, 4 * size],
          [1, 0, 4 * size],
          [2, 0, 4 * size],
        ]),
      ],
    });
    expect(one.values('c', 0)).toEqual([[0, value(0)]]);
    for (const p of [1, 2]) expect(one.of('c', p)).toMatchObject({ error_code: 0, records: '', next_offset: 0 });
    // c-1's object is read (half a batch of room was left when its entry began), c-2's is not.
    expect([...gets.values()].reduce((n, k) => n + k, 0)).toBe(2);
    // With room for all three, each object is read once.
    gets.clear();
    const all = await fetch({
      topics: [
        at('c', [
          [0, 0],
          [1, 0],
          [2, 0],
        ]),
      ],
    });
    for (const p of [0, 1, 2]) expect(all.values('c', p)).toEqual([[0, value(p)]]);
    expect([...gets.values()].reduce((n, k) => n + k, 0)).toBe(3);
  });

  it('long-polls over several partitions: an append to any of them answers, else max_wait_ms', async () => {
    const ends = await fetch({
      topics: [
        at('a', [
          [0, 0],
          [2, 0],
        ]),
        at('b', [[0, 0]]),
      ],
    });
    const hw = (topic: string, p: number) => ends.of(topic, p).high_watermark;
    const request = {
      min_bytes: 1,
      max_wait_ms: 4000,
      topics: [
        at('a', [
          [0, hw('a', 0)],
          [2, hw('a', 2)],
        ]),
        at('b', [[0, hw('b', 0)]]),
      ],
    };
    const started = Date.now();
    const waiting = fetch(request);
    await new Promise((r) => setTimeout(r, 150));
    await produce([{ name: 'b', partitions: [{ index: 0, records: batch(['late']) }] }]);
    const r = await waiting;
    expect(Date.now() - started).toBeLessThan(3000);
    expect(r.values('b', 0)).toEqual([[hw('b', 0), 'late']]);
    expect(r.of('a', 0).records).toBe('');
    const quietStart = Date.now();
    const quiet = await fetch({ ...request, max_wait_ms: 300, topics: [at('a', [[0, hw('a', 0)]])] });
    expect(Date.now() - quietStart).toBeGreaterThanOrEqual(250);
    expect(quiet.of('a', 0)).toMatchObject({ error_code: 0, records: '' });
  });
  it("reads a woken long poll's records from the states its check just read, not reading them again", async () => {
    const { reader } = t.services.log;
    const hw = async (topic: string, p: number) =>
      (await fetch({ topics: [at(topic, [[p, 0]])] })).of(topic, p).high_watermark;
    const [a1, b0] = [await hw('a', 1), await hw('b', 0)];
    const calls: Parameters<typeof reader.readBatchesMany>[0][] = [];
    const readBatchesMany = reader.readBatchesMany;
    reader.readBatchesMany = (fetches, ...rest) => {
      calls.push(fetches);
      return readBatchesMany.call(reader, fetches, ...rest);
    };
    try {
      const waiting = fetch({ min_bytes: 1, max_wait_ms: 4000, topics: [at('a', [[1, a1]]), at('b', [[0, b0]])] });
      await new Promise((r) => setTimeout(r, 150));
      await produce([{ name: 'b', partitions: [{ index: 0, records: batch(['woken']) }] }]);
      expect((await waiting).values('b', 0)).toEqual([[b0, 'woken']]);
    } finally {
      reader.readBatchesMany = readBatchesMany;
    }
    // The first read finds nothing; the last, after the append, is handed the states the check read.
    expect(calls.length).toBeGreaterThanOrEqual(2);
    expect(calls[0]!.map((f) => f.state)).toEqual([undefined, undefined]);
    expect(calls.at(-1)!.map((f) => f.state?.highWatermark)).toEqual([a1, b0 + 1]);
  });

  it("a held long poll's checks read its partitions' states together, not one by one", async () => {
    const { log } = t.services;
    const ends = await fetch({
      topics: [
        at(
          'a',
          [0, 1, 2].map((p) => [p, 0] as [number, number]),
        ),
      ],
    });
    const hws = [0, 1, 2].map((p) => ends.of('a', p).high_watermark);
    const together: number[][] = [];
    const alone: number[] = [];
    const { statesOf } = log.reader;
    const { state } = log;
    log.reader.statesOf = (topic, partitions) => {
      if (topic.name === 'a') together.push(partitions);
      return statesOf.call(log.reader, topic, partitions);
    };
    log.state = (topic, partition) => {
      if (topic.name === 'a') alone.push(partition);
      return state.call(log, topic, partition);
    };
    try {
      const waiting = fetch({
        min_bytes: 1,
        max_wait_ms: 4000,
        topics: [
          at(
            'a',
            hws.map((hw, p) => [p, hw]),
          ),
        ],
      });
      await new Promise((r) => setTimeout(r, 150));
      await produce([{ name: 'a', partitions: [{ index: 2, records: batch(['together']) }] }]);
      expect((await waiting).values('a', 2)).toEqual([[hws[2], 'together']]);
    } finally {
      log.reader.statesOf = statesOf;
      log.state = state;
    }
    expect(together.length).toBeGreaterThanOrEqual(1);
    for (const partitions of together) expect(partitions).toEqual([0, 1, 2]);
    expect(alone).toEqual([]);
  });

  it('read_committed over a transactional multi-partition produce: up to the LSO while open, aborted records left out, committed ones read', async () => {
    expect((await t.call('POST', 'topics', { topic_name: 'tx', partitions_count: 2 })).status).toBe(201);
    const init = await t.call('POST', 'transactions/tx-rc/init', { transaction_timeout_ms: 60_000 });
    expect(init.status).toBe(200);
    const producer = { producerId: init.body.producer_id as number, producerEpoch: init.body.producer_epoch as number };
    const ref = { producer_id: producer.producerId, producer_epoch: producer.producerEpoch };
    const txn = (seq: number, tag: string): TopicData[] => [
      {
        name: 'tx',
        partitions: [0, 1].map((p) => ({
          index: p,
          records: batch([`${tag}${p}`], { ...producer, baseSequence: seq, transactional: true }),
        })),
      },
    ];
    const both = (isolation_level: string | number, format = 'string') =>
      fetch({
        isolation_level,
        format,
        topics: [
          at('tx', [
            [0, 0],
            [1, 0],
          ]),
        ],
      });
    const shown = (r: Awaited<ReturnType<typeof both>>, p: number) =>
      (r.of('tx', p).records as { value: { data: string } }[]).map((x) => x.value.data);

    // Transactional batches need the transactional id, and it takes only transactional batches.
    expect((await produce(txn(0, 'x'))).map((p) => p.error)).toEqual(['INVALID_REQUEST', 'INVALID_REQUEST']);
    expect(
      (
        await produce(
          [{ name: 'tx', partitions: [{ index: 0, records: batch(['plain']) }] }],
          '?transactional_id=tx-rc',
        )
      )[0],
    ).toMatchObject({ error: 'INVALID_REQUEST' });

    // An open transaction over both partitions: read_committed stops at its first offset.
    expect((await produce(txn(0, 'a'), '?transactional_id=tx-rc')).map((p) => p.error_code)).toEqual([0, 0]);
    await produce([{ name: 'tx', partitions: [{ index: 1, records: batch(['p1']) }] }]);
    const open = await both('read_committed');
    expect(open.of('tx', 0)).toMatchObject({ high_watermark: 1, last_stable_offset: 0, next_offset: 0 });
    expect(shown(open, 0)).toEqual([]);
    expect(open.of('tx', 1)).toMatchObject({ high_watermark: 2, last_stable_offset: 0 });
    expect(shown(await both('read_uncommitted'), 1)).toEqual(['a1', 'p1']);

    expect((await t.call('POST', 'transactions/tx-rc/abort', ref)).status).toBe(200);
    expect((await produce(txn(1, 'c'), '?transactional_id=tx-rc')).map((p) => p.error_code)).toEqual([0, 0]);
    expect((await t.call('POST', 'transactions/tx-rc/commit', ref)).status).toBe(200);

    // Kafka's int8 and the name alike; markers are never records, the aborted batches are left out.
    for (const level of ['read_committed', 1]) {
      const done = await both(level);
      expect(shown(done, 0)).toEqual(['c0']);
      expect(shown(done, 1)).toEqual(['p1', 'c1']);
      for (const p of [0, 1]) {
        const a = done.of('tx', p);
        expect(a.last_stable_offset).toBe(a.high_watermark);
        expect(a.next_offset).toBe(a.high_watermark);
      }
    }
    expect(shown(await both('read_uncommitted'), 0)).toEqual(['a0', 'c0']);

    // Record batches: the aborted transaction comes with them, for the consumer to leave out.
    const batches = await both('read_committed', 'record-batch');
    expect(batches.of('tx', 0).aborted_transactions).toEqual([
      { producer_id: producer.producerId, first_offset: 0, last_offset: 1 },
    ]);
    expect(batches.of('tx', 1).aborted_transactions).toEqual([
      { producer_id: producer.producerId, first_offset: 0, last_offset: 2 },
    ]);
    const decoded = decodeRecordBatches(Buffer.from(batches.of('tx', 0).records as string, 'base64'));
    expect(decoded.filter((b) => b.header.attributes & CONTROL_FLAG_MASK)).toHaveLength(2);
    // read_uncommitted answers no aborted transactions at all, as Kafka's (null there).
    expect((await both('read_uncommitted', 'record-batch')).of('tx', 0).aborted_transactions).toBeUndefined();
    expect((await both('serializable')).status).toBe(400);
  });
});
