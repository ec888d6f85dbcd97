import { randomUUID } from 'node:crypto';
import type { Clock } from '../clock.js';
import { KafkaError, isKafkaError } from '../wire/errors.js';
import type { TopicRegistry } from '../topics/topics.js';
import { optimisticUpdate } from '../storage/optimistic-update.js';
import { ConditionFailedError, type MetadataStore, type MetaItem } from '../storage/ports.js';
import { minus, type Assignment } from './assignment.js';
import { validateGroupId } from './group-id.js';
import {
  applyHeartbeat,
  DEFAULT_GROUP_LIMITS,
  expireMembers,
  groupState,
  heartbeatIntervalOf,
  newGroup,
  nextDeadline,
  releasedPartitions,
  settle,
  type GroupLimits,
  type GroupRecord,
  type GroupStateName,
  type HeartbeatRequest,
  type MemberRecord,
} from './group-state.js';
import { fenceOffsets } from './offset-fence.js';
import { DurableTimers, type DurableTimer, type TimerHandler } from '../timer/durable-timers.js';
import { CLUSTER_PK, GROUP_META_SK, GROUP_REGISTRY_PREFIX, groupPk, groupRegistrySk } from '../storage/key-layout.js';

export interface CoordinatorDeps {
  metadata: MetadataStore;
  clock: Clock;
  topics: TopicRegistry;
  limits?: Partial<GroupLimits>;
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

/** How long a conditional write may lose races before the caller is told to retry. */
const MAX_ATTEMPTS = 64;

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
  private readonly listeners = new Set<MembersRemovedListener>();

  constructor(private readonly deps: CoordinatorDeps) {
    this.limits = { ...DEFAULT_GROUP_LIMITS, ...deps.limits };
    this.timers = new DurableTimers(deps.metadata);
  }

  onMembersRemoved(listener: MembersRemovedListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
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
          await Promise.all(
            [...topics].filter((t) => !counts.has(t)).map(async (t) => counts.set(t, await this.partitionCount(t))),
          );

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
          // A heartbeat that changes nothing but the heartbeat time is not written while that time is
          // recent (within half a heartbeat interval): frequent callers (REST consumer polls) stay cheap.
          // Session expiry allows for it (see `sessionDeadline`).
          let write = true;
          if (
            existing &&
            member &&
            previousHeartbeat !== undefined &&
            now - previousHeartbeat < answer.heartbeatIntervalMs / 2
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
    const item = await this.deps.metadata.get<GroupRecord>(groupPk(groupId), GROUP_META_SK);
    if (item?.value.deletingSince !== undefined)
      await this.deps.metadata.delete(groupPk(groupId), GROUP_META_SK, { ifVersion: item.version });
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
  ): Promise<{ result: T; removed: MemberRecord[]; item: MetaItem<GroupRecord> | undefined }> {
    const pk = groupPk(groupId);
    let removed: MemberRecord[] = [];
    const outcome = await optimisticUpdate<GroupRecord, T>({
      metadata: this.deps.metadata,
      pk,
      sk: GROUP_META_SK,
      attempts: MAX_ATTEMPTS,
      giveUp: {
        errorName: 'COORDINATOR_NOT_AVAILABLE',
        message: `Too many concurrent changes to group ${groupId}; retry`,
      },
      decide: async (item) => {
        const now = this.deps.clock.now();
        const g = item ? structuredClone(item.value) : undefined;
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
        await this.armTimer(groupId, target, now);
        await fenceOffsets(
          this.deps.metadata,
          groupId,
          releasedPartitions(item?.value, target),
          (item?.version ?? 0) + 1,
        );
        if (!item)
          await this.deps.metadata.put(CLUSTER_PK, groupRegistrySk(groupId), { groupId, createdAt: target.createdAt });
        return { write: target, answer: () => result };
      },
      recognise: (found) => (found && recognise ? recognise(found.value) : undefined),
    });
    if (outcome.how === 'unchanged') return { result: outcome.result, removed: [], item: outcome.item };
    if (removed.length > 0) await this.notifyRemoved(groupId, removed);
    return { result: outcome.result, removed, item: outcome.item };
  }

  /**
   * Writes the group item unchanged if it is still at `version`: moves the group past an offset
   * fence whose own group write never landed (see offset-fence.ts).
   */
  async advancePast(groupId: string, version: number): Promise<void> {
    await optimisticUpdate<GroupRecord, undefined>({
      metadata: this.deps.metadata,
      pk: groupPk(groupId),
      sk: GROUP_META_SK,
      giveUp: {
        errorName: 'COORDINATOR_NOT_AVAILABLE',
        message: `Too many concurrent changes to group ${groupId}; retry`,
      },
      decide: (item) =>
        item && item.version === version ? { write: item.value, answer: () => undefined } : { done: undefined },
    });
  }

  /** Puts a timer item for the group's earliest deadline unless an earlier, still pending one exists. */
  private async armTimer(groupId: string, g: GroupRecord, now: number): Promise<void> {
    if (g.timerAt !== undefined && g.timerAt <= now) delete g.timerAt;
    const deadline = nextDeadline(g, this.limits);
    if (deadline === undefined || (g.timerAt !== undefined && g.timerAt <= deadline)) return;
    const timer: DurableTimer<SessionTimerPayload> = {
      kind: SESSION_TIMER_KIND,
      id: encodeURIComponent(groupId),
      expiry: deadline,
      payload: { groupId },
    };
    await this.timers.schedule(timer, now);
    g.timerAt = deadline;
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

const beingDeleted = (groupId: string) =>
  new KafkaError('COORDINATOR_NOT_AVAILABLE', `Group ${groupId} is being deleted; retry once the deletion completed`);
