import type { Clock } from '../clock.js';
import { BinaryHeap } from './binary-heap.js';
import { TimerTaskEntry } from './timer-task-list.js';
import { TimingWheel } from './timing-wheel.js';

export type TimerTaskState = 'pending' | 'fired' | 'cancelled';

/** A handle on a scheduled callback. */
export interface TimerTask {
  /** Absolute time, on the timer's clock, at or after which the task runs. */
  readonly expirationMs: number;
  readonly state: TimerTaskState;
  /** Stops a pending task from ever running; true iff it was pending. O(1). */
  cancel(): boolean;
}

/** Kafka's `Timer`: what delayed operations need from a timer. */
export interface Timer {
  /** Runs `run` once, `delayMs` after now on the timer's clock (unless cancelled first). */
  add(delayMs: number, run: () => void): TimerTask;
  /** Fires, in expiration order, every pending task expiring at or before `nowMs`; returns how many. */
  advanceTo(nowMs: number): number;
  /**
   * Kafka's `advanceClock(timeoutMs)`: fires what is due on the clock now; if nothing was, waits (with
   * `setTimeout`) up to `timeoutMs`, measured on the timer's clock, for a task to come due and fires it.
   * Resolves whether any task ran.
   */
  advanceClock(timeoutMs?: number): Promise<boolean>;
  /** Earliest time at which something may come due, or undefined when nothing is pending. */
  nextExpiration(): number | undefined;
  /** Pending tasks. */
  readonly size: number;
}

export interface SystemTimerOptions {
  /** Resolution of the lowest wheel, ms (default 1). */
  tickMs?: number;
  /** Buckets per wheel level (default 20). */
  wheelSize?: number;
  /** Default `performance` (monotonic: a timer's clock must never go backwards). Tests pass a controllable clock. */
  clock?: Clock;
  /**
   * Receives errors thrown by task callbacks. Without it, `advanceTo` finishes firing every due task and
   * then throws the error (an `AggregateError` when several tasks threw).
   */
  onError?: (error: unknown) => void;
}

/** setTimeout's largest delay; a longer wait simply re-arms on waking. */
const MAX_TIMEOUT_MS = 2 ** 31 - 1;

class ScheduledTask extends TimerTaskEntry implements TimerTask {
  state: TimerTaskState = 'pending';

  constructor(
    expirationMs: number,
    /** Tie-breaker: tasks expiring at the same time fire in the order they were added. */
    readonly seq: number,
    readonly run: () => void,
    private readonly onCancel: () => void,
  ) {
    super(expirationMs);
  }

  override get cancelled(): boolean {
    return this.state === 'cancelled';
  }

  cancel(): boolean {
    if (this.state !== 'pending') return false;
    this.state = 'cancelled';
    this.remove();
    this.onCancel();
    return true;
  }
}

const byExpirationThenSeq = (a: ScheduledTask, b: ScheduledTask): number =>
  a.expirationMs - b.expirationMs || a.seq - b.seq;

/**
 * Kafka's `SystemTimer`: a `TimingWheel` driven by an injectable clock.
 *
 * The wheel sorts tasks into buckets one tick wide; a bucket comes due at the start of its tick. Entries
 * the wheel hands back as expired (the current tick's, plus any added with an expiration already past)
 * wait in a small heap ordered by (expiration, insertion order), from which `advanceTo(now)` fires every
 * task with `expirationMs <= now`: each exactly once, in non-decreasing expiration order, never early.
 * Kafka instead runs a whole bucket when its tick starts, so up to a tick early; the heap only ever holds
 * one tick's worth of tasks (or a backlog when the clock jumped), so this costs O(log n) per task.
 *
 * Tasks run synchronously inside `advanceTo`. A task that adds another task already due (delay 0) has
 * it run in the same pass; one that keeps doing so never lets the pass end, like a `while (true)`.
 *
 * `startRealTime()` drives the timer from the event loop with a single unref'd `setTimeout`, armed to the
 * earliest expiration (re-armed when an earlier task is added): no polling, and nothing keeps the process
 * alive. The scheduled function and tests instead call `advanceTo`/`advanceClock` themselves.
 */
export class SystemTimer implements Timer {
  readonly tickMs: number;
  readonly wheelSize: number;
  private readonly clock: Clock;
  private readonly onError: ((error: unknown) => void) | undefined;
  private readonly wheel: TimingWheel<ScheduledTask>;
  /** Tasks the wheel declined or handed back as expired; they fire from here once due. */
  private readonly due = new BinaryHeap<ScheduledTask>(byExpirationThenSeq);
  private pending = 0;
  private seq = 0;
  private advancing = false;
  private running = false;
  private handle: ReturnType<typeof setTimeout> | undefined;
  private armedAt: number | undefined;

  constructor(options: SystemTimerOptions = {}) {
    this.tickMs = options.tickMs ?? 1;
    this.wheelSize = options.wheelSize ?? 20;
    this.clock = options.clock ?? performance;
    this.onError = options.onError;
    this.wheel = new TimingWheel({ tickMs: this.tickMs, wheelSize: this.wheelSize, startMs: this.clock.now() });
  }

  get size(): number {
    return this.pending;
  }

  /** The timer's clock reading. */
  now(): number {
    return this.clock.now();
  }

  /** Whether `startRealTime()` is driving the timer. */
  get isRunning(): boolean {
    return this.running;
  }

  add(delayMs: number, run: () => void): TimerTask {
    if (!Number.isFinite(delayMs)) throw new RangeError(`delayMs must be finite, got ${delayMs}`);
    const task = new ScheduledTask(this.clock.now() + Math.max(0, delayMs), this.seq++, run, () => this.pending--);
    this.pending++;
    if (!this.wheel.add(task)) this.due.push(task);
    if (this.running && !this.advancing && (this.armedAt === undefined || task.expirationMs < this.armedAt)) {
      this.arm();
    }
    return task;
  }

  nextExpiration(): number | undefined {
    const wheelNext = this.wheel.nextExpiration();
    const dueNext = this.peekDue()?.expirationMs;
    if (wheelNext === undefined) return dueNext;
    return dueNext === undefined ? wheelNext : Math.min(wheelNext, dueNext);
  }

  advanceTo(nowMs: number): number {
    if (this.advancing) throw new Error('SystemTimer.advanceTo called from inside a timer task');
    this.advancing = true;
    let fired = 0;
    const errors: unknown[] = [];
    try {
      this.wheel.advanceClock(nowMs, (task) => this.due.push(task));
      for (let task = this.peekDue(); task !== undefined && task.expirationMs <= nowMs; task = this.peekDue()) {
        this.due.pop();
        task.state = 'fired';
        this.pending--;
        fired++;
        try {
          task.run();
        } catch (error) {
          errors.push(error);
        }
      }
    } finally {
      this.advancing = false;
      if (this.running) this.arm();
    }
    if (errors.length > 0) {
      if (this.onError) for (const error of errors) this.onError(error);
      else throw errors.length === 1 ? errors[0] : new AggregateError(errors, `${errors.length} timer tasks threw`);
    }
    return fired;
  }

  async advanceClock(timeoutMs = 0): Promise<boolean> {
    const deadline = this.clock.now() + timeoutMs;
    for (;;) {
      const now = this.clock.now();
      if (this.advanceTo(now) > 0) return true;
      if (now >= deadline) return false;
      // nextExpiration() may be an overflow bucket's start, before any task is due: loop until one is.
      const next = this.nextExpiration();
      const wakeAt = next === undefined ? deadline : Math.min(deadline, next);
      await new Promise<void>((resolve) => setTimeout(resolve, Math.max(0, Math.ceil(wakeAt - now))));
      if (this.clock.now() === now) return this.advanceTo(now) > 0; // a clock that does not move (tests)
    }
  }

  /** Drives the timer from the event loop until `stop()`; idempotent. */
  startRealTime(): void {
    if (this.running) return;
    this.running = true;
    this.arm();
  }

  stop(): void {
    this.running = false;
    this.disarm();
  }

  /** Arms the single timeout to the earliest expiration (or leaves none when nothing is pending). */
  private arm(): void {
    this.disarm();
    const next = this.nextExpiration();
    if (next === undefined) return;
    const delay = Math.min(MAX_TIMEOUT_MS, Math.max(0, Math.ceil(next - this.clock.now())));
    this.armedAt = next;
    this.handle = setTimeout(() => {
      this.handle = undefined;
      this.armedAt = undefined;
      this.advanceTo(this.clock.now()); // re-arms in its finally, even when a task throws
    }, delay);
    this.handle.unref();
  }

  private disarm(): void {
    if (this.handle !== undefined) clearTimeout(this.handle);
    this.handle = undefined;
    this.armedAt = undefined;
  }

  /** The earliest due-heap task that is still pending; cancelled ones are dropped on the way. */
  private peekDue(): ScheduledTask | undefined {
    let task = this.due.peek();
    while (task !== undefined && task.state !== 'pending') {
      this.due.pop();
      task = this.due.peek();
    }
    return task;
  }
}
