/**
 * Hostile clients against a real server process (src/server.ts as `npm start` runs it), for the
 * test that shows its memory stays bounded (test/e2e/hostile-clients.test.ts) and the script that
 * measures it (bench/hostile-rss.ts): connections that send large partial Kafka frames or HTTP
 * bodies and stall, from other loopback addresses (127.0.0.2, ...) standing for other hosts; the
 * server's resident memory read from /proc; its metrics read from the EMF lines it writes.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { connect, createServer, type Socket } from 'node:net';
import { createInterface } from 'node:readline';
import { encodeMessage, Writer } from '../../src/kafka/protocol/codec.js';
import { writeRequestHeader } from '../../src/kafka/protocol/headers.js';
import { SaslAuthenticate, SaslHandshake } from '../../src/kafka/protocol/messages/index.js';
import type { ApiSpec } from '../../src/kafka/protocol/schema.js';
import { ROOT } from './local-server.js';

export interface Target {
  proc: ChildProcess;
  origin: string;
  broker: string;
  /** Counters summed and gauges' peaks over every EMF line so far. */
  metrics: Map<string, number>;
  /** The server's resident set size, in bytes. */
  rss(): number;
  stop(): Promise<void>;
}

const GAUGES = new Set(['KafkaConnections', 'KafkaMemoryPoolUsedBytes', 'HttpMemoryPoolUsedBytes']);

async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as { port: number }).port;
  await new Promise((r) => s.close(r));
  return port;
}

/** Starts the server on the memory backend with both listeners and EMF lines every 100 ms. */
export async function startTarget(env: Record<string, string>): Promise<Target> {
  const kafkaPort = await freePort();
  const proc = spawn(process.execPath, ['--import', 'tsx', 'src/server.ts', '--port', '0'], {
    cwd: ROOT,
    env: {
      ...process.env,
      STORAGE_BACKEND: 'memory',
      SCHEDULER_INTERVAL_MS: '0',
      KAFKA_PORT: String(kafkaPort),
      METRICS_INTERVAL_MS: '100',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const metrics = new Map<string, number>();
  const lines = createInterface({ input: proc.stdout! });
  let origin = '';
  let kafkaUp = false;
  const ready = new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('server did not start')), 30_000);
    proc.once('exit', (code) => reject(new Error(`server exited with ${code}`)));
    lines.on('line', (line) => {
      let msg: Record<string, unknown>;
      try {
        msg = JSON.parse(line);
      } catch {
        return;
      }
      if (msg._aws) {
        for (const [k, v] of Object.entries(msg)) {
          if (typeof v !== 'number') continue;
          metrics.set(k, GAUGES.has(k) ? Math.max(v, metrics.get(k) ?? 0) : (metrics.get(k) ?? 0) + v);
        }
        return;
      }
      if (msg.msg === 'listening') origin = msg.url as string;
      if (msg.msg === 'kafka listening') kafkaUp = true;
      if (msg.msg === 'kafka listener not started') reject(new Error(String(msg.error)));
      if (origin && kafkaUp) {
        clearTimeout(timer);
        resolve();
      }
    });
  });
  await ready;
  return {
    proc,
    origin,
    broker: `127.0.0.1:${kafkaPort}`,
    metrics,
    rss: () => Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${proc.pid}/status`, 'utf8'))![1]) * 1024,
    stop: async () => {
      if (proc.exitCode !== null) return;
      const exited = new Promise((r) => proc.once('exit', r));
      proc.kill('SIGKILL');
      await exited;
    },
  };
}

/** A connection that records whether the server closed it. */
export interface Held {
  socket: Socket;
  closedByServer: boolean;
  /** Everything the server sent. */
  received: Buffer[];
}

async function open(hostPort: string, from: string): Promise<Held> {
  const [host, port] = hostPort.split(':');
  const socket = connect({ host: host!, port: Number(port), localAddress: from });
  const held: Held = { socket, closedByServer: false, received: [] };
  socket.on('data', (d) => held.received.push(d));
  socket.on('end', () => {
    held.closedByServer = true;
  });
  socket.on('close', () => {
    held.closedByServer = true;
  });
  socket.on('error', () => {});
  await new Promise<void>((resolve) => {
    socket.once('connect', () => resolve());
    socket.once('close', () => resolve());
  });
  return held;
}

function kafkaFrame(api: ApiSpec, version: number, body: Record<string, unknown>): Buffer {
  const w = new Writer();
  w.int32(0);
  writeRequestHeader(w, api, { apiKey: api.apiKey, apiVersion: version, correlationId: 1, clientId: 'hostile' });
  encodeMessage(api.request, version, body, w);
  const b = w.toBuffer();
  b.writeInt32BE(b.byteLength - 4, 0);
  return b;
}

/** Reads frames off a held connection until `n` have come (or it closed). */
async function frames(h: Held, n: number, timeoutMs = 5000): Promise<number> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const all = Buffer.concat(h.received);
    let at = 0;
    let count = 0;
    while (all.byteLength >= at + 4 && all.byteLength >= at + 4 + all.readInt32BE(at)) {
      at += 4 + all.readInt32BE(at);
      count++;
    }
    if (count >= n || h.closedByServer || Date.now() > end) return count;
    await new Promise((r) => setTimeout(r, 10));
  }
}

/**
 * Kafka connections from `from` that each announce a `frameBytes` frame and send `sentBytes` of it,
 * then stall; with `sasl`, after authenticating (SASL/PLAIN). Connections the server refuses at
 * once are among them, marked closedByServer.
 */
export async function kafkaPartialFrames(options: {
  broker: string;
  from: string;
  connections: number;
  frameBytes: number;
  sentBytes: number;
  sasl?: { user: string; password: string };
}): Promise<Held[]> {
  const payload = Buffer.alloc(4 + options.sentBytes, 0x5a);
  payload.writeInt32BE(options.frameBytes, 0);
  const out: Held[] = [];
  for (let i = 0; i < options.connections; i++) {
    const h = await open(options.broker, options.from);
    out.push(h);
    if (h.closedByServer) continue;
    if (options.sasl) {
      const ok = await saslPlain(h, options.sasl.user, options.sasl.password);
      if (!ok) continue;
    }
    h.socket.write(payload);
  }
  return out;
}

/** SASL/PLAIN handshake and authenticate on a held connection; true when both were answered. */
export async function saslPlain(h: Held, user: string, password: string): Promise<boolean> {
  h.socket.write(kafkaFrame(SaslHandshake, 1, { mechanism: 'PLAIN' }));
  h.socket.write(kafkaFrame(SaslAuthenticate, 2, { authBytes: Buffer.from(`\u0000${user}\u0000${password}`) }));
  return (await frames(h, 2)) === 2 && !h.closedByServer;
}

/**
 * HTTP requests from `from` that declare a `declaredBytes` JSON body to `path` and send `sentBytes`
 * of it, then stall.
 */
export async function httpPartialBodies(options: {
  origin: string;
  from: string;
  connections: number;
  path: string;
  declaredBytes: number;
  sentBytes: number;
}): Promise<Held[]> {
  const url = new URL(options.origin);
  const head = Buffer.from(
    `POST ${options.path} HTTP/1.1\r\nHost: ${url.host}\r\nContent-Type: application/json\r\nContent-Length: ${options.declaredBytes}\r\n\r\n`,
  );
  const body = Buffer.alloc(options.sentBytes, 0x20);
  const out: Held[] = [];
  for (let i = 0; i < options.connections; i++) {
    const h = await open(url.host, options.from);
    out.push(h);
    if (h.closedByServer) continue;
    h.socket.write(head);
    h.socket.write(body);
  }
  return out;
}

/** Plain TCP connections to `hostPort` from `from` that send nothing. */
export async function idleConnections(hostPort: string, from: string, n: number): Promise<Held[]> {
  const out: Held[] = [];
  for (let i = 0; i < n; i++) out.push(await open(hostPort, from));
  return out;
}

/** The HTTP status line a held connection was answered with, if any. */
export const statusOf = (h: Held): number | undefined => {
  const m = /^HTTP\/1\.1 (\d{3})/.exec(Buffer.concat(h.received).subarray(0, 20).toString('latin1'));
  return m ? Number(m[1]) : undefined;
};

const MiB = 1024 * 1024;

/**
 * Issue 39's attack, as the test and the RSS script run it: 2 x (20 + `extraFromFirstAddress` on
 * the first) unauthenticated Kafka connections stalled inside 500 KiB frames, 12 authenticated as
 * `mallory` inside 15 MiB frames (180 MiB announced), 30 HTTP produce requests to `topic` inside
 * 8 MiB bodies (240 MiB announced).
 */
export async function attack(t: Target, topic: string, extraFromFirstAddress = 0) {
  const unauth: Held[] = [];
  for (const [from, connections] of [
    ['127.0.0.2', 20 + extraFromFirstAddress],
    ['127.0.0.3', 20],
  ] as const)
    unauth.push(
      ...(await kafkaPartialFrames({
        broker: t.broker,
        from,
        connections,
        frameBytes: 500 * 1024,
        sentBytes: 450 * 1024,
      })),
    );
  const auth = await kafkaPartialFrames({
    broker: t.broker,
    from: '127.0.0.5',
    connections: 12,
    frameBytes: 15 * MiB,
    sentBytes: 15 * MiB - 1024,
    sasl: { user: 'mallory', password: 'mallory-secret' },
  });
  const bodies = await httpPartialBodies({
    origin: t.origin,
    from: '127.0.0.7',
    connections: 30,
    path: `/v3/clusters/local/topics/${topic}/records`,
    declaredBytes: 8 * MiB,
    sentBytes: 8 * MiB - 1024,
  });
  return { unauth, auth, bodies, all: [...unauth, ...auth, ...bodies] };
}

/** The server's RSS now, and its peak from now until stop(), sampled every 50 ms. */
export function rssSampler(t: Target) {
  const before = t.rss();
  let peak = before;
  const timer = setInterval(() => {
    peak = Math.max(peak, t.rss());
  }, 50);
  return { before, peak: () => peak, stop: () => clearInterval(timer) };
}
