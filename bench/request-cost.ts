/**
 * `npm run bench:request-cost [-- --requests N] [-- --concurrency C] [-- --wru-only] [-- --json]`: the server
 * CPU of one small request, the fixed cost every produce and fetch pays, and (`writeUnitsPerRequest`
 * below) what one multi-partition produce request costs in DynamoDB write units at 1, 12 and 100
 * partitions. The app runs in this process on the local
 * backend (pack files + SQLite, in a temporary directory) and is driven through `app.request()`,
 * without sockets, so the figure is our code's CPU time per request (process.cpuUsage), far less
 * sensitive to other work on the machine than a rate is:
 *  - produce: one RecordBatch of one 1 KiB record (POST .../partitions/0/records, acks=all);
 *  - fetch: the record-batch fetch of up to 4 KiB (three or four 1-record objects) at an offset.
 * With `--json`, the JSON path instead: a records:batch produce of 1000 STRING values of 1 KiB (the
 * bench's json body, bench/payload.ts) and the format=string fetch of 1000 of them (max_bytes 1 MiB),
 * the JS heap one such produce allocates (sampled), and the CPU of reading that body alone (the
 * best of several rounds).
 * Under `node --cpu-prof --import tsx bench/request-cost.ts` it profiles both.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Session } from 'node:inspector/promises';
import { parseArgs } from 'node:util';
import { createServices, createStorage, openStorage } from '../src/compose.js';
import { serverConfigFromEnv } from '../src/config/server-config.js';
import { createApp } from '../src/http/app.js';
import { countOperations } from '../src/storage/counting-stores.js';
import { FOLD_AFTER_ENTRIES } from '../src/partition/shard-state.js';
import { encodeTopicData, PRODUCE_REQUEST_MEDIA_TYPE } from '../src/wire/produce-request.js';
import { RECORD_BATCH_MEDIA_TYPE } from '../src/wire/protocol.js';
import { encodeRecordBatch } from '../src/wire/record-batch.js';
import { readBatchBody } from '../src/http/batch-body.js';
import { produceBody } from './payload.js';

const { values } = parseArgs({
  options: {
    // Default: 3,000 of the small requests, 200 of the JSON ones (`REQUESTS`).
    requests: { type: 'string' },
    concurrency: { type: 'string', default: '8' },
    'wru-only': { type: 'boolean', default: false },
    json: { type: 'boolean', default: false },
  },
});
/**
 * Requests per measure. A 1-record request takes about 150 us of CPU, a JSON one of 1000 records
 * about 8 ms: 3,000 of the one and 200 of the other are each a second or two of CPU. Runs of 200
 * JSON requests moved no more from one to the next than runs of 1,000 did (13-40% over three of
 * each, alternated, at load average 15-17): the machine's load moves the figure, not the count.
 */
const REQUESTS = Number(values.requests ?? (values.json ? 200 : 3000));
const CONCURRENCY = Number(values.concurrency);

/**
 * DynamoDB write units (counting-stores.ts's estimate: 1 per KB of each item written) of one
 * produce request of ~1 MB (1,000 records of 1 KiB) spread over every partition of a P-partition topic,
 * as keyless records spread by the client reach the server (POST /records, one batch per
 * partition), plain and idempotent. On the memory backend, which takes DynamoDB's paths (no
 * `putAll`: the index entry is its own write). Topics are created at the cluster's newest feature
 * level, so they commit through their shard's log (docs/architecture.md, "One conditional write per
 * request"), whose fold into the partition states and the index runs once per FOLD_AFTER_ENTRIES
 * requests: the figure is the mean over `ROUNDS` requests after the first (which makes the states),
 * folds included, and the first of them alone.
 */
/** Requests measured per cell: two folds' worth. */
const ROUNDS = 2 * FOLD_AFTER_ENTRIES;

async function writeUnitsPerRequest(): Promise<void> {
  for (const partitions of [1, 12, 100]) {
    for (const idempotent of [false, true]) {
      const config = serverConfigFromEnv({ STORAGE_BACKEND: 'memory', CLUSTER_ID: 'c' });
      const plain = createStorage(config.backend);
      const counted = countOperations(plain.metadata, plain.stores);
      const app = createApp(createServices(config, { ...plain, metadata: counted.metadata, stores: counted.stores }), {
        logError: () => {},
      });
      const json = async (path: string, body: unknown) => {
        const res = await app.request(`/v3/clusters/c/${path}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(body),
        });
        return (await res.json()) as Record<string, number>;
      };
      await json('topics', { topic_name: 't', partitions_count: partitions });
      const id = idempotent ? await json('producers:init', {}) : undefined;
      const perPartition = Math.max(1, Math.floor(1000 / partitions));
      const value = new Uint8Array(1024).fill(97);
      let units = 0;
      let conditional = 0;
      let first = 0;
      for (let round = 0; round <= ROUNDS; round++) {
        const body = encodeTopicData([
          {
            name: 't',
            partitions: Array.from({ length: partitions }, (_, p) => ({
              index: p,
              records: encodeRecordBatch(
                Array.from({ length: perPartition }, () => ({ key: null, value, headers: [], timestamp: Date.now() })),
                {
                  partitionLeaderEpoch: -1,
                  ...(id
                    ? {
                        producerId: id.producer_id,
                        producerEpoch: id.producer_epoch,
                        baseSequence: round * perPartition,
                      }
                    : {}),
                },
              ),
            })),
          },
        ]);
        const before = counted.snapshot().metadata;
        const res = await app.request('/v3/clusters/c/records', {
          method: 'POST',
          headers: { 'content-type': PRODUCE_REQUEST_MEDIA_TYPE },
          body,
        });
        if (res.status !== 200) throw new Error(`produce: ${res.status} ${await res.text()}`);
        const answer = (await res.json()) as { responses: { partition_responses: { error_code: number }[] }[] };
        if (answer.responses.some((t) => t.partition_responses.some((p) => p.error_code !== 0)))
          throw new Error(`produce: ${JSON.stringify(answer)}`);
        const after = counted.snapshot().metadata;
        if (round === 0) continue;
        units += after.writeUnits - before.writeUnits;
        conditional += after.conditionalPut - before.conditionalPut;
        if (round === 1) first = after.writeUnits - before.writeUnits;
      }
      console.log(
        `write units per request: P=${partitions} ${idempotent ? 'idempotent' : 'plain'}: ${(units / ROUNDS).toFixed(2)} WRU mean over ${ROUNDS} requests, folds included (${first} on a request without a fold; ${(conditional / ROUNDS).toFixed(2)} conditional writes), ${partitions * perPartition} KiB`,
      );
    }
  }
}

if (values['wru-only']) {
  await writeUnitsPerRequest();
  process.exit(0);
}

const dir = mkdtempSync(join(tmpdir(), 'request-cost-'));
const config = serverConfigFromEnv({ STORAGE_BACKEND: 'local', DATA_DIR: dir, CLUSTER_ID: 'local' });
const storage = await openStorage(config.backend);
const app = createApp(createServices(config, storage), { logError: () => {} });
const B = '/v3/clusters/local';

const created = await app.request(`${B}/topics`, {
  method: 'POST',
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify({ topic_name: 't', partitions_count: 1 }),
});
if (created.status !== 201) throw new Error(`create topic: ${created.status} ${await created.text()}`);
const record = { key: null, value: new Uint8Array(1024).fill(97), headers: [], timestamp: Date.now() };

async function produce(): Promise<void> {
  const res = await app.request(`${B}/topics/t/partitions/0/records`, {
    method: 'POST',
    headers: { 'content-type': RECORD_BATCH_MEDIA_TYPE },
    body: encodeRecordBatch([record]),
  });
  if (res.status !== 200) throw new Error(`produce: ${res.status} ${await res.text()}`);
  await res.arrayBuffer();
}

async function fetchAt(offset: number): Promise<void> {
  const res = await app.request(`${B}/topics/t/partitions/0/records?offset=${offset}&max_bytes=4096`, {
    headers: { accept: RECORD_BATCH_MEDIA_TYPE },
  });
  if (res.status !== 200) throw new Error(`fetch: ${res.status} ${await res.text()}`);
  await res.arrayBuffer();
}

/** `op(i)` for i in [0, REQUESTS), CONCURRENCY at a time; CPU and wall time per request. */
async function measure(name: string, op: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  const cpu = process.cpuUsage();
  const start = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < REQUESTS) await op(next++);
    }),
  );
  const used = process.cpuUsage(cpu);
  const seconds = (performance.now() - start) / 1000;
  const per = (us: number) => Math.round(us / REQUESTS);
  console.log(
    `${name}: ${per(used.user + used.system)} us CPU per request (user ${per(used.user)}, system ${per(used.system)}), ${Math.round(REQUESTS / seconds)} requests/s`,
  );
}

const jsonBody = produceBody(1000);

async function produceJson(): Promise<void> {
  const res = await app.request(`${B}/topics/t/records:batch`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: jsonBody,
  });
  if (res.status !== 207) throw new Error(`produce: ${res.status} ${await res.text()}`);
  await res.arrayBuffer();
}

async function fetchJsonAt(offset: number): Promise<void> {
  const res = await app.request(`${B}/topics/t/partitions/0/records?offset=${offset}&max_bytes=1048576&format=string`);
  if (res.status !== 200) throw new Error(`fetch: ${res.status} ${await res.text()}`);
  await res.arrayBuffer();
}

/**
 * The CPU of reading the json body alone (src/http/batch-body.ts), the best of 15 rounds: on a
 * machine shared with other work, the best round is the figure that moves least with the load.
 */
function measureBodyRead(): void {
  const rounds: number[] = [];
  for (let round = 0; round < 16; round++) {
    const cpu = process.cpuUsage();
    for (let i = 0; i < 50; i++) readBatchBody(jsonBody);
    const used = process.cpuUsage(cpu);
    if (round > 0) rounds.push((used.user + used.system) / 50); // the first warms up
  }
  console.log(`json body read, 1000 records: ${Math.round(Math.min(...rounds))} us CPU (best of 15 rounds of 50)`);
}

/**
 * JS heap allocated per JSON produce, whether it lived or not: the sampling heap profiler, counting
 * objects young and full collections took, over 50 requests. Unlike CPU, it does not move with the
 * machine's load; the young collections it causes do (unless external memory starts them first:
 * docs/performance.md, "The JSON path").
 */
async function measureHeapPerProduce(): Promise<void> {
  const session = new Session();
  session.connect();
  await session.post('HeapProfiler.startSampling', {
    samplingInterval: 1024,
    includeObjectsCollectedByMajorGC: true,
    includeObjectsCollectedByMinorGC: true,
  });
  const requests = 50;
  for (let i = 0; i < requests; i += 2) await Promise.all([produceJson(), produceJson()]);
  const { profile } = await session.post('HeapProfiler.stopSampling');
  session.disconnect();
  let bytes = 0;
  const walk = (node: { selfSize: number; children: (typeof node)[] }) => {
    bytes += node.selfSize;
    for (const child of node.children) walk(child);
  };
  walk(profile.head);
  console.log(
    `json produce, 1000 records: ${Math.round(bytes / requests / 1024)} KB of JS heap allocated per request (sampled)`,
  );
}

if (values.json) {
  measureBodyRead();
  await measure('json produce, 1000 records (warm-up)', () => produceJson());
  await measureHeapPerProduce();
  await measure('json produce, 1000 records', () => produceJson());
  await measure('json fetch, 1000 records', (i) => fetchJsonAt((i % (2 * REQUESTS)) * 1000));
} else {
  await measure('produce (warm-up)', () => produce());
  await measure('produce', () => produce());
  await measure('fetch', (i) => fetchAt(i % REQUESTS));
  await writeUnitsPerRequest();
}
storage.close();
rmSync(dir, { recursive: true, force: true });
