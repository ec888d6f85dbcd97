/** Kafka's OffsetForLeaderEpoch answer and KIP-320's current-leader-epoch check, over an epoch history. */
import { describe, expect, it } from 'vitest';
import { checkCurrentLeaderEpoch, epochAt, epochEndOffset } from '../../src/partition/epoch-history.js';
import { isKafkaError } from '../../src/wire/errors.js';

// Epoch 2 led from offset 10, epoch 5 from 40 (epochs 3 and 4 never appended), epoch 7 from 90.
const history = [
  { epoch: 2, startOffset: 10 },
  { epoch: 5, startOffset: 40 },
  { epoch: 7, startOffset: 90 },
];
const LEO = 120;

describe('epochEndOffset', () => {
  it('answers the log end offset for the latest epoch', () => {
    expect(epochEndOffset(history, 7, LEO)).toEqual({ leaderEpoch: 7, endOffset: LEO });
  });
  it('answers where the next newer epoch starts, under the largest epoch at or below the one asked', () => {
    expect(epochEndOffset(history, 2, LEO)).toEqual({ leaderEpoch: 2, endOffset: 40 });
    expect(epochEndOffset(history, 4, LEO)).toEqual({ leaderEpoch: 2, endOffset: 40 });
    expect(epochEndOffset(history, 6, LEO)).toEqual({ leaderEpoch: 5, endOffset: 90 });
  });
  it('answers an epoch older than the history with itself and the history start', () => {
    expect(epochEndOffset(history, 1, LEO)).toEqual({ leaderEpoch: 1, endOffset: 10 });
  });
  it('answers an epoch newer than any, or -1, as unknown', () => {
    expect(epochEndOffset(history, 8, LEO)).toEqual({ leaderEpoch: -1, endOffset: -1 });
    expect(epochEndOffset(history, -1, LEO)).toEqual({ leaderEpoch: -1, endOffset: -1 });
    expect(epochEndOffset([], 0, LEO)).toEqual({ leaderEpoch: -1, endOffset: -1 });
  });
});

describe('epochAt', () => {
  it('is the epoch whose leader wrote the offset, -1 before the history', () => {
    expect([5, 10, 39, 40, 89, 90, 200].map((o) => epochAt(history, o))).toEqual([-1, 2, 2, 5, 5, 7, 7]);
  });
});

describe('checkCurrentLeaderEpoch', () => {
  const thrown = (current: number, leader: number) => {
    try {
      checkCurrentLeaderEpoch(current, leader, 't-0');
      return 'none';
    } catch (e) {
      return isKafkaError(e) ? e.errorName : String(e);
    }
  };
  it('is FENCED_LEADER_EPOCH below the current epoch, UNKNOWN_LEADER_EPOCH above, nothing at it or at -1', () => {
    expect(thrown(3, 4)).toBe('FENCED_LEADER_EPOCH');
    expect(thrown(5, 4)).toBe('UNKNOWN_LEADER_EPOCH');
    expect(thrown(4, 4)).toBe('none');
    expect(thrown(-1, 4)).toBe('none');
  });
});
