import { describe, expect, it } from 'vitest';
import { endBefore, fitAnswer, fitInOrder, type RoomBatch } from '../../src/log/aborted-room.js';
import type { AbortedTransaction } from '../../src/partition/offset-index.js';

/** Batches of 10 offsets and 100 bytes from offset 0; producer 7 is transactional in every other one. */
const batches: RoomBatch[] = Array.from({ length: 5 }, (_, i) => ({
  size: 100,
  base: i * 10,
  last: i * 10 + 9,
  producerId: i % 2 === 0 ? 7 : -1,
  transactional: i % 2 === 0,
}));
const txn = (producerId: number, firstOffset: number, lastOffset: number): AbortedTransaction => ({
  topicId: 't',
  producerId,
  firstOffset,
  lastOffset,
});
/** Producer 7's aborted transactions in batches 0, 2 and 4 (markers right after), and a long one of producer 9. */
const aborted = [txn(9, 0, 60), txn(7, 0, 10), txn(7, 20, 30), txn(7, 40, 50)];
const cost = { batch: (b: RoomBatch) => b.size, aborted: () => 30 };

describe('fitAnswer: a read_committed answer within its room, aborted transactions counted', () => {
  it('an answer that fits is kept whole', () => {
    const fitted = fitAnswer({ batches, nextOffset: 50, aborted }, 0, 620, cost, false);
    expect(fitted).toEqual({ batches, nextOffset: 50, aborted, cost: 620 });
  });

  it('gives back whole batches from the end; the list keeps the transactions overlapping the batches kept', () => {
    // Batches 0-3 with the three transactions starting below 40 cost 400 + 3 * 30; batch 4 adds 100 + 30.
    const fitted = fitAnswer({ batches, nextOffset: 50, aborted }, 0, 619, cost, false);
    expect(fitted.batches).toEqual(batches.slice(0, 4));
    expect(fitted.nextOffset).toBe(40);
    expect(fitted.aborted).toEqual(aborted.slice(0, 3));
    expect(fitted.cost).toBe(490);
    expect(fitAnswer({ batches, nextOffset: 50, aborted }, 0, 489, cost, false)).toMatchObject({
      batches: batches.slice(0, 3),
      nextOffset: 30,
      aborted: aborted.slice(0, 3),
    });
  });

  it('without room for one batch, a partition after the first with data answers nothing from its fetch offset', () => {
    const fitted = fitAnswer({ batches, nextOffset: 50, aborted }, 3, 150, cost, false);
    expect(fitted).toEqual({ batches: [], nextOffset: 3, aborted: [], cost: 0 });
  });

  it('the first partition with data keeps one batch; a list that does not fit keeps only that batch’s transaction', () => {
    expect(fitAnswer({ batches, nextOffset: 50, aborted }, 3, 160, cost, true)).toEqual({
      batches: batches.slice(0, 1),
      nextOffset: 10,
      aborted: aborted.slice(0, 2),
      cost: 160,
    });
    expect(fitAnswer({ batches, nextOffset: 50, aborted }, 3, 159, cost, true)).toEqual({
      batches: batches.slice(0, 1),
      nextOffset: 10,
      aborted: [txn(7, 0, 10)],
      cost: 130,
    });
    // A batch outside transactions needs no list at all.
    const plain = batches.slice(1);
    expect(fitAnswer({ batches: plain, nextOffset: 50, aborted }, 10, 50, cost, true)).toMatchObject({
      batches: plain.slice(0, 1),
      nextOffset: 20,
      aborted: [],
    });
  });

  it('a list with a room of its own (a header): the batches cost nothing, the list bounds them', () => {
    const header = { batch: () => 0, aborted: () => 30 };
    expect(fitAnswer({ batches, nextOffset: 50, aborted }, 0, 89, header, true)).toMatchObject({
      batches: batches.slice(0, 2),
      nextOffset: 20,
      aborted: aborted.slice(0, 2),
      cost: 60,
    });
  });
});

describe('fitInOrder: the partitions of one answer share its room in the order given', () => {
  const partition = { fetchOffset: 0, answer: { batches, nextOffset: 50, aborted } }; // 620 in all

  it('the first partition that does not fit gives back batches from its end; those after it answer nothing', () => {
    const fitted = fitInOrder([partition, undefined, partition, partition], 620 + 489, cost);
    expect(fitted[0]).toEqual(partition.answer);
    expect(fitted[1]).toBeUndefined(); // a partition answered with an error
    expect(fitted[2]).toMatchObject({ batches: batches.slice(0, 3), nextOffset: 30, aborted: aborted.slice(0, 3) });
    // Room is left for a batch of the last partition, but the answer is full from the third on.
    expect(fitted[3]).toEqual({ batches: [], nextOffset: 0, aborted: [] });
  });

  it('the first partition with data keeps one batch however little room there is; a later one does not', () => {
    const empty = { fetchOffset: 50, answer: { batches: [], nextOffset: 50, aborted: [] } };
    const fitted = fitInOrder([empty, partition, partition], 10, cost);
    expect(fitted[0]).toEqual(empty.answer);
    expect(fitted[1]).toMatchObject({ batches: batches.slice(0, 1), nextOffset: 10, aborted: [txn(7, 0, 10)] });
    expect(fitted[2]).toEqual({ batches: [], nextOffset: 0, aborted: [] });
  });
});

describe('endBefore: an answer no further than its aborted list is known whole', () => {
  it('keeps the batches wholly below the bound and the transactions overlapping them', () => {
    expect(endBefore({ batches, nextOffset: 50, aborted }, 3, 31)).toEqual({
      batches: batches.slice(0, 3),
      nextOffset: 30,
      aborted: aborted.slice(0, 3),
    });
    expect(endBefore({ batches, nextOffset: 50, aborted }, 3, 50)).toEqual({ batches, nextOffset: 50, aborted });
  });
});
