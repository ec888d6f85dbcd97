/**
 * The Kafka protocol listener: a TCP server speaking Kafka's binary protocol over the same services
 * as the HTTP API (src/compose.ts), so any Kafka client can produce, fetch and join groups.
 *
 * Per connection, answers leave in request order. Produce requests on disjoint partitions run
 * side by side, a later one overtaking an earlier one on other partitions (librdkafka sends one
 * partition per request; waiting for each append in turn, as a Kafka broker can afford with its
 * page cache, would cap a connection at one append's latency); any other request runs alone,
 * after the ones before it. A partition's batches are appended in the order they were sent, which
 * idempotent producers' sequences need. Memory per connection is
 * bounded: a frame above maxFrameBytes (before SASL authentication: sasl.server.max.receive.size)
 * closes the connection, requests read and not answered are bounded in count and bytes, little is
 * read beyond the frame being received, and nothing new is read while the client is slow to read
 * answers. Across connections (`limits`, docs/security.md): each frame's bytes are taken from one
 * memory pool (queued.max.request.bytes) before it is read and given back once it is answered, and
 * a connection stops reading while the pool has no room; connections are capped in total, per
 * address and in creation rate; a failed authentication is answered after a delay.
 * Frames that do not parse, unknown API keys and unsupported versions close the connection, as
 * Kafka does; ApiVersions of an unsupported version is answered in v0 with UNSUPPORTED_VERSION and
 * the supported versions, so a client can downgrade. Nothing a connection sends affects another.
 */
import { createServer, type Server, type Socket } from 'node:net';
import { ANONYMOUS, plainPrincipal } from '../authz/principal.js';
import type { KafkaLimits, ListenerTls } from '../config/server-config.js';
import { ConnectionQuotas, peerAddress, type RefusalCause } from '../limits/connection-quotas.js';
import { MemoryPool } from '../limits/memory-pool.js';
import { type Logger, type MetricName, type Metrics, noLogger, noMetrics } from '../metrics.js';
import { KafkaError } from '../wire/errors.js';
import type { ClassicGroupCoordinator } from '../groups/classic-coordinator.js';
import type { AppServices } from '../services.js';
import { HANDLERS } from './dispatch.js';
import { createTlsListener } from './tls-listener.js';
import { supportedApiKeys } from './handlers/cluster.js';
import type { Broker, ConnectionState, RequestContext } from './handlers/context.js';
import { decodeMessage, encodeMessage, ProtocolError, Reader, supports, Writer } from './protocol/codec.js';
import {
  API_VERSIONS_KEY,
  finishRequestHeader,
  readRequestHeader,
  responseHeaderVersion,
  writeResponseHeader,
} from './protocol/headers.js';
import { API_BY_KEY, ApiVersions, Produce, SaslAuthenticate, SaslHandshake } from './protocol/messages/index.js';
import type { ApiSpec } from './protocol/schema.js';
import { ShareSessions } from './share-sessions.js';

export interface KafkaListenerOptions {
  services: AppServices;
  classic: ClassicGroupCoordinator;
  host: string;
  /** 0 picks a free port. */
  port: number;
  /** What Metadata and FindCoordinator answer; by default the bound host and port. */
  advertisedHost?: string;
  advertisedPort?: number;
  /** Kafka's socket.request.max.bytes. */
  maxFrameBytes: number;
  /** Kafka's connections.max.idle.ms: a connection silent this long is closed. */
  idleTimeoutMs?: number;
  /** A client that leaves this many answer bytes unread is not served more until it reads them. */
  maxUnreadBytes?: number;
  /** Bytes of the requests one connection has read and not answered (one request always may be read). */
  maxInFlightBytes?: number;
  autoCreateTopics?: boolean;
  /**
   * SASL/PLAIN users (by default the auth config's `sasl.plain.users`); given here without
   * `saslMechanisms`, they enable PLAIN. With any mechanism enabled, a connection must
   * authenticate before anything but ApiVersions and SASL.
   */
  plainUsers?: ReadonlyMap<string, string>;
  /** sasl.enabled.mechanisms (by default the auth config's); any: a connection must authenticate. */
  saslMechanisms?: readonly string[];
  /** TLS (SSL, or SASL_SSL with mechanisms), with client certificates as ssl.client.auth asks. */
  tls?: ListenerTls;
  /** The bounds across connections (docs/security.md); without them only each connection's own apply. */
  limits?: KafkaLimits;
  /** Connections, pool use, refusals by cause. */
  metrics?: Metrics;
  /** group.share.max.share.sessions: share sessions of this listener at once (default Kafka's 2000). */
  maxShareSessions?: number;
  /** Where connection closes and handler failures are said (the host's Logger); default: nowhere. */
  logger?: Logger;
}

export interface KafkaListener {
  port: number;
  close(): Promise<void>;
}

const PRE_AUTH_APIS = new Set([ApiVersions.apiKey, SaslHandshake.apiKey, SaslAuthenticate.apiKey]);
/** Requests of one connection read ahead and not yet answered (produce ones run at once on disjoint partitions). */
const MAX_PIPELINED = 64;
/**
 * What a connection reads beyond the frame it has memory for (the next frame's header, pipelined
 * small requests): past it the connection stops reading.
 */
const READ_AHEAD_BYTES = 64 * 1024;
/**
 * Request bytes a connection may hold whatever the pool's state: handshakes, heartbeats, fetches and
 * commits go on while large produce requests wait for room. Per connection, so the pool's
 * overdraft is at most this times max.connections.
 */
const UNPOOLED_BYTES = 64 * 1024;

const REFUSED_METRIC: Record<RefusalCause, MetricName> = {
  'max.connections': 'KafkaConnectionsRefusedMaxConnections',
  'max.connections.per.ip': 'KafkaConnectionsRefusedMaxConnectionsPerIp',
  'max.connection.creation.rate': 'KafkaConnectionsRefusedCreationRate',
};

/** What the connections of one listener share: the memory pool, the connection counts and the share sessions. */
interface Shared {
  pool: MemoryPool | undefined;
  metrics: Metrics;
  /** How long a failed authentication's answer (and the close after it) waits. */
  failedAuthenticationDelayMs: number;
  /** The frame size a connection may send before it has authenticated (when SASL is on). */
  preAuthMaxFrameBytes: number;
  shareSessions: ShareSessions;
}

export async function startKafkaListener(options: KafkaListenerOptions): Promise<KafkaListener> {
  const logger = options.logger ?? noLogger;
  const metrics = options.metrics ?? noMetrics;
  const { limits } = options;
  if (limits && limits.queuedMaxRequestBytes < options.maxFrameBytes)
    throw new Error(
      `queued.max.request.bytes (${limits.queuedMaxRequestBytes}) must be at least socket.request.max.bytes (${options.maxFrameBytes}), or the largest request could never be read`,
    );
  const shared: Shared = {
    pool:
      limits && new MemoryPool(limits.queuedMaxRequestBytes, (used) => metrics.gauge('KafkaMemoryPoolUsedBytes', used)),
    metrics,
    failedAuthenticationDelayMs: limits?.failedAuthenticationDelayMs ?? 0,
    preAuthMaxFrameBytes: Math.min(options.maxFrameBytes, limits?.saslServerMaxReceiveSize ?? options.maxFrameBytes),
    shareSessions: new ShareSessions(options.maxShareSessions),
  };
  const quotas = limits && new ConnectionQuotas(limits);
  const sockets = new Set<Socket>();
  let open = 0; // TCP connections admitted and not closed (TLS handshakes under way included)
  const accept = (socket: Socket, principal?: string) => {
    if (socket.destroyed) return; // refused below, or gone during the TLS handshake
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    serveConnection(socket, options, broker, shared, logger, principal);
  };
  const server: Server = options.tls
    ? createTlsListener(options.tls, logger, (socket, principal) => {
        socket.setNoDelay(true);
        accept(socket, principal);
      })
    : createServer({ noDelay: true }, (socket) => accept(socket));
  // Admission on the TCP connection, before anything else (a TLS handshake included) runs for it.
  server.prependListener('connection', (socket: Socket) => {
    const ip = peerAddress(socket.remoteAddress);
    const refused = quotas?.tryOpen(ip);
    if (refused) {
      metrics.add('KafkaConnectionsRefused', 1);
      metrics.add(REFUSED_METRIC[refused], 1);
      socket.on('error', () => {});
      socket.destroy();
      return;
    }
    open++;
    metrics.gauge('KafkaConnections', open);
    socket.on('close', () => {
      open--;
      quotas?.close(ip);
      metrics.gauge('KafkaConnections', open);
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => resolve());
  });
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : options.port;
  const broker: Broker = {
    nodeId: 0,
    host: options.advertisedHost ?? options.host,
    port: options.advertisedPort ?? port,
  };
  return {
    port,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

function serveConnection(
  socket: Socket,
  options: KafkaListenerOptions,
  broker: Broker,
  shared: Shared,
  logger: Logger,
  /** The TLS client certificate's principal, when one was presented. */
  certificatePrincipal?: string,
): void {
  const abort = new AbortController();
  const { principals } = options.services.security;
  const plainUsers = options.plainUsers ?? principals.plainUsers;
  // Users given to the listener itself (tests) enable PLAIN, as the auth config's do by default.
  const saslMechanisms =
    options.saslMechanisms ?? (options.plainUsers ? (plainUsers.size > 0 ? ['PLAIN'] : []) : principals.saslMechanisms);
  const saslRequired = saslMechanisms.length > 0;
  const connection: ConnectionState = {
    sasl: 'none',
    principal: certificatePrincipal ?? ANONYMOUS,
    host: peerAddress(socket.remoteAddress),
  };
  const maxUnread = options.maxUnreadBytes ?? 16 * 1024 * 1024;
  const maxInFlightBytes = options.maxInFlightBytes ?? 64 * 1024 * 1024;
  const chunks: Buffer[] = [];
  let buffered = 0;
  let closed = false;
  let rawTokenNext = false;
  const { pool } = shared;
  /** Pool bytes this connection holds: the frame being read (once its header is) and the requests not yet answered. */
  let pooled = 0;
  /** The size of the frame being read, once its bytes are taken from the pool; 0 before. */
  let frameReserved = 0;
  let stopWaitingForPool: (() => void) | undefined;
  /** A failed authentication's answer is waiting out its delay: nothing more is read. */
  let closing = false;
  const givePooled = (bytes: number) => {
    const n = Math.min(bytes, pooled);
    pooled -= n;
    pool?.release(n);
  };

  const close = (reason: string, detail?: unknown) => {
    if (closed) return;
    closed = true;
    logger.warn('kafka connection closed', {
      reason,
      remote: socket.remoteAddress,
      ...(detail ? { detail: String(detail) } : {}),
    });
    socket.destroy();
  };
  // Idle: nothing received or sent for that long while no request runs (a long poll is not idle).
  socket.setTimeout(options.idleTimeoutMs ?? 600_000, () => {
    if (running === 0) close('idle');
  });
  socket.on('close', () => {
    closed = true;
    abort.abort();
    stopWaitingForPool?.();
    givePooled(pooled);
  });
  socket.on('error', () => {}); // 'close' follows

  const ctxBase = (clientId: string): RequestContext => ({
    services: options.services,
    classic: options.classic,
    broker,
    clientId,
    clientHost: socket.remoteAddress ?? '',
    signal: abort.signal,
    connection,
    saslMechanisms,
    ...(saslMechanisms.includes('PLAIN') ? { plainUsers } : {}),
    autoCreateTopics: options.autoCreateTopics ?? true,
    shareSessions: shared.shareSessions,
    logger,
  });

  /**
   * Takes a frame's bytes from the pool before it is read: within the connection's unpooled
   * allowance always; else if they fit (before authentication, only in the lower half of the pool,
   * so unauthenticated connections never hold what authenticated ones need). When they do not,
   * the connection waits for memory to be given back.
   */
  const reserve = (size: number): boolean => {
    if (pool) {
      const ceiling = preAuth() ? pool.capacity / 2 : pool.capacity;
      if (pooled + size <= UNPOOLED_BYTES) pool.allocate(size);
      else if (!pool.tryAllocate(size, ceiling)) {
        stopWaitingForPool ??= pool.whenReleased(() => {
          if (!closed) pump();
          return closed || frameReserved > 0;
        });
        return false;
      }
    }
    stopWaitingForPool?.();
    stopWaitingForPool = undefined;
    pooled += size;
    frameReserved = size;
    return true;
  };
  const preAuth = () => saslRequired && connection.sasl !== 'authenticated';

  /** The next complete frame, or undefined; closes the connection on a bad size. Copies only a frame split across chunks. */
  const nextFrame = (): Buffer | undefined => {
    if (buffered < 4) return undefined;
    if (chunks[0]!.byteLength < 4) chunks.splice(0, chunks.length, Buffer.concat(chunks));
    const size = chunks[0]!.readInt32BE(0);
    const limit = preAuth() ? shared.preAuthMaxFrameBytes : options.maxFrameBytes;
    // A raw SASL token (after SaslHandshake v0) has no request header.
    if (size < (rawTokenNext ? 0 : 8) || size > limit) {
      if (size > limit && limit < options.maxFrameBytes) {
        shared.metrics.add('KafkaConnectionsRefused', 1);
        shared.metrics.add('KafkaConnectionsRefusedSaslReceiveSize', 1);
        close('sasl.server.max.receive.size', `${size} bytes before authentication (limit ${limit})`);
      } else close('bad frame size', `${size} bytes (limit ${limit})`);
      return undefined;
    }
    if (frameReserved === 0 && !reserve(size)) return undefined;
    const total = 4 + size;
    if (buffered < total) return undefined;
    buffered -= total;
    frameReserved = 0;
    const first = chunks[0]!;
    if (first.byteLength >= total) {
      if (first.byteLength === total) chunks.shift();
      else chunks[0] = first.subarray(total);
      return first.subarray(4, total);
    }
    const frame = Buffer.allocUnsafe(size);
    let at = 0;
    let skip = 4;
    while (at < size) {
      const c = chunks[0]!;
      const take = Math.min(c.byteLength - skip, size - at);
      c.copy(frame, at, skip, skip + take);
      at += take;
      if (skip + take === c.byteLength) chunks.shift();
      else chunks[0] = c.subarray(skip + take);
      skip = 0;
    }
    return frame;
  };

  type Parsed =
    | { kind: 'answer'; out: Buffer[] }
    | {
        kind: 'run';
        size: number;
        api: ApiSpec;
        version: number;
        correlationId: number;
        clientId: string;
        body: Record<string, unknown>;
        keys: Set<string> | null;
      };
  type Run = Extract<Parsed, { kind: 'run' }>;
  interface Slot {
    /** Produce's partitions: requests on disjoint partitions run side by side; null runs alone. */
    keys: Set<string> | null;
    started: boolean;
    done: boolean;
    out?: Buffer[];
    /** The connection's last answer: it is closed once this is written. */
    last?: boolean;
    /** A last answer waits out connection.failed.authentication.delay.ms. */
    delay?: 'running' | 'over';
  }
  /** Every request read and not yet answered, in request order: answers leave in this order. */
  const slots: Slot[] = [];
  /** Read, not started yet (waiting for a partition or for exclusivity), in request order. */
  const waiting: { p: Run; slot: Slot }[] = [];
  let running = 0;
  /** Partitions of the produce requests running (a count each), and whether a request that runs alone is running. */
  const runningKeys = new Map<string, number>();
  let runningAlone = false;
  let heldBytes = 0; // frames of requests read and not finished
  let draining = false;

  const overlaps = (a: Set<string>, b: Set<string>) => {
    for (const k of a) if (b.has(k)) return true;
    return false;
  };

  /**
   * Starts what may start, in order: a produce request may overtake earlier ones on other
   * partitions (never one on the same partition, so a partition's batches keep their order);
   * any other request waits for everything before it, and nothing after it starts until it ends.
   */
  const startReady = () => {
    const blocked = new Set<string>();
    for (let i = 0; i < waiting.length; ) {
      const { p, slot } = waiting[i]!;
      if (p.keys === null) {
        if (i === 0 && running === 0) {
          waiting.shift();
          start(p, slot);
        }
        return;
      }
      let busy = runningAlone;
      for (const k of p.keys) if (runningKeys.has(k)) busy = true;
      if (!busy && !overlaps(p.keys, blocked)) {
        waiting.splice(i, 1);
        start(p, slot);
        continue;
      }
      for (const k of p.keys) blocked.add(k);
      i++;
    }
  };

  /**
   * A failed authentication is answered (or, without an answer to send, the connection closed) only
   * after connection.failed.authentication.delay.ms, reading nothing meanwhile: a client guessing
   * passwords, or one retrying with stale ones, gets one try per delay per connection.
   */
  const afterFailedAuthentication = (then: () => void) => {
    shared.metrics.add('KafkaFailedAuthentications', 1);
    closing = true;
    flow();
    if (shared.failedAuthenticationDelayMs > 0) setTimeout(then, shared.failedAuthenticationDelayMs);
    else then();
  };

  const flush = () => {
    if (closed) return;
    socket.cork();
    while (slots[0]?.done) {
      const slot = slots[0];
      if (slot.last && slot.delay !== 'over') {
        socket.uncork();
        if (slot.delay === undefined) {
          slot.delay = 'running';
          afterFailedAuthentication(() => {
            slot.delay = 'over';
            flush();
          });
        }
        return;
      }
      slots.shift();
      for (const b of slot.out ?? []) socket.write(b);
      if (slot.last) {
        closed = true;
        socket.uncork();
        socket.end(); // after the answer: a failed authentication ends the connection, as Kafka does
        return;
      }
    }
    socket.uncork();
  };

  const start = (p: Run, slot: Slot) => {
    slot.started = true;
    running++;
    if (p.keys === null) runningAlone = true;
    else for (const k of p.keys) runningKeys.set(k, (runningKeys.get(k) ?? 0) + 1);
    void HANDLERS.get(p.api.apiKey)!(ctxBase(p.clientId), p.body, p.version).then(
      (response) => {
        if (response !== undefined)
          slot.out = encodeResponse(
            p.correlationId,
            responseHeaderVersion(p.api, p.version),
            p.api,
            p.version,
            response,
          );
        slot.done = true;
        if (connection.closeAfterAnswer) slot.last = true;
        running--;
        if (p.keys === null) runningAlone = false;
        else
          for (const k of p.keys) {
            const n = runningKeys.get(k)! - 1;
            if (n === 0) runningKeys.delete(k);
            else runningKeys.set(k, n);
          }
        heldBytes -= p.size;
        givePooled(p.size);
        flush();
        pump();
      },
      (e: unknown) => {
        if (!closed)
          logger.error('kafka handler failed', {
            api: p.api.name,
            error: String(e),
            stack: e instanceof Error ? e.stack : undefined,
          });
        close('handler failed');
      },
    );
  };

  /** Reads frames while the bounds allow, and starts what may start; a finished request calls it again. */
  const pump = () => {
    while (!closed && slots.length < MAX_PIPELINED && (heldBytes === 0 || heldBytes < maxInFlightBytes)) {
      // A slow reader: nothing new until it has read what it was sent.
      if (socket.writableLength > maxUnread) {
        if (!draining) {
          draining = true;
          socket.once('drain', () => {
            draining = false;
            pump();
          });
        }
        break;
      }
      const frame = nextFrame();
      if (!frame) break;
      const p = parse(frame);
      if (!p) return; // closed
      if (p.kind === 'answer') {
        givePooled(frame.byteLength);
        slots.push({ keys: null, started: true, done: true, out: p.out });
        flush();
        continue;
      }
      const slot: Slot = { keys: p.keys, started: false, done: false };
      slots.push(slot);
      heldBytes += p.size;
      waiting.push({ p, slot });
    }
    if (!closed) startReady();
    flow();
  };

  /**
   * Reads while what is buffered is the frame the connection has memory for plus a little read-ahead;
   * stops beyond (requests not taken yet, a frame waiting for the pool, a delayed close).
   */
  const flow = () => {
    if (closed) return;
    const read = !closing && buffered <= (frameReserved > 0 ? frameReserved + 4 : 0) + READ_AHEAD_BYTES;
    if (read && socket.isPaused()) socket.resume();
    else if (!read && !socket.isPaused()) socket.pause();
  };

  const parse = (frame: Buffer): Parsed | undefined => {
    if (rawTokenNext) return rawToken(frame);
    const r = new Reader(frame);
    let header: ReturnType<typeof readRequestHeader>;
    try {
      header = readRequestHeader(r);
    } catch (e) {
      return void close('bad request header', e);
    }
    const api = API_BY_KEY.get(header.apiKey);
    if (!api) return void close('unknown api key', header.apiKey);
    if (!supports(api.request, header.apiVersion)) {
      if (header.apiKey === API_VERSIONS_KEY) {
        const out = encodeResponse(header.correlationId, 0, ApiVersions, 0, {
          errorCode: new KafkaError('UNSUPPORTED_VERSION', '').code,
          apiKeys: supportedApiKeys(),
        });
        return { kind: 'answer', out };
      }
      return void close('unsupported version', `${api.name} v${header.apiVersion}`);
    }
    if (saslRequired && connection.sasl !== 'authenticated' && !PRE_AUTH_APIS.has(header.apiKey))
      return void close('not authenticated', api.name);
    let body: Record<string, unknown>;
    try {
      finishRequestHeader(api, header.apiVersion, r);
      body = decodeMessage(api.request, header.apiVersion, r);
    } catch (e) {
      return void close('malformed request', e instanceof ProtocolError ? e.message : e);
    }
    // SaslHandshake v0: the token that follows is a bare frame, not a SaslAuthenticate request.
    if (api === SaslHandshake && header.apiVersion === 0 && saslRequired && connection.sasl === 'none')
      rawTokenNext = body.mechanism === 'PLAIN' && saslMechanisms.includes('PLAIN');
    return {
      kind: 'run',
      size: frame.byteLength,
      api,
      version: header.apiVersion,
      correlationId: header.correlationId,
      clientId: header.clientId ?? '',
      body,
      keys: partitionsOf(api, body),
    };
  };

  /**
   * SASL/PLAIN after a v0 handshake (Kafka's pre-KIP-152 form): the token is answered with an
   * empty frame when it is right; a wrong one closes the connection, as Kafka does.
   */
  const rawToken = (frame: Buffer): Parsed | undefined => {
    rawTokenNext = false;
    try {
      connection.principal = plainPrincipal(frame, plainUsers);
    } catch (e) {
      const detail = e instanceof Error ? e.message : e;
      return void afterFailedAuthentication(() => close('authentication failed', detail));
    }
    connection.sasl = 'authenticated';
    return { kind: 'answer', out: [Buffer.alloc(4)] };
  };

  socket.on('data', (data: Buffer) => {
    if (closed) return;
    chunks.push(data);
    buffered += data.byteLength;
    pump();
  });
}

/** A Produce's topic-partitions (it may run beside others on disjoint ones); null: the request runs alone. */
function partitionsOf(api: ApiSpec, body: Record<string, unknown>): Set<string> | null {
  if (api.apiKey !== Produce.apiKey) return null;
  const keys = new Set<string>();
  for (const t of body.topicData as { name: string; partitionData: { index: number }[] }[])
    for (const p of t.partitionData) keys.add(`${t.name}\u0000${p.index}`);
  return keys;
}

function encodeResponse(
  correlationId: number,
  headerVersion: 0 | 1,
  api: ApiSpec,
  version: number,
  body: Record<string, unknown>,
): Buffer[] {
  const w = new Writer();
  w.int32(0); // the size, set below
  writeResponseHeader(w, correlationId, headerVersion);
  encodeMessage(api.response, version, body, w);
  const parts = w.chunks();
  parts[0]!.writeInt32BE(w.length - 4, 0);
  return parts;
}
