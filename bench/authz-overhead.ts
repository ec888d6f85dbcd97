/**
 * `npm run bench:authz`: what authorization and client quotas cost a produce request. The same
 * in-process app (memory backend, so storage does not hide the difference) produces one record
 * batch per request in four set-ups, interleaved round by round so that machine noise falls on
 * all of them alike:
 *   off      authorization off, no quotas (the local default)
 *   acl      authorization on, a bearer-token principal, 200 ACLs (the granting one PREFIXED)
 *   acl+quota  the same with a producer_byte_rate quota that never throttles
 *   super    authorization on, a super user (the check's shortest path)
 * Prints the CPU time per request of each set-up (chunks of 50 requests, the set-ups taking turns)
 * and its cost against `off`: CPU time, because wall time on a shared machine measures the others.
 *
 * Options: --requests N per round and set-up (default 3000), --rounds N (default 5),
 * --records N per request (default 1; small requests show the per-request cost at its largest).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { createServices, createStorage } from '../src/compose.js';
import { serverConfigFromEnv } from '../src/config/server-config.js';
import { createApp } from '../src/http/app.js';
import { AclIndex } from '../src/authz/acl-index.js';
import type { AclBinding } from '../src/authz/acl.js';
import { encodeRecordBatch } from '../src/wire/record-batch.js';

const { values: opts } = parseArgs({
  options: { requests: { type: 'string' }, rounds: { type: 'string' }, records: { type: 'string' } },
});
const REQUESTS = Number(opts.requests ?? 3000);
const ROUNDS = Number(opts.rounds ?? 5);
const RECORDS = Number(opts.records ?? 1);
const BASE = '/v3/clusters/local';

const dir = mkdtempSync(join(tmpdir(), 'bench-authz-'));
const authFile = join(dir, 'auth.json');
writeFileSync(
  authFile,
  JSON.stringify({
    authorization: true,
    'super.users': 'User:admin',
    tokens: { admin: 'User:admin', app: 'User:app' },
  }),
);

type Setup = 'off' | 'acl' | 'acl+quota' | 'super';

async function setUp(setup: Setup) {
  const env: Record<string, string> = { STORAGE_BACKEND: 'memory', MAX_REQUEST_BYTES: String(64 << 20) };
  if (setup !== 'off') env.AUTH_CONFIG = authFile;
  const config = serverConfigFromEnv(env);
  const app = createApp(createServices(config, createStorage(config.backend)), { logError: () => {}, audit: () => {} });
  const admin = (method: string, path: string, body: unknown) =>
    app.request(`${BASE}/${path}`, {
      method,
      headers: { 'content-type': 'application/json', authorization: 'Bearer admin' },
      body: JSON.stringify(body),
    });
  await admin('POST', 'topics', { topic_name: 'orders.eu' });
  if (setup === 'acl' || setup === 'acl+quota') {
    const acl = (name: string, pattern: string, operation: string) => ({
      resource_type: 'TOPIC',
      resource_name: name,
      pattern_type: pattern,
      principal: 'User:app',
      host: '*',
      operation,
      permission: 'ALLOW',
    });
    const data = [
      acl('orders.', 'PREFIXED', 'WRITE'),
      ...Array.from({ length: 199 }, (_, i) => acl(`other-${i}`, i % 2 ? 'LITERAL' : 'PREFIXED', 'READ')),
    ];
    await admin('POST', 'acls:batch', { data });
  }
  if (setup === 'acl+quota') {
    await admin('POST', 'client-quotas:alter', {
      data: [
        { entity: [{ entity_type: 'user', entity_name: 'app' }], ops: [{ key: 'producer_byte_rate', value: 1e12 }] },
      ],
    });
  }
  const token = setup === 'super' ? 'admin' : 'app';
  const batch = encodeRecordBatch(
    Array.from({ length: RECORDS }, () => ({
      key: null,
      value: Buffer.alloc(1024, 120),
      headers: [],
      timestamp: Date.now(),
    })),
    { partitionLeaderEpoch: -1 },
  );
  const headers = { 'content-type': 'application/vnd.kafka.record-batch.v2', authorization: `Bearer ${token}` };
  return async () => {
    const res = await app.request(`${BASE}/topics/orders.eu/partitions/0/records?acks=1`, {
      method: 'POST',
      headers,
      body: batch,
    });
    if (res.status !== 200) throw new Error(`${setup}: HTTP ${res.status} ${await res.text()}`);
    await res.arrayBuffer();
  };
}

const SETUPS: Setup[] = ['off', 'acl', 'acl+quota', 'super'];
const produce = Object.fromEntries(await Promise.all(SETUPS.map(async (s) => [s, await setUp(s)] as const))) as Record<
  Setup,
  () => Promise<void>
>;
const cpuUs: Record<Setup, number> = { off: 0, acl: 0, 'acl+quota': 0, super: 0 };
const wallMs: Record<Setup, number> = { off: 0, acl: 0, 'acl+quota': 0, super: 0 };

// Chunks of 50 requests, the set-ups taking turns, CPU time counted per set-up: on a busy machine
// (other processes take turns on the cores) CPU time varies far less than wall time.
const CHUNK = 50;
for (const s of SETUPS) for (let i = 0; i < 500; i++) await produce[s](); // warm-up
for (let round = 0; round < ROUNDS; round++) {
  for (let done = 0; done < REQUESTS; done += CHUNK) {
    for (const s of (done / CHUNK) % 2 ? [...SETUPS].reverse() : SETUPS) {
      const cpu = process.cpuUsage();
      const started = performance.now();
      for (let i = 0; i < CHUNK; i++) await produce[s]();
      wallMs[s] += performance.now() - started;
      const used = process.cpuUsage(cpu);
      cpuUs[s] += used.user + used.system;
    }
  }
}
rmSync(dir, { recursive: true, force: true });

const n = ROUNDS * Math.ceil(REQUESTS / CHUNK) * CHUNK;
const per = (s: Setup) => cpuUs[s] / n;
console.log(
  `Produce, in-process app on the memory backend, ${RECORDS} record(s) of 1 KiB per request, ${n} requests per set-up, interleaved (node ${process.version})`,
);
console.log('| set-up | CPU µs / request | CPU cost vs off | requests/s of one core | wall µs / request |');
console.log('|---|---:|---:|---:|---:|');
for (const s of SETUPS) {
  const cost = ((per(s) - per('off')) / per('off')) * 100;
  console.log(
    `| ${s} | ${per(s).toFixed(1)} | ${s === 'off' ? '-' : `${cost >= 0 ? '+' : ''}${cost.toFixed(1)}%`} | ${Math.round(1e6 / per(s)).toLocaleString('en-US')} | ${((wallMs[s] * 1000) / n).toFixed(1)} |`,
  );
}

// The decision alone, over the same 200 ACLs: a memoised answer (every request after the first
// for a principal and resource) and a first decision (after each reload of the ACL set).
const acls: AclBinding[] = [
  {
    resourceType: 'TOPIC',
    resourceName: 'orders.',
    patternType: 'PREFIXED',
    principal: 'User:app',
    host: '*',
    operation: 'WRITE',
    permission: 'ALLOW',
  },
  ...Array.from(
    { length: 199 },
    (_, i): AclBinding => ({
      resourceType: 'TOPIC',
      resourceName: `other-${i}`,
      patternType: i % 2 ? 'LITERAL' : 'PREFIXED',
      principal: 'User:app',
      host: '*',
      operation: 'READ',
      permission: 'ALLOW',
    }),
  ),
];
const settings = { superUsers: new Set<string>(), allowEveryoneIfNoAclFound: false };
const ask = {
  principal: 'User:app',
  host: '',
  operation: 'WRITE' as const,
  resourceType: 'TOPIC' as const,
  resourceName: 'orders.eu',
};
const memo = new AclIndex(acls, settings);
let t = performance.now();
for (let i = 0; i < 1_000_000; i++) memo.authorize(ask);
const memoNs = ((performance.now() - t) * 1e6) / 1_000_000;
t = performance.now();
for (let i = 0; i < 2000; i++) new AclIndex(acls, settings).authorize(ask);
const firstUs = ((performance.now() - t) * 1000) / 2000;
console.log(
  `\nThe decision alone over 200 ACLs: ${memoNs.toFixed(0)} ns memoised; ${firstUs.toFixed(1)} µs to index the set and decide the first time (once per ${'5 s'} reload).`,
);
