/**
 * Push subscriptions in the metadata table: one item per (topic, connection), pk `push#{topic}`,
 * sk `conn#{connectionId}`, holding the partitions the connection waits on and the offset each
 * waits past (its consumer's position). A produce to the topic reads them with one query.
 *
 * An arm is one-shot per partition: the notifier removes a partition it told about, and the
 * consumer arms it again once it has caught up and found nothing more. So a busy partition costs
 * no notifications, and an idle consumer costs one write per wake-up. A topic nobody is armed on
 * costs no query per commit where the store has change stamps (the local backend; see `none`).
 *
 * Every write carries the item's expiry (`expiresAt`, also as the store's expiry: DynamoDB's TTL
 * deletes the items of connections that went away without a produce to tell them). TTL deletes
 * within days, not at the time, so readers skip an expired item themselves.
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
}

export interface ArmedPartition {
  partition: number;
  offset: number;
}

/** API Gateway closes a WebSocket after 2 hours; the client arms again on its next connection. */
export const SUBSCRIPTION_TTL_MS = 2 * 60 * 60 * 1000 + 5 * 60 * 1000;

export const subscriptionPk = (topic: string) => `push#${topic}`;
const connectionSk = (connectionId: string) => `conn#${connectionId}`;

export class Subscriptions {
  /**
   * Topics whose last query found no subscription at all, with the store's change stamp of their
   * items taken before that query. Every commit lists its topic's subscriptions, and most topics
   * have none: while the stamp stands (no arm since, by this process or any other), the answer is
   * still "none" and the query is skipped. Stores without stamps (DynamoDB) are queried every time.
   */
  private readonly none = new Map<string, string>();

  constructor(
    private readonly metadata: MetadataStore,
    private readonly clock: Clock,
  ) {}

  /** Replaces what the connection waits on in `topic` (nothing: the item goes). */
  async arm(topic: string, endpoint: string, connectionId: string, partitions: ArmedPartition[]): Promise<void> {
    if (partitions.length === 0) return this.metadata.delete(subscriptionPk(topic), connectionSk(connectionId));
    const armed: Record<string, number> = {};
    for (const p of partitions) armed[String(p.partition)] = p.offset;
    const value: Subscription = { endpoint, connectionId, armed, expiresAt: this.clock.now() + SUBSCRIPTION_TTL_MS };
    await this.metadata.put(subscriptionPk(topic), connectionSk(connectionId), value, undefined, {
      expiresAt: value.expiresAt,
    });
  }

  /** The live subscriptions of a topic (one strongly consistent query): expired ones are left out. */
  async list(topic: string): Promise<MetaItem<Subscription>[]> {
    return (await this.listAll(topic)).live;
  }

  /** The topic's subscriptions, live and expired (not deleted yet: TTL runs late, and only on DynamoDB). */
  async listAll(topic: string): Promise<{ live: MetaItem<Subscription>[]; expired: MetaItem<Subscription>[] }> {
    const pk = subscriptionPk(topic);
    // Taken before the query: an arm that lands after it moves the stamp, one before it is read.
    const stamp = this.metadata.changeStamp?.(pk);
    if (stamp !== undefined && this.none.get(topic) === stamp) return { live: [], expired: [] };
    const items = await this.metadata.query<Subscription>(pk, { beginsWith: 'conn#' });
    if (stamp !== undefined && items.length === 0) this.none.set(topic, stamp);
    else this.none.delete(topic);
    const live: MetaItem<Subscription>[] = [];
    const expired: MetaItem<Subscription>[] = [];
    for (const item of items) (this.expired(item) ? expired : live).push(item);
    return { live, expired };
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
    }
  }

  async remove(item: MetaItem<Subscription>): Promise<void> {
    await this.metadata.delete(item.pk, item.sk, { ifVersion: item.version }).catch((e: unknown) => {
      if (!(e instanceof ConditionFailedError)) throw e;
    });
  }
}
