/**
 * `kafka-log console`: the web console on this machine, for a server the browser cannot call by
 * itself (an API with IAM auth): it serves the console's files and passes its API calls on to the
 * server, signed with SigV4 from the AWS credential chain (or with a bearer token), as
 * `kubectl proxy` does for the Kubernetes API.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createSigner } from '../client/auth.js';
import { consoleAsset } from '../console/assets.js';
import { authConfig, CONNECTION_HELP, int, parse, serverUrl, UsageError } from './args.js';
import type { Context } from './context.js';

export const CONSOLE_HELP = `Usage: kafka-log console --bootstrap-server URL [--auth sigv4] [--port 8081]
  Serves the web console at http://HOST:PORT/console/ and passes its API calls on to the server,
  signed (--auth sigv4: the AWS credential chain; bearer: --token), as kubectl proxy does.
  --port N      local port (default 8081; 0 picks a free one)
  --host HOST   local address (default 127.0.0.1; anyone who reaches it calls the API as you)
${CONNECTION_HELP}`;

const OPTIONS = {
  port: { type: 'string' },
  host: { type: 'string' },
} as const;

/** What the proxy passes on: the API, and nothing else of the server. */
const PROXIED = /^\/(v3(\/|$)|openapi\.json$|health$)/;
/** Response headers worth passing back (the rest are the upstream's transport). */
const KEPT_RESPONSE_HEADERS = ['content-type', 'cache-control', 'x-request-id', 'retry-after'];
const MAX_BODY_BYTES = 8 * 1024 * 1024;

export async function consoleCommand(argv: string[], ctx: Context): Promise<void> {
  const { values } = parse(argv, OPTIONS);
  if (values.help) return ctx.out(CONSOLE_HELP);
  const upstream = new URL(serverUrl(values, ctx.env));
  if (upstream.protocol !== 'http:' && upstream.protocol !== 'https:')
    throw new UsageError(`--bootstrap-server must be an http(s) URL (got ${upstream.href})`);
  const sign = createSigner(authConfig(values, ctx.env), ctx.env);
  const port = values.port === undefined ? 8081 : int(values.port, '--port');
  const host = values.host ?? '127.0.0.1';
  const prefix = upstream.pathname.replace(/\/+$/, ''); // an API Gateway stage, say

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? '/', 'http://local');
    const self = `http://${req.headers.host}`;
    // A web page elsewhere must not reach the API through this proxy with your credentials:
    // browsers name the page's origin on cross-origin requests, and a rebound DNS name shows as Host.
    if ((req.headers.origin !== undefined && req.headers.origin !== self) || !isLocalHost(req.headers.host, host)) {
      return send(res, 403, {
        error_code: 40301,
        error: 'FORBIDDEN',
        message: 'Only the console served here may call the API through this proxy',
      });
    }
    if (url.pathname === '/' || url.pathname === '/console') {
      res.writeHead(308, { location: '/console/' });
      return res.end();
    }
    if (url.pathname.startsWith('/console/')) {
      const asset =
        req.method === 'GET' || req.method === 'HEAD'
          ? consoleAsset(url.pathname.slice('/console/'.length))
          : undefined;
      if (!asset)
        return send(res, 404, { error_code: 40401, error: 'NOT_FOUND', message: `No console file ${url.pathname}` });
      res.writeHead(200, { 'content-type': asset.type, 'cache-control': asset.cacheControl });
      return res.end(req.method === 'HEAD' ? undefined : asset.body);
    }
    if (!PROXIED.test(url.pathname))
      return send(res, 404, {
        error_code: 40401,
        error: 'NOT_FOUND',
        message: `No route for ${req.method} ${url.pathname}`,
      });

    const body = await readBody(req);
    const target = new URL(`${prefix}${url.pathname}${url.search}`, upstream);
    const headers: Record<string, string> = {};
    for (const h of ['content-type', 'accept']) if (typeof req.headers[h] === 'string') headers[h] = req.headers[h];
    const signed = await sign({
      method: req.method ?? 'GET',
      url: target,
      headers,
      body: body.byteLength ? body : undefined,
    });
    const answer = await fetch(target, {
      method: req.method ?? 'GET',
      headers: signed,
      ...(body.byteLength ? { body } : {}),
      redirect: 'manual',
    });
    const out: Record<string, string> = {};
    for (const h of KEPT_RESPONSE_HEADERS) {
      const v = answer.headers.get(h);
      if (v !== null) out[h] = v;
    }
    answer.headers.forEach((v, k) => {
      if (k.startsWith('kafka-')) out[k] = v;
    });
    res.writeHead(answer.status, out);
    res.end(Buffer.from(await answer.arrayBuffer()));
  };

  const server = createServer((req, res) => {
    handle(req, res).catch((e: unknown) => {
      // The upstream could not be reached or the request could not be signed: say which, briefly.
      const message = e instanceof Error ? e.message.split('\n')[0]! : String(e);
      if (!res.headersSent)
        send(res, e instanceof PayloadTooLarge ? 413 : 502, {
          error_code: e instanceof PayloadTooLarge ? 41300 : 50201,
          error: e instanceof PayloadTooLarge ? 'PAYLOAD_TOO_LARGE' : 'UPSTREAM_ERROR',
          message,
        });
      else res.destroy();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  const { port: bound } = server.address() as AddressInfo;
  ctx.out(
    `Console at http://${host.includes(':') ? `[${host}]` : host}:${bound}/console/ for ${upstream.href} (Ctrl-C to stop)`,
  );
  await new Promise<void>((resolve) => {
    if (ctx.signal.aborted) return resolve();
    ctx.signal.addEventListener('abort', () => resolve(), { once: true });
  });
  await new Promise<void>((resolve) => {
    server.close(() => resolve());
    server.closeAllConnections();
  });
}

class PayloadTooLarge extends Error {}

/** An address, localhost or the name it was told to listen on: not a name that DNS could rebind. */
function isLocalHost(hostHeader: string | undefined, listenHost: string): boolean {
  if (!hostHeader) return false;
  const name = hostHeader.replace(/:\d+$/, '');
  return name === 'localhost' || name === listenHost || name.startsWith('[') || /^\d+\.\d+\.\d+\.\d+$/.test(name);
}

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const c of req) {
    size += (c as Buffer).byteLength;
    if (size > MAX_BODY_BYTES) throw new PayloadTooLarge(`The request body is over ${MAX_BODY_BYTES} bytes`);
    chunks.push(c as Buffer);
  }
  return Buffer.concat(chunks);
}

function send(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}
