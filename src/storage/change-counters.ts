/**
 * Write counters of partition keys, for the adapters' `changeStamp` (ports.ts): each key hashes to
 * one of a fixed number of slots, bumped on every write or delete of an item under a key of that
 * slot. A fixed table keeps the memory bounded however many keys a process writes (producers,
 * groups, partitions); two keys sharing a slot only make a stamp move without a change of its own,
 * which costs a caller one read, never a stale answer.
 */
const SLOTS = 4096;

export class ChangeCounters {
  /** Float64: exact up to 2^53 writes per slot, so a stamp never comes round to an old value. */
  private readonly slots = new Float64Array(SLOTS);

  bump(pk: string): void {
    this.slots[slotOf(pk)]! += 1;
  }

  of(pk: string): number {
    return this.slots[slotOf(pk)]!;
  }
}

/** FNV-1a over the UTF-16 code units. */
function slotOf(pk: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < pk.length; i++) h = Math.imul(h ^ pk.charCodeAt(i), 0x01000193);
  return (h >>> 0) % SLOTS;
}
