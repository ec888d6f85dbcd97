/**
 * The stored form of a share-partition (share-partition-codec.ts): records as runs, read back as
 * the same records, in a few runs where receives locked them together.
 */
import { describe, expect, it } from 'vitest';
import { decodeSharePartition, encodeSharePartition } from '../../src/share/share-partition-codec.js';
import type { InFlightRecord, SharePartitionState } from '../../src/share/share-partition.js';

const state = (records: InFlightRecord[]): SharePartitionState => ({
  topicId: 't',
  spso: records[0]?.offset ?? 0,
  speo: (records[records.length - 1]?.offset ?? -1) + 1,
  records,
  stateEpoch: 2,
  recent: ['a', 'b!1,2'],
  dlq: { producerId: 7, producerEpoch: 0, nextSequence: 3 },
});

describe('share-partition stored as runs', () => {
  it('reads back every record as it was, states, holders, locks and dead-letter sequences included', () => {
    const records: InFlightRecord[] = [
      ...Array.from(
        { length: 100 },
        (_, i): InFlightRecord => ({
          offset: 10 + i,
          state: 'acquired',
          deliveries: 1,
          member: 'w1',
          lockedUntil: 5000,
        }),
      ),
      { offset: 110, state: 'acknowledged', deliveries: 1 },
      { offset: 111, state: 'available', deliveries: 2 },
      // A gap (a transaction marker at 112), then records alike on both sides of it.
      { offset: 113, state: 'available', deliveries: 2 },
      { offset: 114, state: 'archiving', deliveries: 5, why: 'limit', dlqSeq: 1 },
      { offset: 115, state: 'archiving', deliveries: 1, why: 'rejected', dlqSeq: 2 },
      { offset: 116, state: 'archiving', deliveries: 1, why: 'rejected' },
      { offset: 117, state: 'archived', deliveries: 5 },
      ...Array.from(
        { length: 50 },
        (_, i): InFlightRecord => ({
          offset: 118 + i,
          state: 'acquired',
          deliveries: 1,
          member: 'w2',
          lockedUntil: i < 25 ? 5000 : 6000,
        }),
      ),
    ];
    const s = state(records);
    const stored = encodeSharePartition(s);
    expect(stored.runs).toHaveLength(10);
    expect(JSON.parse(JSON.stringify(decodeSharePartition(JSON.parse(JSON.stringify(stored)))))).toEqual(s);
  });

  it('reads items that hold their records one by one', () => {
    const s = state([{ offset: 3, state: 'acquired', deliveries: 1, member: 'w', lockedUntil: 9 }]);
    expect(decodeSharePartition(s)).toEqual(s);
  });
});
