import type { Logger } from '../metrics.js';
import type { Clock } from '../clock.js';
import type { PartitionLog } from '../log/partition-log.js';
import { foldShard, updatePartitionState } from '../partition/shard-state.js';
import { firstOfShard, shardOf } from '../partition/shard-log.js';
import type { MetadataStore, ObjectStore } from '../storage/ports.js';
import type { DurableTimers } from '../timer/durable-timers.js';
import type { Topic, TopicRegistry } from '../topics/topics.js';
import type { FoldDue } from '../partition/fold-watch.js';
import { KafkaError } from '../wire/errors.js';
import { compactPartition } from './compaction.js';
import type { MaintenanceOptions } from './maintenance-options.js';
import { sweepDue, sweepTopic } from './object-gc.js';
import { loadPartitionView, type PartitionView } from './partition-view.js';
import { applyRetention, removeAbortedBelow, removeEntriesBelowLogStart } from './retention.js';
import { deleteCovered } from './segment-writer.js';
import { mergeSegments } from './segment-merge.js';

/**
 * The units of a maintenance round (src/maintenance/scheduler.ts runs them): one partition's
 * maintenance (replica catch-up, retention, leftovers, compaction, merge) and one topic's object
 * sweep. Each is idempotent: a unit done twice (a run that died before its cursor moved) does
 * nothing the second time that the first did not.
 */

export interface UnitContext {
  metadata: MetadataStore;
  stores: ObjectStore[];
  clock: Clock;
  logger: Logger;
  options: MaintenanceOptions;
  partitionLog: PartitionLog;
  timers: DurableTimers;
  add: (name: string, n: number) => void;
}

/**
 * A fold timer (partition/fold-watch.ts): folds the shard whatever the round is doing, so entries
 * are folded long before they expire. A topic deleted since leaves nothing to fold (its entries go
 * with it), nor one recreated under the name (the new one's entries have timers of their own).
 * Answers the partitions folded.
 */
export async function foldDueShard(
  metadata: MetadataStore,
  topics: TopicRegistry,
  storeCount: number,
  due: FoldDue,
): Promise<number> {
  const named = await topics.get(due.topic).catch((e: unknown) => {
    if (e instanceof KafkaError && e.errorName === 'UNKNOWN_TOPIC_OR_PARTITION') return undefined;
    throw e;
  });
  // The name cached for another incarnation: the timer's own, if it still exists, by its id.
  const topic =
    named?.id === due.topicId ? named : (await topics.getByIds([due.topicId])).get(due.topicId.toLowerCase());
  if (!topic?.clog) return 0;
  return (await foldShard(metadata, topic, due.shard, storeCount)).partitions;
}

/** One partition: replica catch-up, retention, leftovers, compaction, merge. Idempotent. */
export async function maintainPartition(ctx: UnitContext, topic: Topic, partition: number): Promise<void> {
  const { metadata, stores, clock, options, add } = ctx;
  const at = { topic: topic.name, partition };
  // A topic with a commit log: its shard's entries go into the states and the index first (the
  // first partition of each shard folds it), so what follows works on the index as it is, and a
  // follower's store that fails the replica sync every round does not keep the shard unfolded.
  if (topic.clog && firstOfShard(topic, partition))
    await foldShard(metadata, topic, shardOf(topic, partition), stores.length);
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
      ctx.logger.info('retention', {
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
    ctx.logger.error('index entry missing below the high watermark; partition left as it is', {
      ...at,
      offset: view.gapAt,
      highWatermark: view.state.highWatermark,
    });
    return;
  }
  if (view.overlapping) {
    add('overlappingPartitions', 1);
    ctx.logger.warn('index entries overlap; partition left as it is', { ...at });
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
      ctx.logger.info('compaction', {
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
      await adjustSize(ctx, view, c.bytesAfter - c.bytesBefore);
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
    ctx.logger.info('segment merge', {
      ...at,
      segments: m.segmentsWritten,
      entriesReplaced: m.entriesReplaced,
      bytes: m.bytesCopied,
    });
  }
}

/** One topic: the object sweep, when due. */
export async function maintainTopic(ctx: UnitContext, topic: Topic): Promise<void> {
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
    ctx.logger.info('objects scheduled for deletion', {
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
async function adjustSize(ctx: UnitContext, view: PartitionView, delta: number): Promise<void> {
  if (delta === 0) return;
  await updatePartitionState<true>({
    metadata: ctx.metadata,
    topic: view.topic,
    partition: view.partition,
    storeCount: ctx.stores.length,
    now: ctx.clock.now(),
    timerSlotMs: ctx.options.timerSlotMs,
    giveUp: {
      errorName: 'KAFKA_STORAGE_ERROR',
      message: `Too much contention adjusting the size of ${view.topic.name}-${view.partition}`,
    },
    decide: (state) => {
      if (state.topicId !== view.state.topicId) return { done: true };
      return { write: { ...state, sizeInBytes: Math.max(0, state.sizeInBytes + delta) }, answer: () => true as const };
    },
    recogniseOwn: true,
  });
}
