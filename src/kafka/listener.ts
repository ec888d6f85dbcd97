/**
 * The Kafka protocol listener: a TCP server speaking Kafka's binary protocol over the same services
 * as the HTTP API (src/compose.ts), so any Kafka client can produce, fetch and join groups.
 *
 * Per connection, requests are answered one at a time and in order, as a Kafka broker does (it
 * mutes a connection while a request is in flight). Memory per connection is bounded: a frame above
 * maxFrameBytes closes the connection, reading pauses while a request is in flight and more than
 * a frame is buffered, and the next request waits while the client is slow to read answers.
 * Frames that do not parse, unknown API keys and unsupported versions close the connection, as
 * Kafka does; ApiVersions of an unsupported version is answered in v0 with UNSUPPORTED_VERSION and
 * the supported versions, so a client can downgrade. Nothing a connection sends affects another.
 */
import { createServer, type Server, type Socket } from 'node:net';
import { KafkaError } from '../errors.js';
import type { ClassicGroupCoordinator } from '../groups/classic-coordinator.js';
import type { AppServices } from '../http/app-env.js';
import { HANDLERS } from './dispatch.js';
import { supportedApiKeys } from './handlers/cluster.js';
import type { Broker, ConnectionState, RequestContext } from './handlers/context.js';
import { decodeMessage, encodeMessage, ProtocolError, Reader, supports, Writer } from './protocol/codec.js';
import { API_VERSIONS_KEY, finishRequestHeader, readRequestHeader, responseHeaderVersion, writeResponseHeader } from './protocol/headers.js';
import { API_BY_KEY, ApiVersions, SaslAuthenticate, SaslHandshake } from './protocol/messages/index.js';

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
  autoCreateTopics?: boolean;
  /** SASL/PLAIN users; when set, a connection must authenticate before anything but ApiVersions and SASL. */
  plainUsers?: ReadonlyMap<string, string>;
  log?: (event: Record<string, unknown>) => void;
}

export interface KafkaListener {
  port: number;
  close(): Promise<void>;
}

const PRE_AUTH_APIS = new Set([ApiVersions.apiKey, SaslHandshake.apiKey, SaslAuthenticate.apiKey]);

export async function startKafkaListener(options: KafkaListenerOptions): Promise<KafkaListener> {
  const log = options.log ?? ((e) => console.log(JSON.stringify(e)));
  const sockets = new Set<Socket>();
  const server: Server = createServer({ noDelay: true }, (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    serveConnection(socket, options, broker, log);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => resolve());
  });
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : options.port;
  const broker: Broker = { nodeId: 0, host: options.advertisedHost ?? options.host, port: options.advertisedPort ?? port };
  return {
    port,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

function serveConnection(socket: Socket, options: KafkaListenerOptions, broker: Broker, log: (e: Record<string, unknown>) => void): void {
  const abort = new AbortController();
  const connection: ConnectionState = { sasl: 'none' };
  const maxUnread = options.maxUnreadBytes ?? 16 * 1024 * 1024;
  const chunks: Buffer[] = [];
  let buffered = 0;
  let busy = false;
  let closed = false;

  const close = (reason: string, detail?: unknown) => {
    if (closed) return;
    closed = true;
    log({ level: 'warn', msg: 'kafka connection closed', reason, remote: socket.remoteAddress, ...(detail ? { detail: String(detail) } : {}) });
    socket.destroy();
  };
  socket.setTimeout(options.idleTimeoutMs ?? 600_000, () => close('idle'));
  socket.on('close', () => {
    closed = true;
    abort.abort();
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
    ...(options.plainUsers ? { plainUsers: options.plainUsers } : {}),
    autoCreateTopics: options.autoCreateTopics ?? true,
    log,
  });

  /** The next complete frame, or undefined; closes the connection on a bad size. */
  const nextFrame = (): Buffer | undefined => {
    if (buffered < 4) return undefined;
    if (chunks[0]!.byteLength < 4) chunks.splice(0, chunks.length, Buffer.concat(chunks));
    const size = chunks[0]!.readInt32BE(0);
    if (size < 8 || size > options.maxFrameBytes) {
      close('bad frame size', `${size} bytes (limit ${options.maxFrameBytes})`);
      return undefined;
    }
    if (buffered < 4 + size) return undefined;
    const all = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks);
    const frame = all.subarray(4, 4 + size);
    const rest = all.subarray(4 + size);
    chunks.length = 0;
    if (rest.byteLength > 0) chunks.push(rest);
    buffered = rest.byteLength;
    return frame;
  };

  const pump = async () => {
    if (busy) return;
    busy = true;
    try {
      for (;;) {
        if (closed) return;
        const frame = nextFrame();
        if (!frame) break;
        if (socket.isPaused() && buffered <= options.maxFrameBytes) socket.resume();
        await handleFrame(frame);
        if (socket.writableLength > maxUnread) await new Promise((r) => socket.once('drain', r).once('close', r));
      }
    } finally {
      busy = false;
    }
  };

  const handleFrame = async (frame: Buffer) => {
    const r = new Reader(frame);
    let header;
    try {
      header = readRequestHeader(r);
    } catch (e) {
      return close('bad request header', e);
    }
    const api = API_BY_KEY.get(header.apiKey);
    if (!api) return close('unknown api key', header.apiKey);
    if (!supports(api.request, header.apiVersion)) {
      if (header.apiKey === API_VERSIONS_KEY) {
        return send(header.correlationId, 0, ApiVersions, 0, { errorCode: new KafkaError('UNSUPPORTED_VERSION', '').code, apiKeys: supportedApiKeys() });
      }
      return close('unsupported version', `${api.name} v${header.apiVersion}`);
    }
    if (options.plainUsers && connection.sasl !== 'authenticated' && !PRE_AUTH_APIS.has(header.apiKey)) return close('not authenticated', api.name);
    let body;
    try {
      finishRequestHeader(api, header.apiVersion, r);
      body = decodeMessage(api.request, header.apiVersion, r);
    } catch (e) {
      return close('malformed request', e instanceof ProtocolError ? e.message : e);
    }
    let response;
    try {
      response = await HANDLERS.get(header.apiKey)!(ctxBase(header.clientId ?? ''), body, header.apiVersion);
    } catch (e) {
      if (closed) return;
      log({ level: 'error', msg: 'kafka handler failed', api: api.name, error: String(e), stack: e instanceof Error ? e.stack : undefined });
      return close('handler failed');
    }
    if (response === undefined || closed) return;
    send(header.correlationId, responseHeaderVersion(api, header.apiVersion), api, header.apiVersion, response);
  };

  const send = (correlationId: number, headerVersion: 0 | 1, api: typeof ApiVersions, version: number, body: Record<string, unknown>) => {
    const w = new Writer();
    w.int32(0); // size, patched below
    writeResponseHeader(w, correlationId, headerVersion);
    encodeMessage(api.response, version, body, w);
    const parts = w.chunks();
    parts[0]!.writeInt32BE(w.length - 4, 0);
    socket.cork();
    for (const p of parts) socket.write(p);
    socket.uncork();
  };

  socket.on('data', (data: Buffer) => {
    if (closed) return;
    chunks.push(data);
    buffered += data.byteLength;
    // Bounded: at most one frame being read beyond the one in flight.
    if (busy && buffered > options.maxFrameBytes + 4) socket.pause();
    void pump().catch((e) => close('connection failed', e));
  });
}
