/**
 * One share-partition (a share group's view of one topic partition), as KIP-932 defines it: the
 * start offset (SPSO), the end offset (SPEO) and the in-flight records between them, each with its
 * state, delivery count and, while acquired, its lock. Pure transitions over plain data: the store
 * module (share-partitions.ts) writes the result with one conditional write.
 *
 * Invariants: `records` is in offset order, every entry is in [spso, speo), and every record of the
 * log in [spso, speo) has an entry (offsets without a record, such as transaction markers, have
 * none). The first entry is never terminal: SPSO moves past acknowledged and archived records.
 */

/**
 * `archiving`: done with (rejected, or past the delivery count limit) in a group with a dead-letter
 * topic, its copy there not yet produced; archived once it is (dead-letter.ts).
 */
export type RecordState = 'available' | 'acquired' | 'acknowledged' | 'archiving' | 'archived';
/** The states describe counts: an archiving record counts as archived. */
export type ShownState = Exclude<RecordState, 'archiving'>;

export interface InFlightRecord {
  offset: number;
  state: RecordState;
  /** How many times it was acquired (Kafka's delivery count). */
  deliveries: number;
  /** While acquired: the member holding it and when its lock ends (epoch ms). */
  member?: string;
  lockedUntil?: number;
  /** While archiving: why ('rejected' or 'limit', the delivery count limit) and its dead-letter sequence. */
  why?: 'rejected' | 'limit';
  dlqSeq?: number;
}

/** The idempotent producer the share-partition's dead-letter copies are produced as (dead-letter.ts). */
export interface DeadLetterProducer {
  producerId: number;
  producerEpoch: number;
  /** The sequence the next archiving record is given. */
  nextSequence: number;
}

export interface SharePartitionState {
  /** The topic incarnation the state belongs to: a recreated topic starts afresh. */
  topicId: string;
  spso: number;
  speo: number;
  records: InFlightRecord[];
  /** Bumped by an offset reset (AlterShareGroupOffsets), as Kafka's state epoch. */
  stateEpoch: number;
  /**
   * Tokens of the last writes: a writer whose conditional write applied but whose answer was lost
   * finds its token here (optimistic-update's recognition) instead of applying the change twice.
   */
  recent: string[];
  dlq?: DeadLetterProducer;
}

export type AcknowledgeType = 'accept' | 'release' | 'reject' | 'renew';

/** Kafka's AcknowledgeType numbers (ShareFetch / ShareAcknowledge): 0 is a gap, 4 renew (KIP-1222). */
export const ACKNOWLEDGE_TYPES: Record<number, AcknowledgeType | 'gap'> = {
  0: 'gap',
  1: 'accept',
  2: 'release',
  3: 'reject',
  4: 'renew',
};

export interface Limits {
  deliveryCountLimit: number;
  recordLockDurationMs: number;
  maxRecordLocks: number;
  /** The group has a dead-letter topic: records done with go through archiving. */
  deadLetterTopic?: string;
}

const RECENT_TOKENS = 32;
const terminal = (r: InFlightRecord) => r.state === 'acknowledged' || r.state === 'archived';

export function initialState(topicId: string, startOffset: number): SharePartitionState {
  return { topicId, spso: startOffset, speo: startOffset, records: [], stateEpoch: 0, recent: [] };
}

/** A deep copy to change (the item read is never written to). */
export function copyState(s: SharePartitionState): SharePartitionState {
  return {
    ...s,
    records: s.records.map((r) => ({ ...r })),
    recent: [...s.recent],
    ...(s.dlq ? { dlq: { ...s.dlq } } : {}),
  };
}

/**
 * Locks that ended become available again, or archived once the record had its last delivery. Done
 * lazily, by the next writer of the item (a fetch or an acknowledgement): nothing needs an expired
 * lock to move before someone asks for records, and whoever asks applies it first.
 */
export function expireLocks(s: SharePartitionState, now: number, limits: Limits): boolean {
  let changed = false;
  for (const r of s.records) {
    if (r.state === 'acquired' && (r.lockedUntil ?? 0) <= now) {
      unlock(r, limits);
      changed = true;
    }
  }
  return changed;
}

/** Back to available, or archived past the delivery count limit. */
function unlock(r: InFlightRecord, limits: Limits): void {
  if (r.deliveries >= limits.deliveryCountLimit) archive(r, limits, 'limit');
  else r.state = 'available';
  r.member = undefined;
  r.lockedUntil = undefined;
}

/** Archived, or archiving where the group has a dead-letter topic (its copy is produced first). */
function archive(r: InFlightRecord, limits: Limits, why: 'rejected' | 'limit'): void {
  if (limits.deadLetterTopic) {
    r.state = 'archiving';
    r.why = why;
  } else r.state = 'archived';
}

/**
 * Gives each archiving record without one the next dead-letter sequence of the share-partition's
 * producer, in offset order, in the same write that archives it: whoever produces its copy, and
 * however often, sends the same (producer, sequence), which the log appends once.
 */
export function sequenceArchiving(s: SharePartitionState): boolean {
  let changed = false;
  for (const r of s.records)
    if (r.state === 'archiving' && r.dlqSeq === undefined && s.dlq) {
      r.dlqSeq = s.dlq.nextSequence++;
      changed = true;
    }
  return changed;
}

/** Whether records wait for a dead-letter sequence (the caller needs a producer for them first). */
export const needsSequence = (s: SharePartitionState): boolean =>
  s.records.some((r) => r.state === 'archiving' && r.dlqSeq === undefined);

/**
 * SPSO moves past the terminal records at the front, and past records the log no longer holds
 * (retention or DeleteRecords moved its start offset).
 */
export function advanceStart(s: SharePartitionState, logStartOffset: number): void {
  if (logStartOffset > s.spso) {
    s.records = s.records.filter((r) => r.offset >= logStartOffset);
    s.spso = logStartOffset;
    s.speo = Math.max(s.speo, logStartOffset);
  }
  let first = 0;
  while (first < s.records.length && terminal(s.records[first]!)) first++;
  if (first > 0) s.records = s.records.slice(first);
  s.spso = s.records[0]?.offset ?? s.speo;
}

/**
 * What an acquisition could take from the item as read, before the log is read at all: the records
 * available (or whose lock ended by `now`) and the room for new ones under the in-flight bound.
 * `archiving`: a dead-letter copy is owed (the next writer produces it).
 * `busy`: nothing to take and no room, and no dead-letter copy owed, so a receive passes the
 * share-partition by without reading the log or writing (a contended or full partition costs one
 * read, and an idle one a read of the item and of the partition's state).
 */
export function acquirable(
  s: SharePartitionState,
  now: number,
  limits: Limits,
): { available: number; room: number; busy: boolean; archiving: boolean } {
  let available = 0;
  let archiving = false;
  for (const r of s.records) {
    if (r.state === 'available' || (r.state === 'acquired' && (r.lockedUntil ?? 0) <= now)) available++;
    else if (r.state === 'archiving') archiving = true;
  }
  const room = Math.max(0, limits.maxRecordLocks - s.records.length);
  return { available, room, busy: available === 0 && room === 0 && !archiving, archiving };
}

export interface Acquisition {
  member: string;
  now: number;
  maxRecords: number;
  /** Where the caller read the log from (SPEO as it read the item). */
  readFrom: number;
  /** Offsets of log records from `readFrom`, in order, as read. */
  fresh: number[];
  /** Where that read ended: SPEO may move there when every record read was taken. */
  readEnd: number;
}

/** The records acquired, with their delivery counts and lock ends; the state is changed in place. */
export function acquire(
  s: SharePartitionState,
  a: Acquisition,
  limits: Limits,
): { offset: number; deliveries: number; lockedUntil: number }[] {
  const taken: InFlightRecord[] = [];
  const lock = (r: InFlightRecord) => {
    r.state = 'acquired';
    r.deliveries += 1;
    r.member = a.member;
    r.lockedUntil = a.now + limits.recordLockDurationMs;
    taken.push(r);
  };
  for (const r of s.records) {
    if (taken.length >= a.maxRecords) break;
    if (r.state === 'available') lock(r);
  }
  // A read from past SPEO (an offset reset moved it back meanwhile) would skip records: left unused.
  const fresh = a.readFrom <= s.speo ? a.fresh.filter((o) => o >= s.speo) : [];
  let used = 0;
  while (used < fresh.length && taken.length < a.maxRecords && s.records.length < limits.maxRecordLocks) {
    const r: InFlightRecord = { offset: fresh[used]!, state: 'available', deliveries: 0 };
    s.records.push(r);
    lock(r);
    used++;
  }
  if (used > 0) s.speo = fresh[used - 1]! + 1;
  // A read with nothing left untaken ends where the log read ended (past markers and gaps).
  if (a.readFrom <= s.speo && used === fresh.length && a.readEnd > s.speo) s.speo = a.readEnd;
  return taken.map((r) => ({ offset: r.offset, deliveries: r.deliveries, lockedUntil: r.lockedUntil! }));
}

export interface Acknowledgement {
  offset: number;
  type: AcknowledgeType;
  /** When given, the delivery the caller was answered with: an acknowledgement of an older delivery is refused. */
  deliveries?: number;
}

/**
 * Applies acknowledgements of records `member` holds; per offset, undefined (applied) or
 * INVALID_RECORD_STATE (not acquired by that member, its lock ended, or another delivery of it).
 */
export function acknowledge(
  s: SharePartitionState,
  member: string,
  acks: readonly Acknowledgement[],
  now: number,
  limits: Limits,
): ('INVALID_RECORD_STATE' | undefined)[] {
  return acks.map((ack) => {
    const r = recordAt(s, ack.offset);
    if (
      r?.state !== 'acquired' ||
      r.member !== member ||
      (r.lockedUntil ?? 0) <= now ||
      (ack.deliveries !== undefined && ack.deliveries !== r.deliveries)
    )
      return 'INVALID_RECORD_STATE';
    switch (ack.type) {
      case 'accept':
        r.state = 'acknowledged';
        break;
      case 'reject':
        archive(r, limits, 'rejected');
        break;
      case 'release':
        unlock(r, limits);
        return undefined;
      case 'renew':
        r.lockedUntil = now + limits.recordLockDurationMs;
        return undefined;
    }
    r.member = undefined;
    r.lockedUntil = undefined;
    return undefined;
  });
}

/** The in-flight record at `offset` (records are in offset order), or undefined. */
function recordAt(s: SharePartitionState, offset: number): InFlightRecord | undefined {
  let lo = 0;
  let hi = s.records.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >>> 1;
    const r = s.records[mid]!;
    if (r.offset === offset) return r;
    if (r.offset < offset) lo = mid + 1;
    else hi = mid - 1;
  }
  return undefined;
}

/** Releases every record a member holds (a member leaving, or closing its share session). */
export function releaseMember(s: SharePartitionState, member: string, limits: Limits): number {
  let n = 0;
  for (const r of s.records)
    if (r.state === 'acquired' && r.member === member) {
      unlock(r, limits);
      n++;
    }
  return n;
}

/**
 * Keeps `token` among the last writes. `refused`: positions of an acknowledgement's offsets that
 * were refused, kept with the token ("token!2,5") so that a retry of the same request is answered
 * as the first attempt was.
 */
export function remember(s: SharePartitionState, token: string, refused: readonly number[] = []): void {
  s.recent.push(refused.length > 0 ? `${token}!${refused.join(',')}` : token);
  if (s.recent.length > RECENT_TOKENS) s.recent.splice(0, s.recent.length - RECENT_TOKENS);
}

/** The refused positions remembered with `token`, or undefined when no recent write carried it. */
export function recall(s: SharePartitionState, token: string): number[] | undefined {
  for (const entry of s.recent) {
    if (entry === token) return [];
    if (entry.startsWith(`${token}!`))
      return entry
        .slice(token.length + 1)
        .split(',')
        .map(Number);
  }
  return undefined;
}

/** Records between SPSO and the high watermark not yet acknowledged or archived (KIP-932's lag). */
export function lag(s: SharePartitionState, highWatermark: number): number {
  const done = s.records.filter(terminal).length;
  return Math.max(0, highWatermark - s.spso - done);
}

export function countByState(s: SharePartitionState): Record<ShownState, number> {
  const counts: Record<ShownState, number> = { available: 0, acquired: 0, acknowledged: 0, archived: 0 };
  for (const r of s.records) counts[r.state === 'archiving' ? 'archived' : r.state]++;
  return counts;
}
