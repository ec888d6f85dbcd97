/**
 * bench:share's workload with the server in this process, to see where a receive and an
 * acknowledgement spend their storage calls: share-partition reads, conditional writes and the
 * writes that lost their race (failed conditions), per request. Not a throughput figure (the server
 * shares this process's event loop with the 20 workers): bench/share.ts is.
 *
 *   SHARE_RECORDS=12000 npx tsx bench/share-profile.ts [batched|individual]
 */
import { serve } from '@hono/node-server';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Kafka } from '../src/client/index.js';
import { createServices, openStorage } from '../src/compose.js';
import { serverConfigFromEnv } from '../src/config/server-config.js';
import { createApp } from '../src/http/app.js';
import { ShareGroups } from '../src/share/share-groups.js';
import { observeStorage, type StorageCall } from '../src/storage/observed-stores.js';

const WORKERS = 20;
const RECORDS = Number(process.env.SHARE_RECORDS ?? 12_000);
const mode = (process.argv[2] ?? 'batched') as 'batched' | 'individual';

const dir = await mkdtemp(join(tmpdir(), 'bench-share-profile-'));
const config = serverConfigFromEnv({ DATA_DIR: dir });
const counts = new Map<string, number>();
const count = (what: string) => counts.set(what, (counts.get(what) ?? 0) + 1);
let counting = false;
const onCall = (c: StorageCall) => {
  if (!counting) return;
  if (c.port === 'object') return count(`object ${c.op}`);
  const what = 'sk' in c ? (c.sk.startsWith('sp#') ? 'share-partition' : c.sk.split('#')[0]) : `${c.pk} query`;
  count(`${c.op} ${what}`);
  if (c.op === 'UpdateItem' && c.conditionFailed) count(`UpdateItem ${what} condition failed`);
  // The size DynamoDB bills a share-partition write by (write units are per KB).
  if (c.op === 'UpdateItem' && what === 'share-partition' && !c.conditionFailed)
    counts.set('share-partition bytes written', (counts.get('share-partition bytes written') ?? 0) + c.itemBytes);
};
// Per share-partition visited by a receive: how many records it gave.
const acquireFrom = ShareGroups.prototype.acquireFrom;
ShareGroups.prototype.acquireFrom = async function (this: ShareGroups, ...args: Parameters<typeof acquireFrom>) {
  const t0 = performance.now();
  try {
    const got = await acquireFrom.apply(this, args);
    if (counting) count(`acquireFrom gave ${got.length === 0 ? 'none' : got.length < args[4] ? 'some' : 'all asked'}`);
    return got;
  } catch (e) {
    if (counting) count(`acquireFrom threw ${(e as { errorName?: string }).errorName}`);
    throw e;
  } finally {
    if (counting)
      counts.set('acquireFrom ms', (counts.get('acquireFrom ms') ?? 0) + Math.round(performance.now() - t0));
  }
};
const acquireAll = ShareGroups.prototype.acquire;
ShareGroups.prototype.acquire = async function (this: ShareGroups, ...args: Parameters<typeof acquireAll>) {
  const got = await acquireAll.apply(this, args);
  if (counting) count(`look (acquire) took ${got.length === 0 ? 'nothing' : 'records'}`);
  return got;
};
const storage = observeStorage(await openStorage(config.backend), onCall);
const services = createServices(config, storage);
const app = createApp(services, { logError: () => {} });
const fetch = async (req: Request) => {
  const t0 = performance.now();
  const res = await app.fetch(req);
  if (counting) {
    const route = new URL(req.url).pathname.split(':').pop();
    count(`request ${route} ${res.status}`);
    counts.set(`request ${route} ms`, (counts.get(`request ${route} ms`) ?? 0) + Math.round(performance.now() - t0));
  }
  return res;
};
const server = serve({ fetch, port: 0, hostname: '127.0.0.1' });
await new Promise((r) => server.once('listening', r));
const { port } = server.address() as { port: number };
try {
  const kafka = new Kafka({ url: `http://127.0.0.1:${port}/v3/clusters/local` });
  await kafka.admin().createTopics({ topics: [{ topic: 'share-bench', numPartitions: 12 }] });
  const producer = kafka.producer();
  for (let i = 0; i < RECORDS; i += 1000)
    await producer.send({
      topic: 'share-bench',
      messages: Array.from({ length: 1000 }, (_, j) => ({ key: `k${i + j}`, value: 'x'.repeat(100) })),
    });
  await producer.disconnect();
  await kafka.admin().alterShareGroupConfigs('profile', { 'share.auto.offset.reset': 'earliest' });
  counting = true;
  let acked = 0;
  let pollMs = 0;
  let emptyMs = 0;
  let ackMs = 0;
  const start = performance.now();
  await Promise.all(
    Array.from({ length: WORKERS }, async (_, w) => {
      const c = kafka.shareConsumer({
        groupId: 'profile',
        memberId: `w${w}`,
        maxPollRecords: 100,
        acknowledgementMode: 'explicit',
      });
      c.subscribe(['share-bench']);
      let idle = 0;
      while (acked < RECORDS && idle < 5) {
        const t0 = performance.now();
        const got = await c.poll(200);
        const ms = performance.now() - t0;
        pollMs += ms;
        count(`poll answered ${got.length === 0 ? 'empty' : got.length < 100 ? 'short' : 'full'}`);
        if (got.length === 0) emptyMs += ms;
        if (got.length === 0) {
          idle++;
          continue;
        }
        idle = 0;
        for (const r of got) {
          c.acknowledge(r, 'accept');
          if (mode === 'individual') await c.commitSync();
        }
        const t1 = performance.now();
        if (mode === 'batched') await c.commitSync();
        ackMs += performance.now() - t1;
        acked += got.length;
      }
      await c.close();
    }),
  );
  const seconds = (performance.now() - start) / 1000;
  counting = false;
  console.log(`${mode}: ${acked} records in ${seconds.toFixed(1)} s (in-process, not a throughput figure)`);
  console.log(
    `  worker time: polls ${(pollMs / 1000).toFixed(1)} s (empty ones ${(emptyMs / 1000).toFixed(1)} s), batched commits ${(ackMs / 1000).toFixed(1)} s`,
  );
  const writes = counts.get('UpdateItem share-partition') ?? 0;
  const written = counts.get('share-partition bytes written') ?? 0;
  counts.delete('share-partition bytes written');
  for (const [what, n] of [...counts].sort()) console.log(`  ${what}: ${n}`);
  console.log(`  share-partition item written: ${Math.round(written / Math.max(1, writes))} bytes on average`);
} finally {
  server.close();
}
process.exit(0);
