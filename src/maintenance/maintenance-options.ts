import { DEFAULT_TIMER_SLOT_MS } from '../timer/durable-timers.js';

/**
 * Knobs of the maintenance passes that Kafka has no topic config for. Topic configs
 * (retention.ms, segment.bytes, ...) come from each topic; these are per deployment.
 */
export interface MaintenanceOptions {
  /**
   * How old an object (by the time in its key) must be before the sweep may delete it when nothing
   * references it, and how long ago the commit after an index entry must have started before that
   * entry may be rewritten. It must exceed twice the longest request (a produce that wrote its
   * object but has not committed yet; a writer holding an old last-commit pointer it may repair).
   */
  orphanGraceMs: number;
  /** Target size of one index entry written by merge or compaction: a fetch reads at least one entry. */
  entryBytes: number;
  /** Upper bound of one rewritten segment object, below segment.bytes (the pass holds it in memory). */
  maxSegmentBytes: number;
  /** A run of request objects at the head of the log is merged once it has this many entries (or is full or old). */
  mergeMinEntries: number;
  /** Bytes of dirty records one cleaning maps at most (Kafka's dedupe buffer); the rest waits. */
  maxCleanBytes: number;
  /** A topic's objects are swept at most this often (and not more often than its file.delete.delay.ms). */
  sweepIntervalMs: number;
  /** Width of a durable timer slot. */
  timerSlotMs: number;
  /**
   * A new round of partition maintenance (retention, compaction, merge, sweeps) starts at most
   * this often, Kafka's log.retention.check.interval.ms; the runs between rounds only fire timers.
   * Each round reads every partition's state and index, so this, not the scheduler's rate, is
   * what an idle deployment's partitions cost.
   */
  roundIntervalMs: number;
  /**
   * The cursor of a round is written at most this often (and when a run stops): a run that dies
   * redoes the units since (all idempotent), and a round costs few writes however many partitions.
   */
  cursorWriteIntervalMs: number;
  /**
   * A round's units are split into this many shards (by a hash of topic and partition), each with
   * its own lease and cursor: the most runs, and the most workers of one run, a round can use at once.
   */
  shards: number;
  /** How many shards one run works on at once (its concurrency; each shard's units in order). */
  shardConcurrency: number;
  /** While a run lasts, the durable timers are fired again every this many ms. */
  timerTickMs: number;
}

export const DEFAULT_MAINTENANCE_OPTIONS: Readonly<MaintenanceOptions> = {
  orphanGraceMs: 15 * 60_000,
  entryBytes: 1 << 20,
  maxSegmentBytes: 64 << 20,
  mergeMinEntries: 16,
  maxCleanBytes: 64 << 20,
  sweepIntervalMs: 5 * 60_000,
  timerSlotMs: DEFAULT_TIMER_SLOT_MS,
  roundIntervalMs: 5 * 60_000,
  cursorWriteIntervalMs: 10_000,
  shards: 64,
  shardConcurrency: 16,
  timerTickMs: 10_000,
};

export function maintenanceOptions(overrides: Partial<MaintenanceOptions> = {}): MaintenanceOptions {
  const defined = Object.fromEntries(Object.entries(overrides).filter(([, v]) => v !== undefined));
  return { ...DEFAULT_MAINTENANCE_OPTIONS, ...defined };
}
