/**
 * When a partition has nothing new: how long the consumer waits before fetching it again, and
 * whether the fetch should wait on the server at all.
 *
 * With a push connection (push-channel.ts) an empty answer arms the partition and the consumer
 * fetches again when told (a commit's notification, or the answer to a periodic re-check), or
 * after `pushFallbackPollMs` in case the socket died silently; its fetches then ask the server not
 * to wait (max_wait_ms=0), so no request is held open. Without one,
 * it long-polls as Kafka does, and after consecutive empty answers backs off (doubling from
 * fetch.max.wait.ms up to `fetchIdleBackoffMaxMs`, from the start of the fetch); records reset it.
 */
import type { Transport } from '../transport.js';
import { PushChannel, type PushChannelEvents, type PushedRecords } from './push-channel.js';
import type { TopicPartitionState, SubscriptionState } from './subscription-state.js';

export interface IdleBackoffConfig {
  fetchMaxWaitMs: number;
  /** Upper bound of the polling back-off while idle (fetch.max.wait.ms: no back-off). */
  fetchIdleBackoffMaxMs: number;
  /** With push: how long an armed partition waits without a notification before it is fetched anyway. */
  pushFallbackPollMs: number;
}

export class IdleBackoff {
  /** Consecutive empty answers per partition. */
  private readonly empties = new WeakMap<TopicPartitionState, number>();
  /**
   * The fallback fetch's deadline, shared by every partition armed before it is half gone: the
   * partitions of one multi-partition answer (or of answers close together) fall due together and
   * are fetched in one request, instead of one request each at their own jittered time.
   */
  private fallbackAt: number | undefined;
  /** The fetcher's: takes the records a notification carried (true), or fetches past them. */
  onPushed: ((s: TopicPartitionState, records: PushedRecords) => boolean) | undefined;
  /** The fetcher's: records are readable below `end` (unknown: a fetch is due). */
  onNotified: ((s: TopicPartitionState, end: number | undefined) => void) | undefined;

  constructor(
    private readonly config: IdleBackoffConfig,
    private readonly push: PushChannel | undefined,
  ) {}

  /** The max_wait_ms to send: none while push connected (the wait is on the socket). */
  maxWaitMs(): number {
    return this.push?.connected ? 0 : this.config.fetchMaxWaitMs;
  }

  /** The partition answered records: fetch as usual again. */
  onData(s: TopicPartitionState): void {
    this.empties.delete(s);
    this.push?.disarm(s.topic, s.partition);
  }

  /**
   * The partition answered records up to its end (the high watermark, or the last stable offset):
   * it is armed at `nextOffset` and, with push connected, not fetched again, as after an empty
   * answer, since what a fetch now would find is what the next commit's notification brings.
   * Returns when to fetch it next (0: at once, while push is not connected).
   */
  onCaughtUp(s: TopicPartitionState, nextOffset: number): number {
    this.empties.delete(s);
    if (!this.push) return 0;
    // Not connected yet, the arm opens the connection; meanwhile the partition is fetched as usual.
    this.push.arm(s.topic, s.partition, nextOffset);
    return this.push.connected ? this.fallbackDeadline(Date.now()) : 0;
  }

  /** The partition answered nothing new at `offset`: returns when to fetch it next. */
  onEmpty(s: TopicPartitionState, started: number, offset: number): number {
    const n = (this.empties.get(s) ?? 0) + 1;
    this.empties.set(s, n);
    if (this.push) {
      this.push.arm(s.topic, s.partition, offset);
      if (this.push.connected) return this.fallbackDeadline(Date.now());
    }
    return started + this.pollDelayMs(n);
  }

  /** Jittered (0.9-1.1), so that consumers started together do not fetch together. */
  private fallbackDeadline(now: number): number {
    const period = this.config.pushFallbackPollMs;
    if (this.fallbackAt === undefined || this.fallbackAt - now < period / 2)
      this.fallbackAt = now + period * (0.9 + Math.random() * 0.2);
    return this.fallbackAt;
  }

  /** From the start of the n-th consecutive empty fetch to the next one. */
  pollDelayMs(n: number): number {
    const { fetchMaxWaitMs, fetchIdleBackoffMaxMs } = this.config;
    if (n <= 1) return fetchMaxWaitMs;
    return Math.max(
      fetchMaxWaitMs,
      Math.min(fetchIdleBackoffMaxMs, Math.max(fetchMaxWaitMs, 100) * 2 ** Math.min(n - 1, 30)),
    );
  }
}

/**
 * The consumer's idle handling: the back-off, and a push channel when the connection has a push
 * URL. Wake-ups (a notification, a dropped connection) make the partitions fetchable and call `wake`.
 */
export function createIdleBackoff(
  transport: Transport,
  subs: SubscriptionState,
  /** pushRecheckIntervalMs: how often the armed partitions are checked again on the socket (lost notifications). */
  config: IdleBackoffConfig & { push: boolean; pushRecheckIntervalMs: number },
  wake: () => void,
  log: PushChannelEvents['log'],
): { idle: IdleBackoff; close(): void } {
  const url = config.push ? transport.pushUrl : undefined;
  let push: PushChannel | undefined;
  let idle: IdleBackoff | undefined;
  if (url) {
    push = new PushChannel(transport, url, config.pushRecheckIntervalMs, {
      onReady(topic, partitions) {
        for (const p of partitions) {
          const s = subs.get(topic, p);
          if (!s) continue;
          s.nextFetchAt = 0;
          // A fetch in flight may have read before the commit told of: it is followed by another.
          if (s.fetching) s.pushedEnd = Number.MAX_SAFE_INTEGER;
        }
        wake();
      },
      onRecords(topic, partition, records) {
        const s = subs.get(topic, partition);
        const taken = s !== undefined && idle?.onPushed?.(s, records) === true;
        wake(); // taken, or a fetch is due
        return taken;
      },
      onCommitted(topic, partition, highWatermark) {
        const s = subs.get(topic, partition);
        if (!s) return;
        idle?.onNotified?.(s, highWatermark);
        wake();
      },
      onConnectionChange(connected) {
        // Dropped: what waited on the socket polls now. Opened: fetch once more without a wait, then arm.
        for (const s of subs.states()) if (!connected || push!.isArmed(s.topic, s.partition)) s.nextFetchAt = 0;
        wake();
      },
      log,
    });
  }
  idle = new IdleBackoff(config, push);
  // A partition no longer assigned is no longer waited on: armed, the server would post its
  // commits to this connection until the topic's next arm replaced the list (never, were it the
  // topic's last partition here), and the periodic re-check would send it again.
  if (push) subs.onRemoved = (s) => push!.disarm(s.topic, s.partition);
  return { idle, close: () => push?.close() };
}
