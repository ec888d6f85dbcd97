/**
 * `npm run bench:small-requests [-- --base DIR] [-- --rounds N] [-- --block N]`: the server's CPU
 * time per small HTTP request over real sockets, the fixed cost every route pays: node's HTTP
 * parsing and writing, Hono, security, the body read and the answer. The local server
 * (`src/server.ts`, local backend) in its own process, 4 keep-alive connections of node:http, and
 * three requests:
 *  - health: GET /health, outside /v3 (no middleware): node, the adapter and Hono alone;
 *  - cluster: GET /v3/clusters/local, every /v3 middleware around a handler that reads nothing;
 *  - produce: one RecordBatch of one 1 KiB record to one partition, acks=all.
 * The figure is the server process's CPU time over a block of requests (/proc), which the
 * machine's load moves far less than the rate. With `--base DIR` (another checkout of the
 * repository, with its node_modules), a server of each runs side by side and the blocks alternate
 * between them, so a before/after comparison sees the same machine.
 */
import { mkdtemp } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { createClient, type HttpClient } from './http-client.js';
import { batchBody } from './payload.js';
import { procStats, REPO, startServer, type ChildServer } from './processes.js';

const { values } = parseArgs({
  options: {
    base: { type: 'string' },
    rounds: { type: 'string', default: '10' },
    block: { type: 'string', default: '1000' },
  },
});
const ROUNDS = Number(values.rounds);
const BLOCK = Number(values.block);
const CONNECTIONS = 4;
const RECORDS = '/v3/clusters/local/topics/small/partitions/0/records?acks=all';

interface Subject {
  name: string;
  server: ChildServer;
  client: HttpClient;
}

async function start(name: string, repo: string): Promise<Subject> {
  const dir = await mkdtemp(join(tmpdir(), 'bench-small-'));
  const server = await startServer(
    join(repo, 'src/server.ts'),
    ['--port', '0', '--data-dir', dir, '--kafka-port', '0'],
    {},
  );
  const client = createClient('node-http', server.url, CONNECTIONS);
  const created = await client.send(
    'POST',
    '/v3/clusters/local/topics',
    Buffer.from(JSON.stringify({ topic_name: 'small', partitions_count: 1 })),
  );
  if (created.status !== 201) throw new Error(`${name}: create topic: ${created.status} ${created.body}`);
  return { name, server, client };
}

const body = batchBody(1);
const requests: Record<string, (c: HttpClient) => ReturnType<HttpClient['send']>> = {
  health: (c) => c.send('GET', '/health'),
  cluster: (c) => c.send('GET', '/v3/clusters/local'),
  produce: (c) => c.send('POST', RECORDS, body, { 'content-type': 'application/vnd.kafka.record-batch.v2' }),
};

/** `n` requests, CONNECTIONS at a time. */
async function run(s: Subject, request: (c: HttpClient) => ReturnType<HttpClient['send']>, n: number) {
  let next = 0;
  await Promise.all(
    Array.from({ length: CONNECTIONS }, async () => {
      while (next++ < n) {
        const reply = await request(s.client);
        if (reply.status !== 200) throw new Error(`${s.name}: ${reply.status} ${reply.body}`);
      }
    }),
  );
}

const subjects = [await start('this checkout', REPO)];
if (values.base) subjects.unshift(await start(`base ${values.base}`, resolve(values.base)));
try {
  console.log(
    `${ROUNDS} rounds of ${BLOCK} requests per subject, ${CONNECTIONS} connections; server CPU µs per request (mean, best block)`,
  );
  for (const [what, request] of Object.entries(requests)) {
    for (const s of subjects) await run(s, request, BLOCK); // warm-up
    const total = subjects.map(() => 0);
    const best = subjects.map(() => Number.POSITIVE_INFINITY);
    for (let round = 0; round < ROUNDS; round++)
      for (let k = 0; k < subjects.length; k++) {
        const i = (round + k) % subjects.length; // alternate which goes first
        const before = procStats(subjects[i]!.server.pid).cpuMicros;
        await run(subjects[i]!, request, BLOCK);
        const used = procStats(subjects[i]!.server.pid).cpuMicros - before;
        total[i]! += used;
        best[i] = Math.min(best[i]!, used);
      }
    const cells = subjects.map(
      (s, i) => `${s.name}: ${Math.round(total[i]! / (ROUNDS * BLOCK))} (${Math.round(best[i]! / BLOCK)})`,
    );
    console.log(
      `${what}: ${cells.join(' | ')}; load ${loadavg()
        .map((l) => l.toFixed(1))
        .join(' ')}`,
    );
  }
} finally {
  for (const s of subjects) {
    s.client.close();
    await s.server.stop();
  }
}
