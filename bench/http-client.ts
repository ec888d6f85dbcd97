import { Agent, request } from 'node:http';

/**
 * The two HTTP clients the load generator can use, both with keep-alive connections: node:http
 * with a keep-alive Agent, and the global fetch (undici, bundled with Node). The bench measures
 * which one leaves more CPU to the server on this machine and uses it.
 */
export type ClientKind = 'node-http' | 'fetch';

export interface Reply {
  status: number;
  /** The whole body, or with `keep: 'tail'` only its end (at least the last 256 bytes). */
  body: Buffer;
  /** The body's length in bytes. */
  bytes: number;
  /** Lower-case names; the binary fetch answers its offsets in headers. */
  headers: Record<string, string | string[] | undefined>;
}

export interface HttpClient {
  readonly kind: ClientKind;
  /**
   * A body is sent as application/json unless `headers` name another content-type. `keep: 'tail'`
   * keeps only the end of the answer: a consumer that reads its position from the end of a JSON
   * answer or from headers then neither holds nor copies megabytes per fetch (node:http only).
   */
  send(
    method: 'GET' | 'POST' | 'PUT' | 'DELETE',
    path: string,
    body?: Buffer,
    headers?: Record<string, string>,
    keep?: 'all' | 'tail',
  ): Promise<Reply>;
  close(): void;
}

export function createClient(kind: ClientKind, base: string, connections: number): HttpClient {
  return kind === 'fetch' ? fetchClient(base) : nodeHttpClient(base, connections);
}

/** A header of a reply as one string (the first, if repeated). */
export function header(reply: Reply, name: string): string | undefined {
  const v = reply.headers[name];
  return Array.isArray(v) ? v[0] : v;
}

function nodeHttpClient(base: string, connections: number): HttpClient {
  const url = new URL(base);
  const agent = new Agent({ keepAlive: true, maxSockets: connections, maxFreeSockets: connections });
  return {
    kind: 'node-http',
    send: (method, path, body, extra, keep = 'all') =>
      new Promise<Reply>((resolve, reject) => {
        const headers: Record<string, string | number> = {};
        if (body) {
          headers['content-type'] = 'application/json';
          headers['content-length'] = body.byteLength;
        }
        if (extra) Object.assign(headers, extra);
        const req = request({ host: url.hostname, port: url.port, method, path, headers, agent }, (res) => {
          const chunks: Buffer[] = [];
          let bytes = 0;
          let tailBytes = 0;
          res.on('data', (c: Buffer) => {
            bytes += c.length;
            chunks.push(c);
            if (keep === 'tail') {
              tailBytes += c.length;
              while (chunks.length > 1 && tailBytes - chunks[0]!.length >= 256) tailBytes -= chunks.shift()!.length;
            }
          });
          res.on('end', () =>
            resolve({
              status: res.statusCode ?? 0,
              body: chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks),
              bytes,
              headers: res.headers,
            }),
          );
          res.on('error', reject);
        });
        req.on('error', reject);
        req.end(body);
      }),
    close: () => agent.destroy(),
  };
}

function fetchClient(base: string): HttpClient {
  return {
    kind: 'fetch',
    send: async (method, path, body, extra) => {
      const headers = { ...(body ? { 'content-type': 'application/json' } : {}), ...extra };
      const res = await fetch(base + path, { method, body, headers });
      const all = Buffer.from(await res.arrayBuffer());
      return { status: res.status, body: all, bytes: all.byteLength, headers: Object.fromEntries(res.headers) };
    },
    close: () => {},
  };
}
