import { ConditionFailedError, type MetadataStore, type MetaItem } from '../storage/ports.js';
import { GROUP_SUMMARY_PREFIX, groupPk, groupSummarySk } from '../storage/key-layout.js';
import { isEmptyAssignment, minus, union, type Assignment } from './assignment.js';
import type { AssignorName } from './assignors.js';
import type { GroupRecord } from './group-state.js';

/**
 * What a new target assignment needs of each member of a KIP-848 group (group format 3, from
 * feature level 7), kept apart from the member items so that a join reads a few small items
 * instead of the whole group (coordinator.ts, `summaryJoin`): each member's subscription, the
 * assignor it asks for, its target, and `x`, the partitions beyond its target it may still hold
 * (its target moved them away and it has not been seen releasing them). So `t` plus `x` over all
 * members is a superset of who holds what, which is all a joiner needs to take only free
 * partitions and to know whose items to read before taking the others (`MemberEntry.holders`).
 *
 * The entries are spread over `SUMMARY_SHARDS` items (`sum#NN`, by a hash of the member id): one
 * item would pass the 40 KB this design keeps every item under at a few hundred members, and a join
 * rewrites only the shards of the members whose entry changes (the joiner and, with the uniform
 * assignor, the one or two members that give it partitions).
 *
 * A shard changes as a member item does (group-items.ts): the change is written *pending* (token,
 * base version) and decided by the one conditional write of the group item, which lists the token
 * in `sc`. `sc` holds only the tokens of changes that wrote shards (a member's release, which
 * writes no shard, does not age them out), and every writer of shards first folds whatever pending
 * change it finds on a shard it read; so a decided change is folded long before its token leaves
 * `sc`. Only writers that change targets or membership write shards: a member's own heartbeat
 * (taking partitions of its target, releasing) leaves its entry as it is, since `x` may stay a
 * superset until the next whole-group change recomputes it from the member items.
 */
export interface SummaryEntry {
  /** Subscribed topics, sorted. */
  s: string[];
  /** The assignor the member asks for. */
  a?: AssignorName;
  /** Its target at the group's assignment epoch. */
  t: Assignment;
  /** Partitions outside `t` it may still hold (assigned or revoking); absent: none. */
  x?: Assignment;
}

export type SummaryEntries = Record<string, SummaryEntry>;

export interface SummaryItem {
  /** The entries in force (absent: none yet). */
  m?: SummaryEntries;
  /** A change decided by the group item write with token `t` (listed in the group's `sc`) over version `base`. */
  p?: { t: string; base: number; v: SummaryEntries; at: number };
}

/** Shards per group: about 3 KB each at 1,000 members (a join writes two or three of them). */
export const SUMMARY_SHARDS = 32;

/** How many summary change tokens the group item keeps (`sc`). */
export const KEPT_SUMMARY_COMMITS = 8;

/** The shard of a member: FNV-1a of its id (stable across releases: it names where the entry is). */
export function summaryShard(memberId: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < memberId.length; i++) {
    h ^= memberId.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h % SUMMARY_SHARDS;
}

/** The group item fields a shard is resolved against. */
export interface SummaryMeta {
  sc?: string[];
}

/** A group's summary as read: its shard items and the entries in force. */
export interface LoadedSummary {
  items: Map<string, MetaItem<SummaryItem>>;
  entries: Map<string, SummaryEntry>;
  /** Shards whose change is in flight over the group version read (its writer has not written the group item yet). */
  inFlight: Map<string, number>;
}

/** A shard's entries as of the group item read at `metaVersion` (undefined `meta.sc`: the group had no summary, every pending change is void). */
function shardInForce(item: SummaryItem, meta: SummaryMeta, metaVersion: number): SummaryEntries | 'in flight' {
  if (!item.p) return item.m ?? {};
  if (meta.sc?.includes(item.p.t)) return item.p.v;
  return item.p.base === metaVersion && meta.sc ? 'in flight' : (item.m ?? {});
}

/** Reads every shard of a group (one query) and resolves it against the group item read. */
export async function loadSummary(
  metadata: MetadataStore,
  groupId: string,
  meta: SummaryMeta,
  metaVersion: number,
): Promise<LoadedSummary> {
  const items = await metadata.query<SummaryItem>(groupPk(groupId), { beginsWith: GROUP_SUMMARY_PREFIX });
  const out: LoadedSummary = { items: new Map(), entries: new Map(), inFlight: new Map() };
  for (const i of items) {
    out.items.set(i.sk, i);
    const resolved = shardInForce(i.value, meta, metaVersion);
    // In flight: its writer may still decide it; until then the entries standing are those in force.
    const entries = resolved === 'in flight' ? (i.value.m ?? {}) : resolved;
    if (resolved === 'in flight') out.inFlight.set(i.sk, i.value.p!.at);
    // A group without a summary yet (being converted) has no entries: leftovers are overwritten.
    if (meta.sc) for (const [id, e] of Object.entries(entries)) out.entries.set(id, e);
  }
  return out;
}

/** The summary of a whole group: `x` exact, from what each member holds. */
export function summaryOf(g: GroupRecord): Map<string, SummaryEntry> {
  const out = new Map<string, SummaryEntry>();
  for (const m of Object.values(g.members)) {
    const t = g.target[m.memberId] ?? {};
    const x = minus(union(m.assigned, m.revoking), t);
    out.set(m.memberId, {
      s: m.subscribedTopics,
      ...(m.assignor ? { a: m.assignor } : {}),
      t,
      ...(isEmptyAssignment(x) ? {} : { x }),
    });
  }
  return out;
}

/** The entries that differ between two summaries (null: the member is gone). */
export function summaryChanges(
  before: Map<string, SummaryEntry>,
  after: Map<string, SummaryEntry>,
): Map<string, SummaryEntry | null> {
  const out = new Map<string, SummaryEntry | null>();
  for (const [id, e] of after) if (!sameSummaryEntry(before.get(id), e)) out.set(id, e);
  for (const id of before.keys()) if (!after.has(id)) out.set(id, null);
  return out;
}

const canon = (a: Assignment | undefined) =>
  JSON.stringify(
    Object.keys(a ?? {})
      .filter((t) => (a![t]?.length ?? 0) > 0)
      .sort()
      .map((t) => [t, [...a![t]!].sort((x, y) => x - y)]),
  );

function sameSummaryEntry(a: SummaryEntry | undefined, b: SummaryEntry): boolean {
  return (
    a !== undefined &&
    a.s.join(',') === b.s.join(',') &&
    a.a === b.a &&
    canon(a.t) === canon(b.t) &&
    canon(a.x) === canon(b.x)
  );
}

/** What a pending shard write left, for the fold after the group write (or its withdrawal). */
export interface WrittenShard {
  sk: string;
  version: number;
  after: SummaryEntries;
  before?: SummaryEntries;
}

/** A shard changed under a group change (another writer's change pends on it): decide again. */
export class SummaryChangedError extends Error {
  constructor(readonly inFlightSince?: number) {
    super('a summary shard changed during the write');
    this.name = 'SummaryChangedError';
  }
}

/**
 * Writes `changes` as pending changes (token `token`, over group version `base`) of the shards they
 * fall in, and folds any change left pending on a shard read (a writer that died after its group
 * write): so a token leaves `sc` only after the change it names was folded. Throws
 * `SummaryChangedError` when a shard it must write moved under it.
 */
export async function writeSummaryPending(
  metadata: MetadataStore,
  groupId: string,
  loaded: LoadedSummary,
  changes: Map<string, SummaryEntry | null>,
  change: { t: string; base: number; at: number },
  meta: SummaryMeta,
): Promise<WrittenShard[]> {
  const byShard = new Map<string, [string, SummaryEntry | null][]>();
  for (const [id, e] of changes) {
    const sk = groupSummarySk(summaryShard(id));
    byShard.set(sk, [...(byShard.get(sk) ?? []), [id, e]]);
  }
  for (const [sk, item] of loaded.items) if (item.value.p && !byShard.has(sk)) byShard.set(sk, []);
  const pk = groupPk(groupId);
  const outcomes = await Promise.allSettled(
    [...byShard].map(async ([sk, list]): Promise<WrittenShard | undefined> => {
      const item = loaded.items.get(sk);
      if (loaded.inFlight.has(sk)) throw new SummaryChangedError(loaded.inFlight.get(sk));
      const resolved = item ? shardInForce(item.value, meta, change.base) : {};
      const inForce = resolved === 'in flight' ? (item?.value.m ?? {}) : meta.sc ? resolved : {};
      const next: SummaryEntries = { ...inForce };
      for (const [id, e] of list) {
        if (e) next[id] = e;
        else delete next[id];
      }
      const value: SummaryItem = { m: inForce, p: { ...change, v: next } };
      try {
        const w = await metadata.put<SummaryItem>(
          pk,
          sk,
          value,
          item ? { ifVersion: item.version } : { ifAbsent: true },
        );
        return { sk, version: w.version, after: next, ...(item ? { before: inForce } : {}) };
      } catch (e) {
        if (!(e instanceof ConditionFailedError)) throw e;
        const current = e.current as MetaItem<SummaryItem> | undefined;
        // Our own write, applied with its answer lost.
        if (current?.value.p?.t === change.t)
          return { sk, version: current.version, after: next, ...(item ? { before: inForce } : {}) };
        throw new SummaryChangedError();
      }
    }),
  );
  const written = outcomes.flatMap((o) => (o.status === 'fulfilled' && o.value ? [o.value] : []));
  const failed = outcomes.find((o): o is PromiseRejectedResult => o.status === 'rejected');
  if (failed) {
    await withdrawShards(metadata, groupId, written);
    throw failed.reason;
  }
  return written;
}

/** After the group write applied: the pending entries become the entries in force (best effort). */
export async function foldShards(metadata: MetadataStore, groupId: string, written: WrittenShard[]): Promise<void> {
  await Promise.all(
    written.map(({ sk, version, after }) =>
      metadata.put<SummaryItem>(groupPk(groupId), sk, { m: after }, { ifVersion: version }).catch(ignoreRace),
    ),
  );
}

/** A change that will not be decided takes its pending shard writes back (best effort). */
export async function withdrawShards(metadata: MetadataStore, groupId: string, written: WrittenShard[]): Promise<void> {
  await Promise.all(
    written.map(({ sk, version, before }) =>
      (before
        ? metadata.put<SummaryItem>(groupPk(groupId), sk, { m: before }, { ifVersion: version })
        : metadata.delete(groupPk(groupId), sk, { ifVersion: version })
      ).catch(ignoreRace),
    ),
  );
}

const ignoreRace = (e: unknown) => {
  if (!(e instanceof ConditionFailedError)) throw e;
};
