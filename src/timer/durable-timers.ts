import type { Clock } from '../clock.js';
import { moveCursor } from './scan-cursor.js';
import type { MetadataStore, MetaItem } from '../storage/ports.js';
import { CLUSTER_PK, durableTimerSk, timerCursorSk, timerPk, timerSkPrefix } from '../storage/key-layout.js';

/**
 * Durable timers: delayed operations that must fire with no request in flight (delayed deletion
 * of objects after file.delete.delay.ms, transaction timeouts, the end of a group member's
 * session), kept in the metadata store as the slots of a one-level timing wheel (the timer items
 * of src/storage/key-layout.ts):
 *
 *   pk `timer#{slot}`, slot = floor(expiry / slotMs)    sk `{expiry, 13 digits}#{kind}#{id}`
 *
 * A slot is one partition key, so the timers due in a slot are one query (`sk < now + 1`), in
 * expiry order. The scheduler's tick scans the slots from a checkpoint (pk `cluster`, sk
 * `timer-cursor#durable`) up to the current slot, runs each due timer's handler by kind, and
 * deletes the item once the handler returned. So a timer fires at least once: a tick that dies
 * after the handler and before the delete fires it again next time, and handlers are written to be
 * idempotent (deleting a missing object is fine, re-checking a group is fine).
 *
 * The checkpoint only ever stops at the current slot, never past it, so a timer added later in that
 * slot is still seen; the next tick scans from one slot before the checkpoint, which tolerates a
 * scheduling process whose clock is up to one slot behind. A timer scheduled with an expiry already
 * past goes to the current slot (its sk keeps the expiry), never to a slot the checkpoint left. A
 * failing handler does not hold the checkpoint back: the timer is moved to a later slot with an
 * exponential back-off (attempt count in the item) and the error is reported.
 *
 * Every kind shares the slots and the one checkpoint: object deletions (src/maintenance), transaction
 * timeouts and transactional-id expiry (src/transactions), group session deadlines (src/groups),
 * commit-log folds by age (src/partition/fold-watch.ts, fired by src/maintenance). A
 * scan skips every kind it has no handler for and never deletes those items, so the scan that moves
 * the checkpoint (the scheduler's) must be given the handlers of every kind; a caller that fires
 * only some kinds passes `checkpoint: false`.
 */

export interface DurableTimer<P = unknown> {
  kind: string;
  /** Unique within the kind; the same (kind, id, expiry) is the same item, so scheduling is idempotent. */
  id: string;
  expiry: number;
  payload: P;
  /** Failed firings so far. */
  attempts?: number;
}

/**
 * Runs one due timer; `count` adds to the scan's `counts` (what the handler did, e.g. members
 * expired), which the scheduler reports.
 */
export type TimerHandler = (timer: DurableTimer, count: (name: string, n: number) => void) => Promise<void>;

/** Width of a timer slot unless the scheduler's maintenance options say otherwise. */
export const DEFAULT_TIMER_SLOT_MS = 60_000;

export interface DurableTimerOptions {
  /**
   * Width of one slot (default {@link DEFAULT_TIMER_SLOT_MS}). Every DurableTimers over one store
   * must use the scheduler's, or timers land in slots its scan never reads.
   */
  slotMs?: number;
  /** Without a checkpoint, how many past slots the first scan covers (default 60). */
  firstScanSlots?: number;
  /** At most this many slots per tick (default 1440); the rest is left for the next tick. */
  maxSlotsPerTick?: number;
  /** Back-off of a failing handler: base * 2^attempts, capped (default 1 min .. 1 h). */
  retryBaseMs?: number;
  retryMaxMs?: number;
}

export interface FireReport {
  fired: number;
  failed: number;
  /** Fired timers by kind. */
  byKind: Record<string, number>;
  /** Errors of failed handlers (the timers were rescheduled). */
  errors: unknown[];
  /** What the handlers counted. */
  counts: Record<string, number>;
  /** The tick stopped at the deadline before every due timer ran. */
  incomplete: boolean;
}

const CURSOR_PK = CLUSTER_PK;
const CURSOR_SK = timerCursorSk('durable');

export class DurableTimers {
  readonly slotMs: number;
  private readonly firstScanSlots: number;
  private readonly maxSlotsPerTick: number;
  private readonly retryBaseMs: number;
  private readonly retryMaxMs: number;

  constructor(
    private readonly metadata: MetadataStore,
    options: DurableTimerOptions = {},
  ) {
    this.slotMs = options.slotMs ?? DEFAULT_TIMER_SLOT_MS;
    this.firstScanSlots = options.firstScanSlots ?? 60;
    this.maxSlotsPerTick = options.maxSlotsPerTick ?? 1_440;
    this.retryBaseMs = options.retryBaseMs ?? 60_000;
    this.retryMaxMs = options.retryMaxMs ?? 3_600_000;
  }

  slotOf(t: number): number {
    return Math.floor(t / this.slotMs);
  }

  /** Stores a timer (idempotent). `now` places an already-due timer in the current slot. */
  async schedule<P>(timer: DurableTimer<P>, now: number): Promise<void> {
    if (timer.id.includes('#') || timer.kind.includes('#'))
      throw new RangeError('timer kinds and ids may not contain "#"');
    await this.metadata.put(...this.itemKey(timer, now), timer);
  }

  /** A timer's item: in the slot of its expiry, or of `now` when already due. */
  private itemKey(timer: Pick<DurableTimer, 'kind' | 'id' | 'expiry'>, now: number): [string, string] {
    return [timerPk(this.slotOf(Math.max(timer.expiry, now))), durableTimerSk(timer.expiry, timer.kind, timer.id)];
  }

  /**
   * Stores a timer unless its item is there already (pending: a timer's item goes once it has
   * fired, and a timer fires at its expiry, not before): one read where another process armed the
   * same timer, which costs a fifth of the write it saves.
   */
  async scheduleOnce<P>(timer: DurableTimer<P>, now: number): Promise<void> {
    const pending = await this.metadata.get(...this.itemKey(timer, now));
    if (!pending) await this.schedule(timer, now);
  }

  /** Removes a pending timer; a missing one is fine. */
  async cancel(timer: Pick<DurableTimer, 'kind' | 'id' | 'expiry'>, now: number): Promise<void> {
    const sk = durableTimerSk(timer.expiry, timer.kind, timer.id);
    await Promise.all(
      [...new Set([this.slotOf(timer.expiry), this.slotOf(Math.max(timer.expiry, now))])].map((slot) =>
        this.metadata.delete(timerPk(slot), sk),
      ),
    );
  }

  /** Pending timers of the given kinds in slots [fromSlot, toSlot] (for tests and diagnostics). */
  async pending(fromMs: number, toMs: number, kinds?: string[]): Promise<DurableTimer[]> {
    const out: DurableTimer[] = [];
    for (let slot = this.slotOf(fromMs); slot <= this.slotOf(toMs); slot++) {
      for (const item of await this.metadata.query<DurableTimer>(timerPk(slot))) {
        if (isTimer(item) && (!kinds || kinds.includes(item.value.kind))) out.push(item.value);
      }
    }
    return out;
  }

  /**
   * One tick: fires every timer of a handled kind due at `now`, in slot and expiry order, until
   * `deadline` (a clock reading, checked between timers through `clock`). Advances the checkpoint
   * to the slot it finished (the current slot at most), unless `checkpoint` is false.
   */
  async fireDue(
    now: number,
    handlers: Record<string, TimerHandler>,
    options: { deadline?: number; clock?: Clock; checkpoint?: boolean } = {},
  ): Promise<FireReport> {
    const report: FireReport = { fired: 0, failed: 0, byKind: {}, errors: [], counts: {}, incomplete: false };
    const current = this.slotOf(now);
    const cursor = await this.metadata.get<{ slot: number }>(CURSOR_PK, CURSOR_SK);
    const from = Math.min(cursor ? cursor.value.slot - 1 : current - this.firstScanSlots, current);
    const to = Math.min(current, from + this.maxSlotsPerTick - 1);
    const pastDeadline = () => options.deadline !== undefined && (options.clock?.now() ?? now) >= options.deadline;
    let reached = from - 1;
    scan: for (let slot = from; slot <= to; slot++) {
      const items = await this.metadata.query<DurableTimer>(timerPk(slot), { lt: timerSkPrefix(now + 1) });
      for (const item of items) {
        if (!isTimer(item)) continue;
        const handler = handlers[item.value.kind];
        if (!handler) continue;
        if (pastDeadline()) {
          report.incomplete = true;
          break scan;
        }
        await this.fireOne(item, handler, now, report);
      }
      reached = slot;
    }
    if (reached < current) report.incomplete = true;
    const checkpoint = Math.max(reached, from);
    if (
      options.checkpoint !== false &&
      checkpoint !== cursor?.value.slot &&
      checkpoint >= (cursor?.value.slot ?? -Infinity)
    ) {
      await moveCursor(this.metadata, CURSOR_PK, CURSOR_SK, cursor, checkpoint);
    }
    return report;
  }

  private async fireOne(
    item: MetaItem<DurableTimer>,
    handler: TimerHandler,
    now: number,
    report: FireReport,
  ): Promise<void> {
    const timer = item.value;
    const count = (name: string, n: number) => {
      if (n !== 0) report.counts[name] = (report.counts[name] ?? 0) + n;
    };
    try {
      await handler(timer, count);
    } catch (error) {
      report.failed++;
      report.errors.push(error);
      const attempts = (timer.attempts ?? 0) + 1;
      const retryAt = now + Math.min(this.retryBaseMs * 2 ** (attempts - 1), this.retryMaxMs);
      // Moved, not lost: the retry item is written before the failed one is removed.
      await this.schedule({ ...timer, expiry: retryAt, attempts }, now);
      await this.metadata.delete(item.pk, item.sk);
      return;
    }
    await this.metadata.delete(item.pk, item.sk);
    report.fired++;
    report.byKind[timer.kind] = (report.byKind[timer.kind] ?? 0) + 1;
  }
}

function isTimer(item: MetaItem<unknown>): item is MetaItem<DurableTimer> {
  const v = item.value as Partial<DurableTimer> | undefined;
  return typeof v?.kind === 'string' && typeof v.id === 'string' && typeof v.expiry === 'number';
}
