/**
 * A consumer's push connection: a WebSocket (API Gateway's WebSocket API when deployed, the local
 * server's `/v3/push` otherwise) on which it arms the partitions it has caught up on and is told
 * when records arrive, so that waiting holds no request (and no Lambda) open.
 *
 * Messages: `{"action":"subscribe","topic","partitions":[{"partition","offset"}]}` replaces what
 * this connection waits on in a topic, and the server answers at once for partitions that already
 * have records past the offset; it sends `{"type":"ready","topic","partitions":[{"partition"}]}`
 * then, or when a commit reaches an armed partition. Its arms ask for records (`"records":true`),
 * and the server keeps them armed: it tells every commit, with the commit's record batches when
 * small (`base_offset`, `last_offset`, `high_watermark`, `last_stable_offset`, `records`), else
 * with `"armed":true` and the high watermark. So an arm at a new offset (the consumer read on)
 * needs no message. The consumer takes records that start where it has read (`onRecords`), and
 * fetches past a gap (a notification lost or overtaken) or when told without them
 * (`onCommitted`). A plain `ready` (an older server) disarms the partition on both sides. A
 * notification can be lost (a failed post):
 * every `recheckMs` the arms are sent again, which checks them again (and keeps the connection
 * open: API Gateway closes one idle for 10 minutes). If the connection drops, the consumer polls
 * (see idle-backoff.ts) and this reconnects with back-off.
 */
import type WebSocket from 'ws';
import { backoffMs } from '../retry.js';
import type { Transport } from '../transport.js';
import type { PushedPartition } from '../../wire/push-message.js';

/** A commit's records in a notification (absolute offsets). */
export interface PushedRecords {
  baseOffset: number;
  lastOffset: number;
  highWatermark: number;
  lastStableOffset: number;
  /** Record batches, Kafka's format. */
  batches: Uint8Array;
}

export interface PushChannelEvents {
  /** Records are readable past the armed offset of these partitions (they are no longer armed). */
  onReady(topic: string, partitions: number[]): void;
  /** A commit's records on an armed partition (it stays armed): true if the consumer took them. */
  onRecords(topic: string, partition: number, records: PushedRecords): boolean;
  /** A commit on an armed partition, told without its records (it stays armed): records are readable below `highWatermark`. */
  onCommitted(topic: string, partition: number, highWatermark: number | undefined): void;
  /** The connection is open (arm again) or has dropped (poll instead). */
  onConnectionChange(connected: boolean): void;
  /** A connection being opened failed (refused, unreachable): no point waiting for it to open. */
  onConnectFailed?(): void;
  log(level: 'warn' | 'error', message: string, extra?: Record<string, unknown>): void;
}

/** API Gateway closes a connection that sent nothing for 10 minutes. */
const MAX_SILENCE_MS = 5 * 60_000;
const RECONNECT_MIN_MS = 1000;
const RECONNECT_MAX_MS = 60_000;
/** A server that answers the upgrade with an HTTP error has no push API (or refuses us): ask again rarely. */
const REFUSED_RETRY_MS = 10 * 60_000;

export class PushChannel {
  private ws: WebSocket | undefined;
  private opening: Promise<void> | undefined;
  private open = false;
  private closed = false;
  private failures = 0;
  /** The HTTP status of the last refused upgrade. */
  private refused = 0;
  private reconnect: NodeJS.Timeout | undefined;
  private keepalive: NodeJS.Timeout | undefined;
  /** topic -> partition -> the offset armed at. */
  private readonly armed = new Map<string, Map<number, number>>();
  private readonly dirty = new Set<string>();
  private flushing = false;

  constructor(
    private readonly transport: Transport,
    private readonly url: string,
    /** How often the arms are sent again (a re-check for lost notifications). */
    private readonly recheckMs: number,
    private readonly events: PushChannelEvents,
  ) {}

  get connected(): boolean {
    return this.open;
  }

  isArmed(topic: string, partition: number): boolean {
    return this.armed.get(topic)?.has(partition) ?? false;
  }

  /**
   * Waits for records past `offset` on the partition (sent with the topic's other arms, at once;
   * armed already, the server tells every commit, and the new offset goes with the next message).
   */
  arm(topic: string, partition: number, offset: number): void {
    const m = this.armed.get(topic) ?? new Map<number, number>();
    this.armed.set(topic, m);
    const armed = m.has(partition);
    m.set(partition, offset);
    if (!armed) this.markDirty(topic);
  }

  /** Stops waiting on a partition (it is fetching again, or no longer assigned). */
  disarm(topic: string, partition: number): void {
    const m = this.armed.get(topic);
    if (!m?.delete(partition)) return;
    if (m.size === 0) this.armed.delete(topic);
    // Not open: nothing to take back (a new connection arms only what is armed then); no connection
    // is opened to say so (the consumer closing disarms everything).
    if (this.open) this.markDirty(topic);
  }

  private markDirty(topic: string): void {
    this.dirty.add(topic);
    if (!this.open) {
      void this.connect();
      return;
    }
    if (this.flushing) return;
    this.flushing = true;
    // One message per topic for every arm made in this turn of the event loop.
    setImmediate(() => {
      this.flushing = false;
      this.flush();
    });
  }

  private flush(): void {
    const ws = this.ws;
    if (!this.open || !ws || ws.readyState !== ws.OPEN) return;
    for (const topic of this.dirty) {
      const partitions = [...(this.armed.get(topic) ?? [])].map(([partition, offset]) => ({ partition, offset }));
      ws.send(JSON.stringify({ action: 'subscribe', topic, partitions, records: true }));
    }
    this.dirty.clear();
  }

  private connect(): Promise<void> {
    if (this.closed || this.ws || this.reconnect) return Promise.resolve();
    this.opening ??= this.openSocket().finally(() => (this.opening = undefined));
    return this.opening;
  }

  private async openSocket(): Promise<void> {
    let ws: WebSocket;
    try {
      const { default: WebSocketImpl } = await import('ws');
      const headers = await this.transport.upgradeHeaders(this.url);
      ws = new WebSocketImpl(this.url, { headers, handshakeTimeout: this.transport.requestTimeoutMs });
    } catch (e) {
      this.events.onConnectFailed?.();
      return this.scheduleReconnect(e);
    }
    if (this.closed) {
      // Closed while the socket was being made: ws reports the aborted handshake as an 'error'
      // event, which with no listener would be thrown out of the process.
      ws.on('error', () => {});
      return void ws.terminate();
    }
    this.ws = ws;
    ws.on('open', () => {
      this.open = true;
      this.failures = 0;
      // A new connection has a new id: everything armed is armed again.
      for (const topic of this.armed.keys()) this.dirty.add(topic);
      this.flush();
      this.keepalive = setInterval(
        () => {
          if (ws.readyState !== ws.OPEN) return;
          if (this.armed.size === 0) ws.send(JSON.stringify({ action: 'ping' }));
          for (const topic of this.armed.keys()) this.dirty.add(topic);
          this.flush();
        },
        Math.min(this.recheckMs, MAX_SILENCE_MS),
      );
      this.keepalive.unref();
      this.events.onConnectionChange(true);
    });
    ws.on('message', (data) => this.receive(String(data)));
    ws.on('unexpected-response', (_req, res) => {
      this.refused = res.statusCode ?? 0;
      ws.terminate();
    });
    ws.on('error', () => {}); // 'close' follows
    ws.on('close', () => {
      if (this.ws !== ws) return;
      const wasOpen = this.open;
      this.open = false;
      this.ws = undefined;
      if (this.keepalive) clearInterval(this.keepalive);
      if (wasOpen) this.events.onConnectionChange(false);
      else this.events.onConnectFailed?.();
      this.scheduleReconnect(undefined);
    });
  }

  private scheduleReconnect(error: unknown): void {
    if (this.closed || this.reconnect) return;
    const refused = this.refused;
    this.refused = 0;
    if (this.failures === 0 && (error !== undefined || refused)) {
      this.events.log('warn', 'push connection failed; polling instead', {
        url: this.url,
        ...(refused ? { status: refused } : { error: String(error) }),
      });
    }
    const wait =
      refused >= 400 && refused < 500 ? REFUSED_RETRY_MS : backoffMs(this.failures, RECONNECT_MIN_MS, RECONNECT_MAX_MS);
    this.failures++;
    this.reconnect = setTimeout(() => {
      this.reconnect = undefined;
      if (this.armed.size > 0) void this.connect();
    }, wait);
    this.reconnect.unref();
  }

  private receive(text: string): void {
    let m: { type?: string; topic?: string; partitions?: PushedPartition[]; error?: string; message?: string };
    try {
      m = JSON.parse(text) as typeof m;
    } catch {
      return;
    }
    if (m.type === 'ready' && typeof m.topic === 'string' && Array.isArray(m.partitions)) {
      const topic = m.topic;
      const ready: number[] = [];
      for (const p of m.partitions) {
        const armed = this.armed.get(topic);
        if (armed?.get(p?.partition) === undefined) continue;
        const records = pushedRecords(p);
        if (records) {
          // Still armed on the server: taken, the arm moves past them; else the consumer fetches.
          if (this.events.onRecords(topic, p.partition, records)) armed.set(p.partition, records.lastOffset + 1);
        } else if (p.armed === true) {
          const hw = p.high_watermark;
          this.events.onCommitted(topic, p.partition, Number.isSafeInteger(hw) ? hw : undefined);
        } else {
          armed.delete(p.partition);
          if (armed.size === 0) this.armed.delete(topic);
          ready.push(p.partition);
        }
      }
      if (ready.length > 0) this.events.onReady(topic, ready);
    } else if (m.type === 'error') {
      this.events.log('warn', 'push subscription refused', { error: m.error, message: m.message });
    }
  }

  close(): void {
    this.closed = true;
    if (this.reconnect) clearTimeout(this.reconnect);
    if (this.keepalive) clearInterval(this.keepalive);
    this.ws?.close();
    this.open = false;
  }
}

/** The records a partition of a message carries, if it carries well-formed ones. */
function pushedRecords(p: PushedPartition): PushedRecords | undefined {
  const { base_offset, last_offset, high_watermark, last_stable_offset, records } = p;
  const offsets = [base_offset, last_offset, high_watermark, last_stable_offset];
  if (typeof records !== 'string' || !offsets.every((n) => Number.isSafeInteger(n))) return undefined;
  if (last_offset! < base_offset!) return undefined;
  return {
    baseOffset: base_offset!,
    lastOffset: last_offset!,
    highWatermark: high_watermark!,
    lastStableOffset: last_stable_offset!,
    batches: Buffer.from(records, 'base64'),
  };
}
