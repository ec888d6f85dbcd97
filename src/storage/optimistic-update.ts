import { KafkaError, type KafkaErrorName } from '../wire/errors.js';
import { ConditionFailedError, type AlongsideItem, type MetadataStore, type MetaItem } from './ports.js';

/**
 * The one read-modify-conditional-write loop of the product. Every change to an item that others
 * may change at the same time goes through it:
 *
 *   read (or take the item a caller already has)
 *     -> decide: write a value / remove the item / nothing to do
 *     -> write IF version = read (IF absent for a new item)
 *          ok      -> answer from the item written
 *          failed  -> is the item found our own write? (the write applied, its answer was lost and
 *                     the SDK retried it against itself: DynamoDB then reports a failed condition)
 *                       yes -> answer from the item found: a success, not a lost race
 *                       no  -> someone else wrote first: decide again on the item found, after a
 *                              back-off (none before the first retry, then exponential with full
 *                              jitter), at most `attempts` times, then one typed KafkaError
 *
 * Recognition needs a token of the operation in what it writes: the object key and byte range of a
 * partition commit, the member id minted once per join, a request id in a member, a holder and run
 * id in the scheduler lease. Without one, a retried write that already applied is indistinguishable
 * from a lost race and would be applied twice.
 */
export type Decision<T, R> =
  /**
   * Write `value` over the item decided on; `answer` builds the result from the stored item.
   * `alongside`: items of the same partition key written in the same atomic write, only if it
   * applies (`MetadataStore.putAll`; the caller offers them only to a store that has it).
   * `expiresAt`: the item's expiry (`PutOptions`), for the store to delete it after.
   */
  | { write: T; alongside?: AlongsideItem[]; expiresAt?: number; answer: (written: MetaItem<T>) => R }
  /** Delete the item decided on (conditional on its version). */
  | { remove: true; answer: () => R }
  /** Nothing to write: the answer as it is. */
  | { done: R };

export interface OptimisticUpdate<T, R> {
  metadata: MetadataStore;
  pk: string;
  sk: string;
  /** The item as the caller already read it ({ item: undefined }: known to be absent); omitted: read it. */
  known?: { item: MetaItem<T> | undefined };
  /** Decides on the item as found (a copy is the caller's business: the item is never written to). */
  decide(item: MetaItem<T> | undefined, attempt: number): Decision<T, R> | Promise<Decision<T, R>>;
  /**
   * After a failed condition: the answer when `found` already carries this operation's own write
   * (its token), else undefined. `found` is undefined when the item is gone (a removal that applied).
   * `retried`: the store sent the write more than once, so it may have applied (else it did not).
   */
  recognise?(
    found: MetaItem<T> | undefined,
    attempted: Decision<T, R>,
    retried: boolean,
  ): R | undefined | Promise<R | undefined>;
  /** Conditional writes tried before giving up (default 16). */
  attempts?: number;
  /** Back-off bounds between retries in ms (default 2 ms doubling up to 100 ms, full jitter). */
  backoff?: { baseMs: number; maxMs: number };
  /** The one error when it gives up: a Kafka error name the caller's clients know how to treat. */
  giveUp: { errorName: KafkaErrorName; message: string };
}

export interface UpdateOutcome<T, R> {
  result: R;
  /** The item as it is after the update (as written, as recognised, or as decided on when nothing was written). */
  item: MetaItem<T> | undefined;
  /** How many conditional writes lost a race before this one. */
  retries: number;
  /** 'written', 'recognised' (our own write, found after an ambiguous outcome) or 'unchanged'. */
  how: 'written' | 'recognised' | 'unchanged';
}

const DEFAULT_ATTEMPTS = 16;
const DEFAULT_BACKOFF = { baseMs: 2, maxMs: 100 };

export async function optimisticUpdate<T, R>(op: OptimisticUpdate<T, R>): Promise<UpdateOutcome<T, R>> {
  const attempts = op.attempts ?? DEFAULT_ATTEMPTS;
  const backoff = op.backoff ?? DEFAULT_BACKOFF;
  let item = op.known ? op.known.item : await op.metadata.get<T>(op.pk, op.sk);
  for (let attempt = 0; attempt < attempts; attempt++) {
    if (attempt > 1) await sleep(jitteredDelay(attempt - 1, backoff));
    const decision = await op.decide(item, attempt);
    if ('done' in decision) return { result: decision.done, item, retries: attempt, how: 'unchanged' };
    try {
      if ('remove' in decision) {
        if (item) await op.metadata.delete(op.pk, op.sk, { ifVersion: item.version });
        return { result: decision.answer(), item: undefined, retries: attempt, how: 'written' };
      }
      const condition = item ? { ifVersion: item.version } : { ifAbsent: true as const };
      const written = decision.alongside
        ? await putAll(op.metadata)(op.pk, op.sk, decision.write, condition, decision.alongside)
        : await op.metadata.put(
            op.pk,
            op.sk,
            decision.write,
            condition,
            decision.expiresAt === undefined ? undefined : { expiresAt: decision.expiresAt },
          );
      return { result: decision.answer(written), item: written, retries: attempt, how: 'written' };
    } catch (e) {
      if (!(e instanceof ConditionFailedError)) throw e;
      const found = e.current as MetaItem<T> | undefined;
      const own = await op.recognise?.(found, decision, e.retried);
      if (own !== undefined) return { result: own, item: found, retries: attempt, how: 'recognised' };
      item = found;
    }
  }
  throw new KafkaError(op.giveUp.errorName, op.giveUp.message);
}

function putAll(metadata: MetadataStore): NonNullable<MetadataStore['putAll']> {
  if (!metadata.putAll) throw new Error('Items alongside a write need a store with putAll');
  return metadata.putAll.bind(metadata);
}

/** Recognition by value: the item found holds exactly what this operation wrote (its value carries a unique token). */
export function holdsWrite<T>(found: MetaItem<T> | undefined, attempted: Decision<T, unknown>): found is MetaItem<T> {
  return found !== undefined && 'write' in attempted && JSON.stringify(found.value) === JSON.stringify(attempted.write);
}

/** Full jitter: uniform in [0, min(max, base * 2^n)). */
function jitteredDelay(n: number, { baseMs, maxMs }: { baseMs: number; maxMs: number }): number {
  return Math.random() * Math.min(maxMs, baseMs * 2 ** n);
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * One conditional write over an item as the caller read it, never retried against a newer
 * version (maintenance's swaps: a concurrent change means "leave it to the next pass"), but exact
 * under an ambiguous outcome: a write the store sent twice is recognised as applied (a put by the
 * value it wrote, a removal by the item being gone). Resolves to whether the change is in place.
 */
export async function writeIfUnchanged<T>(
  metadata: MetadataStore,
  /** The item as read; undefined: known to be absent (the write creates it). */
  at: { pk: string; sk: string; item: MetaItem<T> | undefined },
  change: { write: T } | { remove: true },
): Promise<boolean> {
  const { result } = await optimisticUpdate<T, boolean>({
    metadata,
    pk: at.pk,
    sk: at.sk,
    known: { item: at.item },
    attempts: 2,
    decide: (_, attempt) =>
      attempt > 0
        ? { done: false } // changed under us
        : 'remove' in change
          ? { remove: true, answer: () => true }
          : { write: change.write, answer: () => true },
    recognise: (found, attempted, retried) => {
      if (!retried) return undefined;
      if ('remove' in attempted) return found === undefined ? true : undefined;
      return holdsWrite(found, attempted) ? true : undefined;
    },
    giveUp: { errorName: 'KAFKA_STORAGE_ERROR', message: `Unreachable: ${at.pk} / ${at.sk}` },
  });
  return result;
}
