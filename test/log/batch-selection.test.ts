import { describe, expect, it } from 'vitest';
import { joinViews, selectBatches, spans } from '../../src/log/batch-selection.js';
import type { CommitRecord } from '../../src/partition/partition-state.js';
import { isKafkaError } from '../../src/wire/errors.js';
import { encodeRecordBatch, type LogRecord } from '../../src/wire/record-batch.js';

const record = (value: string): LogRecord => ({
  key: null,
  value: new TextEncoder().encode(value),
  headers: [],
  timestamp: 1000,
});

/**
 * One stored entry at `baseOffset`: batches of `perBatch` records each, laid end to end with
 * offsets relative to the entry (as a request object stores them).
 */
function entry(baseOffset: number, batches: number, perBatch = 2): { entry: CommitRecord; data: Uint8Array } {
  const parts = Array.from({ length: batches }, (_, b) =>
    encodeRecordBatch(
      Array.from({ length: perBatch }, (_, i) => record(`v${baseOffset + b * perBatch + i}`)),
      { baseOffset: b * perBatch },
    ),
  );
  const data = Buffer.concat(parts);
  const lastOffset = baseOffset + batches * perBatch - 1;
  return {
    entry: {
      topicId: 't',
      baseOffset,
      lastOffset,
      recordCount: batches * perBatch,
      maxTimestamp: 1000,
      leaderEpoch: 0,
      objectKey: `o${baseOffset}`,
      start: 0,
      end: data.byteLength,
      stores: [0],
    },
    data,
  };
}

/** Two entries: offsets 0-5 (three batches of two) and 6-9 (two batches of two). */
const loaded = [entry(0, 3), entry(6, 2)];
const batchSize = loaded[0]!.data.byteLength / 3;

describe('selectBatches: which stored batches a fetch answers with', () => {
  it('answers every batch from the one holding the offset up to the high watermark, with absolute offsets', () => {
    const r = selectBatches(loaded, 3, 10, 1 << 20);
    expect(r.batches.map((b) => [b.base, b.last])).toEqual([
      [2, 3],
      [4, 5],
      [6, 7],
      [8, 9],
    ]);
    expect(r.nextOffset).toBe(10);
    expect(r.bytes).toBe(4 * batchSize);
    expect(r.batches[2]!.entry).toBe(loaded[1]!.entry);
  });

  it('stops before a batch that reaches the high watermark', () => {
    const r = selectBatches(loaded, 0, 7, 1 << 20);
    expect(r.batches.map((b) => b.base)).toEqual([0, 2, 4]);
    expect(r.nextOffset).toBe(6);
  });

  it('keeps within max bytes, but always answers one batch however small the budget', () => {
    expect(selectBatches(loaded, 0, 10, 2 * batchSize).batches.map((b) => b.base)).toEqual([0, 2]);
    const one = selectBatches(loaded, 0, 10, 1);
    expect(one.batches.map((b) => b.base)).toEqual([0]);
    expect(one.nextOffset).toBe(2);
    // A later partition of a multi-partition fetch may answer nothing.
    expect(selectBatches(loaded, 0, 10, 1, Infinity, false)).toMatchObject({ batches: [], nextOffset: 0, bytes: 0 });
  });

  it('never passes the hard limit: a first batch over it is MESSAGE_TOO_LARGE, a later one ends the answer', () => {
    expect(selectBatches(loaded, 0, 10, 1 << 20, 2 * batchSize + 1).batches.map((b) => b.base)).toEqual([0, 2]);
    let error: unknown;
    try {
      selectBatches(loaded, 0, 10, 1 << 20, batchSize - 1);
    } catch (e) {
      error = e;
    }
    expect(isKafkaError(error, 'MESSAGE_TOO_LARGE')).toBe(true);
    expect(selectBatches(loaded, 0, 10, 1 << 20, batchSize - 1, false).batches).toEqual([]);
  });

  it('moves past the end of an entry whose last records were removed (a compacted entry)', () => {
    const compacted = entry(0, 1);
    compacted.entry.lastOffset = 4; // offsets 2-4 were cleaned away
    const r = selectBatches([compacted], 0, 10, 1 << 20);
    expect(r.batches.map((b) => b.base)).toEqual([0]);
    expect(r.nextOffset).toBe(5);
    // From past the batch: nothing to answer, and the next fetch starts after the entry.
    expect(selectBatches([compacted], 3, 10, 1 << 20)).toMatchObject({ batches: [], nextOffset: 5 });
  });
});

describe('spans and joinViews: the answer as bytes', () => {
  it('one span per run of batches lying end to end; one entry read whole is a view, not a copy', () => {
    const r = selectBatches(loaded, 0, 10, 1 << 20);
    const parts = spans(r.batches);
    expect(parts.map((p) => p.byteLength)).toEqual([3 * batchSize, 2 * batchSize]);
    const joined = joinViews(parts);
    expect(joined.byteLength).toBe(5 * batchSize);
    expect(Buffer.from(joined.subarray(0, 3 * batchSize)).equals(Buffer.from(loaded[0]!.data))).toBe(true);
    const first = joinViews(spans(selectBatches(loaded, 0, 6, 1 << 20).batches));
    expect(first.buffer).toBe(loaded[0]!.data.buffer);
    expect(first.byteOffset).toBe(loaded[0]!.data.byteOffset);
  });

  it('views of one buffer lying end to end are joined without a copy', () => {
    const buffer = new Uint8Array(10).map((_, i) => i);
    const joined = joinViews([buffer.subarray(0, 4), buffer.subarray(4, 10)]);
    expect(joined.buffer).toBe(buffer.buffer);
    expect([...joined]).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    const copied = joinViews([buffer.subarray(0, 2), buffer.subarray(5, 7)]);
    expect(copied.buffer).not.toBe(buffer.buffer);
    expect([...copied]).toEqual([0, 1, 5, 6]);
  });
});
