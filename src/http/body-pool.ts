/**
 * The self-hosted server's request bodies draw on one memory pool (src/limits/memory-pool.ts), as
 * the Kafka listener's requests do: before the app reads a body, its bytes (the Content-Length, or
 * the request limit when the body is chunked) are taken from the pool, and given back once the app
 * has answered. A request that finds no room waits, its body unread (node stops reading a socket
 * whose request nobody reads), and after `waitMs` is answered 503 with Retry-After: many large
 * bodies sent at once, or sent slowly, cost waiting clients, never the process its memory.
 *
 * Only for the node server: on Lambda the body arrives whole in the event, bounded by API Gateway
 * (10 MB) and the function's payload limit (6 MB), before any code of ours runs.
 */
import type { IncomingMessage } from 'node:http';
import type { MemoryPool } from '../limits/memory-pool.js';
import { incomingHeader, incomingOf } from './incoming-header.js';
import type { Metrics } from '../metrics.js';

export interface BodyPoolOptions {
  /** The largest body the app takes (MAX_REQUEST_BYTES); what a body without Content-Length may need. */
  maxRequestBytes: number;
  waitMs: number;
  metrics: Metrics;
}

/**
 * A body this small never waits: small requests (commits, small produces, consumer calls) go on
 * while large ones queue. At most this times the connection cap beyond the pool.
 */
const UNPOOLED_BODY_BYTES = 64 * 1024;

type Fetch<E> = (request: Request, env: E) => Response | Promise<Response>;

export function withBodyPool<E>(fetch: Fetch<E>, pool: MemoryPool, options: BodyPoolOptions): Fetch<E> {
  if (pool.capacity < options.maxRequestBytes)
    throw new Error(
      `The HTTP body pool (${pool.capacity} bytes) must hold at least one largest request (${options.maxRequestBytes} bytes)`,
    );
  return async (request, env) => {
    const bytes = bodyBytes(request, incomingOf(env), options.maxRequestBytes);
    if (bytes === 0) return fetch(request, env);
    if (bytes <= UNPOOLED_BODY_BYTES) pool.allocate(bytes);
    // Not request.signal: on the node server, touching it builds a web Request that starts reading the body.
    else if (!(await pool.acquire(bytes, options.waitMs))) {
      options.metrics.add('HttpRequestsRefused', 1);
      return noRoom(options.waitMs);
    }
    try {
      return await fetch(request, env);
    } finally {
      pool.release(bytes);
    }
  };
}

/**
 * What a request's body may take: its Content-Length, or the request limit when it is chunked;
 * nothing when it has no body, or a declared length the app refuses (413) before reading.
 */
function bodyBytes(request: Request, incoming: IncomingMessage | undefined, maxRequestBytes: number): number {
  if (request.method === 'GET' || request.method === 'HEAD') return 0;
  const header = (name: string) =>
    incoming ? incomingHeader(incoming.rawHeaders, name) : (request.headers.get(name) ?? undefined);
  const declared = header('content-length');
  if (declared !== undefined) {
    const n = Number(declared);
    return Number.isSafeInteger(n) && n > 0 && n <= maxRequestBytes ? n : 0;
  }
  return header('transfer-encoding') !== undefined ? maxRequestBytes : 0;
}

function noRoom(waitMs: number): Response {
  const retryAfter = String(Math.max(1, Math.ceil(waitMs / 1000)));
  return Response.json(
    {
      error_code: 50300,
      message: `The server has no memory free for this request body now; retry after ${retryAfter} s`,
      error: 'THROTTLING_QUOTA_EXCEEDED',
    },
    // Close: the unread body is not worth reading to keep the connection.
    { status: 503, headers: { 'Retry-After': retryAfter, Connection: 'close' } },
  );
}
