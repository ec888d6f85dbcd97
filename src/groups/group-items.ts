import { randomBytes } from 'node:crypto';
import { ITEM_FORMAT_FIELD, itemFormatVersion } from '../storage/formats.js';
import { ConditionFailedError, type MetadataStore, type MetaItem } from '../storage/ports.js';
import {
  GROUP_MEMBER_PREFIX,
  GROUP_META_SK,
  GROUP_SUMMARY_PREFIX,
  groupMemberSk,
  groupPk,
} from '../storage/key-layout.js';
import type { Assignment } from './assignment.js';
import { groupState, heldBy, holdersOfMissing, type GroupRecord, type MemberRecord } from './group-state.js';
import {
  foldShards,
  KEPT_SUMMARY_COMMITS,
  loadSummary,
  SummaryChangedError,
  withdrawShards,
  writeSummaryPending,
  type LoadedSummary,
  type SummaryEntry,
  type WrittenShard,
} from './group-summary.js';

/**
 * A KIP-848 group in items of its own (group format 2, written from feature level 4): the group
 * item (sk `meta`) holds the epochs, the state, the assignor and the subscribed topics' partition
 * counts, and each member is an item `mbr#{memberId}` with its target assignment. So the group
 * item stays the same size however many members there are, and a member's heartbeat reads and
 * writes its own item (coordinator.ts). Format 1 (v0.1.0) is the whole group in the one item; it
 * is read as it is and written split at the next change once the level allows.
 *
 * A change that touches several items (a join recomputes other members' targets, an expiry
 * removes members) is still one conditional write of the group item, which decides it: each
 * changed member item first gets the change as *pending* (`p`: a token, the group item version it
 * was decided on, the new member or null for a removal), then the group item is written over that
 * version with the token in `commits`. A pending change is in force once the group item lists its
 * token, and void when the group item moved past its version without listing it (its writer lost
 * the race or died); until then it is in flight. The writer then folds its pendings in (best
 * effort); any later writer folds or clears whatever it finds left. Every reader resolves a member
 * item against the group item it read, so no reader sees half a change.
 */
export interface GroupMeta extends Omit<GroupRecord, 'members' | 'target'> {
  /** 3: the group also keeps summary items (group-summary.ts), and `sc`. */
  fv: 2 | 3;
  /** The tokens of the last changes written (newest last): their pending member changes are in force. */
  commits: string[];
  /** Format 3: the tokens of the last changes that wrote summary items: their pending shard changes are in force. */
  sc?: string[];
}

/** A member with its target assignment at the group's assignment epoch. */
export interface MemberEntry {
  member: MemberRecord;
  target: Assignment;
  /**
   * The members that held a partition of `target` this member did not hold yet when the entry was
   * last written (`holdersOfMissing`): the only items its heartbeats read before taking those
   * partitions (coordinator.ts). A superset of the holders until the target changes. Absent
   * (nothing missing, or written by a release before it, which drops it): a heartbeat that would
   * take a partition reads the whole group.
   */
  holders?: string[];
}

export interface MemberItem {
  /** The member as in force (absent: created by a pending change). */
  m?: MemberEntry;
  /** A change decided by the group item write with token `t` over version `base`; null: the member is removed. */
  p?: { t: string; base: number; v: MemberEntry | null; at: number };
}

/**
 * How long a change may pend in flight before another writer voids it (by writing the group item
 * unchanged): far longer than a writer takes between its member items and the group item, so only
 * a writer that died there is voided.
 */
export const IN_FLIGHT_GRACE_MS = 5_000;

/** The group item as stored: format 1 (the whole group) or 2 (without its members). */
export type StoredGroup = GroupRecord | GroupMeta;

/**
 * How many change tokens the group item keeps. A change's writer folds its pending member changes
 * right after its group write, and a member folds its own at its next written heartbeat (within a
 * heartbeat interval while it lives: coordinator.ts); the window only has to outlast a writer that
 * died between the two while others (joins, releases) write the group item. 16 tokens are about
 * 230 bytes of the group item.
 */
const KEPT_COMMITS = 16;

export const isSplit = (value: StoredGroup): value is GroupMeta => itemFormatVersion(value) >= 2;
/** A group with summary items (format 3): joins read those instead of the whole group. */
export const hasSummary = (value: StoredGroup): value is GroupMeta => itemFormatVersion(value) >= 3;

export type PendingState = 'none' | 'in force' | 'in flight' | 'void';

/** Where a member item's pending change stands against the group item read at `metaVersion`. */
export function pendingState(item: MemberItem, meta: GroupMeta, metaVersion: number): PendingState {
  if (!item.p) return 'none';
  if (meta.commits.includes(item.p.t)) return 'in force';
  return item.p.base === metaVersion ? 'in flight' : 'void';
}

/** The member an item holds as of the group item read: undefined when it is not (or no longer) a member. */
export function memberInForce(item: MemberItem, meta: GroupMeta, metaVersion: number): MemberEntry | undefined {
  return pendingState(item, meta, metaVersion) === 'in force' ? (item.p!.v ?? undefined) : item.m;
}

/** A group as loaded: the record, and (format 2) its member items as read. */
export interface LoadedGroup {
  group: GroupRecord;
  members?: Map<string, MetaItem<MemberItem>>;
  /** Format 3: the summary items as read. */
  summary?: LoadedSummary;
}

/** A change to the summary items that goes with a group change (group-summary.ts). */
export interface SummaryUpdate {
  loaded: LoadedSummary;
  changes: Map<string, SummaryEntry | null>;
}

/** The pending writes of one change, folded once its group write applied (or withdrawn). */
export interface Prepared {
  meta: GroupMeta;
  written: Written[];
  shards: WrittenShard[];
}

export class GroupItems {
  constructor(private readonly metadata: MetadataStore) {}

  /** The whole group from its group item as read: format 1 as it is, format 2 with a query of its members. */
  async load(groupId: string, item: MetaItem<StoredGroup>): Promise<LoadedGroup> {
    if (!isSplit(item.value)) return { group: item.value };
    const meta = item.value;
    const [members, summary] = await Promise.all([
      this.query(groupId),
      hasSummary(meta) ? loadSummary(this.metadata, groupId, meta, item.version) : undefined,
    ]);
    const group = recordOf(meta, []);
    for (const [id, i] of members) {
      const entry = memberInForce(i.value, meta, item.version);
      if (!entry) continue;
      group.members[id] = entry.member;
      group.target[id] = entry.target;
    }
    group.state = groupState(group);
    return { group, members, ...(summary ? { summary } : {}) };
  }

  /** The group as stored, without expiry or any write (what a reader of the items sees); undefined: none. */
  async stored(groupId: string): Promise<GroupRecord | undefined> {
    const item = await this.metadata.get<StoredGroup>(groupPk(groupId), GROUP_META_SK);
    return item && (await this.load(groupId, item)).group;
  }

  private async query(groupId: string): Promise<Map<string, MetaItem<MemberItem>>> {
    const items = await this.metadata.query<MemberItem>(groupPk(groupId), { beginsWith: GROUP_MEMBER_PREFIX });
    return new Map(items.map((i) => [i.sk.slice(GROUP_MEMBER_PREFIX.length), i]));
  }

  /** One member item; undefined when absent. */
  member(groupId: string, memberId: string): Promise<MetaItem<MemberItem> | undefined> {
    return this.metadata.get<MemberItem>(groupPk(groupId), groupMemberSk(memberId));
  }

  /**
   * Writes the changes from `loaded` (read with the group item at `base`; none: the group is new)
   * to `next` as pending changes of the member items, and answers the group item to write over
   * `base` with `token`. Member items a concurrent heartbeat rewrote (its liveness only) are merged;
   * any other change to them under us is a `GroupChangedError` (the caller decides again).
   * `only`: `loaded` and `next` hold part of the group (a member and the holders of its missing
   * partitions, or a joiner and the members whose targets it changes), and only the members named
   * may change; `held` then says who may hold each partition (the members' `holders` lists are
   * computed from it). `summary`: the change to the summary items (format 3), written pending
   * with the same token; absent, they stay as they are (a member's own heartbeat).
   */
  async prepare(
    groupId: string,
    base: MetaItem<StoredGroup> | undefined,
    loaded: LoadedGroup | undefined,
    next: GroupRecord,
    token: string,
    now: number,
    options: { only?: ReadonlySet<string>; held?: Map<string, string[]>; summary?: SummaryUpdate } = {},
  ): Promise<Prepared> {
    const { only, summary } = options;
    const baseVersion = base?.version ?? 0;
    const meta = base && isSplit(base.value) ? base.value : undefined;
    // A format 1 group item being split: member items left from before (a process that wrote format
    // 1 over a split group, its feature level not yet refreshed) are not members; they are replaced.
    const items = base && !meta ? await this.query(groupId) : loaded?.members;
    const ids = new Set([...Object.keys(loaded?.group.members ?? {}), ...Object.keys(next.members)]);
    for (const id of items?.keys() ?? []) ids.add(id);
    if (only) for (const id of ids) if (!only.has(id)) ids.delete(id);
    let held = options.held;
    const outcomes = await Promise.allSettled(
      [...ids].map(async (id): Promise<Written | undefined> => {
        const found = items?.get(id);
        const before = loaded?.group.members[id];
        const m = next.members[id];
        held ??= heldBy(next);
        const holders = m ? holdersOfMissing(next, id, held) : [];
        const entry: MemberEntry | null = m
          ? { member: m, target: next.target[id] ?? {}, ...(holders.length > 0 ? { holders } : {}) }
          : null;
        const state = found && meta ? pendingState(found.value, meta, baseVersion) : 'none';
        if (state === 'in flight')
          throw new GroupChangedError(groupId, now - found!.value.p!.at > IN_FLIGHT_GRACE_MS ? baseVersion : undefined);
        // What a reader of the group item written would see of the member, were its item left alone.
        const standing = found
          ? ((meta ? memberInForce(found.value, meta, baseVersion) : found.value.m) ?? null)
          : null;
        const clean = state === 'none' && found?.value.m !== undefined;
        if (sameEntry(entry, standing) && (clean || !found)) return undefined;
        return this.writePending(groupId, id, found, { t: token, base: baseVersion, at: now }, meta, entry, before);
      }),
    );
    const written = outcomes.flatMap((o) => (o.status === 'fulfilled' && o.value ? [o.value] : []));
    const failed = outcomes.find((o): o is PromiseRejectedResult => o.status === 'rejected');
    if (failed) {
      // Take back what this change pended before it decides again: two changes that each pended on
      // an item the other needs would otherwise both wait out the in-flight grace.
      await this.withdraw(groupId, written);
      throw failed.reason;
    }
    let shards: WrittenShard[] = [];
    if (summary) {
      try {
        shards = await writeSummaryPending(
          this.metadata,
          groupId,
          summary.loaded,
          summary.changes,
          { t: token, base: baseVersion, at: now },
          meta ?? {},
        );
      } catch (e) {
        await this.withdraw(groupId, written);
        if (!(e instanceof SummaryChangedError)) throw e;
        const stale = e.inFlightSince !== undefined && now - e.inFlightSince > IN_FLIGHT_GRACE_MS;
        throw new GroupChangedError(groupId, stale ? baseVersion : undefined);
      }
    }
    const { members: _members, target: _target, ...rest } = next;
    const commits = [...(meta?.commits ?? []), token].slice(-KEPT_COMMITS);
    const withSummary = summary !== undefined || (base !== undefined && hasSummary(base.value));
    const sc = summary ? [...(meta?.sc ?? []), token].slice(-KEPT_SUMMARY_COMMITS) : meta?.sc;
    return {
      meta: {
        ...rest,
        [ITEM_FORMAT_FIELD]: withSummary ? 3 : 2,
        commits,
        ...(withSummary && sc ? { sc } : {}),
      } as GroupMeta,
      written,
      shards,
    };
  }

  /** A prepared change that will not be decided (its group write lost): takes its pending writes back. */
  async abandon(groupId: string, prepared: Prepared): Promise<void> {
    await Promise.all([
      this.withdraw(groupId, prepared.written),
      withdrawShards(this.metadata, groupId, prepared.shards),
    ]);
  }

  private async writePending(
    groupId: string,
    memberId: string,
    found: MetaItem<MemberItem> | undefined,
    change: { t: string; base: number; at: number },
    meta: GroupMeta | undefined,
    entry: MemberEntry | null,
    before: MemberRecord | undefined,
  ): Promise<Written> {
    const pk = groupPk(groupId);
    const sk = groupMemberSk(memberId);
    let item = found;
    for (let attempt = 0; ; attempt++) {
      const inForce = item && meta ? memberInForce(item.value, meta, change.base) : item?.value.m;
      const value: MemberItem = { ...(inForce ? { m: inForce } : {}), p: { ...change, v: entry } };
      try {
        const w = await this.metadata.put<MemberItem>(
          pk,
          sk,
          value,
          item ? { ifVersion: item.version } : { ifAbsent: true },
        );
        return { sk, version: w.version, entry, ...(inForce ? { standing: inForce } : {}) };
      } catch (e) {
        if (!(e instanceof ConditionFailedError)) throw e;
        const current = e.current as MetaItem<MemberItem> | undefined;
        // Our own write, applied with its answer lost.
        if (current?.value.p?.t === change.t)
          return { sk, version: current.version, entry, ...(current.value.m ? { standing: current.value.m } : {}) };
        // A heartbeat of the member rewrote its liveness only: keep its time, write again.
        const now = current?.value.m;
        if (!current || current.value.p || !now || !entry || !before || attempt > 8)
          throw new GroupChangedError(groupId);
        if (JSON.stringify(livenessFree(now.member)) !== JSON.stringify(livenessFree(before)))
          throw new GroupChangedError(groupId);
        entry = {
          ...entry,
          member: { ...entry.member, lastHeartbeat: Math.max(entry.member.lastHeartbeat, now.member.lastHeartbeat) },
        };
        item = current;
      }
    }
  }

  /** Clears pending changes this writer wrote and will not decide (conditional: best effort). */
  private async withdraw(groupId: string, written: Written[]): Promise<void> {
    const pk = groupPk(groupId);
    await Promise.all(
      written.map(({ sk, version, standing }) =>
        (standing
          ? this.metadata.put<MemberItem>(pk, sk, { m: standing }, { ifVersion: version })
          : this.metadata.delete(pk, sk, { ifVersion: version })
        ).catch(ignoreRace),
      ),
    );
  }

  /** After the group item write applied: folds the pending changes in (best effort; later writers fold what is left). */
  async fold(groupId: string, prepared: Pick<Prepared, 'written' | 'shards'>): Promise<void> {
    const pk = groupPk(groupId);
    const { written } = prepared;
    await foldShards(this.metadata, groupId, prepared.shards);
    await Promise.all(
      written.map(async ({ sk, version, entry }) => {
        try {
          if (entry) await this.metadata.put<MemberItem>(pk, sk, { m: entry }, { ifVersion: version });
          else await this.metadata.delete(pk, sk, { ifVersion: version });
        } catch (e) {
          if (!(e instanceof ConditionFailedError)) throw e;
        }
      }),
    );
  }

  /** Deletes every member item and summary item (the group is being deleted: it has no members in force). */
  async deleteMembers(groupId: string): Promise<void> {
    const pk = groupPk(groupId);
    const items = (
      await Promise.all(
        [GROUP_MEMBER_PREFIX, GROUP_SUMMARY_PREFIX].map((beginsWith) => this.metadata.query(pk, { beginsWith })),
      )
    ).flat();
    await Promise.all(items.map((i) => this.metadata.delete(pk, i.sk, { ifVersion: i.version }).catch(ignoreRace)));
  }
}

/** A pending member change written: where, at which version, and what it holds. */
export interface Written {
  sk: string;
  version: number;
  entry: MemberEntry | null;
  /** The member in force it kept beside the pending change (none: the change creates it). */
  standing?: MemberEntry;
}

/** A member item changed under a group change in a way it cannot merge: decide again from a fresh read. */
export class GroupChangedError extends Error {
  constructor(
    readonly groupId: string,
    /** Set when another change has pended over this group item version for longer than `IN_FLIGHT_GRACE_MS`: its writer died. */
    readonly inFlightOver?: number,
  ) {
    super(`group ${groupId} changed during the write`);
    this.name = 'GroupChangedError';
  }
}

/** The group record of a format 2 group item, with the members given. */
export function recordOf(meta: GroupMeta, entries: [string, MemberEntry][]): GroupRecord {
  const { fv: _fv, commits: _commits, sc: _sc, ...rest } = meta;
  return {
    ...rest,
    members: Object.fromEntries(entries.map(([id, e]) => [id, e.member])),
    target: Object.fromEntries(entries.map(([id, e]) => [id, e.target])),
  };
}

/**
 * Whether a member item needs no write: the same member and target, and a holders list where one
 * is needed. A stored list that names more members than hold its partitions now (they released
 * them since) stays: it is still a superset, and rewriting it would make every group change write
 * members it does not change.
 */
function sameEntry(next: MemberEntry | null, standing: MemberEntry | null): boolean {
  if (!next || !standing) return next === standing;
  if (JSON.stringify(next.member) !== JSON.stringify(standing.member)) return false;
  if (JSON.stringify(next.target) !== JSON.stringify(standing.target)) return false;
  return next.holders === undefined || standing.holders !== undefined;
}

/** A member without what its own heartbeats change alone (liveness and the request id that recognises them). */
const livenessFree = ({ lastHeartbeat: _l, requestId: _r, ...rest }: MemberRecord) => rest;

const ignoreRace = (e: unknown) => {
  if (!(e instanceof ConditionFailedError)) throw e;
};

/**
 * A change's token: 64 random bits, short because the group item keeps the last `KEPT_COMMITS` of
 * them and a heartbeat that reads the group item should stay within one read unit.
 */
export const newChangeToken = () => randomBytes(8).toString('base64url');
