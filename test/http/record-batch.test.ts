import type { AddressInfo } from 'node:net';
import { compress, decompress } from '../../src/wire/compression/index.js';
import { gzipSync } from 'node:zlib';
import { serve, type ServerType } from '@hono/node-server';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { RECORD_BATCH_MEDIA_TYPE } from '../../src/http/record-batch-body.js';
import {
  CODEC,
  COMPRESSION_CODEC_MASK as CODEC_MASK,
  decodeRecordBatches,
  encodeRecordBatch,
  MAX_INFLATED_RECORDS_BYTES,
  readBatchHeader,
  setMaxTimestamp,
  type EncodeBatchOptions,
  type LogRecord,
} from '../../src/wire/record-batch.js';
import { BASE, testApp } from '../support/test-app.js';

const text = (s: string | null) => (s === null ? null : Buffer.from(s));
const record = (
  value: string | null,
  key: string | null = null,
  timestamp = 1_700_000_000_000,
  headers: LogRecord['headers'] = [],
): LogRecord => ({
  key: text(key),
  value: text(value),
  headers,
  timestamp,
});
const batch = (records: LogRecord[], options: EncodeBatchOptions = {}) =>
  encodeRecordBatch(records, { partitionLeaderEpoch: -1, ...options });
const shown = (bytes: Uint8Array | null) => (bytes === null ? null : Buffer.from(bytes).toString());

describe('record batches over HTTP (Kafka produce and fetch bytes)', () => {
  let t: ReturnType<typeof testApp>;
  beforeEach(() => {
    t = testApp({ env: { MAX_REQUEST_BYTES: '200000' } });
  });

  const createTopic = (name: string, partitions = 1, configs: { name: string; value: string }[] = []) =>
    t.call('POST', 'topics', { topic_name: name, partitions_count: partitions, configs });

  const produce = async (
    topic: string,
    partition: number,
    body: Uint8Array,
    options: { query?: string; contentType?: string } = {},
  ) => {
    const res = await t.app.request(`${BASE}/topics/${topic}/partitions/${partition}/records${options.query ?? ''}`, {
      method: 'POST',
      headers: { 'content-type': options.contentType ?? RECORD_BATCH_MEDIA_TYPE },
      body,
    });
    return { status: res.status, body: (await res.json()) as Record<string, any> };
  };

  const fetchBatches = async (topic: string, partition: number, query: string) => {
    const res = await t.app.request(`${BASE}/topics/${topic}/partitions/${partition}/records?${query}`, {
      headers: { accept: RECORD_BATCH_MEDIA_TYPE },
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe(RECORD_BATCH_MEDIA_TYPE);
    const bytes = new Uint8Array(await res.arrayBuffer());
    return {
      bytes,
      batches: decodeRecordBatches(bytes), // verifies every CRC, as a consumer does
      nextOffset: Number(res.headers.get('kafka-next-offset')),
      highWatermark: Number(res.headers.get('kafka-high-watermark')),
      logStartOffset: Number(res.headers.get('kafka-log-start-offset')),
    };
  };

  const highWatermark = async (topic: string) =>
    (await t.call('GET', `topics/${topic}/partitions/0/records?offset=0`)).body.high_watermark;

  it('appends batches as sent and fetches them back whole, with absolute offsets and the leader epoch', async () => {
    await createTopic('bytes');
    const first = [
      record('v0', 'k0', 1_700_000_000_000, [
        { key: 'h', value: text('hv') },
        { key: 'empty', value: null },
      ]),
      record(null, 'k1', 1_700_000_000_005),
      record('v2'),
    ];
    const answer = await produce('bytes', 0, batch(first));
    expect(answer).toMatchObject({
      status: 200,
      body: {
        kind: 'KafkaProduceResult',
        topic_name: 'bytes',
        partition_id: 0,
        base_offset: 0,
        last_offset: 2,
        record_count: 3,
        log_append_time: -1,
        log_start_offset: 0,
      },
    });
    // Two batches in one request: offsets follow on.
    const two = new Uint8Array([...batch([record('v3')]), ...batch([record('v4'), record('v5')])]);
    expect((await produce('bytes', 0, two)).body).toMatchObject({ base_offset: 3, last_offset: 5, record_count: 3 });

    const fetched = await fetchBatches('bytes', 0, 'offset=0');
    expect(fetched).toMatchObject({ nextOffset: 6, highWatermark: 6, logStartOffset: 0 });
    expect(
      fetched.batches.map((b) => [b.header.baseOffset, b.header.recordCount, b.header.partitionLeaderEpoch]),
    ).toEqual([
      [0, 3, 0],
      [3, 1, 0],
      [4, 2, 0],
    ]);
    const records = fetched.batches.flatMap((b) => b.records);
    expect(records.map((r) => [r.offset, shown(r.key), shown(r.value), r.timestamp])).toEqual([
      [0, 'k0', 'v0', 1_700_000_000_000],
      [1, 'k1', null, 1_700_000_000_005],
      [2, null, 'v2', 1_700_000_000_000],
      [3, null, 'v3', 1_700_000_000_000],
      [4, null, 'v4', 1_700_000_000_000],
      [5, null, 'v5', 1_700_000_000_000],
    ]);
    expect(records[0]!.headers.map((h) => [h.key, shown(h.value)])).toEqual([
      ['h', 'hv'],
      ['empty', null],
    ]);
    // The JSON fetch reads the same log.
    const json = await t.call('GET', 'topics/bytes/partitions/0/records?offset=1&format=string');
    expect(
      json.body.records.map((r: { offset: number; value: { data: string } | null }) => [
        r.offset,
        r.value?.data ?? null,
      ]),
    ).toEqual([
      [1, null],
      [2, 'v2'],
      [3, 'v3'],
      [4, 'v4'],
      [5, 'v5'],
    ]);
  });

  it('fetches from inside a batch: the whole batch comes back and the consumer skips the records before its offset', async () => {
    await createTopic('mid');
    await produce('mid', 0, batch([record('a'), record('b'), record('c')]));
    await produce('mid', 0, batch([record('d')]));
    const fetched = await fetchBatches('mid', 0, 'offset=1&max_bytes=1');
    expect(fetched.batches.map((b) => b.header.baseOffset)).toEqual([0]); // max_bytes: at least one batch, no more
    expect(fetched.nextOffset).toBe(3);
    expect(
      (await fetchBatches('mid', 0, 'offset=3')).batches.flatMap((b) => b.records.map((r) => shown(r.value))),
    ).toEqual(['d']);
    const atEnd = await fetchBatches('mid', 0, 'offset=4');
    expect(atEnd).toMatchObject({ nextOffset: 4, highWatermark: 4 });
    expect(atEnd.bytes.byteLength).toBe(0);
    const outOfRange = await t.app.request(`${BASE}/topics/mid/partitions/0/records?offset=5`, {
      headers: { accept: RECORD_BATCH_MEDIA_TYPE },
    });
    expect(outOfRange.status).toBe(416);
    expect(await outOfRange.json()).toMatchObject({ error: 'OFFSET_OUT_OF_RANGE' });
  });

  it('rejects bad bytes with a Kafka error and appends nothing', async () => {
    await createTopic('strict', 1, [{ name: 'max.message.bytes', value: '2000' }]);
    const good = batch([record('x'), record('y')]);
    const flipped = good.slice();
    flipped[flipped.length - 1] = flipped[flipped.length - 1]! ^ 0xff;
    expect(await produce('strict', 0, flipped)).toMatchObject({
      status: 400,
      body: { error: 'CORRUPT_MESSAGE', error_code: 40002 },
    });
    expect(await produce('strict', 0, good.subarray(0, good.length - 3))).toMatchObject({
      status: 400,
      body: { error: 'CORRUPT_MESSAGE' },
    });
    expect(await produce('strict', 0, new Uint8Array([...good, 1, 2, 3]))).toMatchObject({
      status: 400,
      body: { error: 'CORRUPT_MESSAGE' },
    });
    expect(await produce('strict', 0, new Uint8Array(0))).toMatchObject({
      status: 400,
      body: { error: 'INVALID_RECORD' },
    });
    // lastOffsetDelta says 5 records, the batch holds 2.
    expect(await produce('strict', 0, batch([record('x'), record('y')], { lastOffsetDelta: 4 }))).toMatchObject({
      status: 400,
      body: { error: 'INVALID_RECORD' },
    });
    expect(
      await produce('strict', 0, batch([record('x'), record('y')], { offsetDeltas: [1, 2], lastOffsetDelta: 2 })),
    ).toMatchObject({
      status: 400,
      body: { error: 'INVALID_RECORD' },
    });
    expect(await produce('strict', 0, batch([record('x'.repeat(3000))]))).toMatchObject({
      status: 413,
      body: { error: 'MESSAGE_TOO_LARGE' },
    });
    const tampered = good.slice();
    tampered[22] = 1; // attributes low byte (gzip) changed after the CRC was computed
    expect(await produce('strict', 0, tampered)).toMatchObject({ status: 400, body: { error: 'CORRUPT_MESSAGE' } });
    expect(await produce('strict', 0, good, { contentType: 'application/json' })).toMatchObject({
      status: 415,
      body: { error: 'UNSUPPORTED_MEDIA_TYPE' },
    });
    expect(await produce('strict', 1, good)).toMatchObject({
      status: 404,
      body: { error: 'UNKNOWN_TOPIC_OR_PARTITION' },
    });
    expect(await produce('strict', 0, good, { query: '?acks=2' })).toMatchObject({
      status: 400,
      body: { error: 'INVALID_REQUIRED_ACKS' },
    });
    expect(await highWatermark('strict')).toBe(0);
    expect(await produce('strict', 0, good, { contentType: 'application/octet-stream' })).toMatchObject({
      status: 200,
      body: { base_offset: 0 },
    });
    expect(await highWatermark('strict')).toBe(1 + 1);
  });

  it('takes gzip batches and keeps them compressed; refuses an unknown codec and records that do not inflate', async () => {
    await createTopic('zip');
    const values = ['a'.repeat(5000), 'b'.repeat(5000), 'c'.repeat(5000)];
    const gzip = batch(
      values.map((v, i) => record(v, `k${i}`)),
      { compression: 'gzip' },
    );
    expect(gzip.byteLength).toBeLessThan(500); // what travels and is stored
    expect(await produce('zip', 0, gzip)).toMatchObject({ status: 200, body: { base_offset: 0, last_offset: 2 } });
    const fetched = await fetchBatches('zip', 0, 'offset=0');
    expect(fetched.bytes.byteLength).toBe(gzip.byteLength);
    expect(fetched.batches[0]!.header.attributes & CODEC_MASK).toBe(CODEC.gzip);
    expect(fetched.batches[0]!.records.map((r) => shown(r.value))).toEqual(values);
    const json = await t.call('GET', 'topics/zip/partitions/0/records?offset=1&format=string');
    expect(json.body.records.map((r: { offset: number; key: { data: string } }) => [r.offset, r.key.data])).toEqual([
      [1, 'k1'],
      [2, 'k2'],
    ]);

    const withCodec = (bytes: Uint8Array, codec: number) => {
      const out = bytes.slice();
      new DataView(out.buffer).setInt16(21, (new DataView(out.buffer).getInt16(21) & ~CODEC_MASK) | codec);
      setMaxTimestamp(out, 0, readBatchHeader(out).maxTimestamp); // recomputes the CRC over the changed attributes
      return out;
    };
    expect(await produce('zip', 0, withCodec(gzip, 5))).toMatchObject({
      status: 400,
      body: { error: 'UNSUPPORTED_COMPRESSION_TYPE' },
    });
    for (const codec of [CODEC.snappy, CODEC.lz4, CODEC.zstd])
      expect(await produce('zip', 0, withCodec(gzip, codec))).toMatchObject({
        status: 400,
        body: { error: 'CORRUPT_MESSAGE' },
      });
    expect(await produce('zip', 0, withCodec(batch([record('plain')]), CODEC.gzip))).toMatchObject({
      status: 400,
      body: { error: 'CORRUPT_MESSAGE' },
    });
    // A bomb: a few KiB of gzip inflating past the bound.
    const header = batch([record('x')]).subarray(0, 61);
    const payload = gzipSync(Buffer.alloc(MAX_INFLATED_RECORDS_BYTES + 1));
    const bomb = withCodec(new Uint8Array([...header, ...payload]), CODEC.gzip);
    new DataView(bomb.buffer).setInt32(8, bomb.byteLength - 12);
    setMaxTimestamp(bomb, 0, readBatchHeader(bomb).maxTimestamp);
    expect(await produce('zip', 0, bomb)).toMatchObject({ status: 400, body: { error: 'CORRUPT_MESSAGE' } });
    expect(await highWatermark('zip')).toBe(3);
  });

  it('compression.type: gzip stores every batch compressed, uncompressed stores none, producer keeps what was sent', async () => {
    await createTopic('gz', 1, [{ name: 'compression.type', value: 'gzip' }]);
    const { producer_id: producerId, producer_epoch: producerEpoch } = (await t.call('POST', 'producers:init')).body;
    await t.call('POST', 'topics/gz/records:batch', {
      entries: [{ id: 'j', partition_id: 0, value: { type: 'STRING', data: 'json '.repeat(200) } }],
    });
    const plain = batch([record('bytes '.repeat(200), 'k')], { producerId, producerEpoch, baseSequence: 0 });
    expect(await produce('gz', 0, plain)).toMatchObject({ status: 200, body: { base_offset: 1 } });
    const stored = await fetchBatches('gz', 0, 'offset=0');
    expect(stored.batches.map((b) => b.header.attributes & CODEC_MASK)).toEqual([CODEC.gzip, CODEC.gzip]);
    expect(stored.bytes.byteLength).toBeLessThan(400);
    expect(stored.batches[1]!.header).toMatchObject({ producerId, producerEpoch, baseSequence: 0, baseOffset: 1 });
    expect(stored.batches.flatMap((b) => b.records.map((r) => shown(r.value)))).toEqual([
      'json '.repeat(200),
      'bytes '.repeat(200),
    ]);
    // The producer's retry is still recognised as a duplicate.
    expect(await produce('gz', 0, plain)).toMatchObject({ status: 200, body: { base_offset: 1, duplicate: true } });

    await createTopic('plain', 1, [
      { name: 'compression.type', value: 'uncompressed' },
      { name: 'max.message.bytes', value: '2000' },
    ]);
    expect(await produce('plain', 0, batch([record('v')], { compression: 'gzip' }))).toMatchObject({ status: 200 });
    // Small compressed, too large once inflated for this topic: refused, as Kafka refuses it.
    expect(await produce('plain', 0, batch([record('z'.repeat(5000))], { compression: 'gzip' }))).toMatchObject({
      status: 413,
      body: { error: 'MESSAGE_TOO_LARGE' },
    });
    expect(
      (await fetchBatches('plain', 0, 'offset=0')).batches.map((b) => [
        b.header.attributes & CODEC_MASK,
        shown(b.records[0]!.value),
      ]),
    ).toEqual([[CODEC.none, 'v']]);

    await createTopic('as-sent');
    await produce('as-sent', 0, batch([record('a')], { compression: 'gzip' }));
    await produce('as-sent', 0, batch([record('b')]));
    expect((await fetchBatches('as-sent', 0, 'offset=0')).batches.map((b) => b.header.attributes & CODEC_MASK)).toEqual(
      [CODEC.gzip, CODEC.none],
    );
    expect(await createTopic('brotli', 1, [{ name: 'compression.type', value: 'brotli' }])).toMatchObject({
      status: 400,
      body: { error: 'INVALID_CONFIG' },
    });
  });

  it.each(['snappy', 'lz4', 'zstd'] as const)(
    'takes %s batches, keeps them compressed, serves them as JSON; compression.type=%s re-encodes others',
    async (codec) => {
      const values = ['a'.repeat(5000), 'b'.repeat(5000), 'c'.repeat(5000)];
      const sent = batch(
        values.map((v, i) => record(v, `k${i}`)),
        { compression: codec },
      );
      expect(sent.byteLength).toBeLessThan(1000);
      await createTopic(`sent-${codec}`);
      expect(await produce(`sent-${codec}`, 0, sent)).toMatchObject({ status: 200, body: { last_offset: 2 } });
      const fetched = await fetchBatches(`sent-${codec}`, 0, 'offset=0');
      expect(fetched.bytes.byteLength).toBe(sent.byteLength);
      expect(fetched.batches[0]!.header.attributes & CODEC_MASK).toBe(CODEC[codec]);
      const json = await t.call('GET', `topics/sent-${codec}/partitions/0/records?offset=1&format=string`);
      expect(
        json.body.records.map((r: { key: { data: string }; value: { data: string } }) => [r.key.data, r.value.data]),
      ).toEqual([
        ['k1', values[1]],
        ['k2', values[2]],
      ]);

      await createTopic(`stored-${codec}`, 1, [{ name: 'compression.type', value: codec }]);
      await t.call('POST', `topics/stored-${codec}/records:batch`, {
        entries: [{ id: 'j', partition_id: 0, value: { type: 'STRING', data: 'json '.repeat(200) } }],
      });
      await produce(`stored-${codec}`, 0, batch([record('gzip '.repeat(200))], { compression: 'gzip' }));
      const stored = await fetchBatches(`stored-${codec}`, 0, 'offset=0');
      expect(stored.batches.map((b) => b.header.attributes & CODEC_MASK)).toEqual([CODEC[codec], CODEC[codec]]);
      expect(stored.batches.flatMap((b) => b.records.map((r) => shown(r.value)))).toEqual([
        'json '.repeat(200),
        'gzip '.repeat(200),
      ]);
    },
  );

  it.each([
    ['gzip', 'compression.gzip.level', '1', '9'],
    ['zstd', 'compression.zstd.level', '1', '19'],
  ])('compression.type=%s applies %s to what it re-encodes', async (codec, levelConfig, low, high) => {
    const text = Array.from({ length: 3000 }, (_, i) => `line ${(i * 7919) % 1000} of a log record;`).join(' ');
    const records: Buffer[] = [];
    for (const level of [low, high]) {
      const topic = `level-${codec}-${level}`;
      await createTopic(topic, 1, [
        { name: 'compression.type', value: codec },
        { name: levelConfig, value: level },
      ]);
      expect(await produce(topic, 0, batch([record(text)]))).toMatchObject({ status: 200 });
      const stored = await fetchBatches(topic, 0, 'offset=0');
      expect(stored.batches[0]!.header.attributes & CODEC_MASK).toBe(CODEC[codec as 'gzip']);
      expect(shown(stored.batches[0]!.records[0]!.value)).toBe(text);
      // The stored records are exactly what the codec writes at that level.
      const packed = Buffer.from(stored.bytes.subarray(61));
      const plain = decompress(CODEC[codec as 'gzip'], packed, 1 << 20);
      expect(Buffer.from(compress(codec as 'gzip', plain, Number(level))).equals(packed)).toBe(true);
      records.push(packed);
    }
    expect(records[0]!.equals(records[1]!)).toBe(false);
  });

  it('needs keys on a compacted topic', async () => {
    await createTopic('compact', 1, [{ name: 'cleanup.policy', value: 'compact' }]);
    expect(await produce('compact', 0, batch([record('v', 'k'), record('v')]))).toMatchObject({
      status: 400,
      body: { error: 'INVALID_RECORD' },
    });
    expect(await produce('compact', 0, batch([record('v', 'k')]))).toMatchObject({ status: 200 });
  });

  it('stamps LogAppendTime topics with the broker time and corrects a wrong CreateTime max timestamp', async () => {
    await createTopic('appended', 1, [{ name: 'message.timestamp.type', value: 'LogAppendTime' }]);
    const before = Date.now();
    const answer = await produce('appended', 0, batch([record('a', null, 5), record('b', null, 6)]));
    expect(answer.body.log_append_time).toBeGreaterThanOrEqual(before);
    const [stamped] = (await fetchBatches('appended', 0, 'offset=0')).batches;
    expect(stamped!.header.maxTimestamp).toBe(answer.body.log_append_time);
    expect(stamped!.records.map((r) => r.timestamp)).toEqual([
      answer.body.log_append_time,
      answer.body.log_append_time,
    ]);

    await createTopic('created');
    const wrong = batch([record('a', null, 100), record('b', null, 300), record('c', null, 200)]);
    setMaxTimestamp(wrong, 0, 999);
    await produce('created', 0, wrong);
    const [kept] = (await fetchBatches('created', 0, 'offset=0')).batches;
    expect(kept!.header.maxTimestamp).toBe(300);
  });

  it('refuses timestamps too far from the broker clock (message.timestamp.after.max.ms / before.max.ms), in both formats', async () => {
    await createTopic('clock');
    const hour = 3_600_000;
    const future = new Date(Date.now() + 2 * hour).toISOString();
    const json = await t.call('POST', 'topics/clock/records:batch', {
      entries: [{ id: 'a', value: { data: 1 }, timestamp: future }],
    });
    expect(json.body.failures).toMatchObject([{ id: 'a', error: 'INVALID_TIMESTAMP' }]);
    expect(await produce('clock', 0, batch([record('x', null, Date.now() + 2 * hour)]))).toMatchObject({
      status: 400,
      body: { error: 'INVALID_TIMESTAMP' },
    });
    expect(await produce('clock', 0, batch([record('x', null, Date.now() + hour / 2)]))).toMatchObject({ status: 200 });
    expect(await produce('clock', 0, batch([record('old', null, 5)]))).toMatchObject({ status: 200 }); // before.max.ms: unbounded by default
    expect(await highWatermark('clock')).toBe(2);

    await createTopic('strict-clock', 1, [
      { name: 'message.timestamp.before.max.ms', value: '60000' },
      { name: 'message.timestamp.after.max.ms', value: '9223372036854775807' },
    ]);
    expect(await produce('strict-clock', 0, batch([record('old', null, Date.now() - 120_000)]))).toMatchObject({
      status: 400,
      body: { error: 'INVALID_TIMESTAMP' },
    });
    expect(await produce('strict-clock', 0, batch([record('far', null, Date.now() + 1000 * hour)]))).toMatchObject({
      status: 200,
    });

    await createTopic('append-clock', 1, [{ name: 'message.timestamp.type', value: 'LogAppendTime' }]);
    expect(await produce('append-clock', 0, batch([record('any', null, Date.now() + 1000 * hour)]))).toMatchObject({
      status: 200,
    });
  });

  it('de-duplicates an idempotent producer by the producer id, epoch and sequence in the batch header', async () => {
    await createTopic('once');
    const { producer_id: producerId, producer_epoch: producerEpoch } = (await t.call('POST', 'producers:init')).body;
    const idempotent = (values: string[], baseSequence: number, epoch = producerEpoch) =>
      batch(
        values.map((v) => record(v)),
        { producerId, producerEpoch: epoch, baseSequence },
      );
    expect((await produce('once', 0, idempotent(['a', 'b'], 0))).body).toMatchObject({
      base_offset: 0,
      last_offset: 1,
    });
    const retry = await produce('once', 0, idempotent(['a', 'b'], 0));
    expect(retry).toMatchObject({ status: 200, body: { base_offset: 0, last_offset: 1, duplicate: true } });
    expect(await produce('once', 0, idempotent(['d'], 5))).toMatchObject({
      status: 409,
      body: { error: 'OUT_OF_ORDER_SEQUENCE_NUMBER' },
    });
    expect((await produce('once', 0, idempotent(['c'], 2))).body).toMatchObject({ base_offset: 2 });
    await t.call('POST', 'producers:init', { producer_id: producerId, producer_epoch: producerEpoch });
    expect(await produce('once', 0, idempotent(['e'], 3))).toMatchObject({
      status: 409,
      body: { error: 'INVALID_PRODUCER_EPOCH' },
    });
    // Two batches of one request must continue one another's sequence.
    const gap = new Uint8Array([
      ...idempotent(['f'], 0, producerEpoch + 1),
      ...idempotent(['g'], 5, producerEpoch + 1),
    ]);
    expect(await produce('once', 0, gap)).toMatchObject({ status: 400, body: { error: 'INVALID_RECORD' } });
    expect(await highWatermark('once')).toBe(3);
    const stored = (await fetchBatches('once', 0, 'offset=0')).batches.map((b) => [
      b.header.producerId,
      b.header.baseSequence,
    ]);
    expect(stored).toEqual([
      [producerId, 0],
      [producerId, 2],
    ]);
  });

  it('answers acks=0 before the offsets are known, and appends after', async () => {
    await createTopic('fire');
    expect((await produce('fire', 0, batch([record('x')]), { query: '?acks=0' })).body).toMatchObject({
      base_offset: -1,
      last_offset: -1,
    });
    await t.services.log.idle();
    expect(await highWatermark('fire')).toBe(1);
  });

  it('is described in the OpenAPI document', async () => {
    const doc = (await t.call('GET', '/openapi.json')).body;
    const path = doc.paths['/v3/clusters/{cluster_id}/topics/{topic_name}/partitions/{partition_id}/records'];
    expect(Object.keys(path.post.requestBody.content)).toContain(RECORD_BATCH_MEDIA_TYPE);
    expect(Object.keys(path.get.responses['200'].content)).toEqual(['application/json', RECORD_BATCH_MEDIA_TYPE]);
  });

  it('long-polls for record batches until enough bytes are below the HW', async () => {
    await createTopic('wait');
    const pending = fetchBatches('wait', 0, 'offset=0&min_bytes=1&max_wait_ms=5000');
    await new Promise((r) => setTimeout(r, 50));
    await produce('wait', 0, batch([record('late')]));
    const fetched = await pending;
    expect(fetched.batches.flatMap((b) => b.records.map((r) => shown(r.value)))).toEqual(['late']);
    expect(fetched.nextOffset).toBe(1);
  });
});

describe('request bodies on the node server', () => {
  let server: ServerType;
  let base: string;
  let t: ReturnType<typeof testApp>;
  beforeEach(async () => {
    t = testApp({ env: { MAX_REQUEST_BYTES: '100000' } });
    server = serve({ fetch: t.app.fetch, port: 0, hostname: '127.0.0.1' });
    await new Promise((r) => server.once('listening', r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}${BASE}`;
    await fetch(`${base}/topics`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ topic_name: 'wire' }),
    });
  });
  afterEach(() => new Promise((r) => server.close(r)));

  const entries = (values: string[]) =>
    JSON.stringify({ entries: values.map((v, i) => ({ id: i, value: { type: 'STRING', data: v } })) });

  it('reads JSON with a Content-Length, chunked JSON, non-ASCII text and record batches', async () => {
    const sized = await fetch(`${base}/topics/wire/records:batch`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: entries(['a', 'b']),
    });
    expect(sized.status).toBe(207);
    const stream = new Blob([entries(['é ü 日本 🎉'])]).stream(); // a stream body goes out chunked, without a length
    const chunked = await fetch(`${base}/topics/wire/records:batch`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: stream,
      duplex: 'half',
    } as RequestInit);
    expect(chunked.status).toBe(207);
    const bytes = await fetch(`${base}/topics/wire/partitions/0/records`, {
      method: 'POST',
      headers: { 'content-type': RECORD_BATCH_MEDIA_TYPE },
      body: batch([record('raw')]),
    });
    expect(await bytes.json()).toMatchObject({ base_offset: 3 });
    const all = (await (await fetch(`${base}/topics/wire/partitions/0/records?offset=0&format=string`)).json()) as {
      records: { value: { data: string } }[];
    };
    expect(all.records.map((r: { value: { data: string } }) => r.value.data)).toEqual(['a', 'b', 'é ü 日本 🎉', 'raw']);
  });

  it('refuses a body over the limit with 413 and appends nothing', async () => {
    const big = await fetch(`${base}/topics/wire/partitions/0/records`, {
      method: 'POST',
      headers: { 'content-type': RECORD_BATCH_MEDIA_TYPE },
      body: batch([record('x'.repeat(150_000))]),
    });
    expect(big.status).toBe(413);
    const json = await fetch(`${base}/topics/wire/records:batch`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: entries(['y'.repeat(150_000)]),
    });
    expect(json.status).toBe(413);
    const stream = new Blob([entries(['z'.repeat(150_000)])]).stream(); // no Content-Length: counted while read
    const chunked = await fetch(`${base}/topics/wire/records:batch`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: stream,
      duplex: 'half',
    } as RequestInit);
    expect(chunked.status).toBe(413);
    expect(await chunked.json()).toMatchObject({ error: 'PAYLOAD_TOO_LARGE', error_code: 41300 });
    expect(
      ((await (await fetch(`${base}/topics/wire/partitions/0/records?offset=0`)).json()) as { high_watermark: number })
        .high_watermark,
    ).toBe(0);
  });
});
