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
 *  - With `--upstream URL` (the client path's ceiling): Kafka's multi-partition produce, `POST
 *    /v3/clusters/:cluster/records`, is answered here as the server answers it (offsets counted per
 *    partition from the batch headers), after the same body read and pack append; every other
 *    request (metadata, producer ids) goes to the real server at URL. `kafka-log perf produce`
 *    against it measures the client with next to no server work behind it.
 * Started with `--port 0 --data-dir DIR`, it prints the same "listening" line as src/server.ts.
 */
import { serve } from '@hono/node-server';
import { Hono } from 'hono';
import { mkdirSync } from 'node:fs';
import { open, readFile, writeFile } from 'node:fs/promises';
import type { IncomingMessage } from 'node:http';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { decodeTopicData } from '../src/wire/produce-request.js';
import { LOG_OVERHEAD, readBatchHeader } from '../src/wire/record-batch.js';

const { values: flags } = parseArgs({
  options: { port: { type: 'string' }, 'data-dir': { type: 'string' }, upstream: { type: 'string' } },
});
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

const upstream = flags.upstream;
if (upstream) {
  const logEndOffsets = new Map<string, number>();
  app.post('/v3/clusters/:cluster/records', async (c) => {
    const body = await readBody(c.env.incoming, Number(c.req.header('content-length')));
    await pack.write(body);
    const responses = decodeTopicData(body).map((t) => ({
      name: t.name,
      partition_responses: t.partitions.map(({ index, records }) => {
        const key = `${t.name}\0${index}`;
        const baseOffset = logEndOffsets.get(key) ?? 0;
        let next = baseOffset;
        for (let at = 0; records && at < records.byteLength; ) {
          const header = readBatchHeader(records, at);
          next += header.lastOffsetDelta + 1;
          at += LOG_OVERHEAD + header.batchLength;
        }
        logEndOffsets.set(key, next);
        return { index, error_code: 0, base_offset: baseOffset, log_append_time_ms: -1, log_start_offset: 0 };
      }),
    }));
    return c.json({ kind: 'KafkaProduceResponse', cluster_id: c.req.param('cluster'), responses });
  });
  app.all('*', async (c) => {
    const url = new URL(c.req.url);
    const headers = new Headers(c.req.raw.headers);
    for (const h of ['host', 'connection', 'content-length']) headers.delete(h);
    const hasBody = c.req.method !== 'GET' && c.req.method !== 'HEAD';
    const res = await fetch(`${upstream}${url.pathname}${url.search}`, {
      method: c.req.method,
      headers,
      ...(hasBody ? { body: await c.req.arrayBuffer() } : {}),
    });
    const answer = new Headers(res.headers);
    for (const h of ['content-encoding', 'content-length', 'transfer-encoding', 'connection']) answer.delete(h);
    return new Response(await res.arrayBuffer(), { status: res.status, headers: answer });
  });
}

const server = serve({ fetch: app.fetch, port: Number(flags.port ?? 0), hostname: '127.0.0.1' }, (info) => {
  console.log(JSON.stringify({ level: 'info', msg: 'listening', url: `http://127.0.0.1:${info.port}` }));
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
