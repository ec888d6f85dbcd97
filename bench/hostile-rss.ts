/**
 * The server's resident memory under issue 39's attack, with the limits (their defaults, the pools
 * scaled as below) and without them (pools and caps too large to matter): npm start with SASL
 * users; 40 unauthenticated Kafka connections stalled inside 500 KiB frames, 12 authenticated ones
 * inside 15 MiB frames, 30 HTTP requests inside 8 MiB bodies. RSS is read from /proc before the
 * attack, at its peak, and after the attackers have gone.
 *
 *   npx tsx bench/hostile-rss.ts [--without-limits]
 *
 * Prints one JSON line per run; docs/security.md quotes the figures.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { attack, rssSampler, startTarget } from '../test/support/hostile-clients.js';

const { values: flags } = parseArgs({ options: { 'without-limits': { type: 'boolean', default: false } } });
const MiB = 1024 * 1024;
const huge = String(64 * 1024 * MiB);
const file = join(mkdtempSync(join(tmpdir(), 'hostile-rss-')), 'auth.json');
writeFileSync(file, JSON.stringify({ 'sasl.plain.users': { mallory: 'mallory-secret' } }));
const limits: Record<string, string> = flags['without-limits']
  ? {
      KAFKA_SASL_SERVER_MAX_RECEIVE_SIZE: String(100 * MiB),
      KAFKA_QUEUED_MAX_REQUEST_BYTES: huge,
      KAFKA_MAX_CONNECTIONS_PER_IP: '100000',
      HTTP_QUEUED_MAX_REQUEST_BYTES: huge,
      HTTP_REQUEST_TIMEOUT_MS: '300000',
    }
  : { KAFKA_QUEUED_MAX_REQUEST_BYTES: String(32 * MiB), HTTP_QUEUED_MAX_REQUEST_BYTES: String(32 * MiB) };
const t = await startTarget({
  AUTH_CONFIG: file,
  KAFKA_MAX_FRAME_BYTES: String(16 * MiB),
  HTTP_POOL_WAIT_MS: '20000',
  ...limits,
});
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const created = await fetch(`${t.origin}/v3/clusters/local/topics`, {
  method: 'POST',
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify({ topic_name: 'target' }),
});
if (created.status !== 201) throw new Error(`topic not created: ${created.status}`);
await sleep(1000);
const rss = rssSampler(t);
const { all: held } = await attack(t, 'target');
await sleep(8000);
rss.stop();
for (const h of held) h.socket.destroy();
await sleep(3000);
const after = t.rss();
await t.stop();
const mb = (n: number) => Math.round(n / MiB);
console.log(
  JSON.stringify({
    limits: !flags['without-limits'],
    rssBeforeMiB: mb(rss.before),
    rssPeakMiB: mb(rss.peak()),
    rssAfterMiB: mb(after),
    growthMiB: mb(rss.peak() - rss.before),
    kafkaPoolPeakMiB: mb(t.metrics.get('KafkaMemoryPoolUsedBytes') ?? 0),
    httpPoolPeakMiB: mb(t.metrics.get('HttpMemoryPoolUsedBytes') ?? 0),
  }),
);
