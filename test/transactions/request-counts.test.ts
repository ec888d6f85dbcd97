/**
 * Storage requests per transaction (docs/cost-model.md), pinned: one transactional produce request
 * of 1000 records to one partition, its offsets, and the commit, next to the same produce without
 * a transaction. Counted by the same store instrumentation the benchmark uses.
 */
import { describe, expect, it } from 'vitest';
import { createServices, createStorage } from '../../src/compose.js';
import { serverConfigFromEnv } from '../../src/config/server-config.js';
import { createApp } from '../../src/http/app.js';
import { BASE } from '../support/test-app.js';

function counted() {
  // An hour's topic cache age: the topic is read once, however slowly the run goes (counts are per request).
  // The same for the push subscription list (one query per topic per bound, not per request).
  const config = serverConfigFromEnv({
    STORAGE_BACKEND: 'memory',
    TOPIC_METADATA_MAX_AGE_MS: '3600000',
    PUSH_SUBSCRIPTION_CACHE_MS: '3600000',
  });
  const services = createServices(config, createStorage(config.backend), undefined, { countOperations: true });
  const app = createApp(services, { logError: () => {} });
  const call = async (method: string, path: string, body?: unknown) => {
    const res = await app.request(`${BASE}/${path}`, {
      method,
      headers: { 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    expect(res.status).toBeLessThan(300);
    return res.json() as Promise<any>;
  };
  const snapshot = () => {
    const c = services.operationCounts!();
    return {
      s3Put: c.objects.put,
      get: c.metadata.get,
      query: c.metadata.query,
      put: c.metadata.put,
      delete: c.metadata.delete,
    };
  };
  const diff = (a: ReturnType<typeof snapshot>, b: ReturnType<typeof snapshot>) =>
    Object.fromEntries(Object.entries(b).map(([k, v]) => [k, v - a[k as keyof typeof a]]));
  return { call, snapshot, diff };
}

const entries = (n: number) =>
  Array.from({ length: n }, (_, i) => ({ id: String(i), partition_id: 0, value: { type: 'STRING', data: `v${i}` } }));

describe('storage requests per transaction', () => {
  it('one partition, 1000 records in one produce, offsets, commit', async () => {
    const t = counted();
    await t.call('POST', 'topics', { topic_name: 'out', partitions_count: 1 });
    await t.call('POST', 'topics', { topic_name: 'in', partitions_count: 1 });
    const idempotent = await t.call('POST', 'producers:init');
    const plainBefore = t.snapshot();
    await t.call('POST', 'topics/out/records:batch', {
      ...idempotent,
      sequences: [{ partition_id: 0, base_sequence: 0 }],
      entries: entries(1000),
    });
    const plain = t.diff(plainBefore, t.snapshot());

    const p = await t.call('POST', 'transactions/eos/init');
    const before = t.snapshot();
    await t.call('POST', 'topics/out/records:batch', {
      transactional_id: 'eos',
      producer_id: p.producer_id,
      producer_epoch: p.producer_epoch,
      sequences: [{ partition_id: 0, base_sequence: 0 }],
      entries: entries(1000),
    });
    const produce = t.diff(before, t.snapshot());
    const beforeOffsets = t.snapshot();
    await t.call('POST', 'transactions/eos/offsets', {
      producer_id: p.producer_id,
      producer_epoch: p.producer_epoch,
      group_id: 'g',
      offsets: [{ topic_name: 'in', partition_id: 0, offset: 1000 }],
    });
    const offsets = t.diff(beforeOffsets, t.snapshot());
    const beforeCommit = t.snapshot();
    await t.call('POST', 'transactions/eos/commit', { producer_id: p.producer_id, producer_epoch: p.producer_epoch });
    const commit = t.diff(beforeCommit, t.snapshot());

    // The idempotent produce, for comparison (the topic commits through its shard's log,
    // docs/architecture.md "One conditional write per request"): 1 PUT; the producer epoch, and on
    // this process's first read of the partition its state item and the shard's fold mark (the
    // topic comes from the topic cache); the shard's entries since (one query, beside the PUT);
    // one log entry (no index entry, no producer item: the fold writes
    // those), and before it the timer that folds the shard by age (this process's first entry in
    // the shard: partition/fold-watch.ts), read and then written, as no process has armed it at
    // this step of the timers' grid; the push notifier's query of the topic's subscriptions
    // (the first produce to the topic; later ones reuse the list).
    expect(plain).toEqual({ s3Put: 1, get: 4, query: 2, put: 2, delete: 0 });
    // The first transactional produce to a partition: the transaction's partition entry, then its state
    // item, read (the partition's resolved state replaces the producer epoch's read); the shard's
    // entries since, once; + the transaction entry, the log entry, the timeout timer and the Ongoing
    // write, which confirms the entry (a later produce to the same partition: 0 more writes).
    expect(produce).toEqual({ s3Put: 1, get: 2, query: 1, put: 4, delete: 0 });
    // Offsets: the offset's entry, the state item and, after the entry and the group's pending-offsets
    // marker are written (KIP-447's require_stable looks there), the state item again to confirm the
    // transaction is still Ongoing; then the HTTP answer's describe (the state item, a query of entries).
    expect(offsets).toEqual({ s3Put: 0, get: 4, query: 1, put: 2, delete: 0 });
    // Commit: PrepareCommit, the query of its entries, one marker (object PUT, the shard's entries
    // since, once, and one log entry), the group's offset (read, then written over its version),
    // CompleteCommit, then the group's pending-offsets marker (read, deleted) and the two entries
    // deleted.
    expect(commit).toEqual({ s3Put: 1, get: 3, query: 2, put: 4, delete: 3 }); // the topics and subscriptions from the caches
  });
});
