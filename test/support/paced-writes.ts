/**
 * What the paced-writes tests share: simulated time (a sleep waits for the test's clock, which
 * moves to the earliest sleeper once nothing else can run, so the figures are the pace itself, not
 * this machine's speed), and a store adding up each partition key's write units per second.
 */
import { ConditionFailedError, type MetadataStore, type MetaItem, type QueryOptions } from '../../src/storage/ports.js';
import { writeUnitsOf } from '../../src/storage/write-pace.js';

/** Simulated time: sleepers woken in time order once the event loop is idle. */
export class SimulatedTime {
  t = Date.UTC(2026, 0, 1);
  private sleepers: { at: number; wake: () => void }[] = [];
  now = () => this.t;
  sleep = (ms: number) => new Promise<void>((wake) => this.sleepers.push({ at: this.t + ms, wake }));
  /** The process died: what it was waiting for never wakes. */
  kill(): void {
    this.sleepers = [];
  }
  async run<T>(work: Promise<T>): Promise<T> {
    let settled = false;
    const done = work.finally(() => {
      settled = true;
    });
    done.catch(() => {}); // answered below, once settled
    while (!settled) {
      for (let i = 0; i < 3; i++) await new Promise((r) => setImmediate(r));
      if (settled || this.sleepers.length === 0) continue;
      this.sleepers.sort((a, b) => a.at - b.at);
      const next = this.sleepers.shift()!;
      this.t = Math.max(this.t, next.at);
      next.wake();
    }
    return done;
  }
}

/** The store, adding up each partition key's write units per second of the simulated clock. */
export class WriteUnitsPerKey implements MetadataStore {
  readonly perSecond = new Map<string, Map<number, number>>();
  /** Every put, in order. */
  readonly puts: { pk: string; sk: string }[] = [];
  /** A put this refuses fails, as a process that died would not make it. */
  refuse: (pk: string, sk: string) => boolean = () => false;
  /** A put this picks applies, and answers as an SDK retry of it would (an ambiguous write). */
  loseAnswer: (pk: string, sk: string) => boolean = () => false;
  constructor(
    private readonly inner: MetadataStore,
    private readonly time: SimulatedTime,
  ) {}
  peak(pk: string): number {
    return Math.max(0, ...(this.perSecond.get(pk)?.values() ?? []));
  }
  get<T>(pk: string, sk: string): Promise<MetaItem<T> | undefined> {
    return this.inner.get<T>(pk, sk);
  }
  query<T>(pk: string, options?: QueryOptions): Promise<MetaItem<T>[]> {
    return this.inner.query<T>(pk, options);
  }
  put<T>(...args: Parameters<MetadataStore['put']>): Promise<MetaItem<T>> {
    const [pk, sk, value] = args;
    if (this.refuse(pk, sk)) return Promise.reject(new Error('injected: the process died'));
    this.puts.push({ pk, sk });
    const seconds = this.perSecond.get(pk) ?? new Map<number, number>();
    this.perSecond.set(pk, seconds);
    const second = Math.floor(this.time.now() / 1000);
    seconds.set(second, (seconds.get(second) ?? 0) + writeUnitsOf(pk, sk, value));
    if (!this.loseAnswer(pk, sk)) return this.inner.put(...args) as Promise<MetaItem<T>>;
    // The write applied, its answer was lost and the SDK sent it again: DynamoDB then reports the
    // condition failed against that very write.
    return this.inner.put(...args).then((written) => {
      throw new ConditionFailedError(pk, sk, written, true);
    });
  }
  delete(pk: string, sk: string, condition?: { ifVersion: number }): Promise<void> {
    return this.inner.delete(pk, sk, condition);
  }
}
