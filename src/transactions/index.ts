import type { Clock } from '../clock.js';
import { writeOffsetRecords } from '../groups/offsets.js';
import type { PartitionLog } from '../log/partition-log.js';
import type { TopicRegistry } from '../topics/topics.js';
import { ProducerIds } from '../producer/producer-ids.js';
import type { MetadataStore } from '../storage/ports.js';
import { DurableTimers } from '../timer/durable-timers.js';
import { TransactionCoordinator, type TransactionDeps } from './transaction-coordinator.js';
import type { TransactionConfig } from './transaction-config.js';

export { TransactionCoordinator, TXN_TIMEOUT_KIND, TXN_EXPIRY_KIND, TXN_TIDY_KIND } from './transaction-coordinator.js';
export {
  DEFAULT_TRANSACTION_CONFIG,
  DEFAULT_TRANSACTION_TIMEOUT_MS,
  type TransactionConfig,
} from './transaction-config.js';
export type { TransactionRecord, TransactionStatus } from './transaction-state.js';
export { TRANSACTION_STATES } from './transaction-state.js';

/**
 * A coordinator over one storage. `timerSlotMs` must be the scheduler's (maintenance option
 * timerSlotMs): its timers live in the durable timer wheel the scheduler fires.
 */
export function createTransactionCoordinator(deps: {
  metadata: MetadataStore;
  clock: Clock;
  topics: TopicRegistry;
  log: PartitionLog;
  config?: Partial<TransactionConfig>;
  timerSlotMs?: number;
  checkMember?: TransactionDeps['checkMember'];
  featureLevel?: TransactionDeps['featureLevel'];
  sleep?: TransactionDeps['sleep'];
}): TransactionCoordinator {
  const { metadata } = deps;
  return new TransactionCoordinator({
    metadata,
    clock: deps.clock,
    topics: deps.topics,
    log: deps.log,
    producerIds: new ProducerIds(metadata),
    // As GroupOffsets.write puts them: the transaction's commit is their validation.
    writeOffsets: (groupId, records, pace) => writeOffsetRecords(metadata, groupId, records, pace),
    timers: new DurableTimers(metadata, deps.timerSlotMs === undefined ? {} : { slotMs: deps.timerSlotMs }),
    ...(deps.config ? { config: deps.config } : {}),
    ...(deps.checkMember ? { checkMember: deps.checkMember } : {}),
    ...(deps.featureLevel ? { featureLevel: deps.featureLevel } : {}),
    ...(deps.sleep ? { sleep: deps.sleep } : {}),
  });
}
