import type { Clock } from '../clock.js';
import type { PartitionLog } from '../log/partition-log.js';
import type { TopicRegistry } from '../topics/topics.js';
import type { MetadataStore } from '../storage/ports.js';
import { Purgatory } from '../timer/purgatory.js';
import type { Timer } from '../timer/system-timer.js';
import { partitionWatchKey } from '../timer/delayed-fetch.js';
import { ClassicGroupCoordinator } from './classic-coordinator.js';
import { ConsumerInstances, type AwaitCondition } from './consumer-instances.js';
import { GroupCoordinator } from './coordinator.js';
import { GroupAdmin } from './group-admin.js';
import { DEFAULT_GROUP_LIMITS, type GroupLimits } from './group-state.js';
import { GroupOffsets } from './offsets.js';
import { resetOffsets, type ResetScope, type ResetStrategy } from './offset-reset.js';

export interface GroupServices {
  coordinator: GroupCoordinator;
  /** Kafka's classic protocol (JoinGroup/SyncGroup), for Kafka clients on the protocol listener. */
  classic: ClassicGroupCoordinator;
  offsets: GroupOffsets;
  admin: GroupAdmin;
  instances: ConsumerInstances;
  resetOffsets(
    groupId: string,
    scope: ResetScope,
    strategy: ResetStrategy,
    dryRun: boolean,
  ): ReturnType<typeof resetOffsets>;
}

export interface GroupsOptions {
  limits?: Partial<GroupLimits>;
  /** consumer.instance.timeout.ms of REST v2 consumer instances (REST Proxy's default: 5 minutes). */
  instanceTimeoutMs?: number;
  /** Longest wait of one v2 records request. */
  maxPollWaitMs?: number;
}

/**
 * Builds the consumer-group services over the storage ports. Members whose session expired are
 * removed by durable timers the scheduler fires through `coordinator.timerHandlers()`.
 */
export function createGroups(
  deps: {
    metadata: MetadataStore;
    clock: Clock;
    topics: TopicRegistry;
    log: PartitionLog;
    timer: Timer;
    /** The cluster's feature level (group format 2 from level 4); absent: the newest. */
    featureLevel?: () => Promise<number>;
    /** The scheduler's timer slot width (its scan fires the groups' session timers). */
    timerSlotMs?: number;
    /** How paced offset commits wait (default: real time; benchmarks pass simulated time). */
    sleep?: (ms: number) => Promise<void>;
  },
  options: GroupsOptions = {},
): GroupServices {
  const coordinator = new GroupCoordinator({ ...deps, ...(options.limits ? { limits: options.limits } : {}) });
  const offsets = new GroupOffsets({ ...deps, coordinator });

  const instances = new ConsumerInstances({
    ...deps,
    coordinator,
    offsets,
    awaitCondition: appendPurgatory(deps.log, deps.timer),
    instanceTimeoutMs: options.instanceTimeoutMs ?? 300_000,
    maxPollWaitMs: options.maxPollWaitMs ?? 30_000,
  });
  const classic = new ClassicGroupCoordinator({
    ...deps,
    coordinator,
    limits: { ...DEFAULT_GROUP_LIMITS, ...options.limits },
  });
  const admin = new GroupAdmin({ ...deps, coordinator, offsets, classic });
  return {
    coordinator,
    classic,
    offsets,
    admin,
    instances,
    resetOffsets: (groupId, scope, strategy, dryRun) =>
      resetOffsets({ ...deps, offsets }, groupId, scope, strategy, dryRun),
  };
}

/**
 * Long polls wait in a purgatory keyed by partition (`partitionWatchKey`), on the process's one
 * timer, completed by this process's appends at once and re-checked on a back-off for appends made
 * by other processes.
 */
function appendPurgatory(log: PartitionLog, timer: Timer): AwaitCondition {
  const purgatory = new Purgatory({ timer, name: 'ConsumerPoll', onError: () => {} });
  log.onAppend((topic, partition) => void purgatory.checkAndComplete(partitionWatchKey(topic, partition)));
  return (o) => purgatory.awaitCondition(o);
}
