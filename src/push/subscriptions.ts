/**
 * Push subscriptions in the metadata table: one item per (topic, connection), pk `push#{topic}`,
 * sk `conn#{connectionId}`, holding the partitions the connection waits on and the offset each
 * waits past (its consumer's position). A produce to the topic reads them with one query.
 *
 * An arm is one-shot per partition: the notifier removes a partition it told about, and the
 * consumer arms it again once it has caught up and found nothing more. So a busy partition costs
 * no notifications, and an idle consumer costs one write per wake-up. A topic nobody is armed on
 * costs no query per commit where the store has change stamps (the local backend; see the cache).
 *
 * Every write carries the item's expiry (`expiresAt`, also as the store's expiry: DynamoDB's TTL
 * deletes the items of connections that went away without a produce to tell them). TTL deletes
 * within days, not at the time, so readers skip an expired item themselves.
 *
 * The list is cached per topic, so that a hot topic's produce rate does not turn into as many
 * queries of one partition key: where the store has change stamps (the local backend) the cached
 * list stands while the stamp does, exactly; elsewhere (DynamoDB) it stands `cacheMs` (default
 * 1 s), and an answer from it says so (`staleUntil`) so that the notifier can look again for arms
 * it could have missed (src/push/push-notifier.ts). This process's own writes drop the entry.
 */
import type { Clock } from '../clock.js';
import { ConditionFailedError, type MetadataStore, type MetaItem } from '../storage/ports.js';

export interface Subscription {
  /** Where the connection is held: API Gateway's stage URL, or a local server's origin. */
  endpoint: string;
  connectionId: string;
  /** Partition (as a string key) -> the offset the consumer waits past. */
  armed: Record<string, number>;
  /** Epoch ms after which the item is ignored and may be deleted (connections live 2 h at most on API Gateway). */
  expiresAt: number;
  /** The consumer takes committed records in the message (push-notifier.ts): absent on older clients' arms. */
  records?: true;
}

export interface ArmedPartition {
  partition: number;
  offset: number;
}

/** API Gateway closes a WebSocket after 2 hours; the client arms again on its next connection. */
export const SUBSCRIPTION_TTL_MS = 2 * 60 * 60 * 1000 + 5 * 60 * 1000;

/** How long a topic's subscription list is reused where the store has no change stamps. */
export const SUBSCRIPTION_CACHE_MS = 1000;

export const subscriptionPk = (topic: string) => `push#${topic}`;
const connectionSk = (connectionId: string) => `conn#${connectionId}`;

export interface SubscriptionList {
  live: MetaItem<Subscription>[];
  expired: MetaItem<Subscription>[];
  /** Set when the list came from the time-bound cache: arms made elsewhere after it was read are missing until then. */
  staleUntil?: number;
}

interface CachedList {
  at: number;
  /** The store's change stamp taken before the query, where it has stamps. */
  stamp: string | undefined;
  items: Promise<MetaItem<Subscription>[]>;
}

export class Subscriptions {
  /** Per subscription pk: the last list read, reused as the class comment says. */
  private readonly cache = new Map<string, CachedList>();

  constructor(
    private readonly metadata: MetadataStore,
    private readonly clock: Clock,
    private readonly cacheMs = SUBSCRIPTION_CACHE_MS,
  ) {}

  /** Replaces what the connection waits on in `topic` (nothing: the item goes). */
  async arm(
    topic: string,
    endpoint: string,
    connectionId: string,
    partitions: ArmedPartition[],
    options: { records?: boolean } = {},
  ): Promise<void> {
    const pk = subscriptionPk(topic);
    try {
      if (partitions.length === 0) return await this.metadata.delete(pk, connectionSk(connectionId));
      const armed: Record<string, number> = {};
      for (const p of partitions) armed[String(p.partition)] = p.offset;
      const value: Subscription = {
        endpoint,
        connectionId,
        armed,
        expiresAt: this.clock.now() + SUBSCRIPTION_TTL_MS,
        ...(options.records && { records: true as const }),
      };
      await this.metadata.put(pk, connectionSk(connectionId), value, undefined, { expiresAt: value.expiresAt });
    } finally {
      // After the write: a list read meanwhile must not stand for the list after it.
      this.cache.delete(pk);
    }
  }

  /** The live subscriptions of a topic (one strongly consistent query): expired ones are left out. */
  async list(topic: string): Promise<MetaItem<Subscription>[]> {
    return (await this.listAll(topic)).live;
  }

  /**
   * Starts reading the topic's list ahead of a commit (beside the produce's own storage calls), unless
   * the cache would answer for it now; the commit's listing then finds it read. A list read ahead
   * counts from when its read began, as any cached list: by time it is stale from then (the listing
   * says so), by stamp exact while the stamp stands.
   */
  prefetch(topic: string): Promise<unknown> | undefined {
    const pk = subscriptionPk(topic);
    const stamp = this.metadata.changeStamp?.(pk);
    const now = this.clock.now();
    if (this.reusable(this.cache.get(pk), stamp, now)) return undefined;
    return this.read(pk, stamp, now).items;
  }

  /** The topic's subscriptions, live and expired (not deleted yet: TTL runs late, and only on DynamoDB). */
  async listAll(topic: string): Promise<SubscriptionList> {
    const pk = subscriptionPk(topic);
    // Taken before the query: an arm that lands after it moves the stamp, one before it is read.
    const stamp = this.metadata.changeStamp?.(pk);
    const now = this.clock.now();
    const cached = this.cache.get(pk);
    const reuse = this.reusable(cached, stamp, now);
    const entry = reuse && cached ? cached : this.read(pk, stamp, now);
    const items = await entry.items;
    const live: MetaItem<Subscription>[] = [];
    const expired: MetaItem<Subscription>[] = [];
    for (const item of items) (this.expired(item) ? expired : live).push(item);
    // Reused by time (not by stamp) and read before this call: arms since may be missing.
    return reuse === 'timely' ? { live, expired, staleUntil: entry.at + this.cacheMs } : { live, expired };
  }

  /** Whether a cached list answers for the topic now: exactly (its stamp stands) or within its time bound. */
  private reusable(entry: CachedList | undefined, stamp: string | undefined, now: number): 'exact' | 'timely' | false {
    if (!entry) return false;
    if (stamp !== undefined) return entry.stamp === stamp ? 'exact' : false;
    return now - entry.at < this.cacheMs ? 'timely' : false;
  }

  /** One strongly consistent query of the list, cached from now. */
  private read(pk: string, stamp: string | undefined, now: number): CachedList {
    const items = this.metadata.query<Subscription>(pk, { beginsWith: 'conn#' });
    const fresh: CachedList = { at: now, stamp, items };
    this.cache.set(pk, fresh);
    // A failed read is not kept: the next listing tries again.
    items.catch(() => {
      if (this.cache.get(pk) === fresh) this.cache.delete(pk);
    });
    return fresh;
  }

  expired(item: MetaItem<Subscription>): boolean {
    return item.value.expiresAt <= this.clock.now();
  }

  /**
   * Takes `partitions` out of a subscription that was told about them, unless the connection armed
   * again meanwhile (then its new arm stands, and its own check answers it).
   */
  async disarm(item: MetaItem<Subscription>, partitions: number[]): Promise<void> {
    const armed = { ...item.value.armed };
    for (const p of partitions) delete armed[String(p)];
    try {
      if (Object.keys(armed).length === 0) await this.metadata.delete(item.pk, item.sk, { ifVersion: item.version });
      else
        await this.metadata.put(
          item.pk,
          item.sk,
          { ...item.value, armed },
          { ifVersion: item.version },
          { expiresAt: item.value.expiresAt },
        );
    } catch (e) {
      if (!(e instanceof ConditionFailedError)) throw e;
    } finally {
      this.cache.delete(item.pk);
    }
  }

  async remove(item: MetaItem<Subscription>): Promise<void> {
    await this.metadata
      .delete(item.pk, item.sk, { ifVersion: item.version })
      .catch((e: unknown) => {
        if (!(e instanceof ConditionFailedError)) throw e;
      })
      .finally(() => this.cache.delete(item.pk));
  }
}
