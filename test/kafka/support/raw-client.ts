import { connect, type Socket } from 'node:net';
import { connect as connectTls, type ConnectionOptions } from 'node:tls';
import { decodeMessage, encodeMessage, Reader, Writer } from '../../../src/kafka/protocol/codec.js';
import { responseHeaderVersion, writeRequestHeader } from '../../../src/kafka/protocol/headers.js';
import type { ApiSpec } from '../../../src/kafka/protocol/schema.js';

/** A bare Kafka connection for the tests: frames in, frames out, and whether the server closed it. */
export class RawClient {
  private buffered = Buffer.alloc(0);
  private waiting: (() => void)[] = [];
  closed = false;
  private nextCorrelation = 1;

  private constructor(readonly socket: Socket) {
    socket.on('data', (d) => {
      this.buffered = Buffer.concat([this.buffered, d]);
      this.wake();
    });
    socket.on('close', () => {
      this.closed = true;
      this.wake();
    });
    socket.on('error', () => {});
  }

  /**
   * A plain connection, or a TLS one with `tls` (its handshake done before this resolves);
   * `localAddress` (say 127.0.0.2) makes it come from another loopback address.
   */
  static async open(broker: string, tls?: ConnectionOptions, localAddress?: string): Promise<RawClient> {
    const [host, port] = broker.split(':');
    const at = { port: Number(port), host: host!, ...(localAddress ? { localAddress } : {}) };
    const socket = tls ? connectTls({ ...tls, ...at }) : connect(at);
    await new Promise((r, j) => socket.once(tls ? 'secureConnect' : 'connect', r).once('error', j));
    return new RawClient(socket);
  }

  private wake() {
    for (const w of this.waiting.splice(0)) w();
  }

  write(bytes: Uint8Array) {
    this.socket.write(bytes);
  }

  /** One request frame of `api` at `version`. */
  frame(api: ApiSpec, version: number, body: Record<string, unknown>, correlationId = this.nextCorrelation++): Buffer {
    const w = new Writer();
    w.int32(0);
    writeRequestHeader(w, api, { apiKey: api.apiKey, apiVersion: version, correlationId, clientId: 'raw' });
    encodeMessage(api.request, version, body, w);
    const b = w.toBuffer();
    b.writeInt32BE(b.byteLength - 4, 0);
    return b;
  }

  /** The next response frame's bytes (after the size), or undefined once the server closed. */
  async readFrame(timeoutMs = 5000): Promise<Buffer | undefined> {
    const end = Date.now() + timeoutMs;
    for (;;) {
      if (this.buffered.byteLength >= 4) {
        const size = this.buffered.readInt32BE(0);
        if (this.buffered.byteLength >= 4 + size) {
          const f = this.buffered.subarray(4, 4 + size);
          this.buffered = this.buffered.subarray(4 + size);
          return f;
        }
      }
      if (this.closed) return undefined;
      const left = end - Date.now();
      if (left <= 0) throw new Error('no response in time');
      await new Promise<void>((r) => {
        const t = setTimeout(r, left);
        this.waiting.push(() => {
          clearTimeout(t);
          r();
        });
      });
    }
  }

  async request(
    api: ApiSpec,
    version: number,
    body: Record<string, unknown>,
  ): Promise<{ correlationId: number; body: Record<string, any> }> {
    this.write(this.frame(api, version, body));
    const f = await this.readFrame();
    if (!f) throw new Error('connection closed');
    return decodeResponse(api, version, f);
  }

  async waitClosed(timeoutMs = 5000): Promise<boolean> {
    const end = Date.now() + timeoutMs;
    while (!this.closed && Date.now() < end) await new Promise((r) => setTimeout(r, 20));
    return this.closed;
  }

  close() {
    this.socket.destroy();
  }
}

export function decodeResponse(api: ApiSpec, version: number, frame: Buffer) {
  const r = new Reader(frame);
  const correlationId = r.int32();
  if (responseHeaderVersion(api, version) === 1) r.uvarint(); // no tagged fields sent
  return { correlationId, body: decodeMessage(api.response, version, r) as Record<string, any> };
}

/** One partition of a Fetch request, as a plain consumer asks for it (no leader epochs known). */
export const fetchPartition = (partition: number, fetchOffset = 0, partitionMaxBytes = 1 << 20) => ({
  partition,
  currentLeaderEpoch: -1,
  fetchOffset,
  lastFetchedEpoch: -1,
  logStartOffset: -1,
  partitionMaxBytes,
});

/** A Fetch request around `topics`: no session, read_uncommitted, no wait unless `fields` say so. */
export const fetchRequest = (topics: unknown[], fields: Record<string, unknown> = {}) => ({
  replicaId: -1,
  maxWaitMs: 0,
  minBytes: 0,
  maxBytes: 1 << 20,
  isolationLevel: 0,
  sessionId: 0,
  sessionEpoch: -1,
  topics,
  forgottenTopicsData: [],
  rackId: '',
  ...fields,
});
