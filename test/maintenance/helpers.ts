/**
 * A maintenance harness: a storage backend, a clock the test drives, topics, a partition log, and
 * one scheduler run on demand (with a generous deadline on the same clock).
 */
import type { Storage } from '../../src/compose.js';
import { PartitionLog } from '../../src/log/partition-log.js';
import { expect } from 'vitest';
import { decodeRecordBatches, type LogRecord } from '../../src/wire/record-batch.js';
import { TopicRegistry, type Topic } from '../../src/topics/topics.js';
import type { MaintenanceOptions } from '../../src/maintenance/maintenance-options.js';
import { runMaintenance, type SchedulerDeps, type SchedulerReport } from '../../src/maintenance/scheduler.js';
import type { ObjectStore } from '../../src/storage/ports.js';
import { ReplicaManager } from '../../src/replication/replica-manager.js';
import { readBatches, readRecords } from '../support/read-records.js';
import { eventLogger } from '../support/event-logger.js';

export class TestClock {
  constructor(public t: number) {}
  now(): number {
    return this.t;
  }
  advance(ms: number): number {
    this.t += ms;
    return this.t;
  }
}

export const rec = (key: string | null, value: string | null, timestamp: number): LogRecord => ({
  key: key === null ? null : Buffer.from(key),
  value: value === null ? null : Buffer.from(value),
  headers: [],
  timestamp,
});
export const text = (b: Uint8Array | null) => (b === null ? null : Buffer.from(b).toString());

/**
 * Test defaults: no grace (the clock is ours), sweeps and rounds whenever asked, merges only when
 * asked, one shard worked by one worker (the units in order; tests of shards ask for more).
 */
export const TEST_OPTIONS: Partial<MaintenanceOptions> = {
  orphanGraceMs: 0,
  sweepIntervalMs: 0,
  roundIntervalMs: 0,
  mergeMinEntries: 1_000_000,
  shards: 1,
  shardConcurrency: 1,
};

/** The item of shard 0 of a round: its lease and cursor. */
export const SHARD_0 = { pk: 'cluster', sk: 'scheduler#shard#0000' } as const;

export function harness(storage: Storage, clock: TestClock, options: Partial<MaintenanceOptions> = {}) {
  const topics = new TopicRegistry(storage.metadata, clock, storage.stores.length);
  const log = new PartitionLog({
    metadata: storage.metadata,
    stores: storage.stores,
    clock,
    leadership: new ReplicaManager({ metadata: storage.metadata, stores: storage.stores, clock }),
  });
  const events: Record<string, unknown>[] = [];
  let n = 0;
  const h = {
    topics,
    log,
    events,
    clock,
    async topic(configs: Record<string, string> = {}, partitions = 1): Promise<Topic> {
      return topics.create({
        name: `t${n++}-${Math.random().toString(36).slice(2, 8)}`,
        partitionCount: partitions,
        replicationFactor: 1,
        configs,
      });
    },
    /** One produce request to one partition; returns its base offset. */
    async produce(topic: Topic, records: LogRecord[], partition = 0): Promise<number> {
      const out = (await log.append(topic, [{ partition, records }])).get(partition)!;
      if (!out.ok) throw out.error;
      return out.info.baseOffset;
    },
    /**
     * Every record from the log start offset to the high watermark, read with both fetches (JSON's
     * decoded records and the record batches as stored), which must agree; `jsonOnly` reads once.
     */
    async readAll(topic: Topic, partition = 0, { jsonOnly = false } = {}) {
      const state = await log.state(topic, partition);
      const out: { offset: number; key: string | null; value: string | null; timestamp: number }[] = [];
      for (let offset = state.logStartOffset; offset < state.highWatermark; ) {
        const r = await readRecords(log, topic, partition, offset, 1 << 20);
        out.push(
          ...r.records.map((x) => ({
            offset: x.offset,
            key: text(x.key),
            value: text(x.value),
            timestamp: x.timestamp,
          })),
        );
        if (r.nextOffset <= offset) throw new Error(`fetch made no progress at ${offset}`);
        offset = r.nextOffset;
      }
      if (jsonOnly) return out;
      // The record-batch fetch must serve the same records from the same entries (segments, compacted batches).
      const viaBatches: typeof out = [];
      for (let offset = state.logStartOffset; offset < state.highWatermark; ) {
        const r = await readBatches(log, topic, partition, offset, 1 << 20);
        for (const batch of decodeRecordBatches(r.batches)) {
          for (const x of batch.records)
            if (x.offset >= offset)
              viaBatches.push({ offset: x.offset, key: text(x.key), value: text(x.value), timestamp: x.timestamp });
        }
        if (r.nextOffset <= offset) throw new Error(`record-batch fetch made no progress at ${offset}`);
        offset = r.nextOffset;
      }
      expect(viaBatches).toEqual(out);
      return out;
    },
    run(extra: Partial<SchedulerDeps> = {}): Promise<SchedulerReport> {
      return runMaintenance({
        storage,
        clock,
        deadline: clock.now() + 3_600_000,
        partitionLog: log,
        topics,
        options: { ...TEST_OPTIONS, ...options },
        logger: eventLogger(events),
        ...extra,
      });
    },
  };
  return h;
}

/** Every object key under a prefix, on one store. */
export async function listKeys(store: ObjectStore, prefix: string): Promise<string[]> {
  const keys: string[] = [];
  let startAfter: string | undefined;
  do {
    const page = await store.list(prefix, startAfter ? { startAfter } : {});
    keys.push(...page.objects.map((o) => o.key));
    startAfter = page.nextStartAfter;
  } while (startAfter);
  return keys;
}
