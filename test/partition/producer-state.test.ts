/**
 * The packed producer table of the partition state: what it keeps of each producer, and the
 * sequence check over entries kept whole (recent producers) or short (the others).
 */
import { describe, expect, it } from 'vitest';
import {
  checkSequence,
  packProducers,
  producerIn,
  withProducerEntry,
  RECENT_FULL,
  unpackProducers,
} from '../../src/partition/producer-state.js';

const NOW = 1_764_669_600_000;
const batch = (producerId: number, baseSequence: number, count = 10, producerEpoch = 0) => ({
  producerId,
  producerEpoch,
  baseSequence,
  lastSequence: baseSequence + count - 1,
});

/** The table after a producer's batch landed at baseOffset..lastOffset (partition-state version 1's bound). */
const record = (
  state: Parameters<typeof withProducerEntry>[0],
  b: ReturnType<typeof batch>,
  baseOffset: number,
  lastOffset: number,
  now: number,
) => withProducerEntry(state, { ...b, baseOffset, lastOffset, updatedAt: now }, now).table;

describe('the packed producer table', () => {
  it('round-trips the most recent producers whole and the others as epoch, last sequence and age', () => {
    let state: { pids?: string } = {};
    for (let p = 0; p < RECENT_FULL + 4; p++)
      state = { pids: record(state, batch(1000 + p, 50), 7000 + 10 * p, 7009 + 10 * p, NOW + p * 1000) };
    const entries = unpackProducers(state.pids);
    expect(entries).toHaveLength(RECENT_FULL + 4);
    // Most recent first; the newest RECENT_FULL whole.
    expect(entries[0]).toEqual({
      producerId: 1000 + RECENT_FULL + 3,
      producerEpoch: 0,
      baseSequence: 50,
      lastSequence: 59,
      baseOffset: 7000 + 10 * (RECENT_FULL + 3),
      lastOffset: 7009 + 10 * (RECENT_FULL + 3),
      updatedAt: NOW + (RECENT_FULL + 3) * 1000,
    });
    expect(entries.slice(0, RECENT_FULL).every((e) => e.baseOffset !== undefined)).toBe(true);
    expect(entries.at(-1)).toEqual({ producerId: 1000, producerEpoch: 0, lastSequence: 59, updatedAt: NOW });
    // A producer that writes again moves to the front, whole.
    const again = record(state, batch(1000, 60), 9000, 9009, NOW + 60_000);
    expect(producerIn({ pids: again }, 1000)).toMatchObject({
      baseSequence: 60,
      lastSequence: 69,
      baseOffset: 9000,
      lastOffset: 9009,
    });
    expect(packProducers(unpackProducers(again))).toBe(again);
  });

  it('expires producers idle past producer.id.expiration.ms and reads states written as JSON objects', () => {
    const legacy = {
      producers: {
        '7': {
          producerId: 7,
          producerEpoch: 2,
          baseSequence: 0,
          lastSequence: 4,
          baseOffset: 10,
          lastOffset: 14,
          updatedAt: NOW,
        },
      },
    };
    expect(producerIn(legacy, 7)).toMatchObject({ producerEpoch: 2, lastSequence: 4 });
    const next = record(legacy, batch(8, 0), 15, 24, NOW + 1000);
    expect(unpackProducers(next).map((e) => e.producerId)).toEqual([8, 7]);
    const later = record({ pids: next }, batch(9, 0), 25, 34, NOW + 86_400_000 + 500);
    expect(unpackProducers(later).map((e) => e.producerId)).toEqual([9, 8]);
  });

  it('checks sequences against a short entry: next batch appends, a retry goes to the producer item (older), a gap or old epoch fails', () => {
    const short = { producerId: 5, producerEpoch: 1, lastSequence: 19, updatedAt: NOW };
    expect(checkSequence(short, batch(5, 20, 10, 1))).toEqual({ kind: 'append' });
    expect(checkSequence(short, batch(5, 10, 10, 1))).toEqual({ kind: 'older' });
    expect(() => checkSequence(short, batch(5, 25, 10, 1))).toThrow(/OUT_OF_ORDER|expected sequence 20/);
    expect(() => checkSequence(short, batch(5, 20, 10, 0))).toThrow(/fenced/);
    const whole = { ...short, baseSequence: 10, baseOffset: 100, lastOffset: 109 };
    expect(checkSequence(whole, batch(5, 10, 10, 1))).toEqual({ kind: 'duplicate', baseOffset: 100, lastOffset: 109 });
  });
});
