/**
 * Wakes deliveries: the log tells it of every commit (`committed`), and it starts that partition's
 * delivery for each enabled trigger on the topic, or, when this process already delivers it, tells
 * the run to look again. Nothing runs while no commit comes. A partition whose lease another
 * process holds is left to it (the claim kicked it); the runner looks again when that lease ends,
 * in case its holder died. `rearm` starts every partition that has records past its committed
 * offset: what a process runs when it starts, and on the scheduler's tick, for what a crash left.
 * `deliverDue` is the scheduled function's turn: re-arm, then deliver until caught up or a deadline.
 *
 * A process that does not deliver (`deliver: false`: the functions that serve requests, which
 * Lambda freezes once they answer) starts nothing: a wake is a no-op there.
 */
import { runDelivery, type DeliveryDeps, type RunEnd } from './partition-delivery.js';
import type { LeaseKey } from './delivery-lease.js';
import { SharedDeliveries, type ShareQueue } from './share-delivery.js';
import type { TriggerDefinition } from './trigger.js';

/** How long after a run that failed (a storage error) the partition is tried again. */
const RUN_ERROR_RETRY_MS = 1000;

/**
 * A run's wait for the next commit to its partition (its batching window, or a KEY run's idle
 * lanes). One per partition here, shared by the runs that follow each other on it: a run may end
 * with its wait still armed, and the next run's wait must not be undone by that one's timer.
 */
export class CommitSignal {
  private waiting: ((committed: boolean) => void) | undefined;

  /** True at the next `signal(true)`; false at `signal(false)` or after `ms`. */
  wait(ms: number): Promise<boolean> {
    return new Promise<boolean>((resolve) => {
      const done = (committed: boolean) => {
        clearTimeout(timer);
        // Only its own: a newer wait may have replaced it (the next run's) and must stay wakeable.
        if (this.waiting === done) this.waiting = undefined;
        resolve(committed);
      };
      const timer = setTimeout(() => done(false), ms);
      this.waiting = done;
    });
  }

  /** Ends the wait in progress, if any: true for a commit, false for a stop. */
  signal(committed: boolean): void {
    this.waiting?.(committed);
  }
}

interface Local {
  more: boolean;
  commits: CommitSignal;
  run: Promise<void> | undefined;
  recheck: ReturnType<typeof setTimeout> | undefined;
}

export class TriggerRunner {
  private readonly local = new Map<string, Local>();
  private closed = false;
  /** A `deliverDue` deadline passed: runs stop after their current step, and none starts. */
  private pausedUntilIdle = false;

  /** UNORDERED triggers: through a share group, not per partition. */
  private readonly shared: SharedDeliveries;

  constructor(
    private readonly deps: DeliveryDeps,
    private readonly deliver = true,
    share?: ShareQueue,
  ) {
    this.shared = new SharedDeliveries(deps, share, () => this.stopping);
  }

  private get stopping(): boolean {
    return this.closed || this.pausedUntilIdle || !this.deliver;
  }

  /** A commit landed on the partition. */
  committed(topic: string, partition: number): void {
    if (this.stopping) return;
    this.deps.registry.onTopic(topic).then(
      (triggers) => {
        for (const t of triggers)
          if (t.state !== 'ENABLED') continue;
          else if (t.ordering === 'UNORDERED') this.shared.wake(t);
          else this.wake({ trigger: t.name, topic, partition });
      },
      (e: unknown) => this.deps.onError('trigger lookup failed', { topic, error: String(e) }),
    );
  }

  /** Starts the partition's delivery here, or has the run here look again. */
  wake(key: LeaseKey): void {
    if (this.stopping) return;
    const id = `${key.trigger}\u0000${key.topic}\u0000${key.partition}`;
    const local = this.local.get(id) ?? {
      more: false,
      commits: new CommitSignal(),
      run: undefined,
      recheck: undefined,
    };
    this.local.set(id, local);
    if (local.run) {
      local.more = true;
      local.commits.signal(true);
      return;
    }
    if (local.recheck) clearTimeout(local.recheck);
    local.recheck = undefined;
    local.more = false;
    local.run = runDelivery(this.deps, key, {
      takeMore: () => {
        const more = local.more;
        local.more = false;
        return more;
      },
      stopped: () => this.stopping,
      waitForCommit: (ms) => local.commits.wait(ms),
    })
      .then(
        (end) => this.ended(key, local, end),
        (e: unknown) => {
          this.deps.onError('trigger delivery failed', { ...key, error: String(e) });
          // The run's lease may be held still (its release failed too): the recheck claims it once it expires.
          this.ended(key, local, { how: 'held-elsewhere', until: this.deps.clock.now() + RUN_ERROR_RETRY_MS });
        },
      )
      .finally(() => {
        local.run = undefined;
        if (local.more && !this.stopping) this.wake(key);
        else if (!local.recheck) this.local.delete(id);
      });
  }

  private ended(key: LeaseKey, local: Local, end: RunEnd): void {
    if (end.how !== 'held-elsewhere' || this.stopping) return;
    // Another holder (or a failure here): look again once its lease is over, in case it died.
    const wait = Math.max(0, end.until - this.deps.clock.now()) + 50;
    local.recheck = setTimeout(() => {
      local.recheck = undefined;
      this.wake(key);
    }, wait);
    local.recheck.unref?.();
  }

  /** Starts every partition of every enabled trigger with records past its committed offset. */
  async rearm(triggers?: TriggerDefinition[]): Promise<number> {
    if (this.stopping) return 0;
    let started = 0;
    for (const d of triggers ?? (await this.deps.registry.list())) {
      if (d.state !== 'ENABLED') continue;
      if (d.ordering === 'UNORDERED') {
        // Its workers stop as soon as the share group has nothing available.
        this.shared.wake(d);
        started++;
        continue;
      }
      const topic = await this.deps.topics.get(d.topic).catch(() => undefined);
      if (!topic) continue;
      const committed = await this.deps.positions.committed(d, topic);
      for (let p = 0; p < topic.partitionCount; p++) {
        const state = await this.deps.log.state(topic, p);
        if ((committed.get(p) ?? state.logStartOffset) < state.highWatermark) {
          this.wake({ trigger: d.name, topic: d.topic, partition: p });
          started++;
        }
      }
    }
    return started;
  }

  /**
   * The scheduled function's deliveries: starts every partition with records past its committed
   * offset and waits for them, until `deadline` (epoch ms): then the runs stop after their current
   * step, give their leases back without committing what they had not finished, and the next
   * tick (or a commit elsewhere) takes the partitions up again. Answers how many it started.
   */
  async deliverDue(deadline: number): Promise<number> {
    const started = await this.rearm();
    const wait = setTimeout(
      () => {
        this.pausedUntilIdle = true;
        this.signalAll();
      },
      Math.max(0, deadline - this.deps.clock.now()),
    );
    try {
      await this.idle();
    } finally {
      clearTimeout(wait);
      this.pausedUntilIdle = false;
    }
    return started;
  }

  /** Ends every run's wait for commits, so that a stopping run stops now. */
  private signalAll(): void {
    for (const l of this.local.values()) l.commits.signal(false);
  }

  /** Resolves once no delivery runs here. */
  async idle(): Promise<void> {
    for (;;) {
      await this.shared.idle();
      const runs = [...this.local.values()].map((l) => l.run).filter((r) => r !== undefined);
      if (runs.length === 0) return;
      await Promise.allSettled(runs);
    }
  }

  /** Stops waking deliveries; the runs in flight end after their current step and give their leases back. */
  async close(): Promise<void> {
    this.closed = true;
    for (const l of this.local.values()) if (l.recheck) clearTimeout(l.recheck);
    this.signalAll();
    await this.idle();
  }
}
