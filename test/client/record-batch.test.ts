import { readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  Kafka,
  KafkaClientError,
  KafkaProtocolError,
  RECORD_BATCH_MEDIA_TYPE,
  type ConsumerRecord,
  type Message,
  type RecordMetadata,
  type WireFormat,
} from '../../src/client/index.js';
import { decodeFetchedRecords } from '../../src/client/record-batches.js';
import { RECORD_BATCH_MEDIA_TYPE as SERVER_MEDIA_TYPE } from '../../src/http/record-batch-body.js';
import { CODEC, decodeRecordBatches, encodeRecordBatch, readBatchHeader } from '../../src/wire/record-batch.js';
import { decodeTopicData, PRODUCE_REQUEST_MEDIA_TYPE } from '../../src/wire/produce-request.js';
import { isMultiPartitionProduce, isProduce, proxy, type ProxiedRequest } from './support/flaky-proxy.js';
import { startServer, stopServer, tempDir, type LocalServer } from '../support/local-server.js';

const hex = (b: Buffer | null) => (b === null ? null : b.toString('hex'));
/** A consumed record in comparable form. */
const shape = (r: ConsumerRecord) => ({
  offset: r.offset,
  timestamp: r.timestamp,
  key: hex(r.key),
  value: hex(r.value),
  headers: Object.fromEntries(Object.entries(r.headers).map(([k, v]) => [k, (Array.isArray(v) ? v : [v]).map(hex)])),
});
/**
 * Every partition batch the client sent, one entry each: a one-partition request as it is, a
 * multi-partition request (topic_data) as one entry per partition, its body that partition's records.
 */
const partitionProduces = (log: ProxiedRequest[]): (ProxiedRequest & { partition: number })[] =>
  log.flatMap((e) => {
    if (e.method !== 'POST') return [];
    const one = /\/partitions\/(\d+)\/records(\?|$)/.exec(e.url);
    if (one) return [{ ...e, partition: Number(one[1]) }];
    if (!isMultiPartitionProduce(e.url)) return [];
    return decodeTopicData(e.body).flatMap((t) =>
      t.partitions.map((p) => ({ ...e, partition: p.index, body: Buffer.from(p.records!) })),
    );
  });
const partitionOf = (e: { partition: number }) => e.partition;

describe('record batches: the client produces and fetches Kafka RecordBatch v2 bytes', () => {
  let dir: Awaited<ReturnType<typeof tempDir>>;
  let server: LocalServer | undefined;
  let kafka: Kafka;

  beforeAll(async () => {
    dir = await tempDir('client-record-batch-');
    server = await startServer(dir.path);
    kafka = new Kafka({ url: server.origin });
  });
  afterAll(async () => {
    await stopServer(server);
    await dir.remove();
  });

  /** Every record of one partition from `from`, read by a consumer of the given format. */
  async function readPartition(
    topic: string,
    partition: number,
    format: WireFormat,
    from = 0,
    via = kafka,
  ): Promise<ConsumerRecord[]> {
    const hw = (await kafka.admin().describeTopic(topic)).partitions[partition]!.highWatermark;
    const consumer = via.consumer({ format, maxPollRecords: 10_000, fetchMaxWaitMs: 50 });
    consumer.assign([{ topic, partition }]);
    consumer.seek({ topic, partition, offset: from });
    const out: ConsumerRecord[] = [];
    while (out.length < hw - from) {
      const records = await consumer.poll({ timeoutMs: 3000 });
      if (records.length === 0) break;
      out.push(...records);
    }
    await consumer.close();
    return out;
  }

  it('uses the media type the server exports', () => {
    expect(RECORD_BATCH_MEDIA_TYPE).toBe(SERVER_MEDIA_TYPE);
  });

  it('round-trips keys, values, headers, null keys and values, and timestamps; the JSON path reads the same records', async () => {
    await kafka.admin().createTopics({ topics: [{ topic: 'trip', numPartitions: 2 }] });
    const p = await proxy(server!.origin);
    try {
      const via = new Kafka({ url: p.origin });
      const producer = via.producer({ format: 'record-batch', lingerMs: 50 });
      const messages: Message[] = [
        {
          key: 'k0',
          value: 'v0',
          headers: { a: '1', ключ: Buffer.from([0, 255]), multi: ['x', 'y'] },
          timestamp: 1_700_000_000_000,
          partition: 1,
        },
        { key: null, value: null, timestamp: 1_700_000_000_005, partition: 1 }, // a tombstone without a key
        {
          key: Buffer.from([0, 1, 2, 255]),
          value: Buffer.alloc(0),
          timestamp: new Date(1_600_000_000_000),
          partition: 1,
        }, // earlier than the batch's first
        { key: 'k3', value: Buffer.alloc(5000, 7), headers: { empty: '' }, timestamp: '1700000000009', partition: 1 },
      ];
      const before = Date.now();
      const md = await producer.send({
        topic: 'trip',
        messages: [...messages, { key: 'now', value: 'default timestamp', partition: 1 }],
      });
      const after = Date.now();
      expect(md.slice(0, 4)).toEqual([
        { topic: 'trip', partition: 1, offset: 0, timestamp: 1_700_000_000_000 },
        { topic: 'trip', partition: 1, offset: 1, timestamp: 1_700_000_000_005 },
        { topic: 'trip', partition: 1, offset: 2, timestamp: 1_600_000_000_000 },
        { topic: 'trip', partition: 1, offset: 3, timestamp: 1_700_000_000_009 },
      ]);
      expect(md[4]!.offset).toBe(4);
      expect(md[4]!.timestamp).toBeGreaterThanOrEqual(before);
      expect(md[4]!.timestamp).toBeLessThanOrEqual(after);

      // One request, holding partition 1 only, whose records are one RecordBatch v2 with the producer's id in its header.
      const [sent, ...more] = partitionProduces(p.log);
      expect(more).toEqual([]);
      expect(sent).toMatchObject({
        url: expect.stringMatching(/\/v3\/clusters\/[^/]+\/records\?acks=all$/),
        contentType: PRODUCE_REQUEST_MEDIA_TYPE,
        status: 200,
        partition: 1,
      });
      const [batch, ...others] = decodeRecordBatches(sent!.body);
      expect(others).toEqual([]);
      expect(batch!.header).toMatchObject({
        baseOffset: 0,
        recordCount: 5,
        producerId: producer.producerIdentity!.producerId,
        producerEpoch: producer.producerIdentity!.producerEpoch,
        baseSequence: 0,
      });
      expect(p.log.some((e) => e.url.includes('records:batch'))).toBe(false);
      await producer.close();

      const expected = [
        {
          offset: 0,
          timestamp: 1_700_000_000_000,
          key: hex(Buffer.from('k0')),
          value: hex(Buffer.from('v0')),
          headers: {
            a: [hex(Buffer.from('1'))],
            ключ: ['00ff'],
            multi: [hex(Buffer.from('x')), hex(Buffer.from('y'))],
          },
        },
        { offset: 1, timestamp: 1_700_000_000_005, key: null, value: null, headers: {} },
        { offset: 2, timestamp: 1_600_000_000_000, key: '000102ff', value: '', headers: {} },
        {
          offset: 3,
          timestamp: 1_700_000_000_009,
          key: hex(Buffer.from('k3')),
          value: hex(Buffer.alloc(5000, 7)),
          headers: { empty: [''] },
        },
        {
          offset: 4,
          timestamp: md[4]!.timestamp,
          key: hex(Buffer.from('now')),
          value: hex(Buffer.from('default timestamp')),
          headers: {},
        },
      ];
      const asBatches = await readPartition('trip', 1, 'record-batch', 0, via);
      expect(asBatches.map(shape)).toEqual(expected);
      expect(asBatches.every((r) => r.topic === 'trip' && r.partition === 1)).toBe(true);
      expect((await readPartition('trip', 1, 'json')).map(shape)).toEqual(expected);
      // The consumer fetches with Kafka's FetchRequest over all its partitions, asking for batches.
      const fetches = p.log.filter((e) => e.method === 'POST' && e.url.includes('/records:fetch'));
      expect(fetches.length).toBeGreaterThan(0);
      const asked = fetches.map(
        (e) =>
          JSON.parse(e.body.toString()) as {
            format: string;
            topics: { topic: string; partitions: { partition: number }[] }[];
          },
      );
      expect(asked.every((b) => b.format === 'record-batch')).toBe(true);
      expect(
        asked.some((b) => b.topics.some((t) => t.topic === 'trip' && t.partitions.some((x) => x.partition === 1))),
      ).toBe(true);
      // (A long poll still open when the consumer closed has no answer.)
      const answered = fetches.filter((e) => e.status !== undefined);
      expect(answered.length).toBeGreaterThan(0);
      expect(answered.every((e) => e.status === 200)).toBe(true);

      // The other way round: written through the JSON API, read as record batches.
      const json = kafka.producer({ format: 'json' });
      await json.send({ topic: 'trip', messages: messages.map((m) => ({ ...m, partition: 0 })) });
      await json.close();
      expect((await readPartition('trip', 0, 'record-batch')).map(shape)).toEqual(expected.slice(0, 4));
    } finally {
      await p.close();
    }
  });

  it("sends a multi-partition send as one request holding every partition's batch", async () => {
    await kafka.admin().createTopics({ topics: [{ topic: 'fan', numPartitions: 4 }] });
    const p = await proxy(server!.origin, { delayMs: (req) => (isProduce(req) ? 150 : 0) });
    try {
      const producer = new Kafka({ url: p.origin }).producer({ lingerMs: 20 });
      await producer.connect();
      const md = await producer.send({
        topic: 'fan',
        messages: Array.from({ length: 12 }, (_, i) => ({ value: `m${i}`, partition: i % 4 })),
      });
      expect(md.map((m) => [m.partition, m.offset])).toEqual(
        Array.from({ length: 12 }, (_, i) => [i % 4, Math.floor(i / 4)]),
      );
      await producer.close();
      const produces = partitionProduces(p.log);
      expect(produces.map(partitionOf).sort()).toEqual([0, 1, 2, 3]);
      // One request (one object on the server) for the four partitions.
      expect(p.log.filter((e) => isProduce(e))).toHaveLength(1);
      expect(produces.every((e) => e.contentType === PRODUCE_REQUEST_MEDIA_TYPE)).toBe(true);
      for (let part = 0; part < 4; part++)
        expect(decodeRecordBatches(produces.find((e) => partitionOf(e) === part)!.body)[0]!.records.length).toBe(3);
    } finally {
      await p.close();
    }
  });

  it('reports the log append time of a LogAppendTime topic in the metadata and the records', async () => {
    await kafka.admin().createTopics({
      topics: [
        {
          topic: 'stamped',
          numPartitions: 1,
          configEntries: [{ name: 'message.timestamp.type', value: 'LogAppendTime' }],
        },
      ],
    });
    const producer = kafka.producer();
    const before = Date.now();
    const md = await producer.send({
      topic: 'stamped',
      messages: [
        { value: 'a', timestamp: 5 },
        { value: 'b', timestamp: 6 },
      ],
    });
    await producer.close();
    expect(md[0]!.timestamp).toBeGreaterThanOrEqual(before);
    expect(md.map((m) => m.timestamp)).toEqual([md[0]!.timestamp, md[0]!.timestamp]);
    expect((await readPartition('stamped', 0, 'record-batch')).map((r) => r.timestamp)).toEqual([
      md[0]!.timestamp,
      md[0]!.timestamp,
    ]);
  });

  it('a partition whose batch is not due joins a ready request where it fits once it has waited half of linger.ms, and never sends a request of its own', async () => {
    await kafka.admin().createTopics({ topics: [{ topic: 'fill', numPartitions: 4 }] });
    const p = await proxy(server!.origin);
    try {
      // A record over batch.size is a batch of its own, due at once; a small one waits out linger.ms.
      const producer = new Kafka({ url: p.origin }).producer({
        batchSize: 500,
        maxRequestSize: 2_600,
        // Wide enough that a loaded machine's delays keep `small` between half its linger and all of it.
        lingerMs: 3_000,
      });
      const small = producer.send({ topic: 'fill', messages: [{ value: 'small', partition: 1 }] });
      await new Promise((r) => setTimeout(r, 1_700));
      const fresh = producer.send({ topic: 'fill', messages: [{ value: 'fresh', partition: 3 }] });
      await producer.send({ topic: 'fill', messages: [{ value: 'x'.repeat(2_000), partition: 0 }] });
      // Partition 1's batch, not due but 1.7 s old, went with partition 0's: one request.
      // Partition 3's, begun just now, stays to fill up (it would leave a stub) until its linger.
      expect(partitionProduces(p.log).map(partitionOf).sort()).toEqual([0, 1]);
      expect(p.log.filter((e) => isProduce(e))).toHaveLength(1);
      await Promise.all([small, fresh]);
      expect(partitionProduces(p.log).map(partitionOf).sort()).toEqual([0, 1, 3]);
      expect(p.log.filter((e) => isProduce(e))).toHaveLength(2);
      // Beside a batch that fills the request, partition 2's does not fit: it waits for its linger.
      const late = producer.send({ topic: 'fill', messages: [{ value: 'late', partition: 2 }] });
      await producer.send({ topic: 'fill', messages: [{ value: 'y'.repeat(2_500), partition: 0 }] });
      expect(partitionProduces(p.log).filter((e) => e.partition === 2)).toEqual([]);
      await late;
      expect(partitionProduces(p.log).filter((e) => e.partition === 2)).toHaveLength(1);
      expect(p.log.filter((e) => isProduce(e))).toHaveLength(4);
      await producer.close();
    } finally {
      await p.close();
    }
  });

  it('idempotence: batches carry the producer id, epoch and sequences; lost answers are resent as the same bytes and written once', async () => {
    await kafka.admin().createTopics({ topics: [{ topic: 'once', numPartitions: 3 }] });
    let n = 0;
    const p = await proxy(server!.origin, { dropResponse: (req) => isProduce(req) && ++n % 3 === 0 });
    try {
      const producer = new Kafka({ url: p.origin }).producer({
        lingerMs: 2,
        batchSize: 400,
        retryBackoffMs: 10,
        retryBackoffMaxMs: 50,
      });
      const sends: Promise<RecordMetadata[]>[] = [];
      for (let i = 0; i < 400; i++)
        sends.push(producer.send({ topic: 'once', messages: [{ key: `k${i % 7}`, value: `m${i}` }] }));
      const acked = (await Promise.all(sends)).map(([m]) => m!);
      const { producerId, producerEpoch } = producer.producerIdentity!;
      await producer.close();
      expect(p.dropped()).toBeGreaterThan(3);

      const produces = partitionProduces(p.log);
      expect(produces.every((e) => e.contentType === PRODUCE_REQUEST_MEDIA_TYPE)).toBe(true);
      expect(p.log.some((e) => e.url.includes('records:batch'))).toBe(false);
      const bySequence = new Map<string, Buffer>();
      for (const e of produces) {
        const header = readBatchHeader(e.body);
        expect(header).toMatchObject({ producerId, producerEpoch });
        const key = `${partitionOf(e)}/${header.baseSequence}`;
        // A retry is the same batch: same sequence, same bytes.
        if (bySequence.has(key)) expect(bySequence.get(key)!.equals(e.body)).toBe(true);
        else bySequence.set(key, e.body);
      }
      for (let part = 0; part < 3; part++) {
        // Per partition, the sequences follow on from 0 with no gap.
        const batches = [...bySequence]
          .filter(([k]) => k.startsWith(`${part}/`))
          .map(([, body]) => readBatchHeader(body))
          .sort((a, b) => a.baseSequence - b.baseSequence);
        let next = 0;
        for (const h of batches) {
          expect(h.baseSequence).toBe(next);
          next += h.recordCount;
        }
        const records = await readPartition('once', part, 'record-batch');
        const sent = acked.flatMap((m, i) => (m.partition === part ? [{ offset: m.offset, value: `m${i}` }] : []));
        expect(next).toBe(sent.length);
        expect(records.map((r) => ({ offset: r.offset, value: r.value!.toString() }))).toEqual(sent); // exactly once, in order
      }
    } finally {
      await p.close();
    }
  });

  it('a producer that is not idempotent writes producer id -1 in the batch header', async () => {
    await kafka.admin().createTopics({ topics: [{ topic: 'plain', numPartitions: 1 }] });
    const p = await proxy(server!.origin);
    try {
      const producer = new Kafka({ url: p.origin }).producer({ acks: 1 });
      expect((await producer.send({ topic: 'plain', messages: [{ value: 'x' }] }))[0]!.offset).toBe(0);
      await producer.close();
      const [e] = partitionProduces(p.log);
      expect(e!.url).toMatch(/acks=1$/);
      expect(readBatchHeader(e!.body)).toMatchObject({ producerId: -1, producerEpoch: -1, baseSequence: -1 });
    } finally {
      await p.close();
    }
  });

  it.each([
    ['gzip', { compressionGzipLevel: 9 }],
    ['snappy', {}],
    ['lz4', {}],
    ['zstd', { compressionZstdLevel: 10 }],
  ] as const)(
    "compressionType '%s' sends such batches, the server stores them so, and consumers of both formats read them",
    async (codec, level) => {
      const topic = `zipped-${codec}`;
      await kafka.admin().createTopics({ topics: [{ topic, numPartitions: 1 }] });
      const p = await proxy(server!.origin);
      try {
        const producer = new Kafka({ url: p.origin }).producer({ compressionType: codec, ...level, lingerMs: 20 });
        const messages = Array.from({ length: 50 }, (_, i) => ({ key: `k${i}`, value: `value ${i} `.repeat(40) }));
        await producer.send({ topic, messages });
        await producer.close();
        const sent = partitionProduces(p.log);
        expect(sent.length).toBeGreaterThan(0);
        for (const e of sent) expect(readBatchHeader(e.body).attributes & 0x07).toBe(CODEC[codec]);
        expect(sent.reduce((n, e) => n + e.body.byteLength, 0)).toBeLessThan(
          messages.reduce((n, m) => n + m.value.length, 0) / 5,
        );
      } finally {
        await p.close();
      }
      for (const format of ['record-batch', 'json'] as const) {
        const read = await readPartition(topic, 0, format);
        expect(
          read.map((r) => [r.offset, r.key!.toString(), r.value!.toString()]),
          format,
        ).toEqual(Array.from({ length: 50 }, (_, i) => [i, `k${i}`, `value ${i} `.repeat(40)]));
      }
    },
  );

  it("refuses a codec Kafka does not have, and a level out of Kafka's range", () => {
    expect(() => kafka.producer({ compressionType: 'brotli' as 'gzip' })).toThrow(/compressionType/);
    expect(() => kafka.producer({ compressionType: 'gzip', compressionGzipLevel: 10 })).toThrow(/compressionGzipLevel/);
    expect(() => kafka.producer({ compressionType: 'zstd', compressionZstdLevel: 23 })).toThrow(/compressionZstdLevel/);
  });

  it('fetching inside a batch: the server answers the whole batch, the consumer skips the records below its position', async () => {
    await kafka.admin().createTopics({ topics: [{ topic: 'skip', numPartitions: 1 }] });
    const producer = kafka.producer({ lingerMs: 50 });
    await producer.send({ topic: 'skip', messages: Array.from({ length: 10 }, (_, i) => ({ value: `r${i}` })) });
    await producer.send({ topic: 'skip', messages: [{ value: 'r10' }] });
    await producer.close();
    // What the consumer gets from the server for offset 4: the first batch, from offset 0.
    const raw = await kafka.transport.request<Buffer>('GET', '/topics/skip/partitions/0/records', {
      query: { offset: 4 },
      accept: RECORD_BATCH_MEDIA_TYPE,
    });
    expect(Buffer.isBuffer(raw.body)).toBe(true);
    expect(raw.headers.get('kafka-next-offset')).toBe('11');
    expect(decodeRecordBatches(raw.body).map((b) => [b.header.baseOffset, b.header.recordCount])).toEqual([
      [0, 10],
      [10, 1],
    ]);

    const consumer = kafka.consumer({ maxPollRecords: 100, fetchMaxWaitMs: 50 });
    consumer.assign([{ topic: 'skip', partition: 0 }]);
    consumer.seek({ topic: 'skip', partition: 0, offset: 4 });
    const got: ConsumerRecord[] = [];
    while (got.length < 7) got.push(...(await consumer.poll({ timeoutMs: 3000 })));
    expect(got.map((r) => [r.offset, r.value!.toString()])).toEqual([4, 5, 6, 7, 8, 9, 10].map((o) => [o, `r${o}`]));
    expect(await consumer.position({ topic: 'skip', partition: 0 })).toBe(11);
    await consumer.close();
  });

  it('decoding skips records below the offset across compaction gaps and rejects corrupt bytes', () => {
    const rec = (v: string) => ({ key: Buffer.from(v), value: Buffer.from(v), headers: [], timestamp: 1000 });
    // A compacted batch: offsets 100, 103, 107 kept of 100..109; then a batch from 110.
    const compacted = encodeRecordBatch([rec('a'), rec('b'), rec('c')], {
      baseOffset: 100,
      offsetDeltas: [0, 3, 7],
      lastOffsetDelta: 9,
    });
    const next = encodeRecordBatch([rec('d')], { baseOffset: 110 });
    const bytes = Buffer.concat([compacted, next]);
    expect(decodeFetchedRecords(bytes, 't', 0, 101).map((r) => [r.offset, r.value!.toString()])).toEqual([
      [103, 'b'],
      [107, 'c'],
      [110, 'd'],
    ]);
    expect(decodeFetchedRecords(bytes, 't', 0, 108).map((r) => r.offset)).toEqual([110]);
    expect(decodeFetchedRecords(Buffer.alloc(0), 't', 0, 0)).toEqual([]);
    const corrupt = Buffer.from(bytes);
    corrupt[70] = corrupt[70]! ^ 0xff;
    const e = (() => {
      try {
        decodeFetchedRecords(corrupt, 't', 3, 100);
      } catch (x) {
        return x;
      }
    })();
    expect(e).toBeInstanceOf(KafkaClientError);
    expect(e).toMatchObject({ type: 'CORRUPT_MESSAGE', topic: 't', partition: 3, retriable: false });
    expect((e as Error).message).toMatch(/CRC mismatch/);
    expect(() => decodeFetchedRecords(bytes.subarray(0, bytes.length - 2), 't', 0, 0)).toThrow(/truncated/);
  });

  it('maps error answers to typed errors', async () => {
    const admin = kafka.admin();
    await admin.createTopics({
      topics: [
        { topic: 'keys-only', numPartitions: 1, configEntries: [{ name: 'cleanup.policy', value: 'compact' }] },
        { topic: 'small-batches', numPartitions: 1, configEntries: [{ name: 'max.message.bytes', value: '1000' }] },
      ],
    });
    const producer = kafka.producer({ format: 'record-batch' });
    // A compacted topic refuses a record without a key: INVALID_RECORD, not retried (a partition's error in the answer, no HTTP status of its own).
    const invalid = await producer
      .send({ topic: 'keys-only', messages: [{ value: 'no key' }] })
      .catch((x: unknown) => x);
    expect(invalid).toBeInstanceOf(KafkaProtocolError);
    expect(invalid).toMatchObject({
      type: 'INVALID_RECORD',
      code: 87,
      retriable: false,
      topic: 'keys-only',
      partition: 0,
    });
    expect((await producer.send({ topic: 'keys-only', messages: [{ key: 'k', value: 'v' }] }))[0]!.offset).toBe(0); // the producer carries on

    // max.message.bytes bounds a batch: one record over it fails; a batch over it is split and resent.
    await expect(
      producer.send({ topic: 'small-batches', messages: [{ value: Buffer.alloc(2000) }] }),
    ).rejects.toMatchObject({ type: 'MESSAGE_TOO_LARGE', retriable: false });
    const md = await producer.send({
      topic: 'small-batches',
      messages: Array.from({ length: 8 }, (_, i) => ({ value: Buffer.alloc(300, i) })),
    });
    expect(md.map((m) => m.offset)).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    expect((await readPartition('small-batches', 0, 'record-batch')).map((r) => r.value![0])).toEqual([
      0, 1, 2, 3, 4, 5, 6, 7,
    ]);
    await producer.close();

    // Bad bytes: CORRUPT_MESSAGE with the server's status.
    const good = encodeRecordBatch([{ key: null, value: Buffer.from('x'), headers: [], timestamp: 1 }]);
    good[good.length - 1] = good[good.length - 1]! ^ 0xff;
    await expect(
      kafka.transport.request('POST', '/topics/keys-only/partitions/0/records', {
        bytes: good,
        contentType: RECORD_BATCH_MEDIA_TYPE,
      }),
    ).rejects.toMatchObject({
      type: 'CORRUPT_MESSAGE',
      status: 400,
      errorCode: 40002,
    });

    // A fetch outside the log: OFFSET_OUT_OF_RANGE from poll() with auto.offset.reset=none; reset with earliest.
    const strict = kafka.consumer({ autoOffsetReset: 'none', format: 'record-batch' });
    strict.assign([{ topic: 'small-batches', partition: 0 }]);
    strict.seek({ topic: 'small-batches', partition: 0, offset: 50 });
    let raised: unknown;
    for (let i = 0; i < 10 && raised === undefined; i++)
      raised = await strict.poll({ timeoutMs: 500 }).then(
        () => undefined,
        (x: unknown) => x,
      );
    expect(raised).toMatchObject({ type: 'OFFSET_OUT_OF_RANGE', topic: 'small-batches', partition: 0 });
    await strict.close();
    const resetting = kafka.consumer({ autoOffsetReset: 'earliest', format: 'record-batch', fetchMaxWaitMs: 50 });
    resetting.assign([{ topic: 'small-batches', partition: 0 }]);
    resetting.seek({ topic: 'small-batches', partition: 0, offset: 50 });
    const again: ConsumerRecord[] = [];
    for (let i = 0; i < 20 && again.length < 8; i++) again.push(...(await resetting.poll({ timeoutMs: 500 })));
    expect(again.map((r) => r.offset)).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    await resetting.close();
  });

  it('a batch corrupted at rest fails its CRC in the consumer: poll() raises CORRUPT_MESSAGE', async () => {
    await kafka.admin().createTopics({ topics: [{ topic: 'rot', numPartitions: 1 }] });
    const marker = 'MARKER-7f3a9c-record-batch';
    const producer = kafka.producer();
    await producer.send({ topic: 'rot', messages: [{ value: `${marker}-0` }, { value: `${marker}-1` }] });
    await producer.close();
    // The server stores batches as sent: find the object holding them and flip a byte of a value.
    const files: string[] = [];
    const walk = async (d: string): Promise<void> => {
      for (const e of await readdir(d, { withFileTypes: true })) {
        if (e.isDirectory()) await walk(join(d, e.name));
        else files.push(join(d, e.name));
      }
    };
    await walk(dir.path);
    let flipped = 0;
    for (const f of files) {
      const bytes = await readFile(f);
      const at = bytes.indexOf(`${marker}-1`);
      if (at < 0) continue;
      bytes[at + marker.length + 1] = bytes[at + marker.length + 1]! ^ 0x01;
      await writeFile(f, bytes);
      flipped++;
    }
    expect(flipped).toBeGreaterThan(0);
    // A fresh server process: nothing cached from before the flip.
    const port = server!.port;
    await stopServer(server);
    server = await startServer(dir.path, port);

    const consumer = kafka.consumer({ format: 'record-batch', fetchMaxWaitMs: 50 });
    consumer.assign([{ topic: 'rot', partition: 0 }]);
    consumer.seek({ topic: 'rot', partition: 0, offset: 0 });
    let raised: unknown;
    for (let i = 0; i < 10 && raised === undefined; i++)
      raised = await consumer.poll({ timeoutMs: 500 }).then(
        () => undefined,
        (x: unknown) => x,
      );
    expect(raised).toBeInstanceOf(KafkaClientError);
    expect(raised).toMatchObject({ type: 'CORRUPT_MESSAGE', topic: 'rot', partition: 0, retriable: false });
    expect(await consumer.position({ topic: 'rot', partition: 0 })).toBe(0); // nothing handed out past the bad batch
    await consumer.close();
  });

  it("format 'auto' falls back to JSON for good against a server without the record-batch API; 'record-batch' does not", async () => {
    await kafka.admin().createTopics({ topics: [{ topic: 'legacy', numPartitions: 2 }] });
    // An older server: no POST .../partitions/{p}/records route, and fetches answered in JSON whatever the Accept header says.
    const p = await proxy(server!.origin, {
      legacy: (req) => {
        if (
          req.method === 'POST' &&
          (/\/partitions\/\d+\/records(\?|$)/.test(req.url!) || isMultiPartitionProduce(req.url!))
        ) {
          return {
            answer: {
              status: 404,
              body: { error_code: 40401, message: `No route for POST ${req.url}`, error: 'NOT_FOUND' },
            },
          };
        }
        if (req.method === 'GET') return { dropHeaders: ['accept'] };
        return undefined;
      },
    });
    try {
      const old = new Kafka({ url: p.origin });
      const strict = old.producer({ format: 'record-batch' });
      await expect(strict.send({ topic: 'legacy', messages: [{ value: 'x', partition: 0 }] })).rejects.toMatchObject({
        type: 'NOT_FOUND',
        status: 404,
      });
      await strict.close();

      const producer = old.producer({ lingerMs: 1 });
      const first = await producer.send({
        topic: 'legacy',
        messages: [
          { key: 'a', value: 'v0', headers: { h: 'x' }, partition: 0 },
          { value: null, partition: 1 },
        ],
      });
      const second = await producer.send({ topic: 'legacy', messages: [{ value: 'v1', partition: 0 }] });
      await producer.close();
      expect([...first, ...second].map((m) => [m.partition, m.offset])).toEqual([
        [0, 0],
        [1, 0],
        [0, 1],
      ]);
      // The 404s: the strict producer's (many partitions, then one), then the multi-partition request
      // and one per partition for the first batches in flight; after that, JSON only.
      const attempts = p.log.filter((e) => isProduce(e) && !e.url.includes('records:batch'));
      expect(attempts.length).toBeLessThanOrEqual(5);
      expect(attempts.every((e) => e.status === 404)).toBe(true);
      expect(p.log.filter((e) => e.url.includes('records:batch') && e.status === 207).length).toBeGreaterThanOrEqual(2);
      expect(p.log.at(-1)!.url).toMatch(/records:batch/);
      expect(old.transport.recordBatches.state).toBe('unsupported');

      const records = await readPartition('legacy', 0, 'auto', 0, new Kafka({ url: p.origin }));
      expect(
        records.map((r) => [r.offset, r.key?.toString() ?? null, r.value!.toString(), r.headers.h?.toString()]),
      ).toEqual([
        [0, 'a', 'v0', 'x'],
        [1, null, 'v1', undefined],
      ]);
      // The direct server, in record batches, holds the same.
      expect((await readPartition('legacy', 0, 'record-batch')).map(shape)).toEqual(records.map(shape));
    } finally {
      await p.close();
    }
  });
});
