import { randomUUID } from 'node:crypto';
import type { Logger } from '../metrics.js';
import { hostname } from 'node:os';
import { holdsWrite, optimisticUpdate } from '../storage/optimistic-update.js';
import type { MetadataStore, MetaItem } from '../storage/ports.js';
import { CLUSTER_PK } from '../storage/key-layout.js';

/**
 * The scheduler's leases: items under pk `cluster` (the timers' tick, each shard of a round) that
 * say who works on them until when, `{holder, run, leaseUntil, ...}`. A run takes one with a
 * conditional write unless another holder's is live; renews it (with whatever else the item carries,
 * e.g. a shard's cursor) by writes against the version it holds; a write that finds another run's
 * item means the lease was lost. A write that applied but whose answer was lost is recognised by the
 * run id it carries.
 */
export interface Lease {
  holder: string;
  /** The run of the holder that took the lease: the token a run recognises its own write by. */
  run?: string;
  leaseUntil: number;
}

/**
 * This process's lease holder id. Stable for the process, so a run that finds a live lease of its own
 * holder whose run is no longer going on in this process (it died, or its release was lost) takes
 * it over at once instead of waiting for it to lapse.
 */
export const PROCESS_HOLDER = `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
/** Runs in progress in this process: a second concurrent run must not share the first one's lease. */
export const runsInProgress = new Set<string>();

/**
 * Takes the lease at `sk` unless another holder's is live (or a live one of this holder belongs to a
 * run still going on in this process), or `eligible` says no; `value` makes the item to write.
 */
export async function acquireLease<T extends Lease>(
  metadata: MetadataStore,
  sk: string,
  claim: { holder: string; run: string; now: number; until: number },
  value: (found: T | undefined) => T | undefined,
): Promise<MetaItem<T> | undefined> {
  const { holder, run, now, until } = claim;
  const { result } = await optimisticUpdate<T, MetaItem<T> | undefined>({
    metadata,
    pk: CLUSTER_PK,
    sk,
    attempts: 4,
    giveUp: { errorName: 'COORDINATOR_NOT_AVAILABLE', message: `The scheduler lease ${sk} is contended` },
    decide: (item) => {
      const live = item !== undefined && item.value.leaseUntil > now;
      if (
        live &&
        (item.value.holder !== holder || (item.value.run !== undefined && runsInProgress.has(item.value.run)))
      )
        return { done: undefined };
      const next = value(item?.value);
      if (!next) return { done: undefined };
      return { write: { ...next, holder, run, leaseUntil: until }, answer: (written) => written };
    },
    recognise: (found) => (found?.value.holder === holder && found.value.run === run ? found : undefined),
  });
  return result;
}

/**
 * Writes the lease item while it is still this run's (undefined: lost to another run). A repeat of
 * a write that applied finds exactly what it wrote, and is taken as done.
 */
export async function writeLease<T extends Lease>(
  metadata: MetadataStore,
  lease: MetaItem<T>,
  value: T,
): Promise<MetaItem<T> | undefined> {
  const { result } = await optimisticUpdate<T, MetaItem<T> | undefined>({
    metadata,
    pk: CLUSTER_PK,
    sk: lease.sk,
    known: { item: lease },
    attempts: 4,
    giveUp: { errorName: 'COORDINATOR_NOT_AVAILABLE', message: `The scheduler lease ${lease.sk} is contended` },
    decide: (item) =>
      item && item.value.holder === lease.value.holder && item.value.run === lease.value.run
        ? { write: value, answer: (written) => written }
        : { done: undefined },
    recognise: (found, attempted) => (holdsWrite(found, attempted) ? found : undefined),
  });
  return result;
}

/**
 * A held lease, renewed while work goes on: `update` writes the item (renewing it, with the changes
 * given), one write at a time; `keepAlive` renews it every third of its TTL until `stop`, so a unit
 * that runs longer than the TTL keeps its lease, and one whose renewal fails learns it through `lost`.
 */
export class HeldLease<T extends Lease> {
  lost = false;
  private queue: Promise<unknown> = Promise.resolve();
  private readonly stopped = new AbortController();
  private keeper: Promise<void> = Promise.resolve();

  constructor(
    private readonly metadata: MetadataStore,
    private item: MetaItem<T>,
    private readonly ttlMs: number,
    private readonly clock: { now(): number },
  ) {}

  get value(): T {
    return this.item.value;
  }

  /** Writes the item renewed, with `change` (which may end the lease: leaseUntil 0); false once it is lost. */
  update(change: (value: T) => T = (v) => v): Promise<boolean> {
    const next = this.queue.then(async () => {
      if (this.lost) return false;
      const value = change({ ...this.item.value, leaseUntil: this.clock.now() + this.ttlMs });
      const written = await writeLease(this.metadata, this.item, value);
      if (!written) {
        this.lost = true;
        return false;
      }
      this.item = written;
      return true;
    });
    this.queue = next.catch(() => {});
    return next;
  }

  /** Renews every third of the TTL, on `sleep`, until `stop()`. */
  keepAlive(sleep: (ms: number, signal: AbortSignal) => Promise<void>): void {
    const signal = this.stopped.signal;
    this.keeper = (async () => {
      while (!signal.aborted && !this.lost) {
        await sleep(Math.max(1, Math.floor(this.ttlMs / 3)), signal);
        if (signal.aborted) break;
        await this.update().catch(() => {
          // A failed renewal is retried at the next one; the lease lapses if none succeeds.
        });
      }
    })();
  }

  /** Stops renewing (and waits for a renewal in flight). */
  async stop(): Promise<void> {
    this.stopped.abort();
    await this.keeper;
    await this.queue;
  }

  /**
   * Stops renewing and ends the lease, so the next run need not wait for it to lapse. A release that
   * fails is reported and left to lapse: the work it covered is done or resumable either way.
   */
  async release(logger: Logger): Promise<void> {
    await this.stop();
    if (this.lost) return;
    await this.update((v) => ({ ...v, leaseUntil: 0 })).catch((e) =>
      logger.warn('scheduler lease release failed; it lapses', { lease: this.item.sk, error: String(e) }),
    );
  }
}

/** A sleep that ends early when `signal` aborts. */
export function realSleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const handle = setTimeout(done, ms);
    function done() {
      clearTimeout(handle);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done);
  });
}
