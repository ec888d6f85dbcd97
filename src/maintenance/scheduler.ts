import { randomUUID } from 'node:crypto';
import { autoRaiseFeatureLevel } from '../storage/feature-level.js';
import { hostname } from 'node:os';
import type { Clock } from '../clock.js';
import { stateFromItem } from '../partition/partition-commit.js';
import type { PartitionState } from '../partition/partition-state.js';
import type { PartitionLog } from '../log/partition-log.js';
import type { Topic, TopicRegistry } from '../topics/topics.js';
import { holdsWrite, optimisticUpdate } from '../storage/optimistic-update.js';
import type { MetadataStore, MetaItem, ObjectStore } from '../storage/ports.js';
import { DurableTimers, type TimerHandler } from '../timer/durable-timers.js';
import { compactPartition } from './compaction.js';
import { maintenanceOptions, type MaintenanceOptions } from './maintenance-options.js';
import { DELETE_OBJECTS_KIND, deleteObjects, sweepDue, sweepTopic } from './object-gc.js';
import { loadPartitionView, type PartitionView } from './partition-view.js';
import { applyRetention, removeAbortedBelow, removeEntriesBelowLogStart } from './retention.js';
import { mergeSegments } from './segment-merge.js';
import { purgeDeletedTopics } from './topic-purge.js';
import { deleteCovered } from './segment-writer.js';
import { CLUSTER_PK, partitionPk, SCHEDULER_LEASE_SK, STATE_SK } from '../storage/key-layout.js';

/**
 * The scheduler: one run advances the durable timer wheel (firing every due timer: object
 * deletions, transaction timeouts, group session deadlines), purges deleted topics' data
 * (topic-purge.ts), then works through the maintenance
 * of every partition of every topic (replica catch-up, retention, compaction, segment merge) and
 * each topic's object sweep, until its deadline. It is what functions/scheduler.ts runs on every scheduled invocation and what the local
 * server runs in-process every SCHEDULER_INTERVAL_MS.
 *
 * One item (pk `cluster`, sk `scheduler`) is both a lease and the cursor of the work:
 * `{holder, run, leaseUntil, cursor: {topic, unit}, rounds, roundDoneAt}`. A run takes the lease
 * with a conditional write (so two runs never maintain at once: a second one reports `leaseHeld` and
 * does nothing; the lease lasts leaseTtlMs past its last renewal, and a write whose answer was lost
 * is recognised by the run id it carries), and moves the cursor past the units done with another conditional write against the
 * version it holds, every cursorWriteIntervalMs and when it stops (a run that lost its lease stops
 * there). A run that stops at its deadline leaves the cursor on the first unit not done; one that
 * dies, on the first unit after its last cursor write: the next run resumes there, so no unit is
 * skipped and only the units since are done again (every unit is idempotent). When the last topic
 * is done the round is complete; the next round starts from the first topic roundIntervalMs later
 * (Kafka's log.retention.check.interval.ms), and the runs in between only fire timers, so an idle
 * deployment's partitions are read once per interval, not once per run.
 *
 * Units: for a topic with n partitions, units 0..n-1 maintain partition p, unit n sweeps its objects.
 */

export interface SchedulerDeps {
  storage: { metadata: MetadataStore; stores: ObjectStore[] };
  clock: Clock;
  /** A clock reading after which the run starts no new work (a unit in progress finishes). */
  deadline: number;
  /** The process's partition log and topic registry, from the composition root (src/compose.ts). */
  partitionLog: PartitionLog;
  topics: TopicRegistry;
  options?: Partial<MaintenanceOptions>;
  /**
   * The durable timer kinds to fire besides object deletion: the composition root passes the
   * transaction coordinator's (transaction timeouts, id expiry) and the groups' session timers.
   */
  timerHandlers?: Record<string, TimerHandler>;
  /** Structured log lines; default one JSON line each on stdout. */
  log?: (event: Record<string, unknown>) => void;
  /** Stop after this many units (tests drive interruption with it; production uses the deadline). */
  maxUnits?: number;
  /** The lease holder's name (default this process's holder id, stable for the process's life). */
  runId?: string;
  /**
   * How long the lease lasts past its last renewal (at the start and at every cursor write): how
   * long a run that died holding it blocks the others. Default 30 s, at least 3 cursor intervals.
   */
  leaseTtlMs?: number;
}

/** What a run did: counts by kind of work, bytes, and flags as 0/1. */
export type SchedulerReport = Record<string, number>;

interface SchedulerItem {
  holder: string;
  /** The run of the holder that took the lease: the token a run recognises its own write by. */
  run?: string;
  leaseUntil: number;
  cursor?: { topic: string; unit: number };
  rounds: number;
  /** When the last round was completed: the next starts roundIntervalMs later. */
  roundDoneAt?: number;
}

const LEASE_PK = CLUSTER_PK;
const LEASE_SK = SCHEDULER_LEASE_SK;
const DEFAULT_LEASE_TTL_MS = 30_000;

/**
 * This process's lease holder id. Stable for the process, so a run that finds a live lease of its own
 * holder whose run is no longer going on in this process (it died, or its release was lost) takes
 * it over at once instead of waiting for it to lapse.
 */
const PROCESS_HOLDER = `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
/** Runs in progress in this process: a second concurrent run must not share the first one's lease. */
const runsInProgress = new Set<string>();

export async function runMaintenance(deps: SchedulerDeps): Promise<SchedulerReport> {
  const { clock } = deps;
  const { metadata, stores } = deps.storage;
  const log = deps.log ?? ((e) => console.log(JSON.stringify(e)));
  const options = maintenanceOptions(deps.options);
  const started = clock.now();
  const report: SchedulerReport = {};
  const add = (name: string, n: number) => {
    if (n !== 0) report[name] = (report[name] ?? 0) + n;
  };
  const holder = deps.runId ?? PROCESS_HOLDER;
  const run = randomUUID();
  const ttl = Math.max(deps.leaseTtlMs ?? DEFAULT_LEASE_TTL_MS, 3 * options.cursorWriteIntervalMs);
  const acquired = await acquireLease(metadata, holder, run, started, started + ttl);
  if (!acquired) {
    add('leaseHeld', 1);
    log({ level: 'info', msg: 'scheduler pass skipped: another run holds the lease' });
    return report;
  }
  runsInProgress.add(run);
  let lease: MetaItem<SchedulerItem> = acquired;
  const { topics, partitionLog } = deps;
  const timers = new DurableTimers(metadata, { slotMs: options.timerSlotMs });
  const pastDeadline = () => clock.now() >= deps.deadline;
  try {
    // 1. The durable timers due now.
    const fired = await timers.fireDue(
      clock.now(),
      {
        [DELETE_OBJECTS_KIND]: async (t) => {
          const r = await deleteObjects(stores, t);
          add('objectsDeleted', r.objects);
          add('bytesFreed', r.bytes);
        },
        ...deps.timerHandlers,
      },
      { deadline: deps.deadline, clock },
    );
    add('timersFired', fired.fired);
    add('timerFailures', fired.failed);
    for (const [name, n] of Object.entries(fired.counts)) add(name, n);
    for (const e of fired.errors) log({ level: 'error', msg: 'durable timer failed; rescheduled', error: String(e) });

    // 1a. Deleted topics' data, in every run (one query when there is none), before the units.
    if (!(await purgeDeletedTopics({ metadata, partitionLog: deps.partitionLog, pastDeadline, add, log })))
      add('incomplete', 1);

    // 1b. The feature level: raised once every running process has supported a higher one long enough.
    const raised = await autoRaiseFeatureLevel(metadata, clock.now());
    if (raised !== undefined) {
      add('featureLevelRaised', 1);
      log({ level: 'info', msg: 'feature level raised', featureLevel: raised });
    }

    // 2. Maintenance units, from the cursor; a new round only when one is due.
    const cursor = lease.value.cursor;
    const roundDoneAt = lease.value.roundDoneAt;
    if (!cursor && roundDoneAt !== undefined && clock.now() < roundDoneAt + options.roundIntervalMs) return report;
    const all = (await topics.list()).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    let t = cursor ? all.findIndex((x) => x.name >= cursor.topic) : 0;
    let unit = cursor && all[t]?.name === cursor.topic ? cursor.unit : 0;
    if (t < 0) t = all.length;
    let units = 0;
    // The lease was last written when it was taken: the first cursor write (which renews it) is due from then.
    let cursorWrittenAt = started;
    const ctx: UnitContext = { metadata, stores, clock, log, options, partitionLog, timers, add };
    const moveCursor = async (): Promise<boolean> => {
      const renewed = { ...lease.value, leaseUntil: clock.now() + ttl };
      const moved = await writeLease(
        metadata,
        lease,
        t < all.length ? { ...renewed, cursor: { topic: all[t]!.name, unit } } : withoutCursor(renewed, clock.now()),
      );
      if (!moved) {
        add('leaseLost', 1);
        log({ level: 'warn', msg: 'scheduler lease lost; stopping' });
        return false;
      }
      lease = moved;
      cursorWrittenAt = clock.now();
      return true;
    };
    while (t < all.length) {
      const topic = all[t]!;
      if (unit > topic.partitionCount) {
        t++;
        unit = 0;
        continue;
      }
      if (pastDeadline() || (deps.maxUnits !== undefined && units >= deps.maxUnits)) {
        add('incomplete', 1);
        await moveCursor();
        return report;
      }
      try {
        if (unit < topic.partitionCount) await maintainPartition(ctx, topic, unit);
        else await maintainTopic(ctx, topic);
      } catch (e) {
        // Logged and passed: it is retried next round, and does not block the others.
        add('unitFailures', 1);
        log({
          level: 'error',
          msg: 'maintenance failed',
          topic: topic.name,
          ...(unit < topic.partitionCount ? { partition: unit } : { step: 'sweep' }),
          error: e instanceof Error ? e.message : String(e),
        });
      }
      units++;
      add('unitsDone', 1);
      unit++;
      if (unit > topic.partitionCount) {
        t++;
        unit = 0;
      }
      // The cursor (and the check that the lease is still ours) is written every few seconds, not per unit.
      if (t < all.length && clock.now() - cursorWrittenAt >= options.cursorWriteIntervalMs && !(await moveCursor()))
        return report;
    }
    add('roundsCompleted', 1);
    await moveCursor();
  } finally {
    runsInProgress.delete(run);
    await writeLease(metadata, lease, { ...lease.value, leaseUntil: 0 });
    log({ level: 'info', msg: 'scheduler pass', durationMs: clock.now() - started, ...report });
  }
  return report;
}

interface UnitContext {
  metadata: MetadataStore;
  stores: ObjectStore[];
  clock: Clock;
  log: (event: Record<string, unknown>) => void;
  options: MaintenanceOptions;
  partitionLog: PartitionLog;
  timers: DurableTimers;
  add: (name: string, n: number) => void;
}

/** One partition: replica catch-up, retention, leftovers, compaction, merge. Idempotent. */
async function maintainPartition(ctx: UnitContext, topic: Topic, partition: number): Promise<void> {
  const { metadata, stores, clock, options, add } = ctx;
  const at = { topic: topic.name, partition };
  if (topic.replicationFactor > 1) {
    const sync = await ctx.partitionLog.replicas.sync(topic, partition, topic.config.uncleanLeaderElectionEnable);
    add('replicaObjectsCopied', sync.copiedObjects);
    add('isrShrinks', sync.removedFromIsr.length);
    add('isrExpands', sync.addedToIsr.length);
  }
  const load = () => loadPartitionView(metadata, topic, partition, stores.length, clock.now(), options.orphanGraceMs);
  let view = await load();
  if (view.version === undefined) return; // nothing was ever appended
  let logStartOffset = view.state.logStartOffset;
  if (topic.config.cleanupPolicy.delete) {
    const r = await applyRetention(ctx.partitionLog, view, topic, clock.now());
    if (r.advanced) {
      logStartOffset = r.logStartOffset;
      add('logStartOffsetAdvances', 1);
      ctx.log({
        level: 'info',
        msg: 'retention',
        ...at,
        reason: r.reason,
        logStartOffset: r.logStartOffset,
        bytesRemoved: r.bytesRemoved,
      });
    }
  }
  const removed = await removeEntriesBelowLogStart(metadata, topic, partition, logStartOffset);
  add('entriesRemovedByRetention', removed);
  // Only when entries went: an idle partition costs no extra query.
  if (removed > 0)
    add('abortedTransactionsRemoved', await removeAbortedBelow(metadata, topic, partition, logStartOffset));
  if (removed > 0 || logStartOffset !== view.state.logStartOffset) view = await load();
  add('coveredEntriesRemoved', await deleteCovered(metadata, view));
  if (view.gapAt !== undefined) {
    // Every offset below the HW was committed, so an entry is missing: readers fail there
    // (KAFKA_STORAGE_ERROR) rather than answer empty. Nothing is rewritten around a hole.
    add('indexGaps', 1);
    ctx.log({
      level: 'error',
      msg: 'index entry missing below the high watermark; partition left as it is',
      ...at,
      offset: view.gapAt,
      highWatermark: view.state.highWatermark,
    });
    return;
  }
  if (view.overlapping) {
    add('overlappingPartitions', 1);
    ctx.log({ level: 'warn', msg: 'index entries overlap; partition left as it is', ...at });
    return;
  }
  if (topic.config.cleanupPolicy.compact) {
    const c = await compactPartition(
      {
        metadata,
        stores,
        now: clock.now(),
        entryBytes: options.entryBytes,
        maxSegmentBytes: options.maxSegmentBytes,
        maxCleanBytes: options.maxCleanBytes,
        graceMs: options.orphanGraceMs,
      },
      view,
      topic,
    );
    if (c.cleaned) {
      add('compactions', 1);
      add('recordsCompactedAway', c.recordsRemoved);
      add('tombstonesRemoved', c.tombstonesRemoved);
      add('segmentsWritten', c.segmentsWritten);
      add('swapConflicts', c.conflicts);
      add('abortedTransactionsRemoved', c.abortedRemoved);
      ctx.log({
        level: 'info',
        msg: 'compaction',
        ...at,
        reason: c.reason,
        dirtyRatio: Number(c.dirtyRatio.toFixed(3)),
        from: c.from,
        to: c.to,
        recordsRemoved: c.recordsRemoved,
        tombstonesRemoved: c.tombstonesRemoved,
        bytesBefore: c.bytesBefore,
        bytesAfter: c.bytesAfter,
      });
      await adjustSize(metadata, view, stores.length, c.bytesAfter - c.bytesBefore);
      view = await load();
    }
  }
  const m = await mergeSegments(
    {
      metadata,
      stores,
      now: clock.now(),
      entryBytes: options.entryBytes,
      maxSegmentBytes: options.maxSegmentBytes,
      mergeMinEntries: options.mergeMinEntries,
    },
    view,
    topic,
  );
  if (m.segmentsWritten > 0) {
    add('segmentsWritten', m.segmentsWritten);
    add('entriesMerged', m.entriesReplaced);
    add('swapConflicts', m.conflicts);
    ctx.log({
      level: 'info',
      msg: 'segment merge',
      ...at,
      segments: m.segmentsWritten,
      entriesReplaced: m.entriesReplaced,
      bytes: m.bytesCopied,
    });
  }
}

/** One topic: the object sweep, when due. */
async function maintainTopic(ctx: UnitContext, topic: Topic): Promise<void> {
  const now = ctx.clock.now();
  if (!(await sweepDue(ctx.metadata, topic, now, ctx.options.sweepIntervalMs))) return;
  const r = await sweepTopic(
    { metadata: ctx.metadata, stores: ctx.stores, timers: ctx.timers, now, graceMs: ctx.options.orphanGraceMs },
    topic,
  );
  ctx.add('sweeps', 1);
  ctx.add('objectsScheduledForDeletion', r.scheduled);
  ctx.add('bytesScheduledForDeletion', r.bytesScheduled);
  if (r.scheduled > 0)
    ctx.log({
      level: 'info',
      msg: 'objects scheduled for deletion',
      topic: topic.name,
      objects: r.scheduled,
      bytes: r.bytesScheduled,
      deleteAt: now + topic.config.fileDeleteDelayMs,
    });
}

/**
 * Keeps sizeInBytes (retention.bytes) in step with what compaction removed; retried on a lost race.
 * A delta applied twice would be wrong: a repeat that finds exactly what it wrote is taken as done
 * (one that finds a later append on top re-applies it; sizeInBytes is an estimate for retention).
 */
async function adjustSize(
  metadata: MetadataStore,
  view: PartitionView,
  storeCount: number,
  delta: number,
): Promise<void> {
  if (delta === 0) return;
  await optimisticUpdate<PartitionState, true>({
    metadata,
    pk: partitionPk(view.topic.name, view.partition),
    sk: STATE_SK,
    attempts: 20,
    giveUp: {
      errorName: 'KAFKA_STORAGE_ERROR',
      message: `Too much contention adjusting the size of ${view.topic.name}-${view.partition}`,
    },
    decide: (item) => {
      const { state } = stateFromItem(item, view.topic, view.partition, storeCount);
      if (state.topicId !== view.state.topicId) return { done: true };
      return { write: { ...state, sizeInBytes: Math.max(0, state.sizeInBytes + delta) }, answer: () => true as const };
    },
    recognise: (found, attempted) => (holdsWrite(found, attempted) ? (true as const) : undefined),
  });
}

/**
 * Takes the lease unless another holder's is live (or a live one of this holder belongs to a run still
 * going on in this process). A write that applied but whose answer was lost is recognised by its run.
 */
async function acquireLease(
  metadata: MetadataStore,
  holder: string,
  run: string,
  now: number,
  until: number,
): Promise<MetaItem<SchedulerItem> | undefined> {
  const { result } = await optimisticUpdate<SchedulerItem, MetaItem<SchedulerItem> | undefined>({
    metadata,
    pk: LEASE_PK,
    sk: LEASE_SK,
    attempts: 4,
    giveUp: { errorName: 'COORDINATOR_NOT_AVAILABLE', message: 'The scheduler lease is contended; skipping this pass' },
    decide: (item) => {
      const live = item !== undefined && item.value.leaseUntil > now;
      if (
        live &&
        (item.value.holder !== holder || (item.value.run !== undefined && runsInProgress.has(item.value.run)))
      )
        return { done: undefined };
      const value: SchedulerItem = { rounds: 0, ...item?.value, holder, run, leaseUntil: until };
      return { write: value, answer: (written) => written };
    },
    recognise: (found) => (found?.value.holder === holder && found.value.run === run ? found : undefined),
  });
  return result;
}

/**
 * Writes the lease item while it is still this run's (undefined: lost to another run). A repeat of
 * a write that applied finds exactly what it wrote, and is taken as done.
 */
async function writeLease(
  metadata: MetadataStore,
  lease: MetaItem<SchedulerItem>,
  value: SchedulerItem,
): Promise<MetaItem<SchedulerItem> | undefined> {
  const { result } = await optimisticUpdate<SchedulerItem, MetaItem<SchedulerItem> | undefined>({
    metadata,
    pk: LEASE_PK,
    sk: LEASE_SK,
    known: { item: lease },
    attempts: 4,
    giveUp: { errorName: 'COORDINATOR_NOT_AVAILABLE', message: 'The scheduler lease is contended' },
    decide: (item) =>
      item && item.value.holder === lease.value.holder && item.value.run === lease.value.run
        ? { write: value, answer: (written) => written }
        : { done: undefined },
    recognise: (found, attempted) => (holdsWrite(found, attempted) ? found : undefined),
  });
  return result;
}

/** The item after a completed round: no cursor, one more round, and when it was done. */
function withoutCursor(value: SchedulerItem, now: number): SchedulerItem {
  const { cursor: _cursor, ...rest } = value;
  return { ...rest, rounds: value.rounds + 1, roundDoneAt: now };
}

export interface SchedulerLoop {
  /** Stops the loop; resolves when a run in progress has finished. */
  stop(): Promise<void>;
}

/**
 * The local server's in-process scheduler: one run every `intervalMs` (never two at once), each
 * with a budget of `budgetMs` (default the interval). Errors are reported and the loop goes on.
 * Its timer is unref'd: it never keeps the process alive.
 */
export function startSchedulerLoop(options: {
  intervalMs: number;
  budgetMs?: number;
  clock: Clock;
  run: (deadline: number) => Promise<SchedulerReport>;
  onError?: (e: unknown) => void;
}): SchedulerLoop {
  let stopped = false;
  let handle: ReturnType<typeof setTimeout> | undefined;
  let current: Promise<unknown> = Promise.resolve();
  const onError =
    options.onError ??
    ((e) =>
      console.error(
        JSON.stringify({
          level: 'error',
          msg: 'scheduler run failed',
          error: e instanceof Error ? e.stack : String(e),
        }),
      ));
  const tick = () => {
    handle = undefined;
    if (stopped) return;
    current = options
      .run(options.clock.now() + (options.budgetMs ?? options.intervalMs))
      .catch(onError)
      .finally(() => {
        if (!stopped) {
          handle = setTimeout(tick, options.intervalMs);
          handle.unref();
        }
      });
  };
  handle = setTimeout(tick, options.intervalMs);
  handle.unref();
  return {
    async stop() {
      stopped = true;
      if (handle) clearTimeout(handle);
      await current.catch(() => {});
    },
  };
}
