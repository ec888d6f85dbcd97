/**
 * A transaction coordinator over a storage, as the functions compose it, for tests that drive it
 * directly: its topics and partition log on the same metadata store (a wrapped one, to count or
 * fail its calls) and clock (a simulated one, to pace), one replica store.
 */
import type { Storage } from '../../../src/compose.js';
import { PartitionLog } from '../../../src/log/partition-log.js';
import { ReplicaManager } from '../../../src/replication/replica-manager.js';
import type { MetadataStore } from '../../../src/storage/ports.js';
import { TopicRegistry } from '../../../src/topics/topics.js';
import { createTransactionCoordinator } from '../../../src/transactions/index.js';

type CoordinatorOptions = Omit<Parameters<typeof createTransactionCoordinator>[0], 'metadata' | 'topics' | 'log'>;

export function coordinatorParts(
  storage: Storage,
  options: Partial<CoordinatorOptions> & { metadata?: MetadataStore } = {},
) {
  const { metadata = storage.metadata, clock = { now: () => Date.now() }, ...rest } = options;
  const topics = new TopicRegistry(metadata, clock, 1);
  const log = new PartitionLog({
    metadata,
    stores: storage.stores,
    clock,
    leadership: new ReplicaManager({ metadata, stores: storage.stores, clock }),
  });
  /** Another coordinator over the same topics and log: another process's. */
  const coordinator = () => createTransactionCoordinator({ metadata, clock, topics, log, ...rest });
  return { metadata, clock, topics, log, txns: coordinator(), coordinator };
}
