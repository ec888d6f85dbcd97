/**
 * Lambda's 6 MB payload cap on a trigger's events: the event written as JSON text is the event
 * Lambda's Kafka mapping sends (record for record), a batch whose event would pass the cap is cut
 * before the record that would take it over (the rest is the next batch, in order), and a record
 * whose event alone is over the cap is given up on at once (to the failure topic, or reported and
 * dropped without one) instead of holding its partition.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { FAILURE_HEADERS } from '../../src/triggers/failure-topic.js';
import { EventLayout, eventRecord, kafkaEventJson, MAX_EVENT_BYTES } from '../../src/triggers/kafka-event.js';
import { testApp } from '../support/test-app.js';
import { eventually, orderProblems, recordValue, startSink, type Sink } from './webhook-sink.js';

describe('the event as JSON', () => {
  it('is the event object, record for record', () => {
    const batch = { topic: 't.1', partition: 3, logAppendTime: false };
    const records = [
      {
        offset: 7,
        timestamp: 1545084650987,
        key: new TextEncoder().encode('k1'),
        value: new Uint8Array([0, 255, 10]),
        headers: [
          { key: 'h', value: new Uint8Array([104, 118]) },
          { key: 'ünïcode "quoted"', value: null },
        ],
      },
      { offset: 8, timestamp: 1, key: null, value: null, headers: [] },
    ];
    const json = kafkaEventJson('127.0.0.1:9092', { ...batch, records });
    expect(JSON.parse(json.toString('utf8'))).toEqual({
      eventSource: 'SelfManagedKafka',
      bootstrapServers: '127.0.0.1:9092',
      records: { 't.1-3': records.map((r) => eventRecord(batch, r)) },
    });
    // Sent twice (a retry), it is the same text.
    expect(kafkaEventJson('127.0.0.1:9092', { ...batch, records }).equals(json)).toBe(true);
  });

  it("counts each record's bytes as written, whatever its lengths, timestamps and headers", () => {
    const batch = { topic: 'sizes', partition: 11, logAppendTime: true };
    const bytes = (n: number) => new Uint8Array(n).map((_, i) => (i * 37) & 255);
    const records = [0, 1, 2, 3, 4, 5, 100, 1001].map((n, i) => ({
      offset: 10 ** i - 1,
      timestamp: i === 0 ? -1 : 1545084650987 + i,
      key: i % 3 === 0 ? null : bytes(n),
      value: i % 4 === 1 ? null : bytes(n + 1),
      headers: i % 2 === 0 ? [] : [{ key: `h€${i}`, value: i === 3 ? null : bytes(n) }],
    }));
    const layout = new EventLayout('b:1', batch);
    const json = layout.write(records);
    const counted = layout.emptyBytes + records.length - 1 + records.reduce((n, r) => n + layout.recordBytes(r), 0);
    expect(json.byteLength).toBe(counted);
    expect(JSON.parse(json.toString('utf8')).records['sizes-11']).toEqual(records.map((r) => eventRecord(batch, r)));
    expect(layout.write([]).toString()).toBe(
      '{"eventSource":"SelfManagedKafka","bootstrapServers":"b:1","records":{"sizes-11":[]}}',
    );
  });
});

describe('the 6 MB payload cap', () => {
  let sink: Sink;
  let t: ReturnType<typeof testApp>;
  afterEach(async () => {
    await t.services.triggers.runner.close();
    await sink.close();
  });

  const large = { name: 'max.message.bytes', value: String(8 * 1024 * 1024) };
  async function setup(topics: { name: string; configs?: { name: string; value: string }[] }[]) {
    sink = await startSink();
    t = testApp({ runTriggers: true, env: { MAX_REQUEST_BYTES: String(8 * 1024 * 1024) } });
    for (const { name, configs } of topics)
      expect(
        (await t.call('POST', 'topics', { topic_name: name, partitions_count: 1, ...(configs && { configs }) })).status,
      ).toBe(201);
  }
  const trigger = async (name: string, topic: string, knobs: Record<string, unknown> = {}) =>
    expect(
      (
        await t.call('POST', 'triggers', {
          trigger_name: name,
          topic_name: topic,
          target: { type: 'WEBHOOK', url: sink.url, timeout_ms: 10_000 },
          maximum_batching_window_ms: 0,
          batch_size: 10,
          ...knobs,
        })
      ).status,
    ).toBe(201);
  const committed = async (name: string) =>
    (await t.call('GET', `triggers/${name}`)).body.partitions[0].committed_offset as number;
  const append = async (topic: string, values: Uint8Array[]) => {
    const outcomes = await t.services.log.append(
      await t.services.topics.get(topic),
      [{ partition: 0, records: values.map((value) => ({ key: null, value, headers: [], timestamp: Date.now() })) }],
      { acks: 'all' },
    );
    for (const o of outcomes.values()) expect(o.ok).toBe(true);
  };

  it('cuts a batch whose event would pass 6 MB, and delivers the rest in order', async () => {
    await setup([{ name: 'big', configs: [large] }]);
    await trigger('big-hook', 'big');
    await t.services.triggers.admin.pause('big-hook');
    // Ten records of 1,100 KiB: 1.43 MiB each in base64, so an event holds four, not ten.
    await append(
      'big',
      Array.from({ length: 10 }, (_, i) => new Uint8Array(1100 * 1024).fill(65 + i)),
    );
    await t.services.triggers.admin.resume('big-hook');
    await eventually(async () => (await committed('big-hook')) === 10, 30_000);
    expect(sink.sizes.every((s) => s <= MAX_EVENT_BYTES)).toBe(true);
    expect(sink.events.map((e) => e.records['big-0']!.length)).toEqual([4, 4, 2]);
    expect(sink.delivered.map((r) => r.offset)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    expect(orderProblems(sink.events)).toEqual([]);
  }, 60_000);

  it('gives up on a record over the cap at once: to the failure topic, or dropped, never holding the partition', async () => {
    await setup([
      { name: 'huge', configs: [large] },
      { name: 'huge-dlt', configs: [large] },
      { name: 'huge-small-dlt' },
    ]);
    await trigger('huge-hook', 'huge', { on_failure_destination: 'kafka://huge-dlt' });
    await trigger('huge-plain', 'huge');
    // A failure topic that refuses the record (max.message.bytes) would refuse it for ever: reported, dropped.
    await trigger('huge-refused', 'huge', { on_failure_destination: 'kafka://huge-small-dlt' });
    const text = (s: string) => new TextEncoder().encode(s);
    await append('huge', [text('before'), new Uint8Array(6 * 1024 * 1024).fill(66), text('after')]);
    for (const name of ['huge-hook', 'huge-plain', 'huge-refused'])
      await eventually(async () => (await committed(name)) === 3, 30_000);
    // Each trigger got the two small records, in order; nobody was invoked with the large one.
    const values = sink.delivered.map(recordValue);
    expect(values.filter((v) => v === 'before')).toHaveLength(3);
    expect(values.filter((v) => v === 'after')).toHaveLength(3);
    expect((await t.call('GET', 'topics/huge-small-dlt/partitions/0/records?offset=0')).body.records).toEqual([]);
    expect(sink.delivered.some((r) => r.offset === 1)).toBe(false);
    const failed = await t.call('GET', 'topics/huge-dlt/partitions/0/records?offset=0');
    expect(failed.status).toBe(200);
    const records = failed.body.records as { value: { data: string }; headers: { name: string; value: string }[] }[];
    expect(records).toHaveLength(1);
    const header = (name: string) =>
      Buffer.from(records[0]!.headers.find((h) => h.name === name)!.value, 'base64').toString();
    expect(header(FAILURE_HEADERS.reason)).toBe('PayloadTooLarge');
    expect(header(FAILURE_HEADERS.offset)).toBe('1');
    expect(header(FAILURE_HEADERS.attempts)).toBe('0');
    expect(Buffer.from(records[0]!.value.data, 'base64').byteLength).toBe(6 * 1024 * 1024);
  }, 60_000);
});
