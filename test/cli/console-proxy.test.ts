/**
 * `kafka-log console` as a signing proxy: it serves the console's files itself and passes API calls
 * on to the server (here the real app on a local port, behind a stage prefix) with a SigV4
 * signature the test checks by signing the same request again, and refuses calls from other origins.
 */
import { createHash, createHmac, type Hash, type Hmac } from 'node:crypto';
import { PassThrough } from 'node:stream';
import { serve, type ServerType } from '@hono/node-server';
import { SignatureV4 } from '@smithy/signature-v4';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { main } from '../../src/cli/main.js';
import { testApp } from '../support/test-app.js';

const CREDENTIALS = { accessKeyId: 'AKIDCONSOLETEST', secretAccessKey: 'console-secret' };

interface Seen {
  method: string;
  url: URL;
  headers: Headers;
  body: string;
}

let upstream: ServerType;
let proxy: string;
const seen: Seen[] = [];
const abort = new AbortController();
let running: Promise<number>;
const output: string[] = [];

beforeAll(async () => {
  const { app } = testApp();
  const port = await new Promise<number>((resolve) => {
    upstream = serve(
      {
        port: 0,
        hostname: '127.0.0.1',
        // The API behind a stage prefix, as API Gateway's REST API serves it.
        fetch: async (req) => {
          const url = new URL(req.url);
          const body = req.method === 'GET' ? '' : await req.clone().text();
          seen.push({ method: req.method, url, headers: req.headers, body });
          if (!url.pathname.startsWith('/stage/')) return new Response('not under the stage', { status: 404 });
          return app.fetch(
            new Request(new URL(url.pathname.slice('/stage'.length) + url.search, url), {
              method: req.method,
              headers: req.headers,
              ...(body ? { body } : {}),
            }),
          );
        },
      },
      (info) => resolve(info.port),
    );
  });
  const env = {
    AWS_ACCESS_KEY_ID: CREDENTIALS.accessKeyId,
    AWS_SECRET_ACCESS_KEY: CREDENTIALS.secretAccessKey,
    AWS_REGION: 'eu-west-1',
  };
  Object.assign(process.env, env); // the credential chain reads the process environment
  const started = new Promise<string>((resolve) => {
    running = main(
      ['console', '--bootstrap-server', `http://127.0.0.1:${port}/stage`, '--auth', 'sigv4', '--port', '0'],
      {
        out: (line) => {
          output.push(line);
          const m = /^Console at (http:\/\/[^ ]+)\/console\//.exec(line);
          if (m) resolve(m[1]!);
        },
        err: (line) => output.push(line),
        stdin: new PassThrough(),
        env: { ...process.env, ...env },
        signal: abort.signal,
      },
    );
  });
  proxy = await started;
});

afterAll(async () => {
  abort.abort();
  expect(await running).toBe(0);
  upstream?.close();
  delete process.env.AWS_ACCESS_KEY_ID;
  delete process.env.AWS_SECRET_ACCESS_KEY;
});

/** Signs the request the upstream saw again, at the same time, over the headers it says it signed. */
async function expectedAuthorization(s: Seen): Promise<string> {
  const auth = s.headers.get('authorization')!;
  const signedHeaders = /SignedHeaders=([^,]+)/.exec(auth)![1]!.split(';');
  const amzDate = s.headers.get('x-amz-date')!;
  const date = new Date(amzDate.replace(/^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/, '$1-$2-$3T$4:$5:$6Z'));
  const headers = Object.fromEntries(signedHeaders.map((h) => [h, h === 'host' ? s.url.host : s.headers.get(h)!]));
  const signer = new SignatureV4({
    service: 'execute-api',
    region: 'eu-west-1',
    credentials: CREDENTIALS,
    // SigV4's hash, and its HMAC when given a key.
    sha256: class {
      private h: Hash | Hmac;
      constructor(key?: Uint8Array | string) {
        this.h = key === undefined ? createHash('sha256') : createHmac('sha256', key);
      }
      update(d: string | Uint8Array) {
        this.h.update(d);
      }
      digest() {
        return Promise.resolve(new Uint8Array(this.h.digest()));
      }
    } as never,
  });
  const query: Record<string, string> = {};
  s.url.searchParams.forEach((v, k) => {
    query[k] = v;
  });
  const signed = await signer.sign(
    {
      method: s.method,
      protocol: 'http:',
      hostname: s.url.hostname,
      port: Number(s.url.port),
      path: s.url.pathname,
      query,
      headers,
      ...(s.body ? { body: s.body } : {}),
    },
    { signingDate: date },
  );
  return String(signed.headers.authorization);
}

describe('kafka-log console', () => {
  it('serves the console page and its assets itself, without calling the server', async () => {
    const before = seen.length;
    const page = await fetch(`${proxy}/console/`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);
    const html = await page.text();
    const script = /src="\.\/(assets\/[^"]+\.js)"/.exec(html)![1]!;
    const js = await fetch(`${proxy}/console/${script}`);
    expect(js.status).toBe(200);
    expect(js.headers.get('content-type')).toMatch(/^text\/javascript/);
    expect((await fetch(`${proxy}/`, { redirect: 'manual' })).headers.get('location')).toBe('/console/');
    expect(seen.length).toBe(before);
  });

  it('passes API calls on under the stage prefix, signed with SigV4, and answers what the server answers', async () => {
    const created = await fetch(`${proxy}/v3/clusters/local/topics`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', origin: proxy },
      body: JSON.stringify({ topic_name: 'via-proxy', partitions_count: 2 }),
    });
    expect(created.status).toBe(201);
    const post = seen.at(-1)!;
    expect(post.url.pathname).toBe('/stage/v3/clusters/local/topics');
    expect(post.headers.get('authorization')).toMatch(
      /^AWS4-HMAC-SHA256 Credential=AKIDCONSOLETEST\/\d{8}\/eu-west-1\/execute-api\/aws4_request, SignedHeaders=[^,]*host[^,]*, Signature=[0-9a-f]{64}$/,
    );
    expect(post.headers.get('authorization')).toBe(await expectedAuthorization(post));

    const listed = await fetch(`${proxy}/v3/clusters/local/topics/via-proxy/partitions?x=1`);
    expect(listed.status).toBe(200);
    expect(((await listed.json()) as { data: unknown[] }).data).toHaveLength(2);
    const get = seen.at(-1)!;
    expect(get.url.search).toBe('?x=1');
    expect(get.headers.get('authorization')).toBe(await expectedAuthorization(get));

    // The server's errors come back as they are: status, Kafka error name and message.
    const missing = await fetch(`${proxy}/v3/clusters/local/topics/nope`);
    expect(missing.status).toBe(404);
    expect(await missing.json()).toMatchObject({ error: 'UNKNOWN_TOPIC_OR_PARTITION' });
  });

  it('refuses calls from another origin or host name, and passes nothing but the API on', async () => {
    const before = seen.length;
    const cross = await fetch(`${proxy}/v3/clusters/local/topics`, {
      method: 'POST',
      headers: { origin: 'https://evil.example', 'content-type': 'application/json' },
      body: '{}',
    });
    expect(cross.status).toBe(403);
    expect(await cross.json()).toMatchObject({ error: 'FORBIDDEN' });
    const { port } = new URL(proxy);
    const rebound = await new Promise<number>((resolve, reject) => {
      // fetch() will not send a Host of our own choosing; node:http will.
      import('node:http').then(({ request }) => {
        const r = request(
          {
            host: '127.0.0.1',
            port: Number(port),
            path: '/v3/clusters',
            headers: { host: `attacker.example:${port}` },
          },
          (res) => {
            res.resume();
            resolve(res.statusCode!);
          },
        );
        r.on('error', reject);
        r.end();
      });
    });
    expect(rebound).toBe(403);
    expect((await fetch(`${proxy}/debug/counters`)).status).toBe(404);
    expect(seen.length).toBe(before);
  });

  it('prints where it listens, and a usage error for a bad URL', async () => {
    expect(output[0]).toMatch(
      /^Console at http:\/\/127\.0\.0\.1:\d+\/console\/ for http:\/\/127\.0\.0\.1:\d+\/stage \(Ctrl-C to stop\)$/,
    );
    const err: string[] = [];
    const code = await main(['console', '--bootstrap-server', 'ftp://x'], {
      out: () => {},
      err: (l) => err.push(l),
      stdin: new PassThrough(),
      env: {},
      signal: abort.signal,
    });
    expect(code).toBe(2);
    expect(err).toEqual(['Error: --bootstrap-server must be an http(s) URL (got ftp://x/) (see --help)']);
  });
});
