import { Agent, request } from 'node:http';

/**
 * The two HTTP clients the load generator can use, both with keep-alive connections: node:http
 * with a keep-alive Agent, and the global fetch (undici, bundled with Node). The bench measures
 * which one leaves more CPU to the server on this machine and uses it.
 */
export type ClientKind = 'node-http' | 'fetch';

export interface Reply {
  status: number;
  body: Buffer;
  /** Lower-case names; the binary fetch answers its offsets in headers. */
  headers: Record<string, string | string[] | undefined>;
}

export interface HttpClient {
  readonly kind: ClientKind;
  /** A body is sent as application/json unless `headers` name another content-type. */
  send(method: 'GET' | 'POST' | 'PUT' | 'DELETE', path: string, body?: Buffer, headers?: Record<string, string>): Promise<Reply>;
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
    send: (method, path, body, extra) =>
      new Promise<Reply>((resolve, reject) => {
        const headers: Record<string, string | number> = {};
        if (body) {
          headers['content-type'] = 'application/json';
          headers['content-length'] = body.byteLength;
        }
        if (extra) Object.assign(headers, extra);
        const req = request({ host: url.hostname, port: url.port, method, path, headers, agent }, (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body: chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks), headers: res.headers }));
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
      return { status: res.status, body: Buffer.from(await res.arrayBuffer()), headers: Object.fromEntries(res.headers) };
    },
    close: () => {},
  };
}
