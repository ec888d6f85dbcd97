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
});
