import { KafkaError } from '../wire/errors.js';
import {
  assignmentKeys,
  intersect,
  isEmptyAssignment,
  minus,
  sameAssignment,
  union,
  toPartitions,
  assignmentOf,
  type Assignment,
  type TopicPartition,
} from './assignment.js';
import { ASSIGNOR_NAMES, ASSIGNORS, DEFAULT_ASSIGNOR, type AssignorName } from './assignors.js';

/**
 * The group item (pk `group#{id}`, sk `meta`) and the pure functions that change it. The coordinator
 * reads the item, applies one of these functions and writes the result with `ifVersion`: every change
 * to a group is one conditional write, so two servers never both act on the same group state.
 *
 * The protocol follows KIP-848 (Kafka's consumer group protocol with server-side assignment):
 *  - The group epoch grows on every change of membership, subscriptions or subscribed topics'
 *    partition counts; the target assignment is recomputed at that epoch (the assignment epoch).
 *  - Each member reconciles towards its target on its own heartbeats, revoke first, then assign: a
 *    member told to give partitions up keeps its epoch until it has released them (acknowledged by
 *    its next heartbeat); only then does it move to the assignment epoch, and it receives each new
 *    partition only once no other member still holds it. So at every moment a partition is held by
 *    at most one member (`assigned` and `revoking` of all members are disjoint).
 *  - A member whose heartbeats stop for session.timeout.ms, or that does not release partitions
 *    within its rebalance timeout (max.poll.interval.ms), is removed and its partitions are free.
 */
export type GroupStateName = 'Empty' | 'PreparingRebalance' | 'CompletingRebalance' | 'Stable' | 'Dead';

export interface MemberRecord {
  memberId: string;
  clientId: string;
  /** The REST Proxy v2 consumer instance this member belongs to, if any. */
  instanceName?: string;
  /** The member's generation: commits must carry it. */
  memberEpoch: number;
  previousMemberEpoch: number;
  subscribedTopics: string[];
  assignor?: AssignorName;
  sessionTimeoutMs: number;
  rebalanceTimeoutMs: number;
  lastHeartbeat: number;
  joinedAt: number;
  /** Partitions the member may consume now. */
  assigned: Assignment;
  /** Partitions the member was told to give up and has not yet released: still its own. */
  revoking: Assignment;
  /** When revocation must be done by (the rebalance timeout), else the member is removed. */
  revokeDeadline?: number;
  /**
   * The coordinator's id of the last request whose write changed this member: a request whose write
   * applied but whose answer was lost (and was retried) recognises itself by it.
   */
  requestId?: string;
}

export interface GroupRecord {
  groupId: string;
  createdAt: number;
  /** 'consumer' once a member has joined; '' for a group only used to store offsets ("simple"). */
  protocolType: 'consumer' | '';
  groupEpoch: number;
  assignmentEpoch: number;
  assignor: AssignorName;
  /** Partition counts of the subscribed topics the target assignment was computed from. */
  topicPartitions: Record<string, number>;
  members: Record<string, MemberRecord>;
  /** Target assignment by member id, at `assignmentEpoch`. */
  target: Record<string, Assignment>;
  /** The earliest session timer scheduled for this group (see GroupCoordinator). */
  timerAt?: number;
  /** Set when a delete began: the group is Dead until its items are gone. */
  deletingSince?: number;
  /** Derived from the rest by `groupState`; stored so a reader of the raw item sees it. */
  state: GroupStateName;
}

export interface GroupLimits {
  /** group.min.session.timeout.ms / group.max.session.timeout.ms (Kafka: 6000 / 1800000). */
  minSessionTimeoutMs: number;
  maxSessionTimeoutMs: number;
  /**
   * The heartbeat interval told to members (KIP-848's group.consumer.heartbeat.interval.ms, 5 s),
   * capped at a third of the session timeout.
   */
  heartbeatIntervalMs: number;
  defaultSessionTimeoutMs: number;
  defaultRebalanceTimeoutMs: number;
  /** group.initial.rebalance.delay.ms (Kafka: 3000): how long the first join of an Empty classic group waits for others. */
  initialRebalanceDelayMs: number;
  /** group.consumer.max.size: the most members a KIP-848 group takes; a join past it is GROUP_MAX_SIZE_REACHED. */
  consumerMaxSize: number;
  /** group.max.size (Kafka: 2147483647): the same for a classic group. */
  classicMaxSize: number;
}

export const DEFAULT_GROUP_LIMITS: GroupLimits = {
  minSessionTimeoutMs: 6_000,
  maxSessionTimeoutMs: 1_800_000,
  heartbeatIntervalMs: 5_000,
  defaultSessionTimeoutMs: 45_000,
  defaultRebalanceTimeoutMs: 300_000,
  initialRebalanceDelayMs: 3_000,
  consumerMaxSize: 200,
  classicMaxSize: 2_147_483_647,
};

/** Kafka's answer to a new member of a group that is full (group.consumer.max.size, group.max.size). */
export const groupMaxSizeReached = (groupId: string, config: string, max: number) =>
  new KafkaError('GROUP_MAX_SIZE_REACHED', `Group ${groupId} already has ${config}=${max} members`);

export function newGroup(groupId: string, now: number): GroupRecord {
  return {
    groupId,
    createdAt: now,
    protocolType: '',
    groupEpoch: 0,
    assignmentEpoch: 0,
    assignor: DEFAULT_ASSIGNOR,
    topicPartitions: {},
    members: {},
    target: {},
    state: 'Empty',
  };
}

export const heartbeatIntervalOf = (m: Pick<MemberRecord, 'sessionTimeoutMs'>, limits: GroupLimits) =>
  Math.max(1, Math.min(limits.heartbeatIntervalMs, Math.floor(m.sessionTimeoutMs / 3)));

/** What a member still has to do to reach its target. */
export function pendingOf(g: GroupRecord, m: MemberRecord): { toRevoke: Assignment; toAssign: Assignment } {
  const target = g.target[m.memberId] ?? {};
  return { toRevoke: union(minus(m.assigned, target), m.revoking), toAssign: minus(target, m.assigned) };
}

/**
 * Kafka's group states, read off the reconciliation: Empty (no members), PreparingRebalance (some
 * member still has partitions to give up), CompletingRebalance (nothing left to revoke, but some
 * member has not yet received all of its target), Stable (every member holds exactly its target;
 * one whose target the last epoch left alone may still be at an earlier member epoch), Dead (being
 * deleted).
 */
export function groupState(g: GroupRecord): GroupStateName {
  if (g.deletingSince !== undefined) return 'Dead';
  const members = Object.values(g.members);
  if (members.length === 0) return 'Empty';
  if (members.some((m) => !isEmptyAssignment(pendingOf(g, m).toRevoke))) return 'PreparingRebalance';
  // A member that holds exactly its target is settled even at an earlier member epoch: a new group
  // epoch that leaves its target as it is writes nothing of it (coordinator.ts, `idleAnswer`), and
  // its next written heartbeat moves it to the assignment epoch.
  const settled = (m: MemberRecord) => sameAssignment(m.assigned, g.target[m.memberId] ?? {});
  return members.every(settled) ? 'Stable' : 'CompletingRebalance';
}

/**
 * How long after the stored `lastHeartbeat` a heartbeat may have reached the coordinator unwritten:
 * a heartbeat that changes nothing but the member's liveness is not written while the stored time
 * is younger than this: a third of session.timeout.ms, and at most three heartbeat intervals. At
 * Kafka's defaults (5 s heartbeats, a 45 s session) one heartbeat in three is written, which is
 * most of what an idle member costs; a REST consumer instance (a 5 minute session, a heartbeat per
 * poll) is written every 15 s.
 */
export const unwrittenHeartbeatMs = (m: Pick<MemberRecord, 'sessionTimeoutMs'>, limits: GroupLimits) =>
  Math.min(Math.floor(m.sessionTimeoutMs / 3), 3 * heartbeatIntervalOf(m, limits));

/**
 * When a member's session ends: session.timeout.ms after the last heartbeat that reached the
 * coordinator. Only the coordinator that answered an unwritten heartbeat saw it, and the stored
 * time may be older by up to `unwrittenHeartbeatMs`; so expiry waits that much longer. Never early
 * (a live member is never removed), and late by at most the unwritten span (the most when a member
 * dies right after a written heartbeat). Exact expiry would take one durable write per heartbeat.
 */
export const sessionDeadline = (m: MemberRecord, limits: GroupLimits) =>
  m.lastHeartbeat + m.sessionTimeoutMs + unwrittenHeartbeatMs(m, limits);

/** The earliest moment a member must be removed: its session deadline or its revocation deadline. */
export function nextDeadline(g: GroupRecord, limits: GroupLimits): number | undefined {
  let min: number | undefined;
  for (const m of Object.values(g.members)) {
    for (const d of [sessionDeadline(m, limits), m.revokeDeadline]) {
      if (d !== undefined && (min === undefined || d < min)) min = d;
    }
  }
  return min;
}

const isExpired = (m: MemberRecord, now: number, limits: GroupLimits) =>
  now >= sessionDeadline(m, limits) || (m.revokeDeadline !== undefined && now >= m.revokeDeadline);

/** Removes members whose session or revocation deadline passed; returns them. Mutates `g`. */
export function expireMembers(g: GroupRecord, now: number, limits: GroupLimits): MemberRecord[] {
  const gone = Object.values(g.members).filter((m) => isExpired(m, now, limits));
  for (const m of gone) removeMember(g, m.memberId);
  return gone;
}

export function removeMember(g: GroupRecord, memberId: string): void {
  delete g.members[memberId];
  delete g.target[memberId];
  g.groupEpoch++;
}

/**
 * The assignor most members ask for (ties: range, roundrobin, sticky); the default (uniform) if none
 * asks, as Kafka's coordinator takes the first of `group.consumer.assignors`, whatever a group used.
 */
function chooseAssignor(g: GroupRecord): AssignorName {
  const votes = new Map<AssignorName, number>();
  for (const m of Object.values(g.members)) if (m.assignor) votes.set(m.assignor, (votes.get(m.assignor) ?? 0) + 1);
  let best: AssignorName | undefined;
  for (const a of ASSIGNOR_NAMES) if ((votes.get(a) ?? 0) > (best ? votes.get(best)! : 0)) best = a;
  return best ?? DEFAULT_ASSIGNOR;
}

/** Recomputes the target assignment when the group epoch moved past it; sets the derived state. */
export function settle(g: GroupRecord): GroupRecord {
  if (g.groupEpoch > g.assignmentEpoch) {
    const members = Object.values(g.members);
    const subscribed = new Set(members.flatMap((m) => m.subscribedTopics));
    g.topicPartitions = Object.fromEntries(Object.entries(g.topicPartitions).filter(([t]) => subscribed.has(t)));
    g.assignor = chooseAssignor(g);
    g.target = ASSIGNORS[g.assignor]({
      members: members.map((m) => ({ memberId: m.memberId, topics: m.subscribedTopics })),
      partitionCounts: g.topicPartitions,
      previous: g.target,
    });
    g.assignmentEpoch = g.groupEpoch;
  }
  g.state = groupState(g);
  return g;
}

/**
 * One reconciliation step of a member (on its heartbeat), revoke then assign:
 *  - partitions it holds beyond its target move to `revoking`, and its epoch stays;
 *  - once nothing is left to revoke it moves to the assignment epoch and takes every target
 *    partition no other member holds (the rest it receives on a later heartbeat, once released).
 */
export function reconcile(g: GroupRecord, m: MemberRecord, now: number): void {
  const target = g.target[m.memberId] ?? {};
  const extra = minus(m.assigned, target);
  if (!isEmptyAssignment(extra)) {
    m.assigned = intersect(m.assigned, target);
    m.revoking = union(m.revoking, extra);
    m.revokeDeadline ??= now + m.rebalanceTimeoutMs;
    return;
  }
  if (!isEmptyAssignment(m.revoking)) return;
  if (m.memberEpoch !== g.assignmentEpoch) {
    m.previousMemberEpoch = m.memberEpoch;
    m.memberEpoch = g.assignmentEpoch;
  }
  const heldByOthers = new Set<string>();
  for (const o of Object.values(g.members)) {
    if (o.memberId === m.memberId) continue;
    for (const k of assignmentKeys(o.assigned)) heldByOthers.add(k);
    for (const k of assignmentKeys(o.revoking)) heldByOthers.add(k);
  }
  m.assigned = union(m.assigned, minus(target, heldByOthers));
}

export interface HeartbeatRequest {
  /** Empty on the first call: the coordinator names the member. */
  memberId: string;
  /** 0 to join (or rejoin after being fenced), -1 to leave, else the epoch last received. */
  memberEpoch: number;
  clientId?: string;
  instanceName?: string;
  /** Required when joining; absent means unchanged. */
  subscribedTopics?: string[];
  assignor?: AssignorName;
  sessionTimeoutMs?: number;
  rebalanceTimeoutMs?: number;
  /**
   * The partitions the member still consumes. Optional: without it, a heartbeat acknowledges the
   * previous answer (the member has released whatever that answer no longer listed).
   */
  ownedPartitions?: Assignment;
}

export interface HeartbeatContext {
  now: number;
  limits: GroupLimits;
  /** Partition counts of every topic some member (after this request) subscribes to; absent = no such topic. */
  partitionCounts: Record<string, number>;
  newMemberId: () => string;
}

/** Applies one heartbeat to `g` (mutated) and returns the member id it concerns. */
export function applyHeartbeat(g: GroupRecord, req: HeartbeatRequest, ctx: HeartbeatContext): string {
  const { now, limits } = ctx;
  expireMembers(g, now, limits);
  let member = req.memberId ? g.members[req.memberId] : undefined;

  if (req.memberEpoch === -1) {
    if (!member) throw unknownMember(g.groupId, req.memberId);
    removeMember(g, member.memberId);
    // The leave bumped the group epoch: recompute the target now, so the leaver's partitions go to
    // the remaining members (KIP-848: a membership change yields a new target assignment at the new
    // epoch). Without it the group read Stable against the old target, the leaver's partitions unowned.
    settle(g);
    return member.memberId;
  }

  const sessionTimeoutMs = req.sessionTimeoutMs ?? member?.sessionTimeoutMs ?? limits.defaultSessionTimeoutMs;
  if (
    !Number.isInteger(sessionTimeoutMs) ||
    sessionTimeoutMs < limits.minSessionTimeoutMs ||
    sessionTimeoutMs > limits.maxSessionTimeoutMs
  ) {
    throw new KafkaError(
      'INVALID_SESSION_TIMEOUT',
      `session.timeout.ms must be between group.min.session.timeout.ms (${limits.minSessionTimeoutMs}) and group.max.session.timeout.ms (${limits.maxSessionTimeoutMs})`,
    );
  }
  const rebalanceTimeoutMs = req.rebalanceTimeoutMs ?? member?.rebalanceTimeoutMs ?? limits.defaultRebalanceTimeoutMs;
  if (!Number.isInteger(rebalanceTimeoutMs) || rebalanceTimeoutMs < 1)
    throw new KafkaError('INVALID_REQUEST', 'max.poll.interval.ms must be a positive integer');

  if (!Number.isInteger(req.memberEpoch) || req.memberEpoch < -1) {
    throw new KafkaError(
      'INVALID_REQUEST',
      'member_epoch must be 0 (join), -1 (leave) or the epoch last received (static membership is not supported)',
    );
  }
  let bump = false;
  if (req.memberEpoch === 0) {
    if (req.subscribedTopics === undefined)
      throw new KafkaError('INVALID_REQUEST', 'A joining member must send its subscribed topics');
    // A join, or a rejoin of a member that lost its state: it starts over, holding nothing.
    if (!member && Object.keys(g.members).length >= limits.consumerMaxSize)
      throw groupMaxSizeReached(g.groupId, 'group.consumer.max.size', limits.consumerMaxSize);
    const memberId = req.memberId || ctx.newMemberId();
    member = {
      memberId,
      clientId: req.clientId ?? member?.clientId ?? '',
      ...((req.instanceName ?? member?.instanceName) ? { instanceName: req.instanceName ?? member?.instanceName } : {}),
      memberEpoch: 0,
      previousMemberEpoch: -1,
      subscribedTopics: [],
      sessionTimeoutMs,
      rebalanceTimeoutMs,
      lastHeartbeat: now,
      joinedAt: now,
      assigned: {},
      revoking: {},
    };
    g.members[memberId] = member;
    g.protocolType = 'consumer';
    bump = true;
  } else {
    if (!member) throw unknownMember(g.groupId, req.memberId);
    acknowledge(member, req, now);
    member.sessionTimeoutMs = sessionTimeoutMs;
    member.rebalanceTimeoutMs = rebalanceTimeoutMs;
  }

  if (req.assignor !== undefined && req.assignor !== member.assignor) {
    member.assignor = req.assignor;
    bump = true;
  }
  if (req.subscribedTopics !== undefined) {
    const topics = [...new Set(req.subscribedTopics)].sort();
    if (topics.join(',') !== member.subscribedTopics.join(',')) {
      member.subscribedTopics = topics;
      bump = true;
    }
  }
  // A subscribed topic created, deleted or grown also changes the target.
  const counts: Record<string, number> = {};
  for (const t of new Set(Object.values(g.members).flatMap((m) => m.subscribedTopics))) {
    const n = ctx.partitionCounts[t];
    if (n !== undefined && n > 0) counts[t] = n;
  }
  if (JSON.stringify(sortedRecord(counts)) !== JSON.stringify(sortedRecord(g.topicPartitions))) {
    g.topicPartitions = sortedRecord(counts);
    bump = true;
  }
  if (bump) g.groupEpoch++;
  settle(g);
  reconcile(g, member, now);
  g.state = groupState(g);
  return member.memberId;
}

/** An existing member's heartbeat: fencing by epoch, the revocation it acknowledges, its liveness. */
function acknowledge(member: MemberRecord, req: HeartbeatRequest, now: number): void {
  const owned = req.ownedPartitions;
  const lostAnswer =
    req.memberEpoch === member.previousMemberEpoch &&
    owned !== undefined &&
    isEmptyAssignment(minus(owned, union(member.assigned, member.revoking)));
  if (req.memberEpoch !== member.memberEpoch && !lostAnswer) {
    throw new KafkaError(
      'FENCED_MEMBER_EPOCH',
      `Member ${member.memberId} sent epoch ${req.memberEpoch} but is at epoch ${member.memberEpoch}; rejoin with epoch 0`,
    );
  }
  // Revocation is acknowledged: by the owned partitions when sent, else by this heartbeat itself.
  member.revoking = owned === undefined ? {} : intersect(member.revoking, owned);
  if (isEmptyAssignment(member.revoking)) delete member.revokeDeadline;
  member.lastHeartbeat = now;
  if (req.clientId !== undefined) member.clientId = req.clientId;
}

/**
 * A heartbeat that changes no one but its member (applyHeartbeat's result for it), decided on part
 * of the group: `g` holds the member and at least every member that holds a partition of its
 * target it does not hold yet (their items are all its reconciliation reads). False, `g`
 * untouched: the heartbeat needs the whole group, as a join, a leave, a new subscription, assignor
 * or timeout (a new group epoch, or a value to validate), an unsettled group or a member past a
 * deadline (its removal) do. Throws FENCED_MEMBER_EPOCH as applyHeartbeat does.
 */
export function applyMemberHeartbeat(g: GroupRecord, req: HeartbeatRequest, now: number, limits: GroupLimits): boolean {
  const member = g.members[req.memberId];
  if (!member || !Number.isInteger(req.memberEpoch) || req.memberEpoch <= 0) return false;
  if (g.deletingSince !== undefined || g.groupEpoch !== g.assignmentEpoch) return false;
  if (now >= sessionDeadline(member, limits) || (member.revokeDeadline !== undefined && now >= member.revokeDeadline))
    return false;
  if (req.assignor !== undefined && req.assignor !== member.assignor) return false;
  if (req.sessionTimeoutMs !== undefined && req.sessionTimeoutMs !== member.sessionTimeoutMs) return false;
  if (req.rebalanceTimeoutMs !== undefined && req.rebalanceTimeoutMs !== member.rebalanceTimeoutMs) return false;
  if (
    req.subscribedTopics !== undefined &&
    [...new Set(req.subscribedTopics)].sort().join(',') !== member.subscribedTopics.join(',')
  )
    return false;
  acknowledge(member, req, now);
  reconcile(g, member, now);
  return true;
}

/**
 * The members other than `memberId` that hold (assigned or revoking) a partition of its target it
 * does not hold yet, sorted; empty when it holds its whole target. Only a change of its target can
 * add one (a member takes only partitions of its own target), so a list written with the target
 * stays a superset of them until the target changes. `held`: `heldBy(g)`, for many members.
 */
export function holdersOfMissing(g: GroupRecord, memberId: string, held: Map<string, string[]> = heldBy(g)): string[] {
  const m = g.members[memberId];
  if (!m) return [];
  const out = new Set<string>();
  for (const k of assignmentKeys(minus(g.target[memberId] ?? {}, m.assigned)))
    for (const id of held.get(k) ?? []) if (id !== memberId) out.add(id);
  return [...out].sort();
}

/** Every partition held (assigned or revoking) by some member, with its holders. */
export function heldBy(g: GroupRecord): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const m of Object.values(g.members)) {
    for (const a of [m.assigned, m.revoking])
      for (const k of assignmentKeys(a)) {
        const list = out.get(k);
        if (list) list.push(m.memberId);
        else out.set(k, [m.memberId]);
      }
  }
  return out;
}

const sortedRecord = (r: Record<string, number>) =>
  Object.fromEntries(Object.entries(r).sort(([a], [b]) => (a < b ? -1 : 1)));

export const unknownMember = (groupId: string, memberId: string) =>
  new KafkaError(
    'UNKNOWN_MEMBER_ID',
    `Member ${JSON.stringify(memberId)} is not a member of group ${groupId} (it may have expired); rejoin with epoch 0`,
  );

/** Every partition held by some member, with its holder: the invariant checks of tests use it too. */
export function holders(g: GroupRecord): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const m of Object.values(g.members)) {
    for (const k of assignmentKeys(union(m.assigned, m.revoking))) out.set(k, [...(out.get(k) ?? []), m.memberId]);
  }
  return out;
}

export const ownerOf = (g: GroupRecord, topic: string, partition: number): MemberRecord | undefined =>
  Object.values(g.members).find(
    (m) => m.assigned[topic]?.includes(partition) || m.revoking[topic]?.includes(partition),
  );

/**
 * Partitions that some member holds (assigned or revoking) in `before` and no longer holds in
 * `after`: the write from one to the other ends that member's right to commit them.
 */
export function releasedPartitions(before: GroupRecord | undefined, after: GroupRecord): TopicPartition[] {
  const released = new Set<string>();
  for (const m of Object.values(before?.members ?? {})) {
    const kept = after.members[m.memberId];
    const held = union(m.assigned, m.revoking);
    for (const k of assignmentKeys(kept ? minus(held, union(kept.assigned, kept.revoking)) : held)) released.add(k);
  }
  return toPartitions(assignmentOf(released));
}
