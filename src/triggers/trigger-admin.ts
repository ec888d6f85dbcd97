/**
 * What the API does with triggers: create (the group's starting offsets first, then the
 * definition, so that no delivery ever starts without a position), describe with each partition's
 * position and lag, pause, resume, delete.
 */
import type { Clock } from '../clock.js';
import type { GroupServices } from '../groups/index.js';
import type { PartitionLog } from '../log/partition-log.js';
import type { TopicRegistry } from '../topics/topics.js';
import type { DeliveryLeases } from './delivery-lease.js';
import type { TriggerPositions } from './positions.js';
import { deliveryKnobs, validateDefinition, type TriggerDefinition } from './trigger.js';
import type { TriggerRegistry } from './trigger-registry.js';
import type { TriggerRunner } from './trigger-runner.js';

export interface PartitionPosition {
  partition: number;
  /** The group's committed offset: the next record to deliver (absent: none yet). */
  committedOffset?: number;
  highWatermark: number;
  logStartOffset: number;
  lag: number;
  /** Epoch ms a delivery's lease lasts until, while one holds it. */
  deliveringUntil?: number;
}

export interface TriggerDescription extends TriggerDefinition {
  partitions: PartitionPosition[];
  lag: number;
}

export interface AdminDeps {
  clock: Clock;
  topics: TopicRegistry;
  log: PartitionLog;
  groups: GroupServices;
  registry: TriggerRegistry;
  leases: DeliveryLeases;
  positions: TriggerPositions;
  runner: TriggerRunner;
}

export class TriggerAdmin {
  constructor(private readonly deps: AdminDeps) {}

  async create(d: TriggerDefinition): Promise<TriggerDefinition> {
    validateDefinition(d);
    const topic = await this.deps.topics.get(d.topic);
    // The failure topic must exist (UNKNOWN_TOPIC_OR_PARTITION otherwise), as Lambda's must be in the cluster.
    const { onFailureDestination } = deliveryKnobs(d);
    if (onFailureDestination?.kind === 'kafka') await this.deps.topics.get(onFailureDestination.topic);
    // A group with members is someone else's consumer: NON_EMPTY_GROUP. An idle one is taken over, offsets and all.
    await this.deps.groups.offsets.requireInactive(d.groupId, `A trigger consumes as group ${d.groupId}`);
    const committed = await this.deps.positions.committed(d, topic);
    const starts: { partition: number; offset: number }[] = [];
    for (let p = 0; p < topic.partitionCount; p++)
      if (!committed.has(p)) starts.push({ partition: p, offset: await this.deps.positions.starting(d, topic, p) });
    if (starts.length > 0) await this.deps.positions.commitAll(d, topic, starts);
    const created = await this.deps.registry.create(d);
    // Records already past a kept offset are delivered now, not at the next commit.
    await this.deps.runner.rearm([created]);
    return created;
  }

  list(): Promise<TriggerDefinition[]> {
    return this.deps.registry.list();
  }

  async describe(name: string): Promise<TriggerDescription> {
    const d = await this.deps.registry.get(name);
    const topic = await this.deps.topics.get(d.topic).catch(() => undefined);
    if (!topic) return { ...d, partitions: [], lag: 0 };
    const committed = await this.deps.positions.committed(d, topic);
    const now = this.deps.clock.now();
    const partitions = await Promise.all(
      Array.from({ length: topic.partitionCount }, async (_, partition): Promise<PartitionPosition> => {
        const [state, lease] = await Promise.all([
          this.deps.log.state(topic, partition),
          this.deps.leases.read({ trigger: name, topic: topic.name, partition }),
        ]);
        const offset = committed.get(partition);
        return {
          partition,
          ...(offset !== undefined && { committedOffset: offset }),
          highWatermark: state.highWatermark,
          logStartOffset: state.logStartOffset,
          lag: Math.max(0, state.highWatermark - Math.max(offset ?? state.logStartOffset, state.logStartOffset)),
          ...(lease?.holder && lease.until > now && { deliveringUntil: lease.until }),
        };
      }),
    );
    return { ...d, partitions, lag: partitions.reduce((n, p) => n + p.lag, 0) };
  }

  /** Deliveries stop after the batch in flight; commits keep landing and wait. */
  pause(name: string): Promise<TriggerDefinition> {
    return this.deps.registry.setState(name, 'PAUSED');
  }

  /** Delivers what came while paused at once. */
  async resume(name: string): Promise<TriggerDefinition> {
    const d = await this.deps.registry.setState(name, 'ENABLED');
    await this.deps.runner.rearm([d]);
    return d;
  }

  /** Removes the trigger and its leases; its group and offsets stay (the group tools delete them). */
  async delete(name: string): Promise<void> {
    await this.deps.registry.delete(name);
    await this.deps.leases.removeAll(name);
  }
}
