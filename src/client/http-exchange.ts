/**
 * One HTTP request and its whole answer, the only thing the transport needs of an HTTP client. By
 * default node:http(s) with keep-alive agents: a fetch answer of megabytes costs the consumer about
 * twice the CPU through fetch's web streams (chunk by chunk into a ReadableStream, then copied
 * together) as through a socket read into one buffer sized by Content-Length. A `fetch` given in
 * the connection config (a proxy, a test double, another runtime) is used as it is.
 */
import { Agent as HttpAgent, request as httpRequest, type IncomingMessage } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';

export interface Exchange {
  status: number;
  headers: Headers;
  body: Buffer;
}

export interface ExchangeInit {
  method: string;
  headers: Record<string, string>;
  /** Parts are written one after the other. */
  body?: string | Uint8Array | readonly Uint8Array[];
  signal: AbortSignal;
}

export type Exchanger = (url: URL, init: ExchangeInit) => Promise<Exchange>;

export function fetchExchanger(fetchImpl: typeof globalThis.fetch): Exchanger {
  return async (url, init) => {
    const body = Array.isArray(init.body) ? Buffer.concat(init.body) : init.body;
    const res = await fetchImpl(url, { ...init, body } as RequestInit);
    return { status: res.status, headers: res.headers, body: Buffer.from(await res.arrayBuffer()) };
  };
}

/** Failures as fetch reports them (a TypeError whose cause has the code), so callers see one shape. */
const failed = (cause: unknown) => new TypeError('fetch failed', { cause });

export function nodeExchanger(): Exchanger {
  // Idle keep-alive sockets do not hold the process open (the agent unrefs them).
  const agents = { 'http:': new HttpAgent({ keepAlive: true }), 'https:': new HttpsAgent({ keepAlive: true }) };
  return (url, init) =>
    new Promise<Exchange>((resolve, reject) => {
      if (init.signal.aborted) return reject(init.signal.reason);
      const https = url.protocol === 'https:';
      const parts =
        init.body === undefined ? [] : typeof init.body === 'string' ? [Buffer.from(init.body)] : [init.body].flat();
      const headers: Record<string, string> = { ...init.headers };
      if (init.body !== undefined) headers['content-length'] = String(parts.reduce((n, p) => n + p.byteLength, 0));
      const req = (https ? httpsRequest : httpRequest)(url, {
        method: init.method,
        headers,
        agent: https ? agents['https:'] : agents['http:'],
      });
      const onAbort = () => req.destroy(init.signal.reason);
      init.signal.addEventListener('abort', onAbort, { once: true });
      const settle = (e: unknown, value?: Exchange) => {
        init.signal.removeEventListener('abort', onAbort);
        if (value) resolve(value);
        else reject(init.signal.aborted ? init.signal.reason : failed(e));
      };
      req.on('error', (e) => settle(e));
      req.on('response', (res: IncomingMessage) => {
        const length = Number(res.headers['content-length']);
        const sized = Number.isSafeInteger(length) && length >= 0;
        const whole = sized ? Buffer.allocUnsafe(length) : undefined;
        const chunks: Buffer[] = [];
        let at = 0;
        res.on('data', (chunk: Buffer) => {
          if (whole && at + chunk.byteLength <= length) whole.set(chunk, at);
          else chunks.push(chunk);
          at += chunk.byteLength;
        });
        res.on('error', (e) => settle(e));
        res.on('aborted', () => settle(new Error('the answer was cut off')));
        res.on('end', () => {
          if (sized && at !== length) return settle(new Error(`the answer had ${at} of ${length} bytes`));
          const h = new Headers();
          for (const [name, value] of Object.entries(res.headers))
            if (value !== undefined) for (const v of Array.isArray(value) ? value : [value]) h.append(name, v);
          settle(undefined, { status: res.statusCode ?? 0, headers: h, body: whole ?? Buffer.concat(chunks) });
        });
      });
      for (const p of parts) req.write(p);
      req.end();
    });
}
