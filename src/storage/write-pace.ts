import { itemBytes } from './observed-stores.js';

/**
 * Waits until the writes so far keep to a rate on one partition key: `units` is their write units
 * so far (a write, or a delete, is billed by the size of its item: a unit a KB, so an offset with
 * 4 KB of metadata is 5). One DynamoDB partition key takes 1,000 write units a second and
 * throttles past it.
 */
export type Pace = (units: number) => Promise<void>;

/** DynamoDB's write units of an item of the metadata store's layout: one a KB, rounded up. */
export const writeUnitsOf = (pk: string, sk: string, value: unknown): number =>
  Math.max(1, Math.ceil(itemBytes(pk, sk, 1, value) / 1024));

/**
 * Write units a second one call's paced writes take on a key past PACED_WRITE_BURST: a
 * transaction's joins on its id's key (whose tidy takes TIDY_RATE; the rest is the state item's),
 * and the offsets an OffsetCommit or an EndTxn writes on a group's key (its members' heartbeats
 * and joins write the rest there). Ten TxnOffsetCommits of 100 offsets with 4 KB of metadata, in
 * one second, were ~5,000 a second on the id's key; one OffsetCommit of 1,000 such was 5,000 units
 * at once on the group's.
 */
export const PACED_WRITE_RATE = 400;
/** Write units a paced call writes at once: 100 small items, or 20 offsets with 4 KB of metadata. */
export const PACED_WRITE_BURST = 100;

/**
 * Keeps one call's writes on a key to `rate` write units a second past its first `free`. Per call:
 * the calls that write a key (a producer's requests, a consumer's commits) follow one another and
 * each may be served by another process, so a call of n units takes at least (n - free) / rate
 * seconds; calls made at the same time add up (a rate the serving processes share would need a
 * shared item).
 */
export function pacer(now: () => number, sleep: (ms: number) => Promise<void>, rate: number, free = 0): Pace {
  const started = now();
  return async (units) => {
    const wait = started + (Math.max(0, units - free) * 1000) / rate - now();
    if (wait > 0) await sleep(wait);
  };
}

/** A real wait (the default of every pacer's `sleep`; tests and benchmarks pass simulated time). */
export const realSleep = (ms: number): Promise<void> => new Promise<void>((resolve) => setTimeout(resolve, ms));
