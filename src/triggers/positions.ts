/**
 * A trigger's positions are its consumer group's committed offsets, so the group tools (describe,
 * lag, reset) see and move them. They are written as an admin commit (no member; generation -1):
 * a trigger's group has no members, and the delivery lease, not a generation, fences its writers.
 */
import { randomUUID } from 'node:crypto';
import type { Clock } from '../clock.js';
import type { GroupServices } from '../groups/index.js';
import { hasPosition } from '../groups/offset-record.js';
import type { PartitionLog } from '../log/partition-log.js';
import type { PartitionState } from '../partition/partition-state.js';
import type { Topic } from '../topics/topics.js';
import type { TriggerDefinition } from './trigger.js';

export class TriggerPositions {
  constructor(private readonly deps: { groups: GroupServices; log: PartitionLog; clock: Clock }) {}

  /**
   * Where delivery of the partition goes on: the committed offset, within [log start, HW] (below
   * the log start, records were deleted by retention and delivery moves on from the first one left,
   * as Lambda's does). A partition with no offset is newer than the trigger (its creation committed
   * one for every partition), so all its records are to deliver.
   */
  async current(d: TriggerDefinition, topic: Topic, partition: number, state: PartitionState): Promise<number> {
    const committed = await this.deps.groups.offsets.committedOffset(d.groupId, topic, partition);
    if (!hasPosition(committed)) return state.logStartOffset;
    return Math.min(Math.max(committed.offset, state.logStartOffset), state.highWatermark);
  }

  /** Where a new trigger starts on a partition its group has no offset for (Lambda's StartingPosition). */
  async starting(d: TriggerDefinition, topic: Topic, partition: number): Promise<number> {
    const spec =
      d.startingPosition === 'TRIM_HORIZON'
        ? 'earliest'
        : d.startingPosition === 'LATEST'
          ? 'latest'
          : { timestamp: d.startingTimestamp ?? 0 };
    const { offset } = await this.deps.log.reader.listOffset(topic, partition, spec);
    // No record at or after the timestamp: from the end, as Kafka's offsetsForTimes answers -1.
    return offset >= 0 ? offset : (await this.deps.log.state(topic, partition)).highWatermark;
  }

  async commit(d: TriggerDefinition, topic: Topic, partition: number, offset: number): Promise<void> {
    await this.commitAll(d, topic, [{ partition, offset }]);
  }

  async commitAll(d: TriggerDefinition, topic: Topic, at: { partition: number; offset: number }[]): Promise<void> {
    const commitTimestamp = this.deps.clock.now();
    const commitId = randomUUID();
    await this.deps.groups.offsets.write(
      d.groupId,
      at.map(({ partition, offset }) => ({
        topic: topic.name,
        partition,
        topicId: topic.id,
        offset,
        metadata: `trigger ${d.name}`,
        generation: -1,
        commitTimestamp,
        commitId,
      })),
    );
  }

  /** The group's committed offsets of the topic, by partition (those with a position). */
  async committed(d: TriggerDefinition, topic: Topic): Promise<Map<number, number>> {
    const records = await this.deps.groups.offsets.committed(d.groupId, topic.name);
    return new Map(records.filter((r) => r.topicId === topic.id && hasPosition(r)).map((r) => [r.partition, r.offset]));
  }
}
