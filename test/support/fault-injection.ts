/**
 * Fault injection around the storage ports, driven by tests: a store can be down (every call
 * fails), or a chosen operation can fail before it takes effect, fail AFTER it took effect (the
 * ambiguous case: the caller sees an error but the write happened), be applied and then sent again
 * ('retried': what the AWS SDK does when an answer is lost, so the caller sees the outcome of the
 * repeat, e.g. a failed condition against its own write), or be delayed.
 */
import {
  ConditionFailedError,
  type AlongsideItem,
  type ByteRange,
  type MetadataStore,
  type MetaItem,
  type ObjectStore,
  type QueryOptions,
  type PutOptions,
  type WriteCondition,
} from '../../src/storage/ports.js';

export class InjectedFault extends Error {
  constructor(what: string) {
    super(`injected fault: ${what}`);
    this.name = 'InjectedFault';
  }
}

type When = 'before' | 'after' | 'retried';
type Rule<Op extends string> = {
  op: Op;
  when: When;
  times: number;
  match?: (arg: string) => boolean;
  between?: () => Promise<void>;
};

class Faults<Op extends string> {
  down = false;
  delayMs = 0;
  private rules: Rule<Op>[] = [];
  injected = 0;

  /** Fails the next `times` calls of `op` (whose key matches), before or after the call takes effect. */
  /** `between` (with 'retried'): what else happens between the call and its repeat (another writer's commit). */
  fail(
    op: Op,
    options: { when?: When; times?: number; match?: (key: string) => boolean; between?: () => Promise<void> } = {},
  ): void {
    this.rules.push({
      op,
      when: options.when ?? 'before',
      times: options.times ?? 1,
      ...(options.match ? { match: options.match } : {}),
      ...(options.between ? { between: options.between } : {}),
    });
  }

  private gates: { op: Op; match: (key: string) => boolean; reached: () => void; opened: Promise<void> }[] = [];

  /**
   * Holds the next call of `op` whose key matches before it takes effect, until `release()`:
   * a slow write (SDK back-off, a frozen Lambda). `reached` resolves when the call is held.
   */
  gate(op: Op, match: (key: string) => boolean): { reached: Promise<void>; release: () => void } {
    let release!: () => void;
    let reached!: () => void;
    const opened = new Promise<void>((r) => (release = r));
    const arrived = new Promise<void>((r) => (reached = r));
    this.gates.push({ op, match, reached, opened });
    return { reached: arrived, release };
  }

  clear(): void {
    this.rules = [];
    this.down = false;
    this.delayMs = 0;
  }

  async run<T>(name: string, op: Op, key: string, call: () => Promise<T>): Promise<T> {
    if (this.delayMs > 0) await new Promise((r) => setTimeout(r, this.delayMs));
    if (this.down) {
      this.injected++;
      throw new InjectedFault(`${name} is down`);
    }
    const gate = this.gates.findIndex((g) => g.op === op && g.match(key));
    if (gate >= 0) {
      const [g] = this.gates.splice(gate, 1);
      g!.reached();
      await g!.opened;
    }
    const rule = this.rules.find((r) => r.op === op && r.times > 0 && (!r.match || r.match(key)));
    if (rule) rule.times--;
    if (rule?.when === 'before') {
      this.injected++;
      throw new InjectedFault(`${name}.${op}(${key}) failed`);
    }
    const result = await call();
    if (rule?.when === 'retried') {
      this.injected++;
      await rule.between?.();
      // As the SDK reports it: the failure of a request that was sent more than once.
      return call().catch((e: unknown) => {
        throw e instanceof ConditionFailedError ? new ConditionFailedError(e.pk, e.sk, e.current, true) : e;
      });
    }
    if (rule?.when === 'after') {
      this.injected++;
      throw new InjectedFault(`${name}.${op}(${key}) took effect, then failed`);
    }
    return result;
  }
}

export class FaultyObjectStore implements ObjectStore {
  readonly faults = new Faults<'put' | 'get' | 'head' | 'list' | 'delete'>();
  constructor(private readonly inner: ObjectStore) {}
  get name() {
    return this.inner.name;
  }
  put(key: string, body: Uint8Array) {
    return this.faults.run(this.name, 'put', key, () => this.inner.put(key, body));
  }
  get(key: string, range?: ByteRange) {
    return this.faults.run(this.name, 'get', key, () => this.inner.get(key, range));
  }
  head(key: string) {
    return this.faults.run(this.name, 'head', key, () => this.inner.head(key));
  }
  list(prefix: string, page?: { startAfter?: string; limit?: number }) {
    return this.faults.run(this.name, 'list', prefix, () => this.inner.list(prefix, page));
  }
  delete(keys: string[]) {
    return this.faults.run(this.name, 'delete', keys.join(','), () => this.inner.delete(keys));
  }
}

/**
 * Keys for matching are `pk|sk`. With `putAll` (and an inner store that has it) the store offers
 * `putAll` too, under the faults of `put`, keyed by its first item: a fault takes the whole write.
 */
export class FaultyMetadataStore implements MetadataStore {
  readonly faults = new Faults<'get' | 'query' | 'put' | 'delete'>();
  readonly putAll?: MetadataStore['putAll'];
  constructor(
    private readonly inner: MetadataStore,
    options: { putAll?: boolean } = {},
  ) {
    const putAll = options.putAll ? inner.putAll?.bind(inner) : undefined;
    if (options.putAll && !putAll) throw new Error('putAll asked of a store without it');
    if (putAll)
      this.putAll = <T>(
        pk: string,
        sk: string,
        value: T,
        condition: WriteCondition | undefined,
        alongside: AlongsideItem[],
      ): Promise<MetaItem<T>> =>
        this.faults.run('metadata', 'put', `${pk}|${sk}`, () => putAll(pk, sk, value, condition, alongside));
  }
  get<T>(pk: string, sk: string): Promise<MetaItem<T> | undefined> {
    return this.faults.run('metadata', 'get', `${pk}|${sk}`, () => this.inner.get<T>(pk, sk));
  }
  query<T>(pk: string, options?: QueryOptions): Promise<MetaItem<T>[]> {
    return this.faults.run('metadata', 'query', pk, () => this.inner.query<T>(pk, options));
  }
  put<T>(pk: string, sk: string, value: T, condition?: WriteCondition, options?: PutOptions): Promise<MetaItem<T>> {
    return this.faults.run('metadata', 'put', `${pk}|${sk}`, () => this.inner.put(pk, sk, value, condition, options));
  }
  delete(pk: string, sk: string, condition?: { ifVersion: number }): Promise<void> {
    return this.faults.run('metadata', 'delete', `${pk}|${sk}`, () => this.inner.delete(pk, sk, condition));
  }
}
