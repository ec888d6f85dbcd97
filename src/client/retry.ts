import { KafkaClientError, isRetriable } from './errors.js';

/**
 * Exponential back-off with jitter (Kafka's retry.backoff.ms / retry.backoff.max.ms, KIP-580):
 * attempt n waits min(max, initial * 2^n), spread by +-20% so that clients retrying the same
 * failure do not arrive in lockstep.
 */
export function backoffMs(
  attempt: number,
  initialMs: number,
  maxMs: number,
  random: () => number = Math.random,
): number {
  const exp = Math.min(maxMs, initialMs * 2 ** Math.min(attempt, 30));
  const jitter = 0.8 + random() * 0.4;
  return Math.max(0, Math.round(Math.min(maxMs, exp * jitter)));
}

export interface RetryOptions {
  /** Retries after the first attempt (Kafka's `retries`). */
  retries: number;
  initialBackoffMs: number;
  maxBackoffMs: number;
  /** Absolute time (ms since epoch) after which no new attempt starts. */
  deadline?: number;
  signal?: AbortSignal;
  /** Whether a failure may be retried; retriable KafkaClientErrors by default. */
  retryIf?: (e: unknown) => boolean;
  onRetry?: (e: unknown, attempt: number, waitMs: number) => void;
}

export const sleep = (ms: number, signal?: AbortSignal): Promise<void> =>
  new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const t = setTimeout(done, ms);
    function done() {
      clearTimeout(t);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });

/** Runs `fn` until it succeeds, fails with a non-retriable error, or runs out of retries or time. */
export async function retry<T>(fn: (attempt: number) => Promise<T>, options: RetryOptions): Promise<T> {
  const retryIf = options.retryIf ?? isRetriable;
  for (let attempt = 0; ; attempt++) {
    try {
      return await fn(attempt);
    } catch (e) {
      if (!retryIf(e) || attempt >= options.retries || options.signal?.aborted) throw e;
      // A throttled request waits out its throttle time, whatever the back-off says.
      const wait = Math.max(
        backoffMs(attempt, options.initialBackoffMs, options.maxBackoffMs),
        e instanceof KafkaClientError ? (e.throttleTimeMs ?? 0) : 0,
      );
      if (options.deadline !== undefined && Date.now() + wait >= options.deadline) throw e;
      options.onRetry?.(e, attempt, wait);
      await sleep(wait, options.signal);
      if (options.signal?.aborted)
        throw e instanceof KafkaClientError ? e : new KafkaClientError('ILLEGAL_STATE', 'aborted', { cause: e });
    }
  }
}
