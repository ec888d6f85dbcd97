import type { Purgatory } from './purgatory.js';

/** The purgatory watch key of a partition: appends to it (and HW moves) call `checkAndComplete` on it. */
export const partitionWatchKey = (topic: string, partition: number) => `${topic}/${partition}`;

export interface DelayedFetchOptions<R extends { bytes: number }> {
  purgatory: Purgatory;
  /** Keys whose notifications re-check the fetch (see `partitionWatchKey`). */
  keys: readonly string[];
  /** Kafka's fetch.min.bytes: answer as soon as this many bytes are readable below the HW. */
  minBytes: number;
  /** Kafka's fetch.max.wait.ms: answer with what there is after this long. */
  maxWaitMs: number;
  /** The answer read before waiting. */
  initial: R;
  /**
   * Reads again if something may have changed (e.g. the HW moved), else undefined. May throw
   * (e.g. OFFSET_OUT_OF_RANGE once retention passed the fetch offset): the wait then rejects.
   */
  poll: () => Promise<R | undefined>;
  /**
   * A read that answers whatever its bytes: as Kafka's DelayedFetch, one where a partition failed
   * (e.g. its offset passed the log end after a truncation) is answered at once.
   */
  answersNow?: (read: R) => boolean;
  /** The client went away: stop waiting (rejects with the signal's reason). */
  signal?: AbortSignal;
}

/**
 * Kafka's DelayedFetch over a purgatory: resolves with a read of at least `minBytes` as soon as one
 * is possible, else with the last read once `maxWaitMs` passed (possibly empty, as Kafka answers a
 * fetch that timed out). An append in this process completes it at once through the watch keys; an
 * append by another process (another Lambda) is found by the purgatory's bounded back-off re-check.
 * No polling loop: both wake-ups go through the timing wheel.
 */
export async function delayedFetch<R extends { bytes: number }>(options: DelayedFetchOptions<R>): Promise<R> {
  const { purgatory, keys, minBytes, maxWaitMs, poll, signal } = options;
  const done = (read: R) => read.bytes >= minBytes || (options.answersNow?.(read) ?? false);
  let latest = options.initial;
  if (done(latest) || maxWaitMs <= 0) return latest;
  await purgatory.awaitCondition({
    keys,
    timeoutMs: maxWaitMs,
    ...(signal ? { signal } : {}),
    check: async () => {
      const read = await poll();
      if (read === undefined) return false;
      latest = read;
      return done(read);
    },
  });
  return latest;
}
