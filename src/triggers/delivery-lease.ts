/**
 * One delivery in flight per trigger partition: a lease item (`trigger#{name}` / `lease#{topic}#{p}`)
 * that a process claims before it delivers and gives back once the partition is caught up.
 *
 *   commit -> claim:  free or expired   -> write {holder: me, until}          -> deliver
 *                     held by another   -> write {kicks + 1} (a "kick")        -> leave it to the holder
 *   holder, caught up -> release IF version = the one it last wrote
 *                     ok                -> done; nothing runs until the next commit
 *                     failed, still me  -> a kick landed meanwhile: deliver again
 *
 * The kick is what makes the hand-over safe: a commit that lands while the holder is deciding it is
 * caught up changes the item's version, so the holder's release fails and it reads again. Every
 * write goes through `optimisticUpdate`; the holder id is unique per run (process id and a random
 * run id), so a claim or renewal the store sent twice is recognised by the holder it finds. A holder
 * killed mid-delivery holds the partition until `until`; the next claim after that takes it over.
 * A holder that failed to give the lease back without dying (its release failed, or its claim
 * applied but the answer was lost) is not waited for by its own process: a process runs one
 * delivery of a partition at a time, so the next run there takes over a lease its process held.
 */
import { optimisticUpdate, type Decision } from '../storage/optimistic-update.js';
import type { MetadataStore, MetaItem } from '../storage/ports.js';
import { triggerLeasePk, triggerLeaseSk } from '../storage/key-layout.js';

export interface DeliveryLease {
  /** Who delivers (absent: nobody). */
  holder?: string;
  /** Epoch ms the holder's claim lasts until. */
  until: number;
  /** Commits seen while it was held (only their version change matters). */
  kicks: number;
}

export interface LeaseKey {
  trigger: string;
  topic: string;
  partition: number;
}

/** A lease this run holds: the item as it last wrote or saw it. */
export interface HeldLease extends LeaseKey {
  holder: string;
  item: MetaItem<DeliveryLease>;
}

export type ClaimOutcome = { held: true; lease: HeldLease } | { held: false; until: number };

const GIVE_UP = {
  errorName: 'COORDINATOR_NOT_AVAILABLE',
  message: 'Too many concurrent writes to a delivery lease',
} as const;

export class DeliveryLeases {
  constructor(private readonly metadata: MetadataStore) {}

  /**
   * Takes the partition's lease for `holder` until `until`, or kicks the live holder. A lease held
   * by a holder `ended` says is over (an earlier run of this process, whose release failed or
   * whose claim's answer was lost) is free: waiting out its time would hold the partition for
   * nothing.
   */
  async claim(
    key: LeaseKey,
    holder: string,
    now: number,
    until: number,
    ended: (holder: string) => boolean = () => false,
  ): Promise<ClaimOutcome> {
    const { result } = await optimisticUpdate<DeliveryLease, ClaimOutcome>({
      metadata: this.metadata,
      pk: triggerLeasePk(key.trigger),
      sk: triggerLeaseSk(key.topic, key.partition),
      giveUp: GIVE_UP,
      decide: (item): Decision<DeliveryLease, ClaimOutcome> => {
        const v = item?.value;
        if (!v?.holder || v.until <= now || ended(v.holder)) {
          const write: DeliveryLease = { holder, until, kicks: v?.kicks ?? 0 };
          return { write, answer: (written) => ({ held: true as const, lease: { ...key, holder, item: written } }) };
        }
        const kicked: DeliveryLease = { ...v, kicks: v.kicks + 1 };
        return { write: kicked, answer: () => ({ held: false as const, until: v.until }) };
      },
      recognise: (found) =>
        found?.value.holder === holder ? { held: true, lease: { ...key, holder, item: found } } : undefined,
    });
    return result;
  }

  /** Extends the lease to `until`; undefined when it is no longer this holder's (it expired and was taken). */
  async renew(lease: HeldLease, until: number): Promise<HeldLease | undefined> {
    const { result } = await optimisticUpdate<DeliveryLease, HeldLease | undefined>({
      metadata: this.metadata,
      pk: triggerLeasePk(lease.trigger),
      sk: triggerLeaseSk(lease.topic, lease.partition),
      known: { item: lease.item },
      giveUp: GIVE_UP,
      decide: (item) => {
        if (item?.value.holder !== lease.holder) return { done: undefined };
        return { write: { ...item.value, until }, answer: (written) => ({ ...lease, item: written }) };
      },
      recognise: (found) =>
        found?.value.holder === lease.holder && found.value.until === until ? { ...lease, item: found } : undefined,
    });
    return result;
  }

  /**
   * Gives the lease back if nothing changed it since the holder last wrote it. 'kicked': a commit
   * landed meanwhile (the lease is still held, as `lease`), deliver again; 'lost': it is not this
   * holder's any more; 'released': nobody holds it.
   */
  async release(
    lease: HeldLease,
  ): Promise<{ how: 'released' } | { how: 'lost' } | { how: 'kicked'; lease: HeldLease }> {
    type Outcome = Awaited<ReturnType<DeliveryLeases['release']>>;
    const { result } = await optimisticUpdate<DeliveryLease, Outcome>({
      metadata: this.metadata,
      pk: triggerLeasePk(lease.trigger),
      sk: triggerLeaseSk(lease.topic, lease.partition),
      known: { item: lease.item },
      giveUp: GIVE_UP,
      decide: (item): Decision<DeliveryLease, Outcome> => {
        if (item?.value.holder !== lease.holder) return { done: { how: 'lost' } };
        if (item.version !== lease.item.version) return { done: { how: 'kicked', lease: { ...lease, item } } };
        return { write: { until: 0, kicks: item.value.kicks }, answer: () => ({ how: 'released' as const }) };
      },
      // A release the store sent twice: whoever holds it now (nobody, or a later claimer), it is not us.
      recognise: (found, _, retried) =>
        retried && found?.value.holder !== lease.holder ? { how: 'released' } : undefined,
    });
    return result;
  }

  /** Every lease item of a trigger, for its deletion. */
  async removeAll(trigger: string): Promise<void> {
    const items = await this.metadata.query(triggerLeasePk(trigger));
    await Promise.all(items.map((i) => this.metadata.delete(i.pk, i.sk)));
  }

  async read(key: LeaseKey): Promise<DeliveryLease | undefined> {
    return (
      await this.metadata.get<DeliveryLease>(triggerLeasePk(key.trigger), triggerLeaseSk(key.topic, key.partition))
    )?.value;
  }
}
