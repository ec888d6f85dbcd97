import { randomUUID } from 'node:crypto';
import type { Clock } from '../clock.js';
import { KafkaError, isKafkaError } from '../wire/errors.js';
import type { TopicRegistry } from '../topics/topics.js';
import { optimisticUpdate, writeIfUnchanged } from '../storage/optimistic-update.js';
import { ConditionFailedError, type MetadataStore, type MetaItem } from '../storage/ports.js';
import { isEmptyAssignment, minus, sameAssignment, union, type Assignment } from './assignment.js';
import { validateGroupId } from './group-id.js';
import {
  applyHeartbeat,
  applyMemberHeartbeat,
  holdersOfMissing,
  DEFAULT_GROUP_LIMITS,
  expireMembers,
  groupState,
  heartbeatIntervalOf,
  heldBy,
  newGroup,
  nextDeadline,
  releasedPartitions,
  sessionDeadline,
  settle,
  unwrittenHeartbeatMs,
  type GroupLimits,
  type GroupRecord,
  type GroupStateName,
  type HeartbeatRequest,
  type MemberRecord,
} from './group-state.js';
import { fenceOffsets } from './offset-fence.js';
import {
  GroupChangedError,
  GroupItems,
  IN_FLIGHT_GRACE_MS,
  hasSummary,
  isSplit,
  memberInForce,
  newChangeToken,
  pendingState,
  recordOf,
  type LoadedGroup,
  type MemberEntry,
  type MemberItem,
  type Prepared,
  type StoredGroup,
  type SummaryUpdate,
} from './group-items.js';
import { loadSummary, summaryChanges, summaryOf, type SummaryEntry } from './group-summary.js';
import { SUPPORTED_FEATURE_LEVEL, writeVersion } from '../storage/formats.js';
import { DurableTimers, type DurableTimer, type TimerHandler } from '../timer/durable-timers.js';
import {
  CLUSTER_PK,
  GROUP_META_SK,
  GROUP_REGISTRY_PREFIX,
  groupMemberSk,
  groupPk,
  groupRegistrySk,
} from '../storage/key-layout.js';

export interface CoordinatorDeps {
  metadata: MetadataStore;
  clock: Clock;
  topics: TopicRegistry;
  limits?: Partial<GroupLimits>;
  /** The cluster's feature level (src/storage/feature-level.ts): level 4 splits groups into member items. Absent: the newest. */
  featureLevel?: () => Promise<number> | number;
  /** The scheduler's timer slot width (maintenance option timerSlotMs): its scan reads these timers. */
  timerSlotMs?: number;
}

/**
 * The durable timer kind of a group's next deadline (a session timeout or a revocation deadline);
 * id: the group id, URI-encoded (timer ids may not contain '#').
 */
export const SESSION_TIMER_KIND = 'group-session';
interface SessionTimerPayload {
  groupId: string;
}

/** The answer to a heartbeat: who the member is, its generation and what it may consume. */
export interface HeartbeatAnswer {
  groupId: string;
  memberId: string;
  /** The member's epoch (its generation); -1 after leaving. */
  memberEpoch: number;
  groupEpoch: number;
  heartbeatIntervalMs: number;
  /** Partitions the member may consume now. */
  assignment: Assignment;
  /** Target partitions it will receive once their previous owners released them. */
  pending: Assignment;
  state: GroupStateName;
}

export interface GroupSnapshot {
  group: GroupRecord;
  version: number;
}

/** What one change decides: the answer, and the group item to write (none: nothing changed). */
interface Change<T> {
  result: T;
  next?: GroupRecord;
}

/** Removed members are reported here (e.g. so their REST consumer instances are deleted). */
export type MembersRemovedListener = (groupId: string, members: MemberRecord[]) => Promise<void> | void;

/**
 * How long a conditional write of a group item (consumer or classic) may lose races before the
 * caller is told to retry.
 */
export const MAX_ATTEMPTS = 64;

/**
 * Kafka's group coordinator over the metadata store: membership through heartbeats, server-side
 * assignment and session expiry (see group-state.ts for the protocol). Every change is one
 * conditional write of the group item, retried with the item the failed condition returned. Any
 * access first removes members whose session has expired (lazy expiry).
 *
 * Groups nobody accesses are expired by a durable timer (kind `group-session`, fired by the
 * scheduler's scan through `timerHandlers`). A write that leaves the group with members and no
 * pending timer (or only a later one) first schedules a timer for its earliest deadline, then
 * records `timerAt` in the group item, in that order, so a crash leaves at worst a spurious timer,
 * never a missing one. Heartbeats push deadlines later without touching the timer: when it fires,
 * the group is loaded, whoever is overdue is removed and the next deadline armed. So a steadily
 * heartbeating group costs about one timer write per session timeout, not one per heartbeat.
 */
export class GroupCoordinator {
  readonly limits: GroupLimits;
  readonly timers: DurableTimers;
  private readonly items: GroupItems;
  private readonly listeners = new Set<MembersRemovedListener>();
  private readonly timerListeners = new Set<(groupId: string) => Promise<number>>();

  constructor(private readonly deps: CoordinatorDeps) {
    this.limits = { ...DEFAULT_GROUP_LIMITS, ...deps.limits };
    this.timers = new DurableTimers(deps.metadata, deps.timerSlotMs === undefined ? {} : { slotMs: deps.timerSlotMs });
    this.items = new GroupItems(deps.metadata);
  }

  private async featureLevel(): Promise<number> {
    return this.deps.featureLevel ? await this.deps.featureLevel() : SUPPORTED_FEATURE_LEVEL;
  }

  onMembersRemoved(listener: MembersRemovedListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /**
   * Told each group whose session timer fires, after this coordinator settled its own item: the
   * classic coordinator settles the group's classic item (the same timers serve both protocols).
   * Answers how many members it removed.
   */
  onSessionTimer(listener: (groupId: string) => Promise<number>): void {
    this.timerListeners.add(listener);
  }

  /**
   * Joins (epoch 0), heartbeats, or leaves (epoch -1) a group; creates the group on first join.
   * A new member's id is minted once per call and each call carries a request id into the member
   * it writes: when the write applied but its answer was lost (and the SDK sent it again), the call
   * finds its own write and answers from it, instead of joining a second, ghost member.
   */
  async heartbeat(groupId: string, req: HeartbeatRequest): Promise<HeartbeatAnswer> {
    validateGroupId(groupId);
    const counts = new Map<string, number | undefined>();
    const minted = `${req.clientId || 'consumer'}-${randomUUID()}`;
    const requestId = randomUUID();
    const quick =
      (await this.memberHeartbeat(groupId, req, requestId)) ??
      (await this.summaryJoin(groupId, req, minted, requestId));
    if (quick) return quick;
    let memberId = req.memberId;
    return (
      await this.mutate(
        groupId,
        async (existing, now) => {
          if (existing?.deletingSince !== undefined) throw beingDeleted(groupId);
          if (!existing && req.memberEpoch !== 0) {
            throw new KafkaError('UNKNOWN_MEMBER_ID', `Group ${groupId} has no members; join with member_epoch 0`);
          }
          const g = existing ?? newGroup(groupId, now);
          const own = req.memberId ? g.members[req.memberId] : undefined;
          const topics = new Set(Object.values(g.members).flatMap((m) => (m === own ? [] : m.subscribedTopics)));
          for (const t of req.subscribedTopics ?? own?.subscribedTopics ?? []) topics.add(t);
          if (own && quietHeartbeat(own, req, now, this.limits)) {
            // A liveness heartbeat inside the unwritten span reads no topic: the group's stored
            // partition counts stand, and a change to them is seen by the next written heartbeat,
            // as a change to the member's liveness is (so within a third of the session timeout).
            for (const t of topics) counts.set(t, g.topicPartitions[t]);
          } else {
            await Promise.all(
              [...topics].filter((t) => !counts.has(t)).map(async (t) => counts.set(t, await this.partitionCount(t))),
            );
          }

          const before = JSON.stringify(g);
          const previousHeartbeat = own?.lastHeartbeat;
          memberId = applyHeartbeat(g, req, {
            now,
            limits: this.limits,
            partitionCounts: Object.fromEntries([...counts].filter(([, n]) => n !== undefined)) as Record<
              string,
              number
            >,
            newMemberId: () => minted,
          });
          const member = g.members[memberId];
          const answer = this.answerFor(g, memberId);
          // A heartbeat that changes nothing but the heartbeat time is not written while the stored
          // time is recent (within `unwrittenHeartbeatMs`, a third of the session timeout at most): an idle
          // member costs one write per third of its session, and frequent callers (REST consumer
          // polls) stay cheap. Session expiry allows for it (see `sessionDeadline`).
          let write = true;
          if (
            existing &&
            member &&
            previousHeartbeat !== undefined &&
            now - previousHeartbeat < unwrittenHeartbeatMs(member, this.limits)
          ) {
            const unchanged = structuredClone(g);
            unchanged.members[memberId]!.lastHeartbeat = previousHeartbeat;
            write = JSON.stringify(unchanged) !== before;
          }
          if (!write) return { result: answer };
          if (member) member.requestId = requestId;
          return { result: answer, next: g };
        },
        (found) => {
          // Our own write: the member carries this call's request id, or (a leave) is gone.
          const m = found.members[memberId];
          if (req.memberEpoch === -1) return m ? undefined : this.answerFor(found, memberId);
          return m?.requestId === requestId ? this.answerFor(found, memberId) : undefined;
        },
      )
    ).result;
  }

  /**
   * A heartbeat of an existing member of a split group that changes no one else's item
   * (`applyMemberHeartbeat`: liveness, starting a revocation, acknowledging it, taking partitions
   * released to it, moving to the assignment epoch). What it reads does not grow with the group:
   *  - its own item first: a member that holds its whole target, revokes nothing, has no change
   *    pending and whose stored heartbeat is recent is answered from that item alone (an idle
   *    member's heartbeat, two in three at the defaults);
   *  - otherwise the group item, its own item and the items of the members that held partitions of
   *    its target it lacks (`MemberEntry.holders`, usually none or one). It writes its own item
   *    (conditional: a group change pending on it meanwhile fails the write, and it decides again);
   *    a heartbeat that releases partitions writes the release as a pending change of its item and
   *    a write of the group item that decides it, after fencing the partitions' offsets, as any group
   *    change that takes partitions from a member does (offset-fence.ts).
   * Its answer's state is that of the part of the group it read (itself and those holders).
   * Undefined: anything else, which takes the whole-group path.
   */
  private async memberHeartbeat(
    groupId: string,
    req: HeartbeatRequest,
    requestId: string,
  ): Promise<HeartbeatAnswer | undefined> {
    if (!req.memberId || !Number.isInteger(req.memberEpoch) || req.memberEpoch <= 0) return undefined;
    const pk = groupPk(groupId);
    const sk = groupMemberSk(req.memberId);
    let own = await this.items.member(groupId, req.memberId);
    const idle = own && this.idleAnswer(groupId, own.value, req, this.deps.clock.now());
    if (idle) return idle;
    for (let attempt = 0; attempt < MEMBER_ATTEMPTS; attempt++) {
      if (attempt > 1) await new Promise((r) => setTimeout(r, Math.random() * Math.min(100, 2 * 2 ** attempt)));
      const meta = await this.deps.metadata.get<StoredGroup>(pk, GROUP_META_SK);
      if (!meta || !isSplit(meta.value)) return undefined;
      // A change pending on the item is resolved against the group item read before it.
      if (own?.value.p) own = await this.items.member(groupId, req.memberId);
      if (!own || pendingState(own.value, meta.value, meta.version) === 'in flight') return undefined;
      const entry = memberInForce(own.value, meta.value, meta.version);
      if (!entry) return undefined;
      const missing = !sameAssignment(minus(entry.target, entry.member.assigned), {});
      if (missing && entry.holders === undefined) return undefined;
      const entries: [string, MemberEntry][] = [[req.memberId, entry]];
      const read = new Map<string, MetaItem<MemberItem>>([[req.memberId, own]]);
      const holders = missing ? (entry.holders ?? []) : [];
      for (const [id, item] of await Promise.all(
        holders.map(async (id) => [id, await this.items.member(groupId, id)] as const),
      )) {
        if (!item) continue;
        if (pendingState(item.value, meta.value, meta.version) === 'in flight') return undefined;
        read.set(id, item);
        const e = memberInForce(item.value, meta.value, meta.version);
        if (e) entries.push([id, e]);
      }
      const before = recordOf(meta.value, entries);
      const g = structuredClone(before);
      const now = this.deps.clock.now();
      if (!applyMemberHeartbeat(g, req, now, this.limits)) return undefined;
      const m = g.members[req.memberId]!;
      const was = before.members[req.memberId]!;
      // The state of the part of the group it read: itself and the holders of what it waits for.
      const answer = { ...this.answerFor(g, req.memberId), state: groupState(g) };
      const changed = JSON.stringify(livenessFree(m)) !== JSON.stringify(livenessFree(was));
      if (!changed && !own.value.p && now - was.lastHeartbeat < unwrittenHeartbeatMs(m, this.limits)) return answer;
      // A written heartbeat also sees its topics' partition counts (a change is a new group epoch: the whole group's).
      for (const t of m.subscribedTopics) {
        if ((await this.partitionCount(t)) !== meta.value.topicPartitions[t]) return undefined;
      }
      m.requestId = requestId;
      const released = releasedPartitions(before, g);
      if (released.length === 0) {
        const next = holdersOfMissing(g, req.memberId);
        const value: MemberItem = {
          m: { member: m, target: entry.target, ...(next.length > 0 ? { holders: next } : {}) },
        };
        try {
          await this.deps.metadata.put<MemberItem>(pk, sk, value, { ifVersion: own.version });
          return answer;
        } catch (e) {
          if (!(e instanceof ConditionFailedError)) throw e;
          const found = e.current as MetaItem<MemberItem> | undefined;
          // Our own write, applied with its answer lost (a group change may have pended on it since).
          if (found?.value.m?.member.requestId === requestId) return answer;
          own = found;
          continue;
        }
      }
      await fenceOffsets(this.deps.metadata, groupId, released, meta.version + 1);
      let prepared: Awaited<ReturnType<GroupItems['prepare']>>;
      try {
        prepared = await this.items.prepare(groupId, meta, { group: before, members: read }, g, newChangeToken(), now, {
          only: new Set([req.memberId]),
        });
      } catch (e) {
        if (!(e instanceof GroupChangedError)) throw e;
        own = await this.items.member(groupId, req.memberId);
        continue;
      }
      // Not applied: the group moved on, and the release pending on our item is void.
      if (
        !(await writeIfUnchanged(this.deps.metadata, { pk, sk: GROUP_META_SK, item: meta }, { write: prepared.meta }))
      ) {
        own = await this.items.member(groupId, req.memberId);
        continue;
      }
      await this.items.fold(groupId, prepared);
      return answer;
    }
    return undefined;
  }

  /**
   * A new member's join of a group with summary items (format 3, group-summary.ts), without reading
   * the whole group: the group item, the summary (one query of a few small items: about 3 KB per
   * shard at 1,000 members, where the member items are about 600 B each), the items of the members
   * whose target the join changes (with the uniform assignor one or two) and the joiner's own. The
   * target is computed over the summary, where each member holds its target and `x`: a superset of
   * what it holds, so the joiner takes only partitions nobody may hold, and its `holders` name every
   * member it must wait for. The join is decided as any group change: the joiner's and the changed
   * members' items and the changed shards pend on the write of the group item.
   *
   * The whole-group path stays for what needs every member: a rejoin, a group whose target lags its
   * epoch, a session timer that is due or missing (it is armed from every member's deadline), a
   * change in flight on a shard, a member item that disagrees with the summary, a group at
   * group.consumer.max.size (the summary holds no liveness, and Kafka counts live members only: the
   * whole group expires the members whose session ended before it counts). Otherwise expired
   * members are not removed here (the session timer, re-armed up to a session late, removes them)
   * and may be given partitions, which they release by expiring.
   */
  private async summaryJoin(
    groupId: string,
    req: HeartbeatRequest,
    minted: string,
    requestId: string,
  ): Promise<HeartbeatAnswer | undefined> {
    if (req.memberEpoch !== 0 || req.subscribedTopics === undefined) return undefined;
    const pk = groupPk(groupId);
    for (let attempt = 0; attempt < MEMBER_ATTEMPTS; attempt++) {
      if (attempt > 1) await new Promise((r) => setTimeout(r, Math.random() * Math.min(100, 2 * 2 ** attempt)));
      const meta = await this.deps.metadata.get<StoredGroup>(pk, GROUP_META_SK);
      if (!meta || !hasSummary(meta.value)) return undefined;
      const m = meta.value;
      const now = this.deps.clock.now();
      if (m.deletingSince !== undefined || m.groupEpoch !== m.assignmentEpoch) return undefined;
      if (m.timerAt === undefined || m.timerAt <= now) return undefined;
      const summary = await loadSummary(this.deps.metadata, groupId, m, meta.version);
      if (req.memberId && summary.entries.has(req.memberId)) return undefined;
      if (summary.entries.size >= this.limits.consumerMaxSize) return undefined;
      // Another change pends on a shard: wait for its writer, or (its writer died) let the whole group void it.
      if (summary.inFlight.size > 0) {
        if ([...summary.inFlight.values()].some((at) => now - at > IN_FLIGHT_GRACE_MS)) return undefined;
        continue;
      }

      // The group as its summary has it: each member alive, holding its target and what it may still hold beyond it.
      const g = recordOf(m, []);
      for (const [id, e] of summary.entries) {
        g.members[id] = summaryMember(id, e, m.assignmentEpoch, now, this.limits);
        g.target[id] = e.t;
      }
      const before = structuredClone(g);
      const topics = new Set([...[...summary.entries.values()].flatMap((e) => e.s), ...req.subscribedTopics]);
      const counts: Record<string, number> = {};
      await Promise.all(
        [...topics].map(async (t) => {
          const n = await this.partitionCount(t);
          if (n !== undefined) counts[t] = n;
        }),
      );
      const memberId = applyHeartbeat(g, req, {
        now,
        limits: this.limits,
        partitionCounts: counts,
        newMemberId: () => minted,
      });
      const joiner = g.members[memberId]!;
      joiner.requestId = requestId;
      const changed = Object.keys(before.members).filter((id) => !sameAssignment(before.target[id]!, g.target[id]!));
      // Range or roundrobin move most members' targets: a read of each would cost more than one query of them all.
      if (changed.length > SUMMARY_JOIN_MAX_CHANGED) return undefined;
      const [own, ...read] = await Promise.all([memberId, ...changed].map((id) => this.items.member(groupId, id)));
      // The joiner's id is in use (a client-chosen id the summary does not list yet): the whole group decides.
      if (own && memberInForce(own.value, m, meta.version)) return undefined;

      const loaded: LoadedGroup = { group: { ...before, members: {}, target: {} }, members: new Map() };
      const next: GroupRecord = { ...g, members: { [memberId]: joiner }, target: { [memberId]: g.target[memberId]! } };
      if (own) loaded.members!.set(memberId, own);
      const changes = new Map<string, SummaryEntry | null>([
        [
          memberId,
          { s: joiner.subscribedTopics, ...(joiner.assignor ? { a: joiner.assignor } : {}), t: next.target[memberId]! },
        ],
      ]);
      let consistent = true;
      changed.forEach((id, i) => {
        const item = read[i];
        const state = item && pendingState(item.value, m, meta.version);
        const entry = item && state !== 'in flight' ? memberInForce(item.value, m, meta.version) : undefined;
        const e = summary.entries.get(id)!;
        if (!entry || !sameAssignment(entry.target, e.t)) {
          consistent = false;
          return;
        }
        loaded.members!.set(id, item!);
        loaded.group.members[id] = entry.member;
        loaded.group.target[id] = entry.target;
        next.members[id] = entry.member;
        next.target[id] = g.target[id]!;
        // Its item says what it holds: its `x` is exact again (what it released since is dropped).
        const x = minus(union(entry.member.assigned, entry.member.revoking), g.target[id]!);
        changes.set(id, {
          s: e.s,
          ...(e.a ? { a: e.a } : {}),
          t: g.target[id]!,
          ...(isEmptyAssignment(x) ? {} : { x }),
        });
      });
      if (!consistent) return undefined;
      // A joiner whose session ends before the group's pending timer: the timer first, then the item that names it.
      const deadline = sessionDeadline(joiner, this.limits);
      if (deadline < m.timerAt) {
        await this.armSessionTimer(groupId, deadline, now);
        next.timerAt = deadline;
      }
      let prepared: Prepared;
      try {
        prepared = await this.items.prepare(groupId, meta, loaded, next, newChangeToken(), now, {
          only: new Set([memberId, ...changed]),
          held: heldBy(g),
          summary: { loaded: summary, changes },
        });
      } catch (e) {
        if (!(e instanceof GroupChangedError)) throw e;
        if (e.inFlightOver !== undefined) await this.advancePast(groupId, e.inFlightOver);
        continue;
      }
      if (
        !(await writeIfUnchanged(this.deps.metadata, { pk, sk: GROUP_META_SK, item: meta }, { write: prepared.meta }))
      ) {
        // Another change won the group item: ours is void; take its pending writes back and decide again.
        await this.items.abandon(groupId, prepared);
        continue;
      }
      await this.items.fold(groupId, prepared);
      return this.answerFor(g, memberId);
    }
    return undefined;
  }

  /**
   * The answer to an idle member's heartbeat from its item alone, or undefined. Such a member holds
   * its whole target, so only a group change can give it something to do, and every group change
   * that concerns it (a new target, its removal) pends on its item first. A new group epoch that
   * leaves its target as it is writes nothing of it: it keeps its member epoch (still valid for its
   * commits) until its next written heartbeat, which reads the group item and moves it to the
   * assignment epoch. So its answer carries its member epoch as the group epoch, and Stable.
   */
  private idleAnswer(
    groupId: string,
    item: MemberItem,
    req: HeartbeatRequest,
    now: number,
  ): HeartbeatAnswer | undefined {
    if (item.p || !item.m) return undefined;
    const { member: m, target } = item.m;
    const idle =
      req.memberEpoch === m.memberEpoch &&
      isEmptyAssignment(m.revoking) &&
      m.revokeDeadline === undefined &&
      sameAssignment(m.assigned, target) &&
      now - m.lastHeartbeat < unwrittenHeartbeatMs(m, this.limits) &&
      (req.clientId === undefined || req.clientId === m.clientId) &&
      (req.assignor === undefined || req.assignor === m.assignor) &&
      (req.sessionTimeoutMs === undefined || req.sessionTimeoutMs === m.sessionTimeoutMs) &&
      (req.rebalanceTimeoutMs === undefined || req.rebalanceTimeoutMs === m.rebalanceTimeoutMs) &&
      (req.ownedPartitions === undefined || sameAssignment(req.ownedPartitions, m.assigned)) &&
      (req.subscribedTopics === undefined ||
        [...new Set(req.subscribedTopics)].sort().join(',') === m.subscribedTopics.join(','));
    if (!idle) return undefined;
    return {
      groupId,
      memberId: m.memberId,
      memberEpoch: m.memberEpoch,
      groupEpoch: m.memberEpoch,
      heartbeatIntervalMs: heartbeatIntervalOf(m, this.limits),
      assignment: m.assigned,
      pending: {},
      state: 'Stable',
    };
  }

  private answerFor(g: GroupRecord, memberId: string): HeartbeatAnswer {
    const member = g.members[memberId];
    return {
      groupId: g.groupId,
      memberId,
      memberEpoch: member ? member.memberEpoch : -1,
      groupEpoch: g.groupEpoch,
      heartbeatIntervalMs: member ? heartbeatIntervalOf(member, this.limits) : 0,
      assignment: member ? member.assigned : {},
      pending: member ? minus(g.target[memberId] ?? {}, member.assigned) : {},
      state: g.state,
    };
  }

  async leave(groupId: string, memberId: string): Promise<void> {
    await this.heartbeat(groupId, { memberId, memberEpoch: -1 });
  }

  /** The group after lazy expiry, with its item version; undefined when it does not exist. */
  async find(groupId: string): Promise<GroupSnapshot | undefined> {
    validateGroupId(groupId);
    const { result, item } = await this.mutate(groupId, async (g) => ({ result: g }));
    return result && item ? { group: result, version: item.version } : undefined;
  }

  /**
   * The group with one member in it (the others left out), for a check of that member's commit:
   * of a split group, the group item then the member's item, two reads however large the group
   * (the group item's version first, as the offset fence needs: offset-fence.ts). Anything less
   * plain (a format 1 group, a member gone, expired or with a change pending) is `find`'s.
   */
  async findMember(groupId: string, memberId: string): Promise<GroupSnapshot | undefined> {
    validateGroupId(groupId);
    const meta = await this.deps.metadata.get<StoredGroup>(groupPk(groupId), GROUP_META_SK);
    if (meta && isSplit(meta.value) && meta.value.deletingSince === undefined) {
      const item = await this.items.member(groupId, memberId);
      const entry = item && !item.value.p ? item.value.m : undefined;
      const now = this.deps.clock.now();
      const live =
        entry && now < sessionDeadline(entry.member, this.limits) && !(now >= (entry.member.revokeDeadline ?? now + 1));
      if (entry && live) return { group: recordOf(meta.value, [[memberId, entry]]), version: meta.version };
    }
    return this.find(groupId);
  }

  /** Like `find`, but a missing group is GROUP_ID_NOT_FOUND. */
  async get(groupId: string): Promise<GroupRecord> {
    const snap = await this.find(groupId);
    if (!snap || snap.group.deletingSince !== undefined) {
      throw new KafkaError('GROUP_ID_NOT_FOUND', `Group ${groupId} does not exist`);
    }
    return snap.group;
  }

  /** Creates an empty group (as an offset commit to an unknown group does in Kafka); no-op if it exists. */
  async ensureExists(groupId: string): Promise<GroupRecord> {
    validateGroupId(groupId);
    return (
      await this.mutate(groupId, async (g, now) => {
        if (g?.deletingSince !== undefined) throw beingDeleted(groupId);
        if (g) return { result: g };
        const created = newGroup(groupId, now);
        return { result: created, next: created };
      })
    ).result;
  }

  /** All groups, from the registry (one query) and each group's item. */
  async list(): Promise<GroupRecord[]> {
    const entries = await this.deps.metadata.query(CLUSTER_PK, { beginsWith: GROUP_REGISTRY_PREFIX });
    const groups = await Promise.all(entries.map((e) => this.find(e.sk.slice(GROUP_REGISTRY_PREFIX.length))));
    return groups.filter((s): s is GroupSnapshot => s !== undefined).map((s) => s.group);
  }

  /**
   * Marks an Empty group Dead (one conditional write), then the caller removes its other items and
   * calls `finishDelete`. Kafka's DeleteGroups: only an Empty group can be deleted (NON_EMPTY_GROUP).
   */
  async beginDelete(groupId: string): Promise<{ registryVersion?: number }> {
    validateGroupId(groupId);
    const registry = await this.deps.metadata.get(CLUSTER_PK, groupRegistrySk(groupId));
    await this.mutate(groupId, async (g, now) => {
      if (!g) throw new KafkaError('GROUP_ID_NOT_FOUND', `Group ${groupId} does not exist`);
      if (g.deletingSince !== undefined) return { result: undefined };
      if (Object.keys(g.members).length > 0) {
        throw new KafkaError(
          'NON_EMPTY_GROUP',
          `Group ${groupId} is not empty (state ${groupState(g)}); only an Empty group can be deleted`,
        );
      }
      g.deletingSince = now;
      return { result: undefined, next: g };
    });
    return registry ? { registryVersion: registry.version } : {};
  }

  async finishDelete(groupId: string, registryVersion?: number): Promise<void> {
    const item = await this.deps.metadata.get<StoredGroup>(groupPk(groupId), GROUP_META_SK);
    if (item?.value.deletingSince !== undefined) {
      // Member items left by changes that never applied (a Dead group has no members in force).
      await this.items.deleteMembers(groupId);
      await this.deps.metadata.delete(groupPk(groupId), GROUP_META_SK, { ifVersion: item.version });
    }
    if (registryVersion !== undefined) {
      // A group re-created meanwhile rewrote its registry item (new version): leave that one.
      await this.deps.metadata
        .delete(CLUSTER_PK, groupRegistrySk(groupId), { ifVersion: registryVersion })
        .catch((e: unknown) => {
          if (!(e instanceof ConditionFailedError)) throw e;
        });
    }
  }

  /**
   * The handler of the session timers, for the scheduler's scan of every durable timer kind: loads
   * the group, which removes the members whose session (or revocation deadline) expired and arms the
   * group's next timer. Safe to run concurrently and repeatedly: every change is a conditional write.
   * It counts `membersExpired`.
   */
  timerHandlers(): Record<string, TimerHandler> {
    return {
      [SESSION_TIMER_KIND]: async (timer, count) => {
        const { groupId } = timer.payload as SessionTimerPayload;
        count('membersExpired', (await this.mutate(groupId, async () => ({ result: undefined }))).removed.length);
        for (const l of this.timerListeners) count('membersExpired', await l(groupId));
      },
    };
  }

  /**
   * Fires the session timers due at `now` at once, for a process or a test without the scheduler.
   * It leaves the timer checkpoint alone: that belongs to the scheduler's scan of every kind.
   */
  async expireSessions(
    now: number = this.deps.clock.now(),
  ): Promise<{ timersFired: number; groupsChecked: number; membersExpired: number }> {
    const groups = new Set<string>();
    const handler = this.timerHandlers()[SESSION_TIMER_KIND]!;
    const report = await this.timers.fireDue(
      now,
      {
        [SESSION_TIMER_KIND]: async (timer, count) => {
          groups.add((timer.payload as SessionTimerPayload).groupId);
          await handler(timer, count);
        },
      },
      { checkpoint: false },
    );
    if (report.errors.length > 0)
      throw new AggregateError(report.errors, `${report.errors.length} groups failed their session expiry`);
    return { timersFired: report.fired, groupsChecked: groups.size, membersExpired: report.counts.membersExpired ?? 0 };
  }

  private async partitionCount(topic: string): Promise<number | undefined> {
    try {
      return (await this.deps.topics.get(topic)).partitionCount;
    } catch (e) {
      if (isKafkaError(e, 'UNKNOWN_TOPIC_OR_PARTITION')) return undefined;
      throw e;
    }
  }

  /**
   * The read-modify-write every change goes through (one `optimisticUpdate` of the group item).
   * `change` sees a copy of the group after lazy expiry (or undefined) and returns the group to
   * write, if any (usually that copy, mutated). The item is also written when expiry removed someone
   * or the session timer must be re-armed. Before a write that takes partitions away from a member,
   * their offset items are fenced (offset-fence.ts), so that member's commits in flight cannot land.
   * `recognise` tells, after a failed condition, whether the item found already holds this change.
   */
  private async mutate<T>(
    groupId: string,
    change: (g: GroupRecord | undefined, now: number) => Promise<Change<T>>,
    recognise?: (found: GroupRecord) => T | undefined,
  ): Promise<{ result: T; removed: MemberRecord[]; item: MetaItem<StoredGroup> | undefined }> {
    for (let round = 0; ; round++) {
      try {
        return await this.mutateOnce(groupId, change, recognise);
      } catch (e) {
        // A member item changed under a split write in a way it cannot merge: decide again.
        if (!(e instanceof GroupChangedError)) throw e;
        if (round >= MAX_ATTEMPTS) throw new KafkaError('COORDINATOR_NOT_AVAILABLE', tooManyChanges(groupId).message);
        await new Promise((r) => setTimeout(r, Math.random() * Math.min(100, 2 * 2 ** round)));
        // Another change has pended over the same group item version for long: its writer died
        // between its member items and the group item. Writing the group item unchanged voids it.
        if (e.inFlightOver !== undefined) await this.advancePast(groupId, e.inFlightOver);
      }
    }
  }

  private async mutateOnce<T>(
    groupId: string,
    change: (g: GroupRecord | undefined, now: number) => Promise<Change<T>>,
    recognise?: (found: GroupRecord) => T | undefined,
  ): Promise<{ result: T; removed: MemberRecord[]; item: MetaItem<StoredGroup> | undefined }> {
    const pk = groupPk(groupId);
    let removed: MemberRecord[] = [];
    let prepared: Pick<Prepared, 'written' | 'shards'> = { written: [], shards: [] };
    let loaded: LoadedGroup | undefined;
    const outcome = await optimisticUpdate<StoredGroup, T>({
      metadata: this.deps.metadata,
      pk,
      sk: GROUP_META_SK,
      attempts: MAX_ATTEMPTS,
      giveUp: tooManyChanges(groupId),
      decide: async (item) => {
        const now = this.deps.clock.now();
        loaded = item ? await this.items.load(groupId, item) : undefined;
        const g = loaded ? structuredClone(loaded.group) : undefined;
        removed = g && g.deletingSince === undefined ? expireMembers(g, now, this.limits) : [];
        // An item whose target lags its group epoch (as a leave wrote before it settled) is settled
        // and written back on any access, so no reader ever sees it Stable against a stale target.
        const unsettled = g !== undefined && g.deletingSince === undefined && g.groupEpoch > g.assignmentEpoch;
        if (g && (removed.length > 0 || unsettled)) settle(g);
        const timerDue = g?.timerAt !== undefined && g.timerAt <= now;
        const { result, next } = await change(g, now);
        const target = next ?? (removed.length > 0 || unsettled || timerDue ? g : undefined);
        if (!target) return { done: result };
        // Every write leaves the target assignment at the group epoch (settle is idempotent).
        if (target.deletingSince === undefined) settle(target);
        target.state = groupState(target);
        // A due timer on a group with everyone alive (whether the scheduler fired it or a request
        // came first) is re-armed a session timeout past the earliest deadline: live members'
        // deadlines keep moving, so a timer at the deadline itself would fire (and write three
        // items) on every scheduler tick for as long as the group lives. Only a group nobody
        // accesses is swept up to that much later; any access expires its members on time (lazily,
        // above).
        await this.armTimer(groupId, target, now, timerDue && removed.length === 0);
        await fenceOffsets(
          this.deps.metadata,
          groupId,
          releasedPartitions(loaded?.group, target),
          (item?.version ?? 0) + 1,
        );
        if (!item)
          await this.deps.metadata.put(CLUSTER_PK, groupRegistrySk(groupId), { groupId, createdAt: target.createdAt });
        // Split (format 2) once the feature level allows it; a split group stays split. With summary
        // items (format 3, from level 7) likewise; a group gets them at its first change there.
        const level = await this.featureLevel();
        const split = (item && isSplit(item.value)) || writeVersion('group', level) >= 2;
        if (!split) {
          prepared = { written: [], shards: [] };
          return { write: target, answer: () => result };
        }
        const withSummary = (item && hasSummary(item.value)) || writeVersion('group', level) >= 3;
        let summary: SummaryUpdate | undefined;
        if (withSummary) {
          // A group getting its summary: any shard items left (none, unless a delete was cut short) are overwritten.
          const shards = loaded?.summary ?? (await loadSummary(this.deps.metadata, groupId, {}, item?.version ?? 0));
          summary = { loaded: shards, changes: summaryChanges(shards.entries, summaryOf(target)) };
        }
        const p = await this.items.prepare(groupId, item, loaded, target, newChangeToken(), now, {
          ...(summary ? { summary } : {}),
        });
        prepared = p;
        return { write: p.meta, answer: () => result };
      },
      recognise: async (found) =>
        found && recognise ? recognise((await this.items.load(groupId, found)).group) : undefined,
    });
    if (outcome.how === 'unchanged') return { result: outcome.result, removed: [], item: outcome.item };
    await this.items.fold(groupId, prepared);
    if (removed.length > 0) await this.notifyRemoved(groupId, removed);
    return { result: outcome.result, removed, item: outcome.item };
  }

  /**
   * Writes the group item unchanged if it is still at `version`: moves the group past an offset
   * fence whose own group write never landed (see offset-fence.ts).
   */
  async advancePast(groupId: string, version: number): Promise<void> {
    await optimisticUpdate<StoredGroup, undefined>({
      metadata: this.deps.metadata,
      pk: groupPk(groupId),
      sk: GROUP_META_SK,
      giveUp: tooManyChanges(groupId),
      decide: (item) =>
        item && item.version === version ? { write: item.value, answer: () => undefined } : { done: undefined },
    });
  }

  /**
   * Keeps a timer item pending at most one session timeout (the members' shortest) after the
   * group's earliest deadline: a pending one within that stands; otherwise one is put at the
   * earliest deadline (with `later`, a session timeout after it).
   */
  /** Schedules the group's session timer (kind `group-session`) at `at`; the classic coordinator's too. */
  async armSessionTimer(groupId: string, at: number, now: number = this.deps.clock.now()): Promise<void> {
    const timer: DurableTimer<SessionTimerPayload> = {
      kind: SESSION_TIMER_KIND,
      id: encodeURIComponent(groupId),
      expiry: at,
      payload: { groupId },
    };
    await this.timers.schedule(timer, now);
  }

  private async armTimer(groupId: string, g: GroupRecord, now: number, later = false): Promise<void> {
    if (g.timerAt !== undefined && g.timerAt <= now) delete g.timerAt;
    const earliest = nextDeadline(g, this.limits);
    if (earliest === undefined) return;
    const slack = Math.min(...Object.values(g.members).map((m) => m.sessionTimeoutMs));
    if (g.timerAt !== undefined && g.timerAt <= earliest + slack) return;
    const at = later ? earliest + slack : earliest;
    await this.armSessionTimer(groupId, at, now);
    g.timerAt = at;
  }

  private async notifyRemoved(groupId: string, removed: MemberRecord[]): Promise<void> {
    for (const l of this.listeners) {
      try {
        await l(groupId, removed);
      } catch {
        // Best effort: whatever a listener cleans up is also found stale lazily.
      }
    }
  }
}

/**
 * A heartbeat that can only confirm liveness, and will not be written: an existing member at its
 * epoch, subscriptions and assignor as stored, and its stored heartbeat within the unwritten span.
 */
function quietHeartbeat(m: MemberRecord, req: HeartbeatRequest, now: number, limits: GroupLimits): boolean {
  if (req.memberEpoch !== m.memberEpoch || now - m.lastHeartbeat >= unwrittenHeartbeatMs(m, limits)) return false;
  if (req.assignor !== undefined && req.assignor !== m.assignor) return false;
  if (req.sessionTimeoutMs !== undefined && req.sessionTimeoutMs !== m.sessionTimeoutMs) return false;
  if (req.subscribedTopics === undefined) return true;
  return [...new Set(req.subscribedTopics)].sort().join(',') === m.subscribedTopics.join(',');
}

/**
 * The most members whose target a join over the summary reads and rewrites one by one; past it
 * the join takes the whole-group path, whose one query reads every member item for less than that
 * many reads (each a read unit at least).
 */
const SUMMARY_JOIN_MAX_CHANGED = 16;

/**
 * A member as a group's summary has it (group-summary.ts): alive, holding its target and whatever
 * it may still hold beyond it (a superset of what it holds). Only the assignor and the joiner's
 * reconciliation read it; it is never written.
 */
function summaryMember(
  memberId: string,
  e: SummaryEntry,
  epoch: number,
  now: number,
  limits: GroupLimits,
): MemberRecord {
  return {
    memberId,
    clientId: '',
    memberEpoch: epoch,
    previousMemberEpoch: -1,
    subscribedTopics: e.s,
    ...(e.a ? { assignor: e.a } : {}),
    sessionTimeoutMs: limits.defaultSessionTimeoutMs,
    rebalanceTimeoutMs: limits.defaultRebalanceTimeoutMs,
    lastHeartbeat: now,
    joinedAt: now,
    assigned: union(e.t, e.x ?? {}),
    revoking: {},
  };
}

/** A member's own heartbeat lost this many races (to group changes pending on its item) before it reads the whole group. */
const MEMBER_ATTEMPTS = 8;

/** A member without what its own heartbeats change alone (liveness and the request id that recognises them). */
const livenessFree = ({ lastHeartbeat: _l, requestId: _r, ...rest }: MemberRecord) => rest;

const tooManyChanges = (groupId: string) => ({
  errorName: 'COORDINATOR_NOT_AVAILABLE' as const,
  message: `Too many concurrent changes to group ${groupId}; retry`,
});

const beingDeleted = (groupId: string) =>
  new KafkaError('COORDINATOR_NOT_AVAILABLE', `Group ${groupId} is being deleted; retry once the deletion completed`);
