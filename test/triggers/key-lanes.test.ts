/**
 * KEY ordering's bookkeeping: a key's records stay in one lane, in order; the commit point is the
 * lowest offset not done, however far other lanes got; a partial failure keeps the rest queued
 * first, with its failures carried.
 */
import { describe, expect, it } from 'vitest';
import { KeyLanes } from '../../src/triggers/key-lanes.js';
import type { DecodedRecord } from '../../src/wire/record-batch.js';

const rec = (offset: number, key: string | null): DecodedRecord => ({
  offset,
  timestamp: 0,
  key: key === null ? null : new TextEncoder().encode(key),
  value: null,
  headers: [],
});

describe('KeyLanes', () => {
  it('keeps a key in one lane, in order, and commits only below the lowest record not done', () => {
    const lanes = new KeyLanes(4, 2, 10);
    const records = Array.from({ length: 12 }, (_, i) => rec(10 + i, `k${i % 6}`));
    lanes.add(records, 22);
    const started = lanes.start(0);
    expect(started.length).toBeGreaterThan(1);
    const byKey = new Map<string, number>();
    for (const s of started)
      for (const r of s.records) {
        const k = new TextDecoder().decode(r.key!);
        expect(byKey.get(k) ?? s.lane).toBe(s.lane);
        byKey.set(k, s.lane);
      }
    // Every lane but the one holding offset 10 finishes: nothing may be committed yet.
    const holding10 = started.find((s) => s.records[0]!.offset === 10)!;
    for (const s of started) if (s !== holding10) lanes.finished(s.lane, s.records, s.records.at(-1)!.offset + 1);
    expect(lanes.commitPoint()).toBe(10);
    // It fails from its second record: the first is done, the second stays first in its queue.
    const [, second] = holding10.records;
    lanes.finished(holding10.lane, holding10.records, second!.offset, {
      from: second!.offset,
      failures: 1,
      notBefore: 5,
    });
    expect(lanes.commitPoint()).toBe(second!.offset);
    expect(lanes.start(0).some((s) => s.lane === holding10.lane)).toBe(false); // backing off
    const again = lanes.start(5).find((s) => s.lane === holding10.lane)!;
    expect(again.records[0]!.offset).toBe(second!.offset);
    expect(again.failures).toBe(1);
  });

  it('filtered records (never added) count as done; the read end bounds the commit point', () => {
    const lanes = new KeyLanes(2, 10, 0);
    lanes.add([rec(1, null), rec(3, 'a')], 5);
    expect(lanes.commitPoint()).toBe(1);
    for (const s of lanes.start(0)) lanes.finished(s.lane, s.records, s.records.at(-1)!.offset + 1);
    expect(lanes.commitPoint()).toBe(5);
    expect(lanes.pending).toBe(0);
  });

  it('a lane short of a full batch waits the window from its first record read; a full one goes at once', () => {
    const lanes = new KeyLanes(2, 3, 0, 500);
    lanes.add([rec(0, 'a')], 1, 1000);
    expect(lanes.start(1000)).toEqual([]);
    expect(lanes.nextStart()).toBe(1500);
    lanes.add([rec(1, 'a')], 2, 1200);
    expect(lanes.start(1499)).toEqual([]);
    // The window counts from the first record's read, not the last one's.
    expect(lanes.start(1500).map((s) => s.records.map((r) => r.offset))).toEqual([[0, 1]]);
    const full = new KeyLanes(2, 3, 0, 500);
    full.add([rec(0, 'b'), rec(1, 'b'), rec(2, 'b'), rec(3, 'b')], 4, 1000);
    const [started] = full.start(1000);
    expect(started!.records.map((r) => r.offset)).toEqual([0, 1, 2]);
    // What is left after the batch waited already: its window runs from when it was read.
    full.finished(started!.lane, started!.records, 3);
    expect(full.nextStart()).toBe(1500);
  });
});
