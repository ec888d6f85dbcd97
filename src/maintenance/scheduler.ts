import { randomUUID } from 'node:crypto';
import type { Clock } from '../clock.js';
import { noLogger, type Logger } from '../metrics.js';
import type { PartitionLog } from '../log/partition-log.js';
import { autoRaiseFeatureLevel } from '../storage/feature-level.js';
import { SCHEDULER_TIMERS_SK } from '../storage/key-layout.js';
import type { MetadataStore, ObjectStore } from '../storage/ports.js';
import { DurableTimers, type TimerHandler } from '../timer/durable-timers.js';
import type { TopicRegistry } from '../topics/topics.js';
import { maintenanceOptions, type MaintenanceOptions } from './maintenance-options.js';
import { DELETE_OBJECTS_KIND, deleteObjects } from './object-gc.js';
import { foldDueShard, type UnitContext } from './partition-maintenance.js';
import { FOLD_SHARD_KIND, type FoldDue } from '../partition/fold-watch.js';
import { currentRound, workShards } from './round-shards.js';
import { acquireLease, HeldLease, type Lease, PROCESS_HOLDER, realSleep, runsInProgress } from './scheduler-lease.js';
import { purgeDeletedTopics } from './topic-purge.js';

/**
 * The scheduler: what functions/scheduler.ts runs on every scheduled invocation and the local
 * server runs in-process every SCHEDULER_INTERVAL_MS. A run does two things, each under leases of
 * its own, so neither waits for the other:
 *
 * 1. **The tick** (every run, and again every timerTickMs while the run lasts): fires every due
 *    durable timer (object deletions, transaction timeouts, group session deadlines), purges deleted
 *    topics' data (topic-purge.ts) and raises the feature level when due, under the timers' lease
 *    (pk `cluster`, sk `scheduler#timers`), so two runs never fire the same timers at once, and a
 *    long round never delays them: a timer fires within a tick interval of its expiry whenever a
 *    run is going on, and within the schedule's rate otherwise.
 * 2. **The round** (round-shards.ts): the maintenance of every partition (replica catch-up,
 *    retention, compaction, segment merge) and every topic's object sweep, split into `shards` by a
 *    hash of the unit, each shard with its own lease and cursor. A run works on up to
 *    `shardConcurrency` shards at once, and runs that overlap (the schedule starts one every minute,
 *    each lasting up to its deadline) take different shards: the round fans out over as many
 *    invocations as are running. A shard's lease is renewed while it runs (a third of its TTL),
 *    so a long unit never lets a second run into the same shard.
 *
 * Rounds start at most every roundIntervalMs (Kafka's log.retention.check.interval.ms); the runs
 * between only tick, so an idle deployment's partitions are read once per interval, not once per run.
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
  /** Where the run's lines go (the host's Logger); default: nowhere. */
  logger?: Logger;
  /** Stop after this many units (tests drive interruption with it; production uses the deadline). */
  maxUnits?: number;
  /** The lease holder's name (default this process's holder id, stable for the process's life). */
  runId?: string;
  /**
   * How long a lease lasts past its last renewal: how long a run that died holding it blocks the
   * others. Default 30 s, at least 3 cursor intervals.
   */
  leaseTtlMs?: number;
  /** Waits on the run's clock (lease renewals, timer ticks); ends early when the signal aborts. */
  sleep?: (ms: number, signal: AbortSignal) => Promise<void>;
}

/** What a run did: counts by kind of work, bytes, and flags as 0/1. */
export type SchedulerReport = Record<string, number>;

const DEFAULT_LEASE_TTL_MS = 30_000;

export async function runMaintenance(deps: SchedulerDeps): Promise<SchedulerReport> {
  const { clock } = deps;
  const { metadata, stores } = deps.storage;
  const logger = deps.logger ?? noLogger;
  const options = maintenanceOptions(deps.options);
  const sleep = deps.sleep ?? realSleep;
  const started = clock.now();
  const report: SchedulerReport = {};
  const add = (name: string, n: number) => {
    if (n !== 0) report[name] = (report[name] ?? 0) + n;
  };
  const holder = deps.runId ?? PROCESS_HOLDER;
  const run = randomUUID();
  const ttl = Math.max(deps.leaseTtlMs ?? DEFAULT_LEASE_TTL_MS, 3 * options.cursorWriteIntervalMs);
  const timers = new DurableTimers(metadata, { slotMs: options.timerSlotMs });
  const handlers: Record<string, TimerHandler> = {
    [DELETE_OBJECTS_KIND]: async (t) => {
      const r = await deleteObjects(stores, t);
      add('objectsDeleted', r.objects);
      add('bytesFreed', r.bytes);
    },
    [FOLD_SHARD_KIND]: async (t) =>
      add('partitionsFoldedByAge', await foldDueShard(metadata, deps.topics, stores.length, t.payload as FoldDue)),
    ...deps.timerHandlers,
  };
  const pastDeadline = () => clock.now() >= deps.deadline;
  const claim = () => ({ holder, run, now: clock.now(), until: clock.now() + ttl });

  /** One tick under the timers' lease; false when another run holds it. */
  const tick = async (): Promise<boolean> => {
    const taken = await acquireLease<Lease>(metadata, SCHEDULER_TIMERS_SK, claim(), (v) => ({ ...v }) as Lease);
    if (!taken) return false;
    const lease = new HeldLease(metadata, taken, ttl, clock);
    lease.keepAlive(sleep);
    try {
      const fired = await timers.fireDue(clock.now(), handlers, { deadline: deps.deadline, clock });
      add('timersFired', fired.fired);
      add('timerFailures', fired.failed);
      for (const [name, n] of Object.entries(fired.counts)) add(name, n);
      for (const e of fired.errors) logger.error('durable timer failed; rescheduled', { error: String(e) });
      if (!(await purgeDeletedTopics({ metadata, partitionLog: deps.partitionLog, pastDeadline, add, logger })))
        add('incomplete', 1);
      // The feature level: raised once every running process has supported a higher one long enough.
      const raised = await autoRaiseFeatureLevel(metadata, clock.now());
      if (raised !== undefined) {
        add('featureLevelRaised', 1);
        logger.info('feature level raised', { featureLevel: raised });
      }
    } finally {
      await lease.release(logger);
    }
    return true;
  };

  runsInProgress.add(run);
  const ticking = new AbortController();
  try {
    await tick();
    // While the round's work goes on, the tick comes again every timerTickMs.
    const ticks = (async () => {
      for (;;) {
        await sleep(options.timerTickMs, ticking.signal);
        if (ticking.signal.aborted || pastDeadline()) return;
        await tick().catch((e) => logger.error('timer tick failed', { error: String(e) }));
      }
    })();
    try {
      const round = await currentRound(metadata, clock.now(), options);
      if (round !== undefined) {
        const ctx: UnitContext = {
          metadata,
          stores,
          clock,
          logger,
          options,
          partitionLog: deps.partitionLog,
          timers,
          add,
        };
        await workShards({
          ctx,
          topics: deps.topics,
          round,
          claim,
          ttl,
          sleep,
          pastDeadline,
          ...(deps.maxUnits !== undefined ? { maxUnits: deps.maxUnits } : {}),
        });
      }
    } finally {
      ticking.abort();
      await ticks;
    }
  } finally {
    runsInProgress.delete(run);
    logger.info('scheduler pass', { durationMs: clock.now() - started, ...report });
  }
  return report;
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
  /** Where a failed run is said (as SchedulerDeps.logger); default: nowhere. */
  logger?: Logger;
  onError?: (e: unknown) => void;
}): SchedulerLoop {
  let stopped = false;
  let handle: ReturnType<typeof setTimeout> | undefined;
  let current: Promise<unknown> = Promise.resolve();
  const onError =
    options.onError ??
    ((e) => options.logger?.error('scheduler run failed', { error: e instanceof Error ? e.stack : String(e) }));
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
