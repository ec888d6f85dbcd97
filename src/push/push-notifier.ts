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
 *
 * A connection that armed asking for records (`records` in its subscription; the client's push
 * channel does) stays armed: every commit on its partitions is told, with the commit's batches when
 * they fit one WebSocket frame (PUSH_RECORDS_MAX_BYTES), their offsets and the high watermark and
 * last stable offset after the commit, else with the high watermark alone. The consumer takes
 * records that start at its position, fetches past a gap (a lost or overtaken post), and disarms
 * while it is behind. So a consumer that keeps up costs a post per commit and no write, its arm
 * does not change (the cached lists stay true), and it needs no fetch for small commits.
 */
import type { CommittedRun } from '../log/partition-log.js';
import type { PushMessage, PushedPartition } from '../wire/push-message.js';
import type { ConnectionPoster } from './ports.js';
import type { Subscriptions } from './subscriptions.js';

const noop = () => {};

/**
 * API Gateway's WebSocket frame size (32 KB; its message limit is 128 KB, and larger posts must be
 * split into frames of 32 KB or less): records go in a message only while it stays one frame.
 * Base64 takes 4 characters per 3 bytes, and the rest of the message is small.
 */
export const PUSH_RECORDS_MAX_BYTES = Math.floor(((32 * 1024 - 1024) * 3) / 4);

export class PushNotifier {
  /** Per topic, per partition: what committed since the last round (undefined: unknown, tell without records). */
  private readonly touched = new Map<string, Map<number, CommittedRun[] | undefined>>();
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

  /**
   * Records a commit on a partition (`run`: what it committed; none for a high watermark move); the
   * notification goes out in the next round.
   */
  committed(topic: string, partition: number, run?: CommittedRun): void {
    const byPartition = this.touched.get(topic) ?? new Map<number, CommittedRun[] | undefined>();
    this.touched.set(topic, byPartition);
    const runs = byPartition.has(partition) ? byPartition.get(partition) : [];
    byPartition.set(partition, run && runs ? [...runs, run] : undefined);
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

  private async notifyTopic(topic: string, committed: Map<number, CommittedRun[] | undefined>): Promise<void> {
    const { live, expired, staleUntil } = await this.subscriptions.listAll(topic);
    const partitions = new Set(committed.keys());
    const waiting = this.pending.get(topic);
    if (staleUntil !== undefined) this.lookAgain(topic, partitions, staleUntil);
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
        const streamed = item.value.records === true;
        const message = streamed ? streamMessage(topic, ready, committed) : readyMessage(topic, ready);
        const outcome = await this.poster.post(item.value.endpoint, item.value.connectionId, JSON.stringify(message));
        if (outcome === 'gone') return this.subscriptions.remove(item);
        // A consumer that takes records stays armed (it tells commits it has read from those it has not).
        if (!streamed) await this.subscriptions.disarm(item, ready);
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

/** A plain notification: the partitions, which the consumer fetches (they are disarmed). */
function readyMessage(topic: string, partitions: number[]): PushMessage {
  return { type: 'ready', topic, partitions: partitions.map((partition) => ({ partition })) };
}

/**
 * The message for a consumer that takes records: each partition with its committed records when
 * they fit the frame (one contiguous range, in the order committed), else with the high watermark
 * after the commit where known; all stay armed.
 */
function streamMessage(
  topic: string,
  partitions: number[],
  committed: Map<number, CommittedRun[] | undefined>,
): PushMessage {
  let room = PUSH_RECORDS_MAX_BYTES;
  return {
    type: 'ready',
    topic,
    partitions: partitions.map((partition): PushedPartition => {
      const runs = committed.get(partition);
      const last = runs?.at(-1);
      if (!runs || !last) return { partition, armed: true };
      const bytes = runs.reduce((n, r) => n + r.byteLength, 0);
      if (bytes > room || !contiguous(runs)) return { partition, high_watermark: last.highWatermark, armed: true };
      room -= bytes;
      return {
        partition,
        high_watermark: last.highWatermark,
        last_stable_offset: last.lastStableOffset,
        base_offset: runs[0]!.baseOffset,
        last_offset: last.lastOffset,
        records: Buffer.concat(runs.map((r) => r.batches())).toString('base64'),
      };
    }),
  };
}

/** Commits of one process on a partition, in the order they committed: each starts where the last ended. */
function contiguous(runs: CommittedRun[]): boolean {
  return runs.every((r, i) => i === 0 || r.baseOffset === runs[i - 1]!.lastOffset + 1);
}
