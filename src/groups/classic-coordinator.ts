/**
 * The classic group coordinator over the metadata store: every change is a conditional write of
 * the group's classic item (classic-group.ts), so any number of listeners may serve one group.
 * JoinGroup and a follower's SyncGroup are barriers: they wait until the group item shows the
 * generation (or assignment) they wait for, woken at once by this process's writes and re-reading
 * the item on a short period for writes made by other processes.
 *
 * Committed offsets are the same items the HTTP API and the KIP-848 coordinator use (offsets.ts):
 * the coordinator only validates a classic member's commit (member, generation, state).
 */
import type { Clock } from '../clock.js';
import { KafkaError } from '../wire/errors.js';
import { optimisticUpdate } from '../storage/optimistic-update.js';
import { ConditionFailedError, type MetadataStore } from '../storage/ports.js';
import { MAX_ATTEMPTS, type GroupCoordinator } from './coordinator.js';
import {
  CLASSIC_GROUP_REGISTRY_PREFIX,
  CLASSIC_GROUP_SK,
  classicGroupRegistrySk,
  CLUSTER_PK,
  groupPk,
  OFFSET_PREFIX,
} from '../storage/key-layout.js';
import { validateGroupId } from './group-id.js';
import { groupMaxSizeReached, type GroupLimits } from './group-state.js';
import {
  classicDeadline,
  checkGeneration,
  checkJoinable,
  checkStaticMember,
  completeJoin,
  delayInitialJoin,
  expiredMembers,
  joinComplete,
  newClassicGroup,
  prepareRebalance,
  removeMembers,
  restartStaticMember,
  sameProtocols,
  staticMemberId,
  classicUnwrittenHeartbeatMs,
  type ClassicGroup,
  type ClassicMember,
} from './classic-group.js';

export interface JoinRequest {
  groupId: string;
  memberId: string;
  groupInstanceId: string | null;
  clientId: string;
  clientHost: string;
  sessionTimeoutMs: number;
  rebalanceTimeoutMs: number;
  protocolType: string;
  protocols: { name: string; metadata: Uint8Array }[];
  /** JoinGroup v4+: a member without an id is given one and asked to join again with it. */
  requireKnownMemberId: boolean;
}

export interface JoinAnswer {
  generationId: number;
  protocolType: string | null;
  protocolName: string | null;
  leaderId: string;
  memberId: string;
  /** Filled for the leader only: every member's metadata for the chosen protocol. */
  members: { memberId: string; groupInstanceId: string | null; metadata: Buffer }[];
}

export interface ClassicDeps {
  metadata: MetadataStore;
  clock: Clock;
  /** The KIP-848 coordinator: a group has members of one protocol only. */
  coordinator: GroupCoordinator;
  limits: GroupLimits;
  /** How often a waiting request re-reads the group for other processes' writes. */
  pollMs?: number;
}

type Item = { group: ClassicGroup; version?: number };

export class ClassicGroupCoordinator {
  private readonly wakers = new Map<string, Set<() => void>>();
  private readonly pollMs: number;

  constructor(private readonly deps: ClassicDeps) {
    this.pollMs = deps.pollMs ?? 200;
    // The scheduler's session timers are the KIP-848 coordinator's; a fired one settles this
    // group's classic item too, so a member that stops is removed without anyone touching the group.
    deps.coordinator.onSessionTimer((groupId) => this.sweep(groupId));
  }

  async join(req: JoinRequest, signal?: AbortSignal): Promise<JoinAnswer> {
    validateGroupId(req.groupId);
    const { minSessionTimeoutMs, maxSessionTimeoutMs } = this.deps.limits;
    if (req.sessionTimeoutMs < minSessionTimeoutMs || req.sessionTimeoutMs > maxSessionTimeoutMs) {
      throw new KafkaError(
        'INVALID_SESSION_TIMEOUT',
        `session.timeout.ms must be within [${minSessionTimeoutMs}, ${maxSessionTimeoutMs}]`,
      );
    }
    const snapshot = await this.deps.coordinator.find(req.groupId);
    if (snapshot && Object.keys(snapshot.group.members).length > 0) {
      throw new KafkaError(
        'INCONSISTENT_GROUP_PROTOCOL',
        `Group ${req.groupId} has members of the consumer (KIP-848) protocol`,
      );
    }
    // A new member: a dynamic one is told its id and asked to join again with it (v4+); a static
    // one (KIP-345) joins at once, and takes the place of a member with its instance id.
    const isNew = req.memberId === '';
    if (isNew) {
      const memberId = `${req.clientId || 'member'}-${crypto.randomUUID()}`;
      if (req.requireKnownMemberId && req.groupInstanceId === null) {
        // Noted as pending first, so that the join with it is told apart from a stale member's.
        const now = this.deps.clock.now();
        await this.mutate(req.groupId, (g) => {
          this.checkRoom(req.groupId, g, now);
          return {
            group: { ...g, pendingMembers: { ...livePending(g, now), [memberId]: now + req.sessionTimeoutMs } },
            result: undefined,
          };
        });
        throw new MemberIdRequired(memberId);
      }
      req = { ...req, memberId };
    }
    const now = this.deps.clock.now();
    let startGeneration = 0;
    const immediate = await this.mutate(req.groupId, (g) => {
      checkJoinable(g, req.protocolType, req.protocols);
      const known = g.members[req.memberId];
      const protocols = req.protocols.map((p) => ({
        name: p.name,
        metadata: Buffer.from(p.metadata).toString('base64'),
      }));
      startGeneration = g.generationId;
      const instanceHolder = req.groupInstanceId === null ? undefined : staticMemberId(g, req.groupInstanceId);
      if (instanceHolder !== undefined && instanceHolder !== req.memberId) {
        if (!isNew)
          throw new KafkaError(
            'FENCED_INSTANCE_ID',
            `Instance ${req.groupInstanceId} is member ${instanceHolder} now, not ${req.memberId}`,
          );
        const restart = restartStaticMember(g, instanceHolder, memberOf(req, protocols, now, undefined), now);
        // Without a rebalance the answer names the leader as it was: a restarted leader does not
        // assign again (a Stable group would not hand it out), it syncs and gets its old assignment.
        const answer = { ...answerOf(restart.group, req.memberId), leaderId: g.leaderId ?? '', members: [] };
        return { group: restart.group, result: restart.rebalance ? undefined : answer };
      }
      // As Kafka: a member id the group neither has nor handed out (a member removed when its
      // session expired, say) must join again without one, and learn that it lost its partitions.
      // (Expired pending ids are dropped at the next hand-out.)
      const pending = (g.pendingMembers?.[req.memberId] ?? 0) > now;
      if (!isNew && !known && !pending)
        throw new KafkaError(
          'UNKNOWN_MEMBER_ID',
          `Member ${req.memberId} is not a member of group ${req.groupId}: join with an empty member id`,
        );
      // A member handed its id (pending) was given its place then.
      if (!known && !pending) this.checkRoom(req.groupId, g, now);
      if (pending) {
        const { [req.memberId]: _joined, ...others } = g.pendingMembers!;
        g = { ...g, pendingMembers: others };
      }
      if (
        known &&
        (g.state === 'CompletingRebalance' || g.state === 'Stable') &&
        sameProtocols(known.protocols, protocols) &&
        (g.state === 'CompletingRebalance' || g.leaderId !== req.memberId)
      ) {
        return { group: touch(g, req.memberId, now), result: answerOf(g, req.memberId) };
      }
      const member = memberOf(req, protocols, now, known);
      const next = prepareRebalance(
        { ...g, protocolType: req.protocolType, members: { ...g.members, [req.memberId]: member } },
        now,
      );
      next.members[req.memberId] = member; // this member has rejoined, whatever the state was
      const delayed = delayInitialJoin(g, next, !known, now, this.deps.limits.initialRebalanceDelayMs);
      return { group: joinComplete(delayed, now) ? completeJoin(delayed) : delayed, result: undefined };
    });
    if (immediate) return immediate;
    // The barrier: wait for the generation that includes this member.
    return this.waitFor(req.groupId, signal, (g) => {
      const m = g.members[req.memberId];
      if (!m) {
        checkStaticMember(g, req.memberId, req.groupInstanceId); // replaced by a restarted instance: fenced
        throw new KafkaError(
          'UNKNOWN_MEMBER_ID',
          `Member ${req.memberId} was removed from group ${req.groupId} before the rebalance completed`,
        );
      }
      return m.joinGeneration > startGeneration ? answerOf(g, req.memberId) : undefined;
    });
  }

  /** group.max.size: a new member of a full group is GROUP_MAX_SIZE_REACHED (members and pending ids count). */
  private checkRoom(groupId: string, g: ClassicGroup, now: number): void {
    const max = this.deps.limits.classicMaxSize;
    if (Object.keys(g.members).length + Object.keys(livePending(g, now)).length >= max)
      throw groupMaxSizeReached(groupId, 'group.max.size', max);
  }

  async sync(
    groupId: string,
    generationId: number,
    memberId: string,
    assignments: { memberId: string; assignment: Uint8Array }[],
    signal?: AbortSignal,
    groupInstanceId: string | null = null,
  ): Promise<{ group: ClassicGroup; assignment: Buffer }> {
    validateGroupId(groupId);
    const now = this.deps.clock.now();
    const read = (g: ClassicGroup) => {
      const m = checkGeneration(g, memberId, generationId, groupInstanceId);
      if (g.state === 'PreparingRebalance')
        throw new KafkaError('REBALANCE_IN_PROGRESS', `Group ${groupId} is rebalancing`);
      return g.state === 'Stable' ? { group: g, assignment: Buffer.from(m.assignment, 'base64') } : undefined;
    };
    const done = await this.mutate(groupId, (g) => {
      const m = checkGeneration(g, memberId, generationId, groupInstanceId);
      if (g.state === 'CompletingRebalance' && g.leaderId === memberId) {
        const given = new Map(assignments.map((a) => [a.memberId, Buffer.from(a.assignment).toString('base64')]));
        const members = Object.fromEntries(
          Object.entries(g.members).map(([id, x]) => [id, { ...x, assignment: given.get(id) ?? '' }]),
        );
        const next: ClassicGroup = touch({ ...g, members, state: 'Stable' }, memberId, now);
        return { group: next, result: { group: next, assignment: Buffer.from(given.get(memberId) ?? '', 'base64') } };
      }
      return { group: m.lastHeartbeat === now ? g : touch(g, memberId, now), result: read(g) };
    });
    return done ?? this.waitFor(groupId, signal, read);
  }

  async heartbeat(
    groupId: string,
    memberId: string,
    generationId: number,
    groupInstanceId: string | null = null,
  ): Promise<void> {
    validateGroupId(groupId);
    const now = this.deps.clock.now();
    await this.mutate(groupId, (g) => {
      checkGeneration(g, memberId, generationId, groupInstanceId);
      if (g.state === 'PreparingRebalance')
        throw new KafkaError('REBALANCE_IN_PROGRESS', `Group ${groupId} is rebalancing: rejoin`);
      // Still read every time (a rebalance started elsewhere is answered at once), but written
      // only once the stored heartbeat is a third of the session old (expiry allows for it).
      const m = g.members[memberId];
      if (m && now - m.lastHeartbeat < classicUnwrittenHeartbeatMs(m)) return { group: g, result: undefined };
      return { group: touch(g, memberId, now), result: undefined };
    });
  }

  /** Removes members; answers per member (UNKNOWN_MEMBER_ID for one not in the group). */
  async leave(groupId: string, memberIds: string[]): Promise<Map<string, KafkaError | undefined>> {
    const results = await this.leaveMembers(
      groupId,
      memberIds.map((memberId) => ({ memberId, groupInstanceId: null })),
    );
    return new Map(memberIds.map((id, i) => [id, results[i]]));
  }

  /**
   * LeaveGroup v3+'s batch: each member by its id, or a static one by its instance id (with its
   * member id, or none: an admin's removeMembersFromConsumerGroup). Answers per member, in order:
   * UNKNOWN_MEMBER_ID for one not in the group, FENCED_INSTANCE_ID for an instance id that another
   * member id holds now. One write removes them all, and the group rebalances.
   */
  async leaveMembers(
    groupId: string,
    members: { memberId: string; groupInstanceId: string | null }[],
  ): Promise<(KafkaError | undefined)[]> {
    validateGroupId(groupId);
    const now = this.deps.clock.now();
    return this.mutate(groupId, (g) => {
      const leaving = new Set<string>();
      const results = members.map(({ memberId, groupInstanceId }) => {
        try {
          if (groupInstanceId === null) {
            if (!g.members[memberId])
              throw new KafkaError('UNKNOWN_MEMBER_ID', `Member ${memberId} is not in group ${groupId}`);
            leaving.add(memberId);
          } else {
            const holder = staticMemberId(g, groupInstanceId);
            checkStaticMember(g, memberId === '' && holder !== undefined ? holder : memberId, groupInstanceId);
            leaving.add(holder!);
          }
          return undefined;
        } catch (e) {
          if (e instanceof KafkaError) return e;
          throw e;
        }
      });
      return { group: removeMembers(g, [...leaving], now), result: results };
    });
  }

  /**
   * A classic member's OffsetCommit: a known member at the current generation, outside the sync
   * window (Kafka answers REBALANCE_IN_PROGRESS while the leader's assignment is awaited; commits
   * during PreparingRebalance are allowed, so members can commit before they rejoin).
   * Without a member (generation -1) the group must have no classic members.
   */
  async checkCommit(
    groupId: string,
    memberId: string,
    generationId: number,
    groupInstanceId: string | null = null,
  ): Promise<number> {
    validateGroupId(groupId);
    const item = await this.read(groupId);
    const g = item?.group;
    if (generationId < 0 && memberId === '') {
      if (g && Object.keys(g.members).length > 0)
        throw new KafkaError('UNKNOWN_MEMBER_ID', `Group ${groupId} has members: commit as one of them`);
      return -1;
    }
    checkGeneration(g, memberId, generationId, groupInstanceId);
    if (g!.state === 'CompletingRebalance')
      throw new KafkaError('REBALANCE_IN_PROGRESS', `Group ${groupId} is completing a rebalance`);
    return generationId;
  }

  /** The group as stored, with expired members dropped (not written back). */
  async describe(groupId: string): Promise<ClassicGroup | undefined> {
    const item = await this.read(groupId);
    if (!item) return undefined;
    const now = this.deps.clock.now();
    return removeMembers(item.group, expiredMembers(item.group, now), now);
  }

  async list(): Promise<ClassicGroup[]> {
    const items = await this.deps.metadata.query<{ groupId: string }>(CLUSTER_PK, {
      beginsWith: CLASSIC_GROUP_REGISTRY_PREFIX,
    });
    const groups = await Promise.all(items.map((i) => this.describe(i.value.groupId)));
    return groups.filter((g): g is ClassicGroup => g !== undefined);
  }

  /** DeleteGroups for a classic group: Empty only; its committed offsets go with it. */
  async delete(groupId: string): Promise<boolean> {
    const item = await this.read(groupId);
    if (!item) return false;
    const g = await this.describe(groupId);
    if (g && Object.keys(g.members).length > 0) throw new KafkaError('NON_EMPTY_GROUP', `Group ${groupId} has members`);
    const pk = groupPk(groupId);
    for (;;) {
      const offsets = await this.deps.metadata.query(pk, { beginsWith: OFFSET_PREFIX, limit: 100 });
      await Promise.all(offsets.map((o) => this.deps.metadata.delete(pk, o.sk)));
      if (offsets.length < 100) break;
    }
    try {
      await this.deps.metadata.delete(pk, CLASSIC_GROUP_SK, { ifVersion: item.version! });
    } catch (e) {
      if (e instanceof ConditionFailedError)
        throw new KafkaError('NON_EMPTY_GROUP', `Group ${groupId} changed while being deleted`);
      throw e;
    }
    await this.deps.metadata.delete(CLUSTER_PK, classicGroupRegistrySk(groupId));
    return true;
  }

  /**
   * A session timer fired: removes the members whose session expired (and closes a join barrier
   * past its deadline), as Kafka's coordinator does on its heartbeat timers, and arms the next
   * timer. Returns how many members it removed.
   */
  async sweep(groupId: string): Promise<number> {
    const item = await this.read(groupId);
    if (!item) return 0;
    let removed = 0;
    await this.mutate(groupId, (g) => {
      removed = Object.keys(item.group.members).length - Object.keys(g.members).length;
      // A due timer is re-armed (written) even when nobody expired: else none would stay pending.
      const due = g.timerAt !== undefined && g.timerAt <= this.deps.clock.now();
      return { group: due ? { ...g } : g, result: undefined };
    });
    return Math.max(0, removed);
  }

  /**
   * Keeps a session timer pending at most one session timeout (the members' shortest) after the
   * group's first deadline, as the KIP-848 coordinator does (coordinator.ts, armTimer): classic
   * heartbeats write the item (once per third of a session), and registering a timer on each
   * would be a second write. A due timer is re-armed that session past the deadline, so a live group's timer
   * does not fire on every scheduler tick; a group nobody accesses is swept up to that much later.
   */
  private async armTimer(groupId: string, g: ClassicGroup): Promise<ClassicGroup> {
    const now = this.deps.clock.now();
    const deadline = classicDeadline(g);
    if (deadline === undefined) {
      const { timerAt: _, ...rest } = g;
      return rest;
    }
    const due = g.timerAt !== undefined && g.timerAt <= now;
    const slack = Math.min(...Object.values(g.members).map((m) => m.sessionTimeoutMs));
    if (g.timerAt !== undefined && !due && g.timerAt <= deadline + slack) return g;
    const at = due ? deadline + slack : deadline;
    await this.deps.coordinator.armSessionTimer(groupId, at);
    return { ...g, timerAt: at };
  }

  private async read(groupId: string): Promise<Item | undefined> {
    const item = await this.deps.metadata.get<ClassicGroup>(groupPk(groupId), CLASSIC_GROUP_SK);
    return item && { group: item.value, version: item.version };
  }

  /**
   * Read, settle (expire sessions, close a finished join barrier), apply `change`, write with
   * `ifVersion` (one `optimisticUpdate`); decided again on the item found when another writer got
   * there first. Writes only when something changed. No write of it carries a token, so a write
   * whose answer was lost is decided again like a lost race (as before this used the helper).
   */
  private async mutate<T>(
    groupId: string,
    change: (g: ClassicGroup) => { group: ClassicGroup; result: T },
  ): Promise<T> {
    const pk = groupPk(groupId);
    const { result, how } = await optimisticUpdate<ClassicGroup, T>({
      metadata: this.deps.metadata,
      pk,
      sk: CLASSIC_GROUP_SK,
      attempts: MAX_ATTEMPTS,
      giveUp: { errorName: 'COORDINATOR_NOT_AVAILABLE', message: `Too much contention on group ${groupId}; retry` },
      decide: async (item) => {
        const stored = item?.value ?? newClassicGroup(groupId);
        const now = this.deps.clock.now();
        let g = removeMembers(stored, expiredMembers(stored, now), now);
        if (joinComplete(g, now)) g = completeJoin(g);
        let out: { group: ClassicGroup; result: T };
        try {
          out = change(g);
        } catch (e) {
          // The refusal stands; what settling found is kept if it still applies (best effort).
          if (item && g !== stored)
            await this.armTimer(groupId, g)
              .then((armed) => this.deps.metadata.put(pk, CLASSIC_GROUP_SK, armed, { ifVersion: item.version }))
              .then(() => this.wake(groupId))
              .catch(() => {});
          throw e;
        }
        if (item && out.group === stored) return { done: out.result };
        if (!item) {
          // The KIP-848 group item too (empty): the HTTP API finds the group and its committed offsets.
          await this.deps.coordinator.ensureExists(groupId);
          await this.deps.metadata.put(CLUSTER_PK, classicGroupRegistrySk(groupId), { groupId });
        }
        // The timer first, then the item that records it: a crash leaves a spurious timer, never a missing one.
        return { write: await this.armTimer(groupId, out.group), answer: () => out.result };
      },
    });
    if (how === 'written') this.wake(groupId);
    return result;
  }

  private wake(groupId: string): void {
    for (const wake of this.wakers.get(groupId) ?? []) wake();
  }

  /** Re-reads (and settles) the group on every local write and every pollMs until `ready` answers. */
  private async waitFor<T>(
    groupId: string,
    signal: AbortSignal | undefined,
    ready: (g: ClassicGroup) => T | undefined,
  ): Promise<T> {
    const started = this.deps.clock.now();
    const limit = this.deps.limits.maxSessionTimeoutMs;
    for (;;) {
      const answer = await this.mutate(groupId, (g) => ({ group: g, result: ready(g) }));
      if (answer !== undefined) return answer;
      if (signal?.aborted) throw new KafkaError('REQUEST_TIMED_OUT', 'The client went away');
      if (this.deps.clock.now() - started > limit)
        throw new KafkaError('REBALANCE_IN_PROGRESS', `Group ${groupId} did not complete its rebalance`);
      await new Promise<void>((resolve) => {
        let set = this.wakers.get(groupId);
        if (!set) this.wakers.set(groupId, (set = new Set()));
        const done = () => {
          clearTimeout(timer);
          set!.delete(done);
          if (set!.size === 0) this.wakers.delete(groupId);
          signal?.removeEventListener('abort', done);
          resolve();
        };
        const timer = setTimeout(done, this.pollMs);
        set.add(done);
        signal?.addEventListener('abort', done);
      });
    }
  }
}

/** JoinGroup v4+'s first answer: the member id to join with (MEMBER_ID_REQUIRED). */
export class MemberIdRequired extends KafkaError {
  constructor(readonly memberId: string) {
    super('MEMBER_ID_REQUIRED', 'Join again with the member id given');
  }
}

/** The pending member ids whose time has not passed. */
function livePending(g: ClassicGroup, now: number): Record<string, number> {
  return Object.fromEntries(Object.entries(g.pendingMembers ?? {}).filter(([, until]) => until > now));
}

function touch(g: ClassicGroup, memberId: string, now: number): ClassicGroup {
  const m = g.members[memberId];
  if (!m) return g;
  return { ...g, members: { ...g.members, [memberId]: { ...m, lastHeartbeat: now } } };
}

function answerOf(g: ClassicGroup, memberId: string): JoinAnswer {
  const leader = g.leaderId === memberId;
  return {
    generationId: g.generationId,
    protocolType: g.protocolType,
    protocolName: g.protocolName,
    leaderId: g.leaderId ?? '',
    memberId,
    members: leader
      ? Object.values(g.members)
          .filter((m) => m.joinGeneration === g.generationId)
          .map((m) => ({
            memberId: m.memberId,
            groupInstanceId: m.groupInstanceId,
            metadata: Buffer.from(m.protocols.find((p) => p.name === g.protocolName)?.metadata ?? '', 'base64'),
          }))
      : [],
  };
}

/** The member a JoinGroup describes (a known member keeps its generation and assignment). */
function memberOf(
  req: JoinRequest,
  protocols: ClassicMember['protocols'],
  now: number,
  known: ClassicMember | undefined,
): ClassicMember {
  return {
    memberId: req.memberId,
    groupInstanceId: req.groupInstanceId,
    clientId: req.clientId,
    clientHost: req.clientHost,
    sessionTimeoutMs: req.sessionTimeoutMs,
    rebalanceTimeoutMs: req.rebalanceTimeoutMs > 0 ? req.rebalanceTimeoutMs : req.sessionTimeoutMs,
    protocolType: req.protocolType,
    protocols,
    lastHeartbeat: now,
    rejoined: true,
    joinGeneration: known?.joinGeneration ?? -1,
    assignment: known?.assignment ?? '',
  };
}
