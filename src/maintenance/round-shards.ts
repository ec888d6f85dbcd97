import type { MetadataStore } from '../storage/ports.js';
import { CLUSTER_PK, SCHEDULER_LEASE_SK, SCHEDULER_SHARD_PREFIX, schedulerShardSk } from '../storage/key-layout.js';
import { holdsWrite, optimisticUpdate } from '../storage/optimistic-update.js';
import type { Topic, TopicRegistry } from '../topics/topics.js';
import type { MaintenanceOptions } from './maintenance-options.js';
import { maintainPartition, maintainTopic, type UnitContext } from './partition-maintenance.js';
import { acquireLease, HeldLease, type Lease } from './scheduler-lease.js';

/**
 * A maintenance round in shards. The round item (pk `cluster`, sk `scheduler`) says which round is
 * going on: `{round, roundStartedAt, rounds, roundDoneAt, doneRound}`; a run starts the next round with a
 * conditional write once the last is done and roundIntervalMs has passed. The round's units (for a
 * topic of n partitions: units 0..n-1 maintain partition p, unit n sweeps its objects) are split into
 * `shards` by a hash of (topic, unit), stable while the shard count stays.
 *
 * Each shard has an item (sk `scheduler#shard#NNNN`), its lease and cursor:
 * `{holder, run, leaseUntil, round, cursor: {topic, unit}, done}`. A run takes a shard whose lease is
 * not live and that is not done for the round, works through the shard's units in topic-name order
 * from the cursor, moves the cursor every cursorWriteIntervalMs (which renews the lease; a keeper
 * renews it meanwhile, a third of the TTL at a time, so a long unit keeps it too), and when it stops
 * at its deadline leaves the cursor on the first unit not done; one that dies leaves it on the
 * first unit after its last cursor write: the next run resumes there (every unit is idempotent, so
 * only the units since are done again). A finished shard records `done: round`; the run that finds
 * every shard done marks the round done.
 */
export interface RoundItem {
  /** The round going on (or last done); 0 before the first. */
  round: number;
  roundStartedAt?: number;
  /** Rounds completed. */
  rounds: number;
  /** When the last round was done: the next starts roundIntervalMs later. */
  roundDoneAt?: number;
  /** The last round done (a round is going on while it is below `round`). */
  doneRound?: number;
}

interface ShardItem extends Lease {
  /** The round the cursor belongs to. */
  round: number;
  cursor?: { topic: string; unit: number };
  /** The last round this shard finished. */
  done?: number;
}

/**
 * The round to work on: the one going on, or a new one when the last is done and due (undefined:
 * no round is due). Starting one is one conditional write; a run that loses the race works on the
 * round the winner started.
 */
export async function currentRound(
  metadata: MetadataStore,
  now: number,
  options: MaintenanceOptions,
): Promise<number | undefined> {
  const { result } = await optimisticUpdate<RoundItem, number | undefined>({
    metadata,
    pk: CLUSTER_PK,
    sk: SCHEDULER_LEASE_SK,
    attempts: 4,
    giveUp: { errorName: 'COORDINATOR_NOT_AVAILABLE', message: 'The maintenance round item is contended' },
    decide: (item) => {
      const r: RoundItem = { rounds: 0, ...item?.value, round: item?.value.round ?? 0 };
      const going = r.round > (r.doneRound ?? 0);
      if (going) return { done: r.round };
      if (r.roundDoneAt !== undefined && now < r.roundDoneAt + options.roundIntervalMs) return { done: undefined };
      const next = r.round + 1;
      return { write: { ...r, round: next, roundStartedAt: now }, answer: () => next };
    },
    recognise: (found, attempted) => (holdsWrite(found, attempted) ? found.value.round : undefined),
  });
  return result;
}

export interface ShardWork {
  ctx: UnitContext;
  topics: TopicRegistry;
  round: number;
  claim: () => { holder: string; run: string; now: number; until: number };
  ttl: number;
  sleep: (ms: number, signal: AbortSignal) => Promise<void>;
  pastDeadline: () => boolean;
  maxUnits?: number;
}

/**
 * Works on the round's shards, `shardConcurrency` at a time, until none is left to take or the
 * deadline passes. Reports `leaseHeld` when every shard not done was held by another run.
 */
export async function workShards(work: ShardWork): Promise<void> {
  const { ctx, round } = work;
  const { shards, shardConcurrency } = ctx.options;
  const all = (await work.topics.list()).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  const budget = { units: 0, stopped: false };
  let next = 0;
  let took = 0;
  let held = 0;
  const worker = async () => {
    while (next < shards && !budget.stopped) {
      const shard = next++;
      const outcome = await workShard(work, all, shard, budget);
      if (outcome === 'held') held++;
      else if (outcome !== 'done-before') took++;
    }
  };
  await Promise.all(Array.from({ length: Math.min(shardConcurrency, shards) }, worker));
  if (took === 0 && held > 0) ctx.add('leaseHeld', 1);
  if (budget.stopped) ctx.add('incomplete', 1);
  // Checked by any run that found no shard left to it (not only the one that finished the last):
  // a run that died between its last shard and this write leaves the round for the next to mark.
  if (
    !budget.stopped &&
    (took > 0 || held === 0) &&
    (await allShardsDone(ctx.metadata, shards, round)) &&
    (await markRoundDone(ctx, round))
  )
    ctx.add('roundsCompleted', 1);
}

/** The shard a unit belongs to: FNV-1a of `topic/unit`, modulo the shard count. */
export function shardOf(topic: string, unit: number, shards: number): number {
  if (shards <= 1) return 0;
  let h = 0x811c9dc5;
  const s = `${topic}/${unit}`;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 0x01000193);
  return (h >>> 0) % shards;
}

type ShardOutcome = 'held' | 'done-before' | 'finished' | 'stopped' | 'lost';

async function workShard(
  work: ShardWork,
  all: Topic[],
  shard: number,
  budget: { units: number; stopped: boolean },
): Promise<ShardOutcome> {
  const { ctx, round } = work;
  const { metadata, clock, options } = ctx;
  let doneBefore = false;
  const taken = await acquireLease<ShardItem>(metadata, schedulerShardSk(shard), work.claim(), (found) => {
    if (found && (found.done ?? 0) >= round) {
      doneBefore = true;
      return undefined;
    }
    const carried = found?.round === round && found.cursor ? { cursor: found.cursor } : {};
    return { ...(found?.done !== undefined ? { done: found.done } : {}), round, ...carried } as ShardItem;
  });
  if (!taken) return doneBefore ? 'done-before' : 'held';
  const lease = new HeldLease(metadata, taken, work.ttl, clock);
  lease.keepAlive(work.sleep);
  const cursor = taken.value.cursor;
  let t = cursor ? all.findIndex((x) => x.name >= cursor.topic) : 0;
  if (t < 0) t = all.length;
  let unit = cursor && all[t]?.name === cursor.topic ? cursor.unit : 0;
  const at = (): Pick<ShardItem, 'cursor'> => (t < all.length ? { cursor: { topic: all[t]!.name, unit } } : {});
  const withCursor = (v: ShardItem): ShardItem => {
    const { cursor: _c, ...rest } = v;
    return { ...rest, ...at() };
  };
  let cursorWrittenAt = clock.now();
  try {
    while (t < all.length) {
      const topic = all[t]!;
      if (unit > topic.partitionCount) {
        t++;
        unit = 0;
        continue;
      }
      if (shardOf(topic.name, unit, options.shards) !== shard) {
        unit++;
        continue;
      }
      if (lease.lost) return 'lost';
      if (work.pastDeadline() || (work.maxUnits !== undefined && budget.units >= work.maxUnits)) {
        budget.stopped = true;
        await lease.update(withCursor);
        return 'stopped';
      }
      budget.units++;
      try {
        if (unit < topic.partitionCount) await maintainPartition(ctx, topic, unit);
        else await maintainTopic(ctx, topic);
      } catch (e) {
        // Logged and passed: it is retried next round, and does not block the others.
        ctx.add('unitFailures', 1);
        ctx.logger.error('maintenance failed', {
          topic: topic.name,
          ...(unit < topic.partitionCount ? { partition: unit } : { step: 'sweep' }),
          error: e instanceof Error ? e.message : String(e),
        });
      }
      ctx.add('unitsDone', 1);
      unit++;
      // The cursor (and the check that the lease is still ours) is written every few seconds, not per unit.
      if (clock.now() - cursorWrittenAt >= options.cursorWriteIntervalMs) {
        if (!(await lease.update(withCursor))) return 'lost';
        cursorWrittenAt = clock.now();
      }
    }
    await lease.update((v) => {
      const { cursor: _c, ...rest } = v;
      return { ...rest, done: round };
    });
    return 'finished';
  } finally {
    await lease.release(ctx.logger);
    if (lease.lost) {
      ctx.add('leaseLost', 1);
      ctx.logger.warn('scheduler lease lost; stopping the shard', { shard });
    }
  }
}

async function allShardsDone(metadata: MetadataStore, shards: number, round: number): Promise<boolean> {
  const items = await metadata.query<ShardItem>(CLUSTER_PK, { beginsWith: SCHEDULER_SHARD_PREFIX });
  const done = new Set(
    items.filter((i) => (i.value.done ?? 0) >= round).map((i) => i.sk.slice(SCHEDULER_SHARD_PREFIX.length)),
  );
  for (let s = 0; s < shards; s++)
    if (!done.has(schedulerShardSk(s).slice(SCHEDULER_SHARD_PREFIX.length))) return false;
  return true;
}

/** Marks `round` done, once: true for the run whose write did it. */
async function markRoundDone(ctx: UnitContext, round: number): Promise<boolean> {
  const now = ctx.clock.now();
  const { result } = await optimisticUpdate<RoundItem, boolean>({
    metadata: ctx.metadata,
    pk: CLUSTER_PK,
    sk: SCHEDULER_LEASE_SK,
    attempts: 4,
    giveUp: { errorName: 'COORDINATOR_NOT_AVAILABLE', message: 'The maintenance round item is contended' },
    decide: (item) => {
      const r = item?.value;
      if (!r || r.round !== round || (r.doneRound ?? 0) >= round) return { done: false };
      return { write: { ...r, rounds: r.rounds + 1, roundDoneAt: now, doneRound: round }, answer: () => true };
    },
    recognise: (found, attempted) => (holdsWrite(found, attempted) ? true : undefined),
  });
  return result;
}
