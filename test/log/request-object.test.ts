import { describe, expect, it } from 'vitest';
import { resolveTopicConfig } from '../../src/config/topic-configs.js';
import { validateProducedBatches } from '../../src/log/produced-batches.js';
import { buildRequestObject } from '../../src/log/request-object.js';
import type { Topic } from '../../src/topics/topics.js';
import { decodeTopicData, encodeTopicData } from '../../src/wire/produce-request.js';
import { decodeRecordBatches, encodeRecordBatch } from '../../src/wire/record-batch.js';

const topic = (configs: Record<string, string> = {}): Topic => ({
  id: 'topic-id',
  name: 't',
  partitionCount: 4,
  replicationFactor: 1,
  configs,
  createdAt: 0,
  config: resolveTopicConfig(configs),
  version: 1,
});

const now = Date.now();
const batch = (value: string) =>
  encodeRecordBatch([{ key: null, value: new TextEncoder().encode(value), headers: [], timestamp: now }]);
const rules = { maxMessageBytes: 1_000_000, requireKeys: false };

/** A multi-partition request body as the client sends it, decoded as the route does: batches are views into it. */
function request(partitions: [number, string][]) {
  const body = encodeTopicData([
    { name: 't', partitions: partitions.map(([index, v]) => ({ index, records: batch(v) })) },
  ]);
  const [decoded] = decodeTopicData(body);
  return {
    body,
    appends: decoded!.partitions.map((p) => ({
      partition: p.index,
      batches: validateProducedBatches(p.records!, rules),
    })),
  };
}

const valuesAt = (body: Uint8Array, run: { start: number; end: number }) =>
  decodeRecordBatches(body.subarray(run.start, run.end))
    .flatMap((b) => b.records)
    .map((r) => new TextDecoder().decode(r.value!));

describe('request objects', () => {
  it('store a multi-partition request as a view of its body, without copying it', () => {
    const { body, appends } = request([
      [0, 'zero'],
      [2, 'two'],
      [3, 'three'],
    ]);
    const object = buildRequestObject(topic(), appends, now, 1);
    expect(object.body.buffer).toBe(body.buffer); // the request's own bytes
    expect(object.runs.map((r) => r.partition)).toEqual([0, 2, 3]);
    expect(object.runs.map((r) => valuesAt(object.body, r))).toEqual([['zero'], ['two'], ['three']]);
    expect(object.body.byteLength).toBe(object.runs.at(-1)!.end); // from the first batch to the last
  });

  it('lay the batches out afresh when something else lies between them', () => {
    const { appends } = request([
      [0, 'zero'],
      [9, 'rejected: no such partition'],
      [1, 'one'],
    ]);
    const object = buildRequestObject(topic(), appends, now, 1);
    expect(object.rejected.get(9)?.errorName).toBe('UNKNOWN_TOPIC_OR_PARTITION');
    expect(object.runs.map((r) => valuesAt(object.body, r))).toEqual([['zero'], ['one']]);
    expect(object.body.byteLength).toBe(object.runs.reduce((n, r) => n + r.end - r.start, 0)); // only the runs
  });

  it('lay the batches out afresh when the topic recompresses them', () => {
    const { body, appends } = request([
      [0, 'zero'],
      [1, 'one'],
    ]);
    const object = buildRequestObject(topic({ 'compression.type': 'gzip' }), appends, now, 1);
    expect(object.body.buffer).not.toBe(body.buffer);
    expect(object.runs.map((r) => valuesAt(object.body, r))).toEqual([['zero'], ['one']]);
  });

  describe('laid out in spare memory the records view (a JSON produce body)', () => {
    /**
     * Records whose values are views of one records:batch body, as the JSON produce's reader leaves
     * them; the body indented as a person writes it (room for the batches' headers).
     */
    function recordsIn(values: string[]) {
      const entry = (v: string) => `${' '.repeat(100)}{"value":{"type":"STRING","data":"${v}"}}`;
      const body = new Uint8Array(Buffer.from(`{"entries":[${values.map(entry).join(',')}]}`));
      let at = 12;
      const records = values.map((v) => {
        const start = at + entry('').length - 3; // before the closing quote and braces
        at += entry(v).length + 1;
        return { key: null, value: body.subarray(start, start + v.length), headers: [], timestamp: now };
      });
      return { body, records };
    }

    it("writes the batches of every partition into the body, which the records' values view", () => {
      const values = ['zero', 'one', 'x'.repeat(60_000), 'two', 'y'.repeat(100_000), 'three'];
      const { body, records } = recordsIn(values);
      const appends = [
        { partition: 0, records: [records[0]!, records[3]!] },
        { partition: 9, records: [records[1]!] }, // no such partition: rejected, no bytes left behind
        { partition: 1, records: [records[2]!, records[4]!] },
        { partition: 2, records: [records[5]!] },
      ];
      // Small batches: partition 1's records take a batch each.
      const object = buildRequestObject(topic({ 'max.message.bytes': '150000' }), appends, now, 1, undefined, body);
      expect(object.body.buffer === body.buffer).toBe(true);
      expect(object.rejected.get(9)?.errorName).toBe('UNKNOWN_TOPIC_OR_PARTITION');
      expect(object.runs.map((r) => r.partition)).toEqual([0, 1, 2]);
      expect(object.runs.map((r) => valuesAt(object.body, r))).toEqual([
        ['zero', 'two'],
        ['x'.repeat(60_000), 'y'.repeat(100_000)],
        ['three'],
      ]);
      expect(decodeRecordBatches(object.body.subarray(object.runs[1]!.start, object.runs[1]!.end))).toHaveLength(2);
    });

    it('takes new memory when the batches do not fit in it', () => {
      const { records } = recordsIn(['zero', 'one']);
      const spare = new Uint8Array(10);
      const object = buildRequestObject(topic(), [{ partition: 0, records }], now, 1, undefined, spare);
      expect(object.body.buffer === spare.buffer).toBe(false);
      expect(object.runs.map((r) => valuesAt(object.body, r))).toEqual([['zero', 'one']]);
    });

    it('is not used for batches the topic compresses', () => {
      const { body, records } = recordsIn(['zero', 'one']);
      const object = buildRequestObject(
        topic({ 'compression.type': 'gzip' }),
        [{ partition: 0, records }],
        now,
        1,
        undefined,
        body,
      );
      expect(object.body.buffer === body.buffer).toBe(false);
      expect(object.runs.map((r) => valuesAt(object.body, r))).toEqual([['zero', 'one']]);
    });

    it('holds batches larger than the reused scratch in memory of their own, in order', () => {
      const big = 'b'.repeat(17 * 1024 * 1024);
      const { body, records } = recordsIn(['small', big, 'last']);
      const object = buildRequestObject(
        topic({ 'max.message.bytes': String(32 * 1024 * 1024) }),
        [
          { partition: 0, records: [records[0]!] },
          { partition: 1, records: [records[1]!] },
          { partition: 2, records: [records[2]!] },
        ],
        now,
        1,
        undefined,
        body,
      );
      expect(object.body.buffer === body.buffer).toBe(true);
      const [small, large, last] = object.runs.map((r) => valuesAt(object.body, r));
      expect([small, last]).toEqual([['small'], ['last']]);
      expect(large?.length === 1 && large[0] === big).toBe(true); // not toEqual: a failure's diff of 17 MB
    });
  });
});
