import type { GroupServices } from '../groups/index.js';
import type { PartitionLog } from '../log/partition-log.js';
import type { Partitioner } from '../log/partitioner.js';
import type { TopicRegistry } from '../topics/topics.js';
import type { ProducerIds } from '../producer/producer-ids.js';
import type { Clock } from '../clock.js';
import type { OperationCounts } from '../storage/counting-stores.js';
import type { Purgatory } from '../timer/purgatory.js';
import type { Resources } from './resources.js';
import type { Metrics } from '../metrics.js';

/** What the HTTP layer is given by the composition root; it holds no state of its own. */
export interface AppServices {
  clusterId: string;
  clock: Clock;
  topics: TopicRegistry;
  log: PartitionLog;
  /** Consumer groups: coordinator, offsets, admin, REST v2 consumer instances. */
  groups: GroupServices;
  partitioner: Partitioner;
  producerIds: ProducerIds;
  defaults: { partitions: number; replicationFactor: number };
  limits: { maxRequestBytes: number; maxFetchBytes: number; maxFetchWaitMs: number };
  /** Long-poll fetches wait here; this process's appends to a partition complete them (src/timer/delayed-fetch.ts). */
  fetchPurgatory: Purgatory;
  /** Where routes report what they answered (records and bytes of a fetch). */
  metrics: Metrics;
  /** Storage operation counts, when the composition root wrapped the stores in counters (the benchmark). */
  operationCounts?: () => OperationCounts;
}

export type AppEnv = { Variables: { services: AppServices; resources: Resources; maxRequestBytes: number } };
