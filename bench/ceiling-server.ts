/**
 * The machine's own ceiling for the bench's traffic: the same HTTP requests, answered by a minimal
 * Hono handler on the same node server (@hono/node-server) with none of our code in between.
 *  - POST /produce writes the request body to a new file (as our object store writes one object
 *    per produce request, without the temp-file rename) and answers a small JSON.
 *  - GET /fetch reads a fixture file (a real fetch answer of our server, uploaded by the bench to
 *    PUT /fixture) and answers it as is.
 * Started with `--port 0 --data-dir DIR`, it prints the same "listening" line as src/server.ts.
 */
import { serve } from '@hono/node-server';
import { Hono } from 'hono';
import { mkdirSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parseArgs } from 'node:util';

const { values: flags } = parseArgs({ options: { port: { type: 'string' }, 'data-dir': { type: 'string' } } });
const dir = flags['data-dir'] ?? '.ceiling';
mkdirSync(dir, { recursive: true });
const fixture = join(dir, 'fixture.json');

let seq = 0;
const app = new Hono();
app.post('/produce', async (c) => {
  const body = new Uint8Array(await c.req.arrayBuffer());
  await writeFile(join(dir, `${process.pid}-${seq++}`), body);
  return c.json({ ok: true, bytes: body.byteLength });
});
app.put('/fixture', async (c) => {
  await writeFile(fixture, new Uint8Array(await c.req.arrayBuffer()));
  return c.body(null, 204);
});
app.get('/fetch', async (c) => c.body(await readFile(fixture), 200, { 'content-type': 'application/json' }));

const server = serve({ fetch: app.fetch, port: Number(flags.port ?? 0), hostname: '127.0.0.1' }, (info) => {
  console.log(JSON.stringify({ level: 'info', msg: 'listening', url: `http://127.0.0.1:${info.port}` }));
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
