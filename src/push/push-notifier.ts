/**
 * The produce side of push: after a commit (or a high watermark move) on a partition, tells the
 * connections armed on it, through the ConnectionPoster port, and disarms them. Commits are
 * collected per topic, and a topic's subscriptions are read once per round (one query), however
 * many partitions the request touched. `settle()` waits for the rounds in flight: the HTTP layer
 * calls it before answering, since a Lambda may be frozen once it has answered.
 *
 * The list is read as the append begins (`appending`, from the log's `onAppendStart`), beside the
 * append's own storage calls, so the round after the commit finds it read instead of adding a
 * round trip before the answer. Read before the commit, it is a list that may miss an arm made
 * meanwhile whose own high-watermark check also ran before the commit; so it counts as the cache's
 * lists do (below): stale from its read, looked at again once its bound has lapsed. Where the store
 * has change stamps it is exact while the stamp stands, and an arm moves the stamp.
 *
 * The list may come from the subscriptions' time-bound cache (`staleUntil`): an arm made by another
 * process since it was read is not in it. The partitions such a round told nobody about are kept,
 * and the notifier looks again once the cache has lapsed, with a fresh list: so an arm is seen at
 * most the cache's bound (1 s) after it was made, whether or not more records come, as long as the
 * process runs (a Lambda frozen after its answer looks at its next invocation; the consumer's
 * fallback poll bounds it then). A steady produce rate costs one query per topic per bound.
 *
 * A notification can be lost (a post fails, a Lambda dies after its commit): the consumer's
 * fallback poll finds the records then, so nothing is missed, only later.
 */
import type { ConnectionPoster } from './ports.js';
import type { Subscriptions } from './subscriptions.js';

const noop = () => {};

export type PushMessage = {
  type: 'ready';
  topic: string;
  partitions: { partition: number; high_watermark?: number }[];
};

export class PushNotifier {
  private readonly touched = new Map<string, Set<number>>();
  private round: Promise<void> | undefined;
  private readonly inFlight = new Set<Promise<void>>();
  /** Per topic: partitions committed while the list was possibly stale, and the look-again timer. */
  private readonly pending = new Map<string, { partitions: Set<number>; timer: ReturnType<typeof setTimeout> }>();

  constructor(
    private readonly subscriptions: Subscriptions,
    private readonly poster: ConnectionPoster,
    private readonly onError: (e: unknown) => void = () => {},
    private readonly now: () => number = Date.now,
  ) {}

  /**
   * An append of the topic begins: its subscriptions are read now, beside the append's storage calls,
   * so that the round after the commit need not wait for that read (it settles before the answer too).
   */
  appending(topic: string): void {
    const read = this.subscriptions.prefetch(topic);
    // A failed read is not this round's failure: the listing after the commit reads again.
    if (read) this.track(read.then(noop, noop));
  }

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

  private async notifyTopic(topic: string, committed: Set<number>): Promise<void> {
    const { live, expired, staleUntil } = await this.subscriptions.listAll(topic);
    const partitions = new Set(committed);
    const waiting = this.pending.get(topic);
    if (staleUntil !== undefined) this.lookAgain(topic, committed, staleUntil);
    else if (waiting) {
      // A fresh list: it answers for the partitions committed under the stale one too.
      clearTimeout(waiting.timer);
      this.pending.delete(topic);
      for (const p of waiting.partitions) partitions.add(p);
    }
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

  /** Keeps partitions told from a stale list, to be told again from a fresh one once it lapses. */
  private lookAgain(topic: string, partitions: Set<number>, staleUntil: number): void {
    const waiting = this.pending.get(topic);
    if (waiting) {
      for (const p of partitions) waiting.partitions.add(p);
      return;
    }
    const timer = setTimeout(
      () => {
        const due = this.pending.get(topic);
        if (due?.timer !== timer) return;
        this.pending.delete(topic);
        for (const p of due.partitions) this.committed(topic, p);
      },
      Math.max(0, staleUntil - this.now()),
    );
    // Not a reason to keep a process alive, nor for `settle()` to wait: the fallback poll covers a lost one.
    timer.unref?.();
    this.pending.set(topic, { partitions: new Set(partitions), timer });
  }
}
