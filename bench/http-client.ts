import { Agent, request } from 'node:http';
import { connect, type Socket } from 'node:net';

/**
 * The HTTP clients the load generator can use, all with keep-alive connections: node:http with a
 * keep-alive Agent, the global fetch (undici, bundled with Node), and `raw` (sockets read into one
 * reused buffer, below). The bench measures which of the first two leaves more CPU to the server
 * on this machine and uses it; `--client raw` is the cheapest receiver of large answers.
 */
export type ClientKind = 'node-http' | 'fetch' | 'raw';

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
  if (kind === 'raw') return rawClient(base, connections);
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

/**
 * A keep-alive HTTP/1.1 client on raw sockets that reads each socket into one reused buffer
 * (net's `onread`) and keeps of an answer only what is asked (its end for 'tail'): no stream
 * machinery and no new memory per read, which is most of what node:http costs when it receives
 * megabyte answers. Content-Length and chunked bodies; one request at a time per connection.
 */
function rawClient(base: string, connections: number): HttpClient {
  const url = new URL(base);
  const idle: RawConnection[] = [];
  const waiting: ((c: RawConnection) => void)[] = [];
  const all = new Set<RawConnection>();
  const acquire = (): Promise<RawConnection> => {
    const c = idle.pop();
    if (c) return Promise.resolve(c);
    if (all.size < connections) {
      const created = new RawConnection(url.hostname, Number(url.port), () => all.delete(created));
      all.add(created);
      return Promise.resolve(created);
    }
    return new Promise((resolve) => waiting.push(resolve));
  };
  const release = (c: RawConnection) => {
    if (c.closed) return;
    const next = waiting.shift();
    if (next) next(c);
    else idle.push(c);
  };
  return {
    kind: 'raw',
    send: async (method, path, body, extra, keep = 'all') => {
      const c = await acquire();
      try {
        return await c.send(method, path, body, extra, keep);
      } finally {
        release(c);
      }
    },
    close: () => {
      for (const c of all) c.destroy();
    },
  };
}

const TAIL_BYTES = 256;

class RawConnection {
  closed = false;
  private readonly socket: Socket;
  private head: Buffer[] = [];
  private reply: (Reply & { keep: 'all' | 'tail' }) | undefined;
  /** Body bytes still to come (Content-Length), or -1 for a chunked body. */
  private remaining = 0;
  /** Chunked: bytes left of the current chunk, then its CRLF; -1 while reading a size line. */
  private chunkLeft = -1;
  private sizeLine = '';
  private chunks: Buffer[] = [];
  private pending: { resolve: (r: Reply) => void; reject: (e: Error) => void } | undefined;

  constructor(host: string, port: number, onClose: () => void) {
    this.socket = connect({
      host,
      port,
      onread: {
        buffer: Buffer.allocUnsafe(256 * 1024),
        callback: (n, buf) => {
          this.read(Buffer.from(buf.buffer, buf.byteOffset, n));
          return true;
        },
      },
    });
    this.socket.setNoDelay(true);
    const fail = (e: Error) => {
      this.closed = true;
      onClose();
      this.pending?.reject(e);
      this.pending = undefined;
    };
    this.socket.on('error', fail);
    this.socket.on('close', () => fail(new Error('connection closed')));
  }

  send(
    method: string,
    path: string,
    body: Buffer | undefined,
    extra: Record<string, string> | undefined,
    keep: 'all' | 'tail',
  ): Promise<Reply> {
    let head = `${method} ${path} HTTP/1.1\r\nhost: bench\r\n`;
    const headers: Record<string, string> = { ...(body ? { 'content-type': 'application/json' } : {}), ...extra };
    for (const [k, v] of Object.entries(headers)) head += `${k}: ${v}\r\n`;
    head += `content-length: ${body?.byteLength ?? 0}\r\n\r\n`;
    this.reply = { status: 0, body: Buffer.alloc(0), bytes: 0, headers: {}, keep };
    this.head = [];
    this.chunks = [];
    return new Promise((resolve, reject) => {
      this.pending = { resolve, reject };
      this.socket.cork();
      this.socket.write(head, 'latin1');
      if (body && body.byteLength > 0) this.socket.write(body);
      this.socket.uncork();
    });
  }

  destroy(): void {
    this.socket.destroy();
  }

  /** Bytes from the socket (a view of the reused read buffer, valid only during the call). */
  private read(data: Buffer): void {
    const reply = this.reply;
    if (!reply) return;
    if (reply.status === 0) {
      // The status line and headers; kept across reads only until their blank line has come.
      let all = this.head.length > 0 ? Buffer.concat([...this.head, data]) : data;
      let start = 0;
      while (all[start] === 0x0d || all[start] === 0x0a) start++; // a chunked body's last CRLF
      all = all.subarray(start);
      const end = all.indexOf('\r\n\r\n');
      if (end < 0) {
        this.head = [Buffer.from(all)];
        return;
      }
      const lines = all.toString('latin1', 0, end).split('\r\n');
      reply.status = Number(lines[0]!.split(' ')[1]);
      for (const line of lines.slice(1)) {
        const colon = line.indexOf(':');
        reply.headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
      }
      const chunked = /chunked/i.test(String(reply.headers['transfer-encoding'] ?? ''));
      this.remaining = chunked ? -1 : Number(reply.headers['content-length'] ?? 0);
      this.chunkLeft = -1;
      this.sizeLine = '';
      data = all.subarray(end + 4);
      this.head = [];
      if (this.remaining === 0) return this.finish();
    }
    if (this.remaining >= 0) {
      const n = Math.min(this.remaining, data.length);
      this.body(data.subarray(0, n));
      this.remaining -= n;
      if (this.remaining === 0) this.finish();
      return;
    }
    let at = 0;
    while (at < data.length) {
      if (this.chunkLeft < 0) {
        const nl = data.indexOf(0x0a, at);
        if (nl < 0) {
          this.sizeLine += data.toString('latin1', at);
          return;
        }
        this.sizeLine += data.toString('latin1', at, nl);
        at = nl + 1;
        const size = Number.parseInt(this.sizeLine.trim(), 16);
        this.sizeLine = '';
        if (size === 0) {
          // The last chunk; no trailers are sent by the servers measured.
          this.finish();
          return;
        }
        this.chunkLeft = size + 2; // and its CRLF
      }
      const n = Math.min(this.chunkLeft, data.length - at);
      const bodyBytes = Math.max(0, Math.min(n, this.chunkLeft - 2));
      this.body(data.subarray(at, at + bodyBytes));
      this.chunkLeft -= n;
      at += n;
      if (this.chunkLeft === 0) this.chunkLeft = -1;
    }
  }

  private body(part: Buffer): void {
    const reply = this.reply!;
    if (part.length === 0) return;
    reply.bytes += part.length;
    if (reply.keep === 'all') {
      this.chunks.push(Buffer.from(part));
      return;
    }
    // 'tail': only the last TAIL_BYTES or more.
    this.chunks.push(Buffer.from(part.subarray(Math.max(0, part.length - TAIL_BYTES))));
    let kept = this.chunks.reduce((n, c) => n + c.length, 0);
    while (this.chunks.length > 1 && kept - this.chunks[0]!.length >= TAIL_BYTES) kept -= this.chunks.shift()!.length;
  }

  private finish(): void {
    const reply = this.reply!;
    reply.body = this.chunks.length === 1 ? this.chunks[0]! : Buffer.concat(this.chunks);
    this.reply = undefined;
    const { keep: _, ...answer } = reply;
    const pending = this.pending;
    this.pending = undefined;
    pending?.resolve(answer);
  }
}
