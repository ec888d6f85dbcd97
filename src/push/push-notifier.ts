/**
 * The produce side of push: after a commit (or a high watermark move) on a partition, tells the
 * connections armed on it, through the ConnectionPoster port, and disarms them. Commits are
 * collected per topic, and a topic's subscriptions are read once per round (one query), however
 * many partitions the request touched. `settle()` waits for the rounds in flight: the HTTP layer
 * calls it before answering, since a Lambda may be frozen once it has answered.
 *
 * A notification can be lost (a post fails, a Lambda dies after its commit): the consumer's
 * fallback poll finds the records then, so nothing is missed, only later.
 */
import type { ConnectionPoster } from './ports.js';
import type { Subscriptions } from './subscriptions.js';

export type PushMessage = {
  type: 'ready';
  topic: string;
  partitions: { partition: number; high_watermark?: number }[];
};

export class PushNotifier {
  private readonly touched = new Map<string, Set<number>>();
  private round: Promise<void> | undefined;
  private readonly inFlight = new Set<Promise<void>>();

  constructor(
    private readonly subscriptions: Subscriptions,
    private readonly poster: ConnectionPoster,
    private readonly onError: (e: unknown) => void = () => {},
  ) {}

  /** Records a commit on a partition; the notification goes out in the next round. */
  committed(topic: string, partition: number): void {
    const set = this.touched.get(topic) ?? new Set<number>();
    this.touched.set(topic, set);
    set.add(partition);
    this.round ??= this.track(
      Promise.resolve().then(async () => {
        this.round = undefined;
        const batch = [...this.touched];
        this.touched.clear();
        await Promise.all(batch.map(([t, ps]) => this.notifyTopic(t, ps)));
      }),
    );
  }

  /** Resolves once every notification started so far was posted (or failed). */
  async settle(): Promise<void> {
    while (this.inFlight.size > 0) await Promise.allSettled([...this.inFlight]);
  }

  private track(p: Promise<void>): Promise<void> {
    const q = p.catch(this.onError).finally(() => this.inFlight.delete(q));
    this.inFlight.add(q);
    return q;
  }

  private async notifyTopic(topic: string, partitions: Set<number>): Promise<void> {
    const { live, expired } = await this.subscriptions.listAll(topic);
    // Settled one by one: a failed post must not end the round (and the answer) before the others are sent.
    const outcomes = await Promise.allSettled([
      // Where the store has no TTL (locally), or it has not come yet: whoever finds them removes them.
      ...expired.map((item) => this.subscriptions.remove(item)),
      ...live.map(async (item) => {
        const ready = [...partitions].filter((p) => item.value.armed[String(p)] !== undefined);
        if (ready.length === 0) return;
        const message: PushMessage = { type: 'ready', topic, partitions: ready.map((partition) => ({ partition })) };
        const outcome = await this.poster.post(item.value.endpoint, item.value.connectionId, JSON.stringify(message));
        if (outcome === 'gone') return this.subscriptions.remove(item);
        await this.subscriptions.disarm(item, ready);
      }),
    ]);
    for (const o of outcomes) if (o.status === 'rejected') this.onError(o.reason);
  }
}
