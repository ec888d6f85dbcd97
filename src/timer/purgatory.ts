import { awaitCondition, type AwaitConditionOptions } from './await-condition.js';
import type { DelayedOperation } from './delayed-operation.js';
import type { Timer } from './system-timer.js';

export interface PurgatoryOptions {
  /** Drives the timeouts (and `awaitCondition`'s re-checks); one timer may serve many purgatories. */
  timer: Timer;
  /** For logs and metrics, as Kafka names its purgatories ("Fetch", "Produce", "Rebalance"). */
  name?: string;
  /**
   * Receives errors of checks triggered by `checkAndComplete` (the operation stays pending: a later
   * notification or its timeout ends it). Without it, `checkAndComplete` rethrows them once every
   * watcher of the key has been tried.
   */
  onError?: (error: unknown, op: DelayedOperation) => void;
}

/**
 * Kafka's `DelayedOperationPurgatory`: delayed operations waiting on watch keys and a timeout.
 *
 * `tryCompleteElseWatch(op, keys)` registers the operation and checks it; an event on a key (a produce
 * to a partition, a replica catching up) calls `checkAndComplete(key)`, which re-checks the operations
 * watching it. An operation leaves every watch list the moment it completes, expires or is cancelled, so
 * `watched(key)` counts only live operations and nothing leaks (Kafka purges lazily instead).
 *
 * Kafka tries, then watches, then tries again so that an event between the first try and the watch is not
 * lost. Here watching is a few synchronous Map operations, so the operation is watched first and checked
 * once: an event during that (possibly async) check asks for one more check (see `maybeTryComplete`),
 * which gives the same guarantee with one check instead of two.
 */
export class Purgatory<T extends DelayedOperation = DelayedOperation> {
  readonly name: string;
  readonly timer: Timer;
  private readonly onError: ((error: unknown, op: DelayedOperation) => void) | undefined;
  private readonly watchers = new Map<string, Set<DelayedOperation>>();
  private pending = 0;

  constructor(options: PurgatoryOptions) {
    this.timer = options.timer;
    this.name = options.name ?? 'purgatory';
    this.onError = options.onError;
  }

  /** Operations registered and not yet done (Kafka's `numDelayed`). */
  get delayed(): number {
    return this.pending;
  }

  /** Live operations watching `key`. */
  watched(key: string): number {
    return this.watchers.get(key)?.size ?? 0;
  }

  /**
   * Watches `watchKeys`, starts the operation's timeout and tries to complete it. Resolves true iff this
   * call completed it; otherwise it stays watched until a `checkAndComplete` completes it, its timeout
   * expires it, or it is cancelled. If the check throws, the operation is cancelled and the error
   * propagates. An operation already done resolves false; registering one twice throws.
   */
  tryCompleteElseWatch(op: T, watchKeys: readonly string[]): Promise<boolean> {
    return this.watchAndTry(op, watchKeys);
  }

  /**
   * Re-checks every operation watching `key` (concurrently, each at most one check at a time) and
   * resolves how many this call completed.
   */
  async checkAndComplete(key: string): Promise<number> {
    const ops = this.watchers.get(key);
    if (ops === undefined) return 0;
    const snapshot = [...ops];
    const results = await Promise.allSettled(snapshot.map((op) => op.maybeTryComplete()));
    let completed = 0;
    const errors: unknown[] = [];
    results.forEach((result, i) => {
      if (result.status === 'fulfilled') {
        if (result.value) completed++;
      } else if (this.onError) {
        this.onError(result.reason, snapshot[i]!);
      } else {
        errors.push(result.reason);
      }
    });
    if (errors.length === 1) throw errors[0];
    if (errors.length > 1) throw new AggregateError(errors, `${errors.length} delayed operations failed their check`);
    return completed;
  }

  /**
   * Resolves true as soon as `check()` holds, false once `timeoutMs` passes; woken by
   * `checkAndComplete` on any of `keys` and by a back-off re-check; rejects with `signal.reason` on abort.
   * See `awaitCondition` in await-condition.ts.
   */
  awaitCondition(options: AwaitConditionOptions): Promise<boolean> {
    return awaitCondition(this.timer, (op, keys) => this.watchAndTry(op, keys), options);
  }

  private async watchAndTry(op: DelayedOperation, watchKeys: readonly string[]): Promise<boolean> {
    if (op.isDone) return false;
    op.startTimeout(this.timer); // throws when registered twice, before anything is watched
    const keys = [...new Set(watchKeys)];
    this.pending++;
    op.onSettle(() => {
      this.pending--;
      for (const key of keys) this.unwatch(key, op);
    });
    for (const key of keys) {
      let ops = this.watchers.get(key);
      if (ops === undefined) this.watchers.set(key, (ops = new Set()));
      ops.add(op);
    }
    try {
      return await op.maybeTryComplete();
    } catch (error) {
      op.cancel();
      throw error;
    }
  }

  private unwatch(key: string, op: DelayedOperation): void {
    const ops = this.watchers.get(key);
    if (ops === undefined) return;
    ops.delete(op);
    if (ops.size === 0) this.watchers.delete(key);
  }
}
