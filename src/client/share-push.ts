/**
 * A share consumer's wait on the push connection (consumer/push-channel.ts) while its share group
 * is idle: no record held under a lock and none available, so that only an append can give it
 * records. It arms each share-partition at its SPEO (from where records were never delivered): the
 * server answers at once for a partition whose high watermark is past it, and otherwise tells the
 * next commit on it, from whichever process appends. Then the consumer's polls make no request
 * until told (or until `fallbackPollMs`, in case the socket died silently, or the group's offsets
 * were reset, which no commit tells). A group with records held or available is not idle: a
 * release or an ended lock gives records without an append, so the consumer long-polls then.
 */
import type { Transport } from './transport.js';
import { PushChannel, type PushChannelEvents } from './consumer/push-channel.js';

/** 'woken': told of records (receive them); 'idle': nothing yet (no request); 'poll': no connection to wait on, or the fallback poll is due (long-poll). */
export type PushWait = 'woken' | 'idle' | 'poll';

/** How long a wait gives a connection being opened before it long-polls instead. */
const CONNECT_BOUND_MS = 5000;
/** Without a connection, how often an idle consumer tries push again (it long-polls meanwhile). */
const RETRY_DOWN_MS = 30_000;

export class SharePushWait {
  private readonly channel: PushChannel;
  /** topic -> partitions armed. */
  private armed = new Map<string, number[]>();
  private woken = false;
  /** Set when a wait found no connection: the next waits do not wait for one (the channel reconnects on its own). */
  private down = false;
  private wake: ((w: PushWait) => void) | undefined;
  private fallbackAt = 0;
  private retryAt = 0;
  /** When the connection now being opened was asked for. */
  private connectingSince: number | undefined;

  constructor(
    transport: Transport,
    url: string,
    recheckMs: number,
    private readonly fallbackPollMs: number,
    log: PushChannelEvents['log'],
  ) {
    const woke = () => {
      if (this.armed.size === 0) return;
      this.woken = true;
      this.wake?.('woken');
    };
    this.channel = new PushChannel(transport, url, recheckMs, {
      onReady: woke,
      // Not taken: a share consumer's records come with their locks, from a receive.
      onRecords: () => {
        woke();
        return false;
      },
      onCommitted: woke,
      onConnectionChange: (connected) => {
        this.down = !connected;
        this.connectingSince = undefined;
        if (!connected) this.wake?.('poll');
        else this.wake?.('idle'); // opened: a waiting poll waits on it (see wait)
      },
      // A wait for the connection to open ends at once: the consumer long-polls instead.
      onConnectFailed: () => {
        this.down = true;
        this.connectingSince = undefined;
        this.wake?.('poll');
      },
      log,
    });
  }

  /**
   * Whether to look for idleness now (a describe request): always while the connection is open or
   * being opened the first time; without one, at most every RETRY_DOWN_MS (the arm is also what
   * opens the connection again).
   */
  worthArming(): boolean {
    if (this.channel.connected || !this.down) return true;
    if (Date.now() < this.retryAt) return false;
    this.retryAt = Date.now() + RETRY_DOWN_MS;
    return true;
  }

  /** Whether the consumer is waiting on the socket (armed, nothing told since). */
  get isArmed(): boolean {
    return this.armed.size > 0;
  }

  /** Waits on records past each share-partition's SPEO. */
  arm(partitions: { topic: string; partition: number; offset: number }[]): void {
    this.disarm();
    for (const p of partitions) {
      this.armed.set(p.topic, [...(this.armed.get(p.topic) ?? []), p.partition]);
      this.channel.arm(p.topic, p.partition, p.offset);
    }
    this.woken = false;
    this.fallbackAt = Date.now() + this.fallbackPollMs;
    if (!this.channel.connected) this.connectingSince ??= Date.now();
  }

  /** Stops waiting (it receives again). */
  disarm(): void {
    for (const [topic, partitions] of this.armed) for (const p of partitions) this.channel.disarm(topic, p);
    this.armed = new Map();
    this.woken = false;
  }

  /**
   * Waits up to `ms` for a notification (a connection being opened gets up to CONNECT_BOUND_MS).
   */
  async wait(ms: number): Promise<PushWait> {
    const end = Date.now() + ms;
    for (;;) {
      if (this.woken) return 'woken';
      if (Date.now() >= this.fallbackAt) return 'poll';
      if (!this.channel.connected && this.down) return 'poll';
      const left = Math.min(end, this.fallbackAt) - Date.now();
      if (left <= 0) return 'idle';
      const connecting = !this.channel.connected;
      // Up to CONNECT_BOUND_MS from when the connection was asked for: its opening arms what waits.
      const connectLeft = CONNECT_BOUND_MS - (Date.now() - (this.connectingSince ?? Date.now()));
      const outcome = await new Promise<PushWait>((resolve) => {
        const timer = setTimeout(() => resolve('idle'), connecting ? Math.min(left, connectLeft) : left);
        this.wake = (w) => {
          clearTimeout(timer);
          resolve(w);
        };
      });
      this.wake = undefined;
      if (outcome === 'poll') return 'poll';
      if (outcome === 'idle' && connecting && !this.channel.connected) {
        if (Date.now() - (this.connectingSince ?? 0) < CONNECT_BOUND_MS) return 'idle';
        // The connection did not open in time: poll instead, and do not wait for it again.
        this.down = true;
        return 'poll';
      }
      if (outcome === 'idle' && !connecting) return Date.now() >= this.fallbackAt ? 'poll' : 'idle';
    }
  }

  close(): void {
    this.channel.close();
    this.wake?.('poll');
  }
}
