/**
 * `npm run bench:request-cost [-- --requests N] [-- --concurrency C]`: the server CPU of one small
 * request, the fixed cost every produce and fetch pays. The app runs in this process on the local
 * backend (pack files + SQLite, in a temporary directory) and is driven through `app.request()`,
 * without sockets, so the figure is our code's CPU time per request (process.cpuUsage), far less
 * sensitive to other work on the machine than a rate is:
 *  - produce: one RecordBatch of one 1 KiB record (POST .../partitions/0/records, acks=all);
 *  - fetch: the record-batch fetch of up to 4 KiB (three or four 1-record objects) at an offset.
 * Under `node --cpu-prof --import tsx bench/request-cost.ts` it profiles both.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { createServices, openStorage } from '../src/compose.js';
import { serverConfigFromEnv } from '../src/config/server-config.js';
import { createApp } from '../src/http/app.js';
import { RECORD_BATCH_MEDIA_TYPE } from '../src/wire/protocol.js';
import { encodeRecordBatch } from '../src/wire/record-batch.js';

const { values } = parseArgs({
  options: { requests: { type: 'string', default: '3000' }, concurrency: { type: 'string', default: '8' } },
});
const REQUESTS = Number(values.requests);
const CONCURRENCY = Number(values.concurrency);

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

await measure('produce (warm-up)', () => produce());
await measure('produce', () => produce());
await measure('fetch', (i) => fetchAt(i % REQUESTS));
storage.close();
rmSync(dir, { recursive: true, force: true });
