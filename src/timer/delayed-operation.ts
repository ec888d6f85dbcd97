import type { Timer, TimerTask } from './system-timer.js';

/** How an operation ended: its condition held, its timeout passed, or it was abandoned. */
export type DelayedOperationOutcome = 'completed' | 'expired' | 'cancelled';

/**
 * Kafka's `DelayedOperation`: work that waits for a condition (enough bytes to fetch, every ISR replica
 * caught up, all members joined) or a timeout, whichever comes first. A subclass implements
 *
 * - `tryComplete()`: check the condition and, when it holds, `return this.forceComplete()`; otherwise
 *   return false. It may be async (e.g. read a high watermark from the metadata store);
 * - `onComplete()`: the one place the result is produced, called exactly once, whether the condition
 *   held or the timeout passed (as in Kafka, a timed-out fetch still answers with what it has);
 * - `onExpiration()` (optional): called after `onComplete()` when completion came from the timeout.
 *
 * Completion is exactly once: `forceComplete()` and the timeout both go through one guard, so a
 * condition check racing the timer completes the operation once, and whichever loses sees `false`.
 * `cancel()` (e.g. the client went away) ends it without calling either callback.
 */
export abstract class DelayedOperation {
  private settled: DelayedOperationOutcome | undefined;
  private timerTask: TimerTask | undefined;
  private readonly settleListeners: ((outcome: DelayedOperationOutcome) => void)[] = [];
  private checking = false;
  private recheckRequested = false;

  /** @param delayMs the timeout, counted from when the operation is handed to a purgatory. */
  constructor(readonly delayMs: number) {
    if (!Number.isFinite(delayMs) || delayMs < 0) throw new RangeError(`delayMs must be >= 0, got ${delayMs}`);
  }

  /** Checks the condition and completes (via `forceComplete()`) if it holds; true iff completed by this call. */
  abstract tryComplete(): boolean | Promise<boolean>;

  /** Produces the result; called exactly once, on completion by condition or by timeout. */
  protected abstract onComplete(): void;

  /** Called once, after `onComplete()`, when the timeout completed the operation. */
  protected onExpiration(): void {}

  /** How the operation ended, or undefined while pending. */
  get outcome(): DelayedOperationOutcome | undefined {
    return this.settled;
  }

  /** Completed, by its condition or by its timeout (Kafka's `isCompleted`). */
  get isCompleted(): boolean {
    return this.settled === 'completed' || this.settled === 'expired';
  }

  /** Completed, expired or cancelled: nothing more will happen to it. */
  get isDone(): boolean {
    return this.settled !== undefined;
  }

  /**
   * Completes the operation if nobody has yet: cancels its timeout, drops it from every watch list and
   * calls `onComplete()`. True iff this call completed it.
   */
  forceComplete(): boolean {
    return this.settle('completed');
  }

  /** Abandons a pending operation: no callback runs, its timeout and watches are removed. True iff pending. */
  cancel(): boolean {
    return this.settle('cancelled');
  }

  /**
   * Runs `tryComplete()` unless the operation is done, coalescing concurrent calls (Kafka's
   * `maybeTryComplete`): while one check is in flight, another call does not start a second one but asks
   * the first to check once more when it finishes, because the state it read may predate the event that
   * triggered the new call. No wake-up is lost, and no two checks of one operation overlap. True iff the
   * check this call started completed the operation.
   */
  maybeTryComplete(): Promise<boolean> {
    if (this.settled !== undefined) return Promise.resolve(false);
    if (this.checking) {
      this.recheckRequested = true;
      return Promise.resolve(false);
    }
    this.checking = true;
    return (async () => {
      try {
        do {
          this.recheckRequested = false;
          if (await this.tryComplete()) return true;
        } while (this.recheckRequested && this.settled === undefined);
        return false;
      } finally {
        this.checking = false;
      }
    })();
  }

  /** Calls `listener` once the operation is done (synchronously, before `onComplete()`). */
  onSettle(listener: (outcome: DelayedOperationOutcome) => void): void {
    if (this.settled !== undefined) listener(this.settled);
    else this.settleListeners.push(listener);
  }

  /** Starts the timeout on `timer`: after `delayMs` the operation expires unless done by then. Once only. */
  startTimeout(timer: Timer): void {
    if (this.timerTask !== undefined) throw new Error('the timeout of this operation has already been started');
    if (this.settled !== undefined) return;
    this.timerTask = timer.add(this.delayMs, () => this.settle('expired'));
  }

  private settle(outcome: DelayedOperationOutcome): boolean {
    if (this.settled !== undefined) return false;
    this.settled = outcome;
    this.timerTask?.cancel();
    for (const listener of this.settleListeners.splice(0)) listener(outcome);
    if (outcome !== 'cancelled') this.onComplete();
    if (outcome === 'expired') this.onExpiration();
    return true;
  }
}
