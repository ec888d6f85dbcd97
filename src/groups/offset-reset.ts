import type { Clock } from '../clock.js';
import { KafkaError } from '../wire/errors.js';
import type { PartitionLog } from '../log/partition-log.js';
import { requirePartition, type Topic, type TopicRegistry } from '../topics/topics.js';
import { tpKey } from './assignment.js';
import type { GroupOffsets, OffsetRecord } from './offsets.js';

/** kafka-consumer-groups.sh --reset-offsets strategies. */
export type ResetStrategy =
  | { kind: 'to-earliest' }
  | { kind: 'to-latest' }
  | { kind: 'to-current' }
  | { kind: 'to-offset'; offset: number }
  | { kind: 'shift-by'; shiftBy: number }
  | { kind: 'to-datetime'; timestamp: number }
  | { kind: 'by-duration'; durationMs: number };

/** --all-topics (the partitions the group has committed offsets for) or --topic t[:p,p...]. */
export type ResetScope = { allTopics: true } | { topics: { topic: string; partitions?: number[] }[] };

export interface ResetPlanEntry {
  topic: string;
  partition: number;
  /** The committed offset before the reset, if any. */
  currentOffset: number | null;
  newOffset: number;
}

export interface ResetDeps {
  clock: Clock;
  topics: TopicRegistry;
  log: PartitionLog;
  offsets: GroupOffsets;
}

/**
 * Resets the committed offsets of an inactive group as kafka-consumer-groups.sh does:
 *  - to-earliest / to-latest: the log start offset / the high watermark;
 *  - to-current: the committed offset (the high watermark where there is none);
 *  - to-offset, shift-by: the requested offset, clamped into [log start, high watermark] (shift-by
 *    needs a committed offset to shift);
 *  - to-datetime, by-duration (now - duration): the first offset with a timestamp at or after the
 *    time, or the high watermark when there is none.
 * A dry run computes and returns the plan without writing it. A group with members is refused
 * (NON_EMPTY_GROUP), as the tool refuses a group that is not inactive.
 */
export async function resetOffsets(
  deps: ResetDeps,
  groupId: string,
  scope: ResetScope,
  strategy: ResetStrategy,
  dryRun: boolean,
): Promise<ResetPlanEntry[]> {
  await deps.offsets.requireInactive(groupId, 'Assignments can be reset', !dryRun);
  const committed = new Map((await deps.offsets.committed(groupId)).map((r) => [tpKey(r.topic, r.partition), r]));

  const targets: { topic: Topic; partition: number }[] = [];
  const topicCache = new Map<string, Topic>();
  const topicOf = async (name: string) => {
    let t = topicCache.get(name);
    if (!t) topicCache.set(name, (t = await deps.topics.get(name)));
    return t;
  };
  if ('allTopics' in scope) {
    for (const r of committed.values()) targets.push({ topic: await topicOf(r.topic), partition: r.partition });
  } else {
    for (const { topic: name, partitions } of scope.topics) {
      const topic = await topicOf(name);
      const ids = partitions ?? Array.from({ length: topic.partitionCount }, (_, p) => p);
      for (const p of ids) {
        requirePartition(topic, p);
        targets.push({ topic, partition: p });
      }
    }
  }

  const now = deps.clock.now();
  const plan = await Promise.all(
    targets.map(async ({ topic, partition }): Promise<ResetPlanEntry> => {
      const current = committed.get(tpKey(topic.name, partition));
      const state = await deps.log.state(topic, partition);
      const clamp = (o: number) => Math.min(Math.max(o, state.logStartOffset), state.highWatermark);
      const byTime = async (timestamp: number) => {
        const found = await deps.log.reader.listOffset(topic, partition, { timestamp });
        return found.offset >= 0 ? found.offset : state.highWatermark;
      };
      let newOffset: number;
      switch (strategy.kind) {
        case 'to-earliest':
          newOffset = state.logStartOffset;
          break;
        case 'to-latest':
          newOffset = state.highWatermark;
          break;
        case 'to-current':
          newOffset = current ? current.offset : state.highWatermark;
          break;
        case 'to-offset':
          newOffset = clamp(strategy.offset);
          break;
        case 'shift-by':
          if (!current) {
            throw new KafkaError(
              'INVALID_REQUEST',
              `Cannot shift offset for partition ${topic.name}-${partition} since there is no current committed offset`,
            );
          }
          newOffset = clamp(current.offset + strategy.shiftBy);
          break;
        case 'to-datetime':
          newOffset = await byTime(strategy.timestamp);
          break;
        case 'by-duration':
          newOffset = await byTime(now - strategy.durationMs);
          break;
      }
      return { topic: topic.name, partition, currentOffset: current?.offset ?? null, newOffset };
    }),
  );
  plan.sort((a, b) => (a.topic < b.topic ? -1 : a.topic > b.topic ? 1 : a.partition - b.partition));

  if (!dryRun && plan.length > 0) {
    const records = plan.map(
      (e): OffsetRecord => ({
        topic: e.topic,
        partition: e.partition,
        topicId: topicCache.get(e.topic)!.id,
        offset: e.newOffset,
        metadata: committed.get(tpKey(e.topic, e.partition))?.metadata ?? '',
        generation: -1,
        commitTimestamp: now,
      }),
    );
    await deps.offsets.write(groupId, records);
  }
  return plan;
}
