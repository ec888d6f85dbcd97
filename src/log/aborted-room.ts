import type { AbortedTransaction } from '../partition/offset-index.js';

/**
 * A read_committed answer carries, beside its batches, Kafka's aborted_transactions: the aborted
 * transactions overlapping what it returns (ABORT marker at or after the fetch offset, first offset
 * below the next offset). The list grows with the batches, and a platform bounds what it travels
 * in: the whole answer (Lambda's 6 MB, in the multi-partition fetch's body) or the headers (API
 * Gateway's, for the per-partition fetch's Kafka-Aborted-Transactions). An answer is made to fit
 * by giving back whole batches from its end, as Kafka gives back what does not fit a full
 * response; the list then shrinks to the batches kept.
 */

/** What a fitted answer needs to know of a batch: its size, its absolute offsets and its producer. */
export interface RoomBatch {
  size: number;
  base: number;
  last: number;
  producerId: number;
  transactional: boolean;
}

/** What an answer's aborted transactions may take: `bytes` of room, each transaction at its `cost`. */
export interface AbortedRoom {
  bytes: number;
  cost: (a: AbortedTransaction) => number;
}

/** One partition's answer: its batches, the offset to fetch next, and the aborted transactions of [fetchOffset, nextOffset). */
export interface RoomAnswer<B extends RoomBatch> {
  batches: B[];
  nextOffset: number;
  aborted: AbortedTransaction[];
}

/**
 * The largest prefix of `answer` whose batches (at `cost.batch`) and aborted transactions (at
 * `cost.aborted`) fit `room`, with what it costs. `answer.aborted` is in first-offset order (as the
 * offset index reads it), so the list of a prefix ending at `next` is the list's prefix of first
 * offsets below `next`. A prefix of no batches answers nothing: its next offset is the fetch
 * offset, as Kafka answers a partition the full response left out.
 *
 * With `atLeastOne` (Kafka's rule for the first partition with data: a consumer always
 * progresses) the first batch stays whatever it costs. If its overlapping list alone does not fit,
 * the list keeps only the transaction the batch belongs to (none for a batch outside
 * transactions): what a consumer's filter needs, as Kafka's consumer drops a batch only for a
 * listed transaction of the batch's own producer. The cost answered may then pass `room`.
 */
export function fitAnswer<B extends RoomBatch>(
  answer: RoomAnswer<B>,
  fetchOffset: number,
  room: number,
  cost: { batch: (b: B) => number; aborted: (a: AbortedTransaction) => number },
  atLeastOne: boolean,
): RoomAnswer<B> & { cost: number } {
  const { batches, aborted } = answer;
  const listCost = (list: AbortedTransaction[]) => list.reduce((n, a) => n + cost.aborted(a), 0);
  const whole = batches.reduce((n, b) => n + cost.batch(b), 0) + listCost(aborted);
  if (whole <= room) return { ...answer, cost: whole };

  // The prefix of `kept` batches, with `keptListed` transactions listed, costs `keptCost`.
  let kept = 0;
  let keptListed = 0;
  let keptCost = 0;
  let spent = 0;
  let listed = 0;
  for (const b of batches) {
    spent += cost.batch(b);
    while (listed < aborted.length && aborted[listed]!.firstOffset <= b.last) spent += cost.aborted(aborted[listed++]!);
    if (spent > room) break;
    kept++;
    keptListed = listed;
    keptCost = spent;
  }
  const fitted: RoomAnswer<B> & { cost: number } =
    kept > 0
      ? {
          batches: batches.slice(0, kept),
          nextOffset: batches[kept - 1]!.last + 1,
          aborted: aborted.slice(0, keptListed),
          cost: keptCost,
        }
      : { batches: [], nextOffset: fetchOffset, aborted: [], cost: 0 };
  if (fitted.batches.length > 0 || !atLeastOne) return fitted;
  const first = batches[0];
  // No batch at all (a range compaction emptied): nothing returned, so no transaction to list.
  if (!first) return { batches: [], nextOffset: answer.nextOffset, aborted: [], cost: 0 };
  let list = aborted.filter((a) => a.firstOffset <= first.last);
  if (cost.batch(first) + listCost(list) > room)
    list = list.filter(
      (a) =>
        first.transactional &&
        a.producerId === first.producerId &&
        a.firstOffset <= first.base &&
        first.base <= a.lastOffset,
    );
  return { batches: [first], nextOffset: first.last + 1, aborted: list, cost: cost.batch(first) + listCost(list) };
}

/**
 * A multi-partition answer within `room`: the partitions in the order given keep what fits, the
 * first that does not fit gives back whole batches from its end, and every partition after it
 * answers no records (its next offset the fetch offset, its list empty), as Kafka leaves out what
 * a full response cannot carry. The first partition with data keeps one batch at least
 * ({@link fitAnswer}). Undefined entries (partitions answered with an error) are skipped.
 */
export function fitInOrder<B extends RoomBatch>(
  partitions: ({ fetchOffset: number; answer: RoomAnswer<B> } | undefined)[],
  room: number,
  cost: { batch: (b: B) => number; aborted: (a: AbortedTransaction) => number },
): (RoomAnswer<B> | undefined)[] {
  let left = room;
  let full = false;
  let data = false;
  return partitions.map((p) => {
    if (!p) return undefined;
    if (full) return { batches: [], nextOffset: p.fetchOffset, aborted: [] };
    const { cost: spent, ...fitted } = fitAnswer(p.answer, p.fetchOffset, left, cost, !data);
    if (fitted.batches.length < p.answer.batches.length || fitted.nextOffset !== p.answer.nextOffset) full = true;
    left -= spent;
    data ||= fitted.batches.length > 0;
    return fitted;
  });
}

/**
 * The answer cut to end before `completeBelow`, where its aborted list stops being known whole
 * (OffsetIndex.abortedTransactionsRead): the batches lying wholly below it, and the list of those.
 * The first batch is kept in any case, so the answer still progresses: the index is read until
 * `completeBelow` passes the fetch offset, so the batch holding that offset starts below it, and
 * every transaction the batch may belong to (begun at or before its start) is listed.
 */
export function endBefore<B extends RoomBatch>(
  answer: RoomAnswer<B>,
  fetchOffset: number,
  completeBelow: number,
): RoomAnswer<B> {
  if (answer.nextOffset <= completeBelow) return answer;
  let kept = answer.batches.filter((b) => b.last < completeBelow);
  if (kept.length === 0 && answer.batches.length > 0) kept = answer.batches.slice(0, 1);
  const nextOffset = kept.length > 0 ? kept.at(-1)!.last + 1 : Math.max(fetchOffset, completeBelow);
  return { batches: kept, nextOffset, aborted: answer.aborted.filter((a) => a.firstOffset < nextOffset) };
}
