/**
 * `npx tsx bench/commit-contention.ts [--writers 1,4,16] [--latency-ms 5] [--seconds 4]`: what one
 * conditional-write item costs under many writers, for the topic-level commit question of
 * docs/performance.md ("The commit of a multi-partition request").
 *
 * Each writer is its own PartitionLog (a Lambda: nothing shared in memory) in a closed loop of
 * one-record appends, over one metadata store whose every call takes `latency-ms` (DynamoDB's
 * single-digit milliseconds; the memory store alone answers in microseconds, where nobody ever
 * races). Two layouts: every writer on partition 0 (one item takes every commit, as a topic-level
 * sequencer item would take every request of its topic) and writers spread over 12 partitions
 * (one item per partition, as today). Reported per layout: commits/s, failed conditional writes
 * per commit (each a billed write that assigned nothing), and write units per second on the
 * hottest item against DynamoDB's 1,000 WCU/s per item.
 */
import { parseArgs } from 'node:util';
import { PartitionLog } from '../src/log/partition-log.js';
import { ReplicaManager } from '../src/replication/replica-manager.js';
import { MemoryMetadataStore } from '../src/storage/memory-metadata-store.js';
import { MemoryObjectStore } from '../src/storage/memory-object-store.js';
import { ObservedMetadataStore, type StorageCall } from '../src/storage/observed-stores.js';
import type { MetadataStore, MetaItem, QueryOptions, WriteCondition } from '../src/storage/ports.js';
import { TopicRegistry } from '../src/topics/topics.js';

const { values } = parseArgs({
  options: {
    writers: { type: 'string', default: '1,4,16' },
    'latency-ms': { type: 'string', default: '5' },
    seconds: { type: 'string', default: '4' },
  },
});
const latencyMs = Number(values['latency-ms']);
const seconds = Number(values.seconds);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Every call waits `latencyMs` before it reaches the store (a round trip to the table). */
class SlowMetadataStore implements MetadataStore {
  constructor(private readonly inner: MetadataStore) {}
  async get<T>(pk: string, sk: string): Promise<MetaItem<T> | undefined> {
    await sleep(latencyMs);
    return this.inner.get<T>(pk, sk);
  }
  async query<T>(pk: string, o?: QueryOptions): Promise<MetaItem<T>[]> {
    await sleep(latencyMs);
    return this.inner.query<T>(pk, o);
  }
  async put<T>(pk: string, sk: string, value: T, c?: WriteCondition): Promise<MetaItem<T>> {
    await sleep(latencyMs);
    return this.inner.put(pk, sk, value, c);
  }
  async delete(pk: string, sk: string, c?: { ifVersion: number }): Promise<void> {
    await sleep(latencyMs);
    return this.inner.delete(pk, sk, c);
  }
}

async function run(writers: number, partitions: number) {
  const calls: StorageCall[] = [];
  const metadata = new ObservedMetadataStore(new SlowMetadataStore(new MemoryMetadataStore()), (c) => calls.push(c));
  const stores = [new MemoryObjectStore()];
  const clock = { now: () => Date.now() };
  const topics = new TopicRegistry(metadata, clock, 1);
  const topic = await topics.create({ name: 't', partitionCount: partitions, replicationFactor: 1, configs: {} });
  const logs = Array.from(
    { length: writers },
    () =>
      new PartitionLog({
        metadata,
        stores,
        clock,
        leadership: new ReplicaManager({ metadata, stores, clock }),
      }),
  );
  calls.length = 0;
  let commits = 0;
  const until = Date.now() + seconds * 1000;
  await Promise.all(
    logs.map(async (log, w) => {
      const record = { key: null, value: Buffer.from(`w${w}`), headers: [], timestamp: Date.now() };
      while (Date.now() < until) {
        const out = (await log.append(topic, [{ partition: w % partitions, records: [record] }])).get(w % partitions)!;
        if (out.ok) commits++;
      }
    }),
  );
  const states = calls.filter(
    (c): c is Extract<StorageCall, { op: 'UpdateItem' }> => c.op === 'UpdateItem' && c.sk === 'state',
  );
  const failed = states.filter((c) => c.conditionFailed).length;
  const hottest = new Map<string, number>();
  for (const c of states) hottest.set(c.pk, (hottest.get(c.pk) ?? 0) + Math.max(1, Math.ceil(c.itemBytes / 1024)));
  return {
    writers,
    items: partitions,
    commitsPerSecond: Math.round(commits / seconds),
    failedWritesPerCommit: Number((failed / Math.max(1, commits)).toFixed(2)),
    hottestItemWcuPerSecond: Math.round(Math.max(...hottest.values()) / seconds),
  };
}

console.log(`metadata latency ${latencyMs} ms per call, ${seconds} s per cell`);
console.log('| writers | items | commits/s | failed writes per commit | WCU/s on the hottest item |');
console.log('| --: | --: | --: | --: | --: |');
for (const w of values.writers.split(',').map(Number)) {
  for (const items of [1, 12]) {
    const r = await run(w, items);
    console.log(
      `| ${r.writers} | ${r.items} | ${r.commitsPerSecond} | ${r.failedWritesPerCommit} | ${r.hottestItemWcuPerSecond} |`,
    );
  }
}
