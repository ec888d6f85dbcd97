import { DelayedOperation } from './delayed-operation.js';
import type { Timer, TimerTask } from './system-timer.js';

/** Bounds of the back-off between unprompted re-checks: `initial`, doubling up to `max` (ms). */
export interface RecheckBackoff {
  initial: number;
  max: number;
}

export interface AwaitConditionOptions {
  /** Keys whose `checkAndComplete` should re-check the condition (e.g. `partitionWatchKey(topic, p)`). */
  keys: readonly string[];
  /** Give up (resolve false) after this long. */
  timeoutMs: number;
  /** The condition, e.g. "the high watermark passed the fetch offset". Rejecting rejects the wait. */
  check: () => boolean | Promise<boolean>;
  /** Aborting cancels the wait, which rejects with `signal.reason`. */
  signal?: AbortSignal;
  /**
   * Re-check on this back-off even without a notification, because another process (another Lambda)
   * may change the state without telling this one. Default `{ initial: 50, max: 1000 }`; false: never.
   */
  recheckBackoffMs?: RecheckBackoff | false;
}

export const DEFAULT_RECHECK_BACKOFF_MS: Readonly<RecheckBackoff> = { initial: 50, max: 1000 };

/** Registers an operation with a purgatory (watch keys, start the timeout) and tries it once. */
export type WatchOperation = (op: DelayedOperation, keys: readonly string[]) => Promise<boolean>;

/** A delayed operation whose condition is a caller-supplied check, settling a promise. */
class ConditionOperation extends DelayedOperation {
  constructor(
    timeoutMs: number,
    private readonly check: () => boolean | Promise<boolean>,
    private readonly resolve: (satisfied: boolean) => void,
    private readonly reject: (error: unknown) => void,
  ) {
    super(timeoutMs);
  }

  async tryComplete(): Promise<boolean> {
    let satisfied: boolean;
    try {
      satisfied = await this.check();
    } catch (error) {
      if (this.cancel()) this.reject(error);
      return false;
    }
    return satisfied && this.forceComplete();
  }

  protected override onComplete(): void {
    this.resolve(this.outcome === 'completed');
  }
}

/**
 * Waits until `check()` holds (true) or `timeoutMs` passes (false), for the HTTP layer's long polls
 * (fetch with min_bytes/max_wait_ms, acks=all). `check()` runs once at the start, again whenever a key
 * is notified through `checkAndComplete`, and on a bounded exponential back-off scheduled on `timer`
 * (never `setInterval`), since appends made by other processes notify nobody here. Checks of one wait
 * never overlap; a notification arriving mid-check causes one more check after it.
 */
export function awaitCondition(timer: Timer, watch: WatchOperation, options: AwaitConditionOptions): Promise<boolean> {
  const { keys, timeoutMs, check, signal } = options;
  const backoff = options.recheckBackoffMs ?? DEFAULT_RECHECK_BACKOFF_MS;
  if (backoff !== false && !(backoff.initial > 0 && backoff.max >= backoff.initial && Number.isFinite(backoff.max))) {
    return Promise.reject(new RangeError(`recheckBackoffMs needs 0 < initial <= max, got ${JSON.stringify(backoff)}`));
  }
  if (signal?.aborted) return Promise.reject(signal.reason);

  return new Promise<boolean>((resolve, reject) => {
    const op = new ConditionOperation(timeoutMs, check, resolve, reject);
    let recheck: TimerTask | undefined;
    const onAbort = (): void => {
      if (op.cancel()) reject(signal?.reason);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
    op.onSettle(() => {
      signal?.removeEventListener('abort', onAbort);
      recheck?.cancel();
    });

    const scheduleRecheck = (delayMs: number): void => {
      recheck = timer.add(delayMs, () => {
        const next = (): void => {
          if (!op.isDone) scheduleRecheck(Math.min(delayMs * 2, (backoff as RecheckBackoff).max));
        };
        op.maybeTryComplete().then(next, next);
      });
    };
    if (backoff !== false) scheduleRecheck(backoff.initial);

    watch(op, keys).catch((error: unknown) => {
      if (op.cancel()) reject(error);
    });
  });
}
