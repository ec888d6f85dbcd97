/**
 * What one commit costs in DynamoDB write units (1 KB each, per item written), measured through
 * the functions' instrumentation: a one-partition produce at 1, 10 and 100 active idempotent
 * producers (the partition state carries each one's last batch and is rewritten whole), and a
 * multi-partition produce over 12 partitions. docs/cost-model.md and docs/performance.md quote these.
 */
import { describe, expect, it } from 'vitest';
import { instrumentStorage } from '../../functions/instrumented-storage.js';
import type { StorageCall } from '../../src/storage/observed-stores.js';
import { createServices, createStorage } from '../../src/compose.js';
import { serverConfigFromEnv } from '../../src/config/server-config.js';
import { createApp } from '../../src/http/app.js';
import { RECORD_BATCH_MEDIA_TYPE } from '../../src/http/record-batch-body.js';
import { encodeTopicData, PRODUCE_REQUEST_MEDIA_TYPE } from '../../src/wire/produce-request.js';
import { encodeRecordBatch } from '../../src/wire/record-batch.js';

const wru = (calls: StorageCall[]) =>
  calls.reduce((n, c) => n + (c.op === 'UpdateItem' ? Math.max(1, Math.ceil(c.itemBytes / 1024)) : 0), 0);

function setup() {
  const calls: StorageCall[] = [];
  const config = serverConfigFromEnv({ STORAGE_BACKEND: 'memory', CLUSTER_ID: 'c' });
  const storage = instrumentStorage(createStorage(config.backend), (c) => calls.push(c));
  const app = createApp(createServices(config, storage), { logError: () => {} });
  const call = async (method: string, path: string, body?: unknown) => {
    const res = await app.request(`/v3/clusters/c/${path}`, {
      method,
      headers: { 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return (await res.json()) as Record<string, any>;
  };
  return { calls, app, call };
}

const records = (n: number) =>
  Array.from({ length: n }, (_, i) => ({
    key: null,
    value: Buffer.alloc(1024, i),
    headers: [],
    timestamp: Date.now(),
  }));

describe('write units per commit', () => {
  it.each([1, 10, 100])('one partition, %i active idempotent producers', async (producers) => {
    const { calls, app, call } = setup();
    await call('POST', 'topics', { topic_name: 't', partitions_count: 1 });
    const ids: { producerId: number; producerEpoch: number; seq: number }[] = [];
    for (let i = 0; i < producers; i++) {
      const r = await call('POST', 'producers:init', {});
      ids.push({ producerId: r.producer_id, producerEpoch: r.producer_epoch, seq: 0 });
    }
    let last = 0;
    // Every producer writes once (the state then carries all of them), then each commit is measured.
    for (let round = 0; round < 2; round++) {
      for (const p of ids) {
        calls.length = 0;
        const body = encodeRecordBatch(records(16), {
          partitionLeaderEpoch: -1,
          producerId: p.producerId,
          producerEpoch: p.producerEpoch,
          baseSequence: p.seq,
        });
        const res = await app.request('/v3/clusters/c/topics/t/partitions/0/records', {
          method: 'POST',
          headers: { 'content-type': RECORD_BATCH_MEDIA_TYPE },
          body,
        });
        expect(res.status).toBe(200);
        p.seq += 16;
        last = wru(calls);
      }
    }
    const state = calls.find((c) => c.op === 'UpdateItem' && c.sk === 'state') as Extract<
      StorageCall,
      { op: 'UpdateItem' }
    >;
    console.log(JSON.stringify({ producers, wruPerCommit: last, stateBytes: state.itemBytes }));
    // State and index entry (older duplicates are found in the index). The state keeps the 64 most
    // recent producers (feature level 5; ~10-30 bytes each) and the ring of recent commit tokens
    // (~300 bytes). Past 64, the producer that leaves the state is written to its own item first
    // (src/partition/producer-state.ts): with 100 producers taking turns every commit evicts one, so
    // 1 WRU more (4) than when all of them fitted in the state; in exchange the state stays at 2 WRU
    // however many producers there are (test/partition/producer-items.test.ts: 500 producers).
    expect(Math.ceil(state.itemBytes / 1024)).toBeLessThanOrEqual({ 1: 1, 10: 2, 100: 2 }[producers]!);
    expect(last).toBeLessThanOrEqual({ 1: 2, 10: 3, 100: 4 }[producers]!);
  });

  it.each([
    ['plain', false],
    ['idempotent (the client default)', true],
  ])('one %s request over 12 partitions', async (_, idempotent) => {
    const { calls, app, call } = setup();
    await call('POST', 'topics', { topic_name: 't', partitions_count: 12 });
    const id = idempotent ? await call('POST', 'producers:init', {}) : undefined;
    const body = (round: number) =>
      encodeTopicData([
        {
          name: 't',
          partitions: Array.from({ length: 12 }, (_, p) => ({
            index: p,
            records: encodeRecordBatch(records(8), {
              partitionLeaderEpoch: -1,
              ...(id ? { producerId: id.producer_id, producerEpoch: id.producer_epoch, baseSequence: round * 8 } : {}),
            }),
          })),
        },
      ]);
    for (let i = 0; i < 2; i++) {
      calls.length = 0;
      const res = await app.request('/v3/clusters/c/records', {
        method: 'POST',
        headers: { 'content-type': PRODUCE_REQUEST_MEDIA_TYPE },
        body: body(i),
      });
      expect(res.status).toBe(200);
    }
    const puts = calls.filter((c) => c.op === 'PutObject').length;
    console.log(JSON.stringify({ partitions: 12, idempotent, wruPerRequest: wru(calls), objectPuts: puts }));
    expect(puts).toBe(1);
    // Each partition still commits on its own: its state and its index entry (no producer item).
    expect(wru(calls)).toBe(24);
  });

  it('one request, one partition', async () => {
    const { calls, app, call } = setup();
    await call('POST', 'topics', { topic_name: 't', partitions_count: 1 });
    for (let i = 0; i < 2; i++) {
      calls.length = 0;
      const res = await app.request('/v3/clusters/c/topics/t/partitions/0/records', {
        method: 'POST',
        headers: { 'content-type': RECORD_BATCH_MEDIA_TYPE },
        body: encodeRecordBatch(records(8), { partitionLeaderEpoch: -1 }),
      });
      expect(res.status).toBe(200);
    }
    console.log(JSON.stringify({ partitions: 1, wruPerRequest: wru(calls) }));
    expect(wru(calls)).toBe(2);
  });
});
