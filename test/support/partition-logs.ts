/** A PartitionLog over given stores, as the log and partition tests build it, and a record to append. */
import { PartitionLog } from '../../src/log/partition-log.js';
import type { Metrics } from '../../src/metrics.js';
import { ReplicaManager } from '../../src/replication/replica-manager.js';
import type { MetadataStore, ObjectStore } from '../../src/storage/ports.js';
import type { LogRecord } from '../../src/wire/record-batch.js';

export const clock = { now: () => Date.now() };

export const rec = (value: string): LogRecord => ({
  key: null,
  value: Buffer.from(value),
  headers: [],
  timestamp: Date.now(),
});

export const newLog = (metadata: MetadataStore, stores: ObjectStore[], metrics?: Metrics) =>
  new PartitionLog({
    metadata,
    stores,
    clock,
    leadership: new ReplicaManager({ metadata, stores, clock }),
    ...(metrics ? { metrics } : {}),
  });
