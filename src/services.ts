import type { Security } from './authz/index.js';
import type { BrokerConfig } from './config/broker-configs.js';
import type { GroupServices } from './groups/index.js';
import type { PartitionLog } from './log/partition-log.js';
import type { Partitioner } from './log/partitioner.js';
import type { TopicRegistry } from './topics/topics.js';
import type { ProducerIds } from './producer/producer-ids.js';
import type { Clock } from './clock.js';
import type { OperationCounts } from './storage/counting-stores.js';
import type { FeatureLevels } from './storage/feature-level.js';
import type { PushNotifier } from './push/push-notifier.js';
import type { Subscriptions } from './push/subscriptions.js';
import type { Purgatory } from './timer/purgatory.js';
import type { TransactionCoordinator } from './transactions/index.js';
import type { ShareGroups } from './share/share-groups.js';
import type { TriggerServices } from './triggers/index.js';
import type { Metrics } from './metrics.js';
import type { MetadataStore } from './storage/ports.js';

/**
 * The services of a process, built by the composition root (src/compose.ts) and handed to both
 * doors: the HTTP routes (src/http) and the Kafka listener (src/kafka). Neither holds state of its own.
 */
export interface AppServices {
  clusterId: string;
  clock: Clock;
  topics: TopicRegistry;
  log: PartitionLog;
  /** Consumer groups: coordinator, offsets, admin, REST v2 consumer instances. */
  groups: GroupServices;
  /** Share groups (KIP-932): records acquired under a lock and acknowledged one by one (src/share). */
  share: ShareGroups;
  partitioner: Partitioner;
  producerIds: ProducerIds;
  /** Transactional producers: the transaction coordinator (src/transactions). */
  transactions: TransactionCoordinator;
  defaults: { partitions: number; replicationFactor: number };
  limits: { maxRequestBytes: number; maxFetchBytes: number; maxFetchWaitMs: number; maxResponseBytes?: number };
  /** Long-poll fetches wait here; this process's appends to a partition complete them (src/timer/delayed-fetch.ts). */
  fetchPurgatory: Purgatory;
  /** Where routes report what they answered (records and bytes of a fetch). */
  metrics: Metrics;
  /** Push subscriptions, and the notifier that tells them about commits (src/push). */
  push: { subscriptions: Subscriptions; notifier: PushNotifier };
  /** Triggers: their definitions, admin and the runner that delivers them (src/triggers). */
  triggers: TriggerServices;
  /** Principals, ACLs and quotas. */
  security: Security;
  /** The cluster's feature level and this process's registration (src/storage/feature-level.ts). */
  features: FeatureLevels;
  /** What DescribeConfigs answers for a broker: the values this server applies (src/config/broker-configs.ts). */
  brokerConfigs: readonly BrokerConfig[];
  /**
   * The metadata store through this composition's own handle, uncounted: what this process
   * remembers between requests is kept per handle (src/partition/process-cache.ts), and the
   * maintenance pass folds through it, so this process's log remembers what its pass folded.
   */
  metadataHandle: MetadataStore;
  /** Storage operation counts, when the composition root wrapped the stores in counters (the benchmark). */
  operationCounts?: () => OperationCounts;
}
