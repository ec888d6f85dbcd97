/**
 * Kafka's classic group protocol (JoinGroup / SyncGroup / Heartbeat / LeaveGroup, client-side
 * assignment), as one item per group (pk `group#{id}`, sk `classic`) and pure functions that change
 * it; the coordinator (classic-coordinator.ts) writes every change with `ifVersion`.
 *
 * The states are Kafka's: Empty -> PreparingRebalance (members rejoin; the join barrier) ->
 * CompletingRebalance (a new generation; the leader computes the assignment) -> Stable (SyncGroup
 * from the leader stored the assignment) -> PreparingRebalance on any membership change.
 * The barrier completes when every member has rejoined, or at the rebalance deadline, when the
 * members that did not rejoin are removed (Kafka's DelayedJoin). The first join of an Empty group
 * also waits group.initial.rebalance.delay.ms (Kafka's InitialDelayedJoin), so that consumers
 * started together share the first generation instead of one taking every partition.
 */
import { KafkaError } from '../wire/errors.js';

export type ClassicState = 'Empty' | 'PreparingRebalance' | 'CompletingRebalance' | 'Stable';

export interface ClassicMember {
  memberId: string;
  groupInstanceId: string | null;
  clientId: string;
  clientHost: string;
  sessionTimeoutMs: number;
  rebalanceTimeoutMs: number;
  protocolType: string;
  /** The assignors the member supports, most preferred first, with their metadata (base64). */
  protocols: { name: string; metadata: string }[];
  lastHeartbeat: number;
  /** Rejoined during the current PreparingRebalance. */
  rejoined: boolean;
  /** The generation this member was last made part of (-1: none yet). */
  joinGeneration: number;
  /** The member's assignment in the current generation (base64), once the leader synced. */
  assignment: string;
}

export interface ClassicGroup {
  groupId: string;
  state: ClassicState;
  generationId: number;
  protocolType: string | null;
  protocolName: string | null;
  leaderId: string | null;
  members: Record<string, ClassicMember>;
  /** When PreparingRebalance gives up on members that did not rejoin. */
  rebalanceDeadline?: number;
  /**
   * The first rebalance of an Empty group completes no earlier than this (Kafka's
   * InitialDelayedJoin): group.initial.rebalance.delay.ms after the last new member joined, at
   * most until the rebalance deadline.
   */
  initialDelayUntil?: number;
  /** The session timer registered for this group (session-timers.ts), as the KIP-848 item keeps it. */
  timerAt?: number;
  /**
   * Member ids handed out with MEMBER_ID_REQUIRED and not yet joined with, each until its session
   * timeout has passed (Kafka's pending members): the only ids a join may bring that the group
   * does not know.
   */
  pendingMembers?: Record<string, number>;
}

export const newClassicGroup = (groupId: string): ClassicGroup => ({
  groupId,
  state: 'Empty',
  generationId: 0,
  protocolType: null,
  protocolName: null,
  leaderId: null,
  members: {},
});

/**
 * How long a member's heartbeat may go unwritten: a heartbeat that only says "alive" is written
 * once the stored one is this old (a third of the session), so a member costs one write per third
 * of its session, not one per heartbeat interval. A join, a sync, a leave or a generation change is
 * written at once.
 */
export const classicUnwrittenHeartbeatMs = (m: Pick<ClassicMember, 'sessionTimeoutMs'>): number =>
  Math.floor(m.sessionTimeoutMs / 3);

/**
 * When a member's session ends: its session timeout after the stored heartbeat, plus the time a
 * later heartbeat may have gone unwritten. Never early (never before the session timeout has
 * passed since the member's last heartbeat), at most a third of the session late.
 */
const sessionEnd = (m: ClassicMember): number => m.lastHeartbeat + m.sessionTimeoutMs + classicUnwrittenHeartbeatMs(m);

/**
 * The first moment something in the group runs out: a member's session (it expires once its
 * session timeout has passed, so just after) or the join barrier's deadline. Undefined: nothing to
 * time (no members).
 */
export function classicDeadline(g: ClassicGroup): number | undefined {
  let min = g.rebalanceDeadline;
  for (const m of Object.values(g.members)) {
    const d = sessionEnd(m) + 1;
    if (min === undefined || d < min) min = d;
  }
  return Object.keys(g.members).length === 0 ? undefined : min;
}

/** Members whose session ran out, except those waiting at the join barrier (as Kafka keeps them). */
export function expiredMembers(g: ClassicGroup, now: number): string[] {
  return Object.values(g.members)
    .filter((m) => !(g.state === 'PreparingRebalance' && m.rejoined) && sessionEnd(m) < now)
    .map((m) => m.memberId);
}

/** Starts (or keeps) a rebalance: every member must rejoin by the deadline. */
export function prepareRebalance(g: ClassicGroup, now: number): ClassicGroup {
  const members = Object.fromEntries(
    Object.entries(g.members).map(([id, m]) => [
      id,
      { ...m, rejoined: g.state === 'PreparingRebalance' ? m.rejoined : false },
    ]),
  );
  if (Object.keys(members).length === 0)
    return {
      ...g,
      members,
      state: 'Empty',
      generationId: g.generationId + 1,
      leaderId: null,
      protocolName: null,
      rebalanceDeadline: undefined,
      initialDelayUntil: undefined,
    };
  const timeout = Math.max(...Object.values(members).map((m) => m.rebalanceTimeoutMs));
  return {
    ...g,
    members,
    state: 'PreparingRebalance',
    rebalanceDeadline:
      g.state === 'PreparingRebalance' && g.rebalanceDeadline !== undefined ? g.rebalanceDeadline : now + timeout,
  };
}

export function removeMembers(g: ClassicGroup, ids: string[], now: number): ClassicGroup {
  if (ids.length === 0) return g;
  const members = { ...g.members };
  for (const id of ids) delete members[id];
  return prepareRebalance({ ...g, members, leaderId: g.leaderId && members[g.leaderId] ? g.leaderId : null }, now);
}

/**
 * Kafka's InitialDelayedJoin: a member joined, turning `before` into `after`. When that opened the
 * first rebalance of an Empty group, the barrier stays open `delayMs`; a new member joining while it
 * is open keeps it open `delayMs` more. Never past the rebalance deadline. (Kafka extends in steps
 * of the delay; here the delay runs from the last new member, the same bound on the wait.)
 */
export function delayInitialJoin(
  before: ClassicGroup,
  after: ClassicGroup,
  newMember: boolean,
  now: number,
  delayMs: number,
): ClassicGroup {
  if (delayMs <= 0 || after.state !== 'PreparingRebalance' || after.rebalanceDeadline === undefined) return after;
  const opening = before.state === 'Empty';
  if (!opening && !(newMember && after.initialDelayUntil !== undefined)) return after;
  return { ...after, initialDelayUntil: Math.min(now + delayMs, after.rebalanceDeadline) };
}

/**
 * The barrier is done when every member rejoined (and the initial delay is over), or the deadline
 * passed.
 */
export function joinComplete(g: ClassicGroup, now: number): boolean {
  if (g.state !== 'PreparingRebalance') return false;
  if (now >= (g.rebalanceDeadline ?? 0)) return true;
  if (g.initialDelayUntil !== undefined && now < g.initialDelayUntil) return false;
  return Object.values(g.members).every((m) => m.rejoined);
}

/** Closes the barrier: drops who did not rejoin, picks protocol and leader, opens a new generation. */
export function completeJoin(g: ClassicGroup): ClassicGroup {
  const members = Object.fromEntries(Object.entries(g.members).filter(([, m]) => m.rejoined));
  const generationId = g.generationId + 1;
  const ids = Object.keys(members);
  if (ids.length === 0)
    return {
      ...g,
      members: {},
      state: 'Empty',
      generationId,
      leaderId: null,
      protocolName: null,
      rebalanceDeadline: undefined,
      initialDelayUntil: undefined,
    };
  const protocolName = selectProtocol(Object.values(members));
  const leaderId = g.leaderId && members[g.leaderId] ? g.leaderId : ids[0]!;
  for (const id of ids) members[id] = { ...members[id]!, joinGeneration: generationId, assignment: '' };
  return {
    ...g,
    members,
    state: 'CompletingRebalance',
    generationId,
    protocolName,
    leaderId,
    rebalanceDeadline: undefined,
    initialDelayUntil: undefined,
  };
}

/** Kafka's vote: among the protocols every member supports, the one most members prefer most. */
export function selectProtocol(members: ClassicMember[]): string {
  const common = members[0]!.protocols
    .map((p) => p.name)
    .filter((name) => members.every((m) => m.protocols.some((p) => p.name === name)));
  if (common.length === 0)
    throw new KafkaError('INCONSISTENT_GROUP_PROTOCOL', 'The members of the group support no common protocol');
  const votes = new Map(common.map((c) => [c, 0]));
  for (const m of members) {
    const first = m.protocols.find((p) => votes.has(p.name))!;
    votes.set(first.name, votes.get(first.name)! + 1);
  }
  return [...votes].sort((a, b) => b[1] - a[1])[0]![0];
}

/** A member may join if its protocol type matches and it shares a protocol with the group. */
export function checkJoinable(g: ClassicGroup, protocolType: string, protocols: { name: string }[]): void {
  if (protocols.length === 0 || protocolType === '')
    throw new KafkaError('INCONSISTENT_GROUP_PROTOCOL', 'A member must name a protocol type and at least one protocol');
  const others = Object.values(g.members);
  if (others.length === 0) return;
  if (g.protocolType !== null && g.protocolType !== protocolType) {
    throw new KafkaError(
      'INCONSISTENT_GROUP_PROTOCOL',
      `The group uses protocol type ${g.protocolType}, not ${protocolType}`,
    );
  }
  const shared = protocols.some((p) => others.every((m) => m.protocols.some((q) => q.name === p.name)));
  if (!shared)
    throw new KafkaError('INCONSISTENT_GROUP_PROTOCOL', 'The member supports none of the protocols the group uses');
}

/**
 * The checks of SyncGroup, Heartbeat and OffsetCommit: the static instance (when named), then a
 * known member at the current generation.
 */
export function checkGeneration(
  g: ClassicGroup | undefined,
  memberId: string,
  generationId: number,
  groupInstanceId: string | null = null,
): ClassicMember {
  checkStaticMember(g, memberId, groupInstanceId);
  const m = g?.members[memberId];
  if (!g || !m) throw new KafkaError('UNKNOWN_MEMBER_ID', `Member ${memberId} is not in group ${g?.groupId ?? ''}`);
  if (generationId !== g.generationId)
    throw new KafkaError(
      'ILLEGAL_GENERATION',
      `Generation ${generationId} is not the group's generation ${g.generationId}`,
    );
  return m;
}

/** The member id a static instance id (KIP-345's group.instance.id) maps to in the group, if any. */
export function staticMemberId(g: ClassicGroup | undefined, groupInstanceId: string): string | undefined {
  if (!g) return undefined;
  for (const m of Object.values(g.members)) if (m.groupInstanceId === groupInstanceId) return m.memberId;
  return undefined;
}

/**
 * Kafka's check of a request that names a static instance: the instance must be in the group
 * (UNKNOWN_MEMBER_ID), under this member id. Another member id with the instance is the member a
 * restart replaced, a zombie: FENCED_INSTANCE_ID. A request without an instance id is not checked.
 */
export function checkStaticMember(g: ClassicGroup | undefined, memberId: string, groupInstanceId: string | null): void {
  if (groupInstanceId === null) return;
  const current = staticMemberId(g, groupInstanceId);
  if (current === undefined)
    throw new KafkaError(
      'UNKNOWN_MEMBER_ID',
      `No member of group ${g?.groupId ?? ''} has the instance id ${groupInstanceId}`,
    );
  if (current !== memberId)
    throw new KafkaError(
      'FENCED_INSTANCE_ID',
      `Instance ${groupInstanceId} is member ${current} now, not ${memberId}: a newer instance replaced it`,
    );
}

/**
 * A static member restarted: it joined with its instance id and no member id. The new member takes
 * the old one's place (its generation, its assignment, the leadership if it held it); the old member
 * id is gone, and requests still using it are fenced (Kafka's replaceStaticMember).
 */
export function replaceStaticMember(g: ClassicGroup, oldMemberId: string, member: ClassicMember): ClassicGroup {
  const old = g.members[oldMemberId];
  if (!old) return g;
  const members = { ...g.members };
  delete members[oldMemberId];
  members[member.memberId] = {
    ...member,
    joinGeneration: old.joinGeneration,
    assignment: old.assignment,
    rejoined: old.rejoined,
  };
  return { ...g, members, leaderId: g.leaderId === oldMemberId ? member.memberId : g.leaderId };
}

/**
 * A static member restarted (Kafka's updateStaticMemberAndRebalance): the new member takes the old
 * one's place. In a Stable group whose protocol stays the same that is all, no rebalance (the
 * member is answered at once). While the group awaits the leader's assignment, or when the
 * protocol would change, the group rebalances; during a rebalance the new member has rejoined.
 */
export function restartStaticMember(
  g: ClassicGroup,
  oldMemberId: string,
  member: ClassicMember,
  now: number,
): { group: ClassicGroup; rebalance: boolean } {
  const replaced = replaceStaticMember(g, oldMemberId, member);
  if (g.state === 'Stable' && selectProtocol(Object.values(replaced.members)) === g.protocolName)
    return { group: replaced, rebalance: false };
  const next = prepareRebalance(replaced, now);
  next.members[member.memberId] = { ...next.members[member.memberId]!, rejoined: true, lastHeartbeat: now };
  return { group: joinComplete(next, now) ? completeJoin(next) : next, rebalance: true };
}

export const sameProtocols = (a: ClassicMember['protocols'], b: ClassicMember['protocols']) =>
  a.length === b.length && a.every((p, i) => p.name === b[i]!.name && p.metadata === b[i]!.metadata);
