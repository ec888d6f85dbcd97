/**
 * The machine's own ceiling for the bench's traffic: the same HTTP requests, answered by a minimal
 * Hono handler on the same node server (@hono/node-server) with none of our code in between.
 *  - POST /produce reads the request body (JSON or RecordBatch bytes alike) straight from the
 *    socket into one buffer, as src/http/request.ts does (the web Request's body stream costs
 *    several times more, which made the ceiling slower than the server), appends it to one open
 *    file (as the local object store appends each object to a pack file, without the pack's index
 *    row; a new file per request, as the store once wrote them, made the ceiling slower than the
 *    server for small requests) and answers a small JSON.
 *  - GET /fetch/:name reads a fixture file (a real fetch answer of our server, uploaded by the
 *    bench to PUT /fixture/:name with its headers as JSON in x-fixture-headers) and answers it as
 *    is, with the same headers: for the binary fetch, the content-type and the Kafka-* offsets.
 * Started with `--port 0 --data-dir DIR`, it prints the same "listening" line as src/server.ts.
 */
import { serve } from '@hono/node-server';
import { Hono } from 'hono';
import { mkdirSync } from 'node:fs';
import { open, readFile, writeFile } from 'node:fs/promises';
import type { IncomingMessage } from 'node:http';
import { join } from 'node:path';
import { parseArgs } from 'node:util';

const { values: flags } = parseArgs({ options: { port: { type: 'string' }, 'data-dir': { type: 'string' } } });
const dir = flags['data-dir'] ?? '.ceiling';
mkdirSync(dir, { recursive: true });
const fixture = (name: string) => join(dir, `fixture-${name.replace(/[^a-z0-9]/gi, '')}`);
const fixtureHeaders = new Map<string, Record<string, string>>();

function readBody(incoming: IncomingMessage, length: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const body = Buffer.allocUnsafe(length);
    let at = 0;
    incoming.on('data', (chunk: Buffer) => {
      chunk.copy(body, at);
      at += chunk.length;
    });
    incoming.once('end', () => resolve(body));
    incoming.once('error', reject);
  });
}

const pack = await open(join(dir, `${process.pid}.pack`), 'a');
const app = new Hono<{ Bindings: { incoming: IncomingMessage } }>();
app.post('/produce', async (c) => {
  const body = await readBody(c.env.incoming, Number(c.req.header('content-length')));
  await pack.write(body);
  return c.json({ ok: true, bytes: body.byteLength });
});
app.put('/fixture/:name', async (c) => {
  await writeFile(fixture(c.req.param('name')), new Uint8Array(await c.req.arrayBuffer()));
  fixtureHeaders.set(
    c.req.param('name'),
    JSON.parse(c.req.header('x-fixture-headers') ?? '{}') as Record<string, string>,
  );
  return c.body(null, 204);
});
// A new headers object per answer: Hono hands a single-header object to the response as is, and
// @hono/node-server's response then changes it.
app.get('/fetch/:name', async (c) =>
  c.body(await readFile(fixture(c.req.param('name'))), 200, { ...fixtureHeaders.get(c.req.param('name')) }),
);

const server = serve({ fetch: app.fetch, port: Number(flags.port ?? 0), hostname: '127.0.0.1' }, (info) => {
  console.log(JSON.stringify({ level: 'info', msg: 'listening', url: `http://127.0.0.1:${info.port}` }));
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
