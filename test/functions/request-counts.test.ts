/**
 * The storage requests the code makes per produce and per fetch, measured through the same
 * instrumentation the Lambda functions use (functions/instrumented-storage.ts), at the batch sizes
 * of docs/cost-model.md. The doc's tables are derived from these numbers; this test pins them, so
 * a change in the write or read path that changes the cost shows up here first.
 */
import { describe, expect, it } from 'vitest';
import { instrumentStorage } from '../../functions/instrumented-storage.js';
import type { StorageCall } from '../../src/storage/observed-stores.js';
import { LAMBDA_PAYLOAD_LIMITS } from '../../infra/log-stack.js';
import { createServices, createStorage } from '../../src/compose.js';
import { FOLD_AFTER_ENTRIES } from '../../src/partition/shard-state.js';
import { serverConfigFromEnv } from '../../src/config/server-config.js';
import { createApp } from '../../src/http/app.js';

const KiB = 1024;
const MiB = 1024 * KiB;
const RECORD = 1 * KiB; // value bytes per record
const MAX_MESSAGE_BYTES = 1048588; // the topic default

interface Counts {
  s3Put: number;
  s3Get: number;
  s3Head: number;
  ddbGet: number;
  ddbQuery: number;
  ddbUpdate: number;
  /** Read request units: strongly consistent, 4 KB each, per item (GetItem) or per query result. */
  rru: number;
  /** Write request units: 1 KB each, per item written. */
  wru: number;
  bodyBytes: number;
}

function tally(calls: StorageCall[], bodyBytes = 0): Counts {
  const c: Counts = { s3Put: 0, s3Get: 0, s3Head: 0, ddbGet: 0, ddbQuery: 0, ddbUpdate: 0, rru: 0, wru: 0, bodyBytes };
  for (const call of calls) {
    // The quota set, read by an instance at most every 5 s (docs/security.md): a slow run sees it
    // on some requests, a fast one on none; not a cost of the request.
    if (call.op === 'Query' && call.pk === 'quota') continue;
    if (call.op === 'PutObject') c.s3Put++;
    else if (call.op === 'GetObject') c.s3Get++;
    else if (call.op === 'HeadObject') c.s3Head++;
    else if (call.op === 'GetItem') {
      c.ddbGet++;
      c.rru += Math.max(1, Math.ceil(call.itemBytes / 4096));
    } else if (call.op === 'Query') {
      c.ddbQuery++;
      c.rru += Math.max(1, Math.ceil(call.itemBytes / 4096));
    } else if (call.op === 'UpdateItem') {
      c.ddbUpdate++;
      c.wru += Math.max(1, Math.ceil(call.itemBytes / 1024));
    }
  }
  return c;
}

async function measure(batchBytes: number) {
  const calls: StorageCall[] = [];
  // The topic is read once and then served from the topic cache: an hour's cache age keeps a slow
  // run from reading it again mid-measurement (the counts are per request, not per second). The
  // same for the topic's push subscription list: queried by the first produce, then reused.
  const config = serverConfigFromEnv({
    STORAGE_BACKEND: 'memory',
    CLUSTER_ID: 'c',
    TOPIC_METADATA_MAX_AGE_MS: '3600000',
    PUSH_SUBSCRIPTION_CACHE_MS: '3600000',
    ...LAMBDA_PAYLOAD_LIMITS,
  });
  const storage = instrumentStorage(createStorage(config.backend), (c) => calls.push(c));
  const app = createApp(createServices(config, storage), { logError: () => {} });
  const request = async (method: string, path: string, body?: unknown) => {
    const text = body === undefined ? undefined : JSON.stringify(body);
    calls.length = 0;
    const res = await app.request(`/v3/clusters/c/${path}`, {
      method,
      headers: { 'content-type': 'application/json' },
      body: text,
    });
    const json = (await res.json()) as { records: unknown[]; next_offset: number };
    return {
      status: res.status,
      json,
      counts: tally(calls, text ? Buffer.byteLength(text) : 0),
      responseBytes: JSON.stringify(json).length,
    };
  };
  expect((await request('POST', 'topics', { topic_name: 't', partitions_count: 1 })).status).toBe(201);

  const value = Buffer.alloc(RECORD, 7).toString('base64');
  const entries = Array.from({ length: batchBytes / RECORD }, (_, i) => ({
    id: String(i),
    value: { type: 'BINARY', data: value },
  }));
  const produces: Counts[] = [];
  // Enough requests for several fetches' worth of data, at least 4 MiB.
  const requests = Math.max(4, Math.ceil((4 * MiB) / batchBytes));
  let storedBytes = 0;
  for (let i = 0; i < requests; i++) {
    const r = await request('POST', 'topics/t/records:batch', { entries });
    expect(r.status).toBe(207);
    produces.push(r.counts);
  }
  // The last request's object (calls hold the last request's calls only).
  for (const c of calls) if (c.op === 'PutObject') storedBytes = c.bytes;

  const fetches: (Counts & { records: number; responseBytes: number })[] = [];
  for (let offset = 0; offset < requests * entries.length; ) {
    const r = await request('GET', `topics/t/partitions/0/records?offset=${offset}`);
    expect(r.status).toBe(200);
    fetches.push({ ...r.counts, records: r.json.records.length, responseBytes: r.responseBytes });
    offset = r.json.next_offset;
  }
  return { produces, fetches, storedBytes, recordsPerBatch: entries.length };
}

const SIZES = [16 * KiB, 256 * KiB, 1 * MiB];

describe('storage requests per produce and fetch request (one partition, replication factor 1, 1 KiB records)', () => {
  it.each(SIZES)('batch of %i bytes', async (batchBytes) => {
    const { produces, fetches, storedBytes, recordsPerBatch } = await measure(batchBytes);
    // Not the last: every 64th entry of the topic's commit log folds it (below).
    const steady = produces.at(-2)!;
    // Produce (a topic with a commit log, docs/architecture.md "One conditional write per
    // request"): one object PUT; the entries of the shard's log since this process last resolved
    // the partition (one Query, beside the PUT; the topic comes from the topic cache, read once
    // per TOPIC_METADATA_MAX_AGE_MS); one log entry. The topic's
    // push subscriptions are queried by the first produce only (none here; then the list is
    // reused for PUSH_SUBSCRIPTION_CACHE_MS).
    expect(steady).toMatchObject({ s3Put: 1, s3Get: 0, ddbGet: 0, ddbQuery: 1, ddbUpdate: 1, rru: 1, wru: 1 });
    // The first also arms the timer that folds the shard by age (partition/fold-watch.ts): once per
    // shard per hour of a process's writes.
    expect(produces[0]).toMatchObject({ s3Put: 1, ddbUpdate: 2 });
    // The fold writes the partition's state and its packed index item once per 64 entries.
    const wru = produces.slice(1).reduce((a, p) => a + p.wru, 0) / (produces.length - 1);
    expect(wru).toBeLessThan(1.2);
    // Each produce request is one object, so a fetch GETs one range per produce request it spans:
    // as many whole ones as fit in max_bytes (1 MiB), at least one.
    const full = fetches.slice(0, -1);
    const batchesPerFetch = Math.max(1, Math.floor(MiB / storedBytes));
    // A fetch reads the partition's state from the shard's commit log (one Query), which brings the
    // commits not yet folded into the index: a fetch of those reads nothing else. Fewer requests
    // than a fold's worth are all such commits; else the index is read too (its floor and a page).
    const fromLogAlone = produces.length < FOLD_AFTER_ENTRIES;
    const queries = fromLogAlone ? 1 : 3;
    if (storedBytes < MAX_MESSAGE_BYTES) {
      for (const f of full)
        expect(f).toMatchObject({
          s3Get: batchesPerFetch,
          // The topic is cached.
          ddbGet: 0,
          ddbQuery: queries,
          records: batchesPerFetch * recordsPerBatch,
        });
    } else {
      // A request over max.message.bytes is stored as several batches, and a fetch keeps to
      // max_bytes per batch (Kafka's granularity), so it takes one batch of the request at a time.
      for (const f of full) expect(f).toMatchObject({ s3Get: 1, ddbGet: 0, ddbQuery: queries });
      expect(full.every((f) => f.records < recordsPerBatch)).toBe(true);
    }
    expect(full.length).toBeGreaterThanOrEqual(3);
    // The read units of a fetch's index queries grow with the items they return: the floor lookup
    // and a page sized to the fetch's bytes (64 commits of 16 KiB), the fold's packed items
    // (partition/index-item.ts) holding 64 commits in under 1 KB, so 1 RRU each; and 1 for the
    // entries of the shard's commit log since the last fold (a few dozen bytes each).
    expect(full[0]!.rru).toBe(queries);
    // Stored bytes: the record batches, a few dozen bytes of overhead per batch.
    expect(storedBytes).toBeGreaterThan(batchBytes);
    expect(storedBytes).toBeLessThan(batchBytes * 1.02);
    // The JSON response stays well under Lambda's 6 MB limit.
    for (const f of full) expect(f.responseBytes).toBeLessThan(2 * MiB);
    console.log(
      JSON.stringify({
        batchBytes,
        produceRequestBodyBytes: steady.bodyBytes,
        storedBytesPerBatch: storedBytes,
        produce: steady,
        fetch: full[0],
        fetchResponseBytes: full[0]?.responseBytes,
      }),
    );
  });
});
