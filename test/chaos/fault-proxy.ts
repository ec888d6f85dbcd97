/**
 * An HTTP proxy on 127.0.0.1 in front of an emulator (dynalite or s3rver), injecting the faults a
 * network between a Lambda and DynamoDB or S3 can show. Per request, drawn from a seeded stream:
 *
 *  - apply-then-drop: the request is forwarded and fully answered upstream, then the answer is
 *    thrown away and the client's socket reset. The write happened; the caller cannot know
 *    (a load balancer reset, a Lambda timeout right after the call). The SDK retries it.
 *  - error: 500 or 503 without forwarding (nothing happened, the caller is told so).
 *  - reset: the socket is reset without forwarding.
 *  - delay: forwarded after a pause (a slow or throttled call).
 *  - slow: a request whose body matches is held for longer (e.g. offset-commit writes).
 *
 * `pause(ms)` stops answering for a while (requests wait, then go through): a stalled emulator.
 * `holdNext(match)` applies the next matching request and holds its answer until released: the
 * moment a test SIGKILLs the caller in, between a write and its answer.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Rng } from './rng.js';

export interface FaultRates {
  applyThenDrop: number;
  error: number;
  reset: number;
  delay: number;
  /** Upper bound of an injected delay. */
  maxDelayMs: number;
  /** Requests whose body contains `match` are held `minMs`-`maxMs` with probability `rate` (a slow, throttled or frozen caller). */
  slow?: { match: string; rate: number; minMs: number; maxMs: number };
  /** Only requests whose body contains each of these take the faults above (default: every request). */
  only?: string[];
}

export const NO_FAULTS: FaultRates = { applyThenDrop: 0, error: 0, reset: 0, delay: 0, maxDelayMs: 0 };

export type FaultKind = 'applyThenDrop' | 'error' | 'reset' | 'delay' | 'paused' | 'slow';

export interface FaultProxy {
  /** `http://127.0.0.1:<port>`, to give the servers instead of the emulator's endpoint. */
  endpoint: string;
  rates: FaultRates;
  /** Requests forwarded, and faults injected by kind. */
  stats: Record<FaultKind | 'requests', number>;
  /** Holds every request until `ms` have passed (from now, extending a pause in progress). */
  pause(ms: number): void;
  /**
   * The next request whose body contains each of `match` is forwarded (it applies) and its answer
   * held: `held` resolves once one is, `release()` sends the answer (to a caller still there).
   */
  holdNext(match: string[]): { held: Promise<void>; release(): void };
  /** No more faults and no pause. */
  heal(): void;
  close(): Promise<void>;
}

export async function startFaultProxy(target: string, rng: Rng, rates: FaultRates = NO_FAULTS): Promise<FaultProxy> {
  const upstream = new URL(target);
  const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });
  let pausedUntil = 0;
  let resume: Promise<void> = Promise.resolve();
  let hold: { match: string[]; held: () => void; released: Promise<void> } | undefined;
  const stats: FaultProxy['stats'] = {
    requests: 0,
    applyThenDrop: 0,
    error: 0,
    reset: 0,
    delay: 0,
    paused: 0,
    slow: 0,
  };
  const proxy: FaultProxy = {
    endpoint: '',
    rates: { ...rates },
    stats,
    pause(ms) {
      const until = Date.now() + ms;
      if (until <= pausedUntil) return;
      pausedUntil = until;
      resume = new Promise((r) => setTimeout(r, ms));
    },
    holdNext(match) {
      let held!: () => void;
      let release!: () => void;
      const heldPromise = new Promise<void>((r) => (held = r));
      const released = new Promise<void>((r) => (release = r));
      hold = { match, held, released };
      return { held: heldPromise, release };
    },
    heal() {
      proxy.rates = { ...NO_FAULTS };
      pausedUntil = 0;
      resume = Promise.resolve();
    },
    close: async () => {
      agent.destroy();
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };

  const server = http.createServer((req, res) => {
    void handle(req, res).catch(() => req.socket.destroy());
  });

  async function handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const body = await readAll(req);
    while (Date.now() < pausedUntil) {
      stats.paused++;
      await resume;
    }
    stats.requests++;
    const held = hold?.match.every((m) => body.includes(m)) ? hold : undefined;
    if (held) {
      hold = undefined;
      const answer = await forward(req, body);
      held.held();
      await held.released;
      res.writeHead(answer.status, answer.headers);
      res.end(answer.body);
      return;
    }
    const r = proxy.rates.only?.every((m) => body.includes(m)) === false ? NO_FAULTS : proxy.rates;
    if (r.slow && body.includes(r.slow.match) && rng.chance(r.slow.rate)) {
      stats.slow++;
      await new Promise((done) => setTimeout(done, rng.int(r.slow!.minMs, r.slow!.maxMs)));
    }
    const roll = rng.next();
    let edge = r.error;
    if (roll < edge) {
      stats.error++;
      const status = rng.chance(0.5) ? 500 : 503;
      // The body shape each SDK reads its error code from; both take these as retryable.
      const isS3 = !req.headers['x-amz-target'];
      res.writeHead(status, { 'content-type': isS3 ? 'application/xml' : 'application/x-amz-json-1.0' });
      res.end(
        isS3
          ? `<Error><Code>${status === 500 ? 'InternalError' : 'ServiceUnavailable'}</Code><Message>injected</Message></Error>`
          : JSON.stringify({ __type: 'com.amazonaws.dynamodb.v20120810#InternalServerError', message: 'injected' }),
      );
      return;
    }
    if (roll < (edge += r.reset)) {
      stats.reset++;
      req.socket.resetAndDestroy();
      return;
    }
    const drop = roll < (edge += r.applyThenDrop);
    if (!drop && roll < edge + r.delay) {
      stats.delay++;
      await new Promise((done) => setTimeout(done, rng.int(1, Math.max(1, r.maxDelayMs))));
    }
    const answer = await forward(req, body);
    if (drop) {
      stats.applyThenDrop++;
      req.socket.resetAndDestroy();
      return;
    }
    res.writeHead(answer.status, answer.headers);
    res.end(answer.body);
  }

  function forward(
    req: http.IncomingMessage,
    body: Buffer,
  ): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: Buffer }> {
    return new Promise((resolve, reject) => {
      const headers = { ...req.headers, host: upstream.host };
      const out = http.request(
        { host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers, agent },
        (up) => {
          readAll(up).then((b) => {
            const h = { ...up.headers };
            delete h['transfer-encoding'];
            delete h.connection;
            h['content-length'] = String(b.length);
            resolve({ status: up.statusCode ?? 502, headers: h, body: b });
          }, reject);
        },
      );
      out.on('error', reject);
      out.end(body);
    });
  }

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  proxy.endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return proxy;
}

function readAll(stream: NodeJS.ReadableStream): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    stream.on('data', (c: Buffer) => chunks.push(c));
    stream.on('end', () => resolve(Buffer.concat(chunks)));
    stream.on('error', reject);
  });
}
