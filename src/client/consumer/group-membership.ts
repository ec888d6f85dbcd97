/**
 * A consumer's group membership (KIP-848's client side): heartbeats in the background at the
 * interval the server asks for, carrying the subscription on join and the partitions the consumer
 * still owns, and keeps the latest assignment for the consumer to reconcile towards in poll().
 * Losing the membership (UNKNOWN_MEMBER_ID, FENCED_MEMBER_EPOCH) is reported, and the member rejoins
 * with epoch 0 only after the consumer dropped its partitions.
 */
import { asClientError, type KafkaClientError } from '../errors.js';
import { backoffMs } from '../retry.js';
import type { Assignment, GroupClient } from './group-client.js';

export interface MembershipConfig {
  clientId: string;
  sessionTimeoutMs: number;
  rebalanceTimeoutMs: number;
  /** Upper bound on the server's heartbeat interval (the server's own when undefined). */
  heartbeatIntervalMs: number | undefined;
  assignor: string | undefined;
  retryBackoffMs: number;
  retryBackoffMaxMs: number;
}

const LOST = new Set(['UNKNOWN_MEMBER_ID', 'FENCED_MEMBER_EPOCH']);

export class GroupMembership {
  /**
   * Generated here, once per consumer, as KIP-1082 has clients do: a join whose answer was lost is
   * retried with the same id, so the coordinator rejoins that member instead of adding a second.
   */
  memberId: string = globalThis.crypto.randomUUID();
  memberEpoch = 0;
  /** The assignment of the last answer; undefined before the first. */
  target: Assignment | undefined;
  /** The membership was lost: the consumer must drop its partitions, then call `rejoin()`. */
  lost = false;
  /** A non-retriable heartbeat failure the consumer should raise. */
  error: KafkaClientError | undefined;
  private topics: string[] = [];
  private needsJoin = true;
  private sendSubscription = true;
  private timer: NodeJS.Timeout | undefined;
  private inFlight: Promise<void> | undefined;
  private again = false;
  private stopped = true;
  private failures = 0;
  private intervalMs = 3000;
  private readonly abort = new AbortController();

  constructor(
    private readonly client: GroupClient,
    private readonly config: MembershipConfig,
    /** The partitions the consumer holds right now. */
    private readonly owned: () => Assignment,
    /** Called after every answer that may change what the consumer should hold. */
    private readonly onChange: () => void,
  ) {}

  get groupId(): string {
    return this.client.groupId;
  }

  get active(): boolean {
    return !this.stopped;
  }

  subscribe(topics: string[]): void {
    this.topics = [...new Set(topics)].sort();
    this.sendSubscription = true;
    if (this.stopped) {
      this.stopped = false;
      this.needsJoin = true;
      this.memberEpoch = 0;
    }
    this.heartbeatNow();
  }

  /** After the consumer dropped a lost membership's partitions: join again as a new generation. */
  rejoin(): void {
    this.lost = false;
    this.needsJoin = true;
    this.memberEpoch = 0;
    this.sendSubscription = true;
    this.target = undefined;
    this.heartbeatNow();
  }

  heartbeatNow(): void {
    if (this.stopped) return;
    this.schedule(0);
  }

  /** Sends a heartbeat now and waits for its answer (e.g. to learn a new epoch after a stale commit). */
  async refresh(): Promise<void> {
    if (this.stopped || this.lost) return;
    await this.inFlight?.catch(() => {});
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    await this.beat();
  }

  private schedule(ms: number): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.beat();
    }, ms);
  }

  private beat(): Promise<void> {
    if (this.inFlight) {
      this.again = true;
      return this.inFlight;
    }
    if (this.stopped || this.lost) return Promise.resolve();
    this.inFlight = this.send().finally(() => {
      this.inFlight = undefined;
      if (this.stopped || this.lost) return;
      if (this.again) {
        this.again = false;
        this.schedule(0);
      }
    });
    return this.inFlight;
  }

  private async send(): Promise<void> {
    const joining = this.needsJoin;
    const withSubscription = joining || this.sendSubscription;
    try {
      const res = await this.client.heartbeat(
        {
          memberId: this.memberId,
          memberEpoch: this.memberEpoch,
          ...(withSubscription
            ? {
                clientId: this.config.clientId,
                subscribedTopics: this.topics,
                sessionTimeoutMs: this.config.sessionTimeoutMs,
                rebalanceTimeoutMs: this.config.rebalanceTimeoutMs,
                ...(this.config.assignor ? { assignor: this.config.assignor } : {}),
              }
            : {}),
          ...(joining ? {} : { ownedPartitions: this.owned() }),
        },
        this.abort.signal,
      );
      this.needsJoin = false;
      this.memberId = res.memberId;
      this.memberEpoch = res.memberEpoch;
      if (this.stopped) return;
      if (withSubscription) this.sendSubscription = false;
      this.failures = 0;
      this.intervalMs = Math.max(
        1,
        Math.min(res.heartbeatIntervalMs || 3000, this.config.heartbeatIntervalMs ?? Infinity),
      );
      this.target = res.assignment;
      this.onChange();
      this.schedule(this.intervalMs);
    } catch (e) {
      if (this.stopped) return;
      const err = asClientError(e);
      if (LOST.has(err.type)) {
        this.lost = true;
        this.target = {};
        this.onChange();
        return;
      }
      if (err.retriable) {
        this.schedule(
          backoffMs(
            this.failures++,
            this.config.retryBackoffMs,
            Math.min(this.config.retryBackoffMaxMs, this.intervalMs),
          ),
        );
        return;
      }
      this.error = err;
      this.onChange();
      this.schedule(this.intervalMs);
    }
  }

  /** Stops heartbeating and leaves the group (member epoch -1). */
  async leave(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    await this.inFlight?.catch(() => {});
    if (this.memberId && !this.needsJoin && !this.lost) {
      await this.client.heartbeat({ memberId: this.memberId, memberEpoch: -1 }).catch(() => {});
    }
    this.memberEpoch = 0;
    this.needsJoin = true;
    this.target = undefined;
  }

  /** Stops without leaving (the session expires on the server). */
  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.abort.abort();
  }
}
