import { moveCursor } from '../timer/scan-cursor.js';
import type { MetadataStore } from '../storage/ports.js';
import { CLUSTER_PK, sessionTimerSk, timerCursorSk, timerPk, timerSkPrefix } from '../storage/key-layout.js';

/**
 * Durable session timers, so a member whose heartbeats stop is removed even when no request ever
 * reaches its group again. The timer items (src/storage/key-layout.ts): pk `timer#{slot}` with slot = floor(expiry / 60 s),
 * sk `{expiry, 13 digits}#group#{groupId}`, value `{kind: 'group-session', groupId, expiry}`.
 *
 * Timeline of one group: a write that leaves the group with members and no pending timer (or only a
 * later one) first puts a timer item for its earliest deadline, then records `timerAt` in the group
 * item (in that order, so a crash leaves at worst a spurious timer, never a missing one). Heartbeats
 * push deadlines later without touching the timer: when it fires, the scheduler's
 * `expireSessions` loads the group, removes whoever is overdue and arms the next deadline. So a
 * steadily heartbeating group costs about one timer write per session timeout, not one per heartbeat.
 *
 * The scheduler scans slots from a cursor (pk `cluster`, sk `timer-cursor#group-session`) up to the
 * current slot, one query per slot, deleting the items it fired. The cursor never passes the current
 * slot, so a timer registered later in that slot is still seen. Other kinds of timers may share the
 * slots; they are skipped here.
 */
export const TIMER_SLOT_MS = 60_000;
export const SESSION_TIMER_KIND = 'group-session';
/** When no cursor exists yet, how many past slots the first scan covers. */
const FIRST_SCAN_SLOTS = 60;
/** At most this many slots per scan; the rest is left for the next tick. */
const MAX_SLOTS_PER_SCAN = 1_440;

export interface SessionTimerValue {
  kind: typeof SESSION_TIMER_KIND;
  groupId: string;
  expiry: number;
}

export const slotOf = (t: number) => Math.floor(t / TIMER_SLOT_MS);

const CURSOR_PK = CLUSTER_PK;
const CURSOR_SK = timerCursorSk(SESSION_TIMER_KIND);

export class SessionTimers {
  constructor(private readonly metadata: MetadataStore) {}

  /** Idempotent: the same (group, expiry) is the same item. */
  async register(groupId: string, expiry: number): Promise<void> {
    const value: SessionTimerValue = { kind: SESSION_TIMER_KIND, groupId, expiry };
    await this.metadata.put(timerPk(slotOf(expiry)), sessionTimerSk(expiry, groupId), value);
  }

  /**
   * Fires every session timer due at `now`: calls `fire(groupId)` once per group (in expiry order)
   * and deletes the group's due items after it returned. A failing `fire` leaves its items for the
   * next scan. Returns how many timers were fired.
   */
  async fireDue(
    now: number,
    fire: (groupId: string) => Promise<void>,
  ): Promise<{ fired: number; groups: string[]; failed: unknown[] }> {
    const current = slotOf(now);
    const cursor = await this.metadata.get<{ slot: number }>(CURSOR_PK, CURSOR_SK);
    const from = Math.min(cursor?.value.slot ?? current - FIRST_SCAN_SLOTS, current);
    const to = Math.min(current, from + MAX_SLOTS_PER_SCAN - 1);
    const due = new Map<string, { pk: string; sk: string }[]>();
    for (let slot = from; slot <= to; slot++) {
      const items = await this.metadata.query<SessionTimerValue>(timerPk(slot), { lt: timerSkPrefix(now + 1) });
      for (const item of items) {
        if (item.value?.kind !== SESSION_TIMER_KIND) continue;
        const list = due.get(item.value.groupId) ?? [];
        list.push({ pk: item.pk, sk: item.sk });
        due.set(item.value.groupId, list);
      }
    }
    let fired = 0;
    const failed: unknown[] = [];
    for (const [groupId, items] of due) {
      try {
        await fire(groupId);
        await Promise.all(items.map((i) => this.metadata.delete(i.pk, i.sk)));
        fired += items.length;
      } catch (e) {
        failed.push(e);
      }
    }
    if (failed.length === 0 && to !== cursor?.value.slot) {
      await moveCursor(this.metadata, CURSOR_PK, CURSOR_SK, cursor, to);
    }
    return { fired, groups: [...due.keys()], failed };
  }
}
