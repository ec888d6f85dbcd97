import { optimisticUpdate } from '../storage/optimistic-update.js';
import type { MetadataStore, MetaItem } from '../storage/ports.js';

/**
 * Moves a scan cursor (`{slot}`) from the version it was read at. One write: if another scan moved
 * it meanwhile, that scan's cursor stands (both scans covered the slots up to theirs; a later one
 * rescans at worst). A repeat of a write that applied finds its own slot and is done as well.
 */
export async function moveCursor(
  metadata: MetadataStore,
  pk: string,
  sk: string,
  read: MetaItem<{ slot: number }> | undefined,
  slot: number,
): Promise<void> {
  await optimisticUpdate<{ slot: number }, undefined>({
    metadata,
    pk,
    sk,
    known: { item: read },
    attempts: 2,
    giveUp: { errorName: 'COORDINATOR_NOT_AVAILABLE', message: `Cursor ${pk} / ${sk} is contended` },
    decide: (_, attempt) => (attempt === 0 ? { write: { slot }, answer: () => undefined } : { done: undefined }),
  });
}
