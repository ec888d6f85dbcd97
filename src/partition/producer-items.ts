import { itemFormatVersion } from '../storage/formats.js';
import { optimisticUpdate } from '../storage/optimistic-update.js';
import type { MetadataStore } from '../storage/ports.js';
import { producerEntrySk } from '../storage/key-layout.js';
import { isLaterEntry, PRODUCER_ID_EXPIRATION_MS, producerIn, type ProducerSequence } from './producer-state.js';

/**
 * The producers that left the partition state's cache (PRODUCER_CACHE_SIZE), one item each (pk
 * `part#{topic}#{p}`, sk `pid#{producerId}`), so the state item, rewritten on every commit, stays
 * a few KB however many producers write to the partition.
 *
 * The rule that keeps idempotence and fencing exact: a producer's entry is in the state's cache, or
 * else its item holds its latest entry. A commit that drops producers from the cache first writes
 * their items (`spillProducers`), then the state; so when the state it wrote over no longer holds
 * a producer, its item does. An item is only ever moved forward (epoch, then sequence): a writer
 * that lost the race to the state may still write an item from the state it read, which is older
 * than the one there and leaves it as it is. A producer that writes again is taken back into the
 * cache by its commit, from its item; the item stays (older than the cache, which wins).
 */

interface ProducerItem extends ProducerSequence {
  /** The topic incarnation: an item a deleted topic of the same name left is not this one's. */
  topicId: string;
}

type StateWithProducers = Parameters<typeof producerIn>[0] & { topicId: string; pidItems?: true };

/**
 * What was read of producer items per state read: while a state is the current one, the items of
 * the producers it does not hold cannot move (only a commit over it could take one back), so the
 * sequence check before the object is written and the commit's first attempt share one read.
 */
const itemsRead = new WeakMap<object, Map<number, Promise<ProducerSequence | undefined>>>();

/** A producer's entry: from the state's cache, else from its item; undefined when unknown or expired. */
export function producerEntry(
  metadata: MetadataStore,
  pk: string,
  state: StateWithProducers,
  producerId: number,
  now: number,
): Promise<ProducerSequence | undefined> {
  const cached = producerIn(state, producerId);
  // Only a state that let producers go (version 2, `pidItems`) has any in items.
  if (cached || itemFormatVersion(state) < 2 || !state.pidItems) return Promise.resolve(cached);
  const reads = itemsRead.get(state) ?? new Map<number, Promise<ProducerSequence | undefined>>();
  itemsRead.set(state, reads);
  let read = reads.get(producerId);
  if (!read) {
    read = readItem(metadata, pk, state.topicId, producerId, now);
    reads.set(producerId, read);
    read.catch(() => reads.delete(producerId));
  }
  return read;
}

async function readItem(
  metadata: MetadataStore,
  pk: string,
  topicId: string,
  producerId: number,
  now: number,
): Promise<ProducerSequence | undefined> {
  const item = await metadata.get<ProducerItem>(pk, producerEntrySk(producerId));
  if (!item || item.value.topicId !== topicId || now - item.value.updatedAt >= PRODUCER_ID_EXPIRATION_MS)
    return undefined;
  const { topicId: _, ...entry } = item.value;
  return entry;
}

/** Writes the items of producers about to leave the cache, each only if it moves the item forward. */
export async function spillProducers(
  metadata: MetadataStore,
  pk: string,
  topicId: string,
  entries: ProducerSequence[],
): Promise<void> {
  await Promise.all(
    entries.map((entry) =>
      optimisticUpdate<ProducerItem, void>({
        metadata,
        pk,
        sk: producerEntrySk(entry.producerId),
        decide: (item) =>
          item && item.value.topicId === topicId && !isLaterEntry(entry, item.value)
            ? { done: undefined }
            : {
                write: { ...entry, topicId },
                // Kafka's producer.id.expiration.ms: past it the item is read as no producer (readItem),
                // so the store may drop it (DynamoDB's TTL); an active producer's next spill moves it on.
                expiresAt: entry.updatedAt + PRODUCER_ID_EXPIRATION_MS,
                answer: () => undefined,
              },
        // No `recognise`: after a failed condition (our own write whose answer was lost included)
        // `decide` runs again on the item found, and an entry as late as ours leaves it be.
        giveUp: {
          errorName: 'KAFKA_STORAGE_ERROR',
          message: `Too much contention keeping producer ${entry.producerId}'s state; nothing was appended, retry`,
        },
      }),
    ),
  );
}
