/**
 * KIP-447's stable offsets: which partitions of a group have offsets waiting in an open
 * transaction. A consumer that reads committed offsets with require_stable (a read_committed one)
 * is answered UNSTABLE_OFFSET_COMMIT for those, and retries: reading the offset committed before
 * the transaction, it would process again what the transaction is about to commit as processed.
 *
 * The offsets themselves wait in the transaction's items (pk `txn#{id}`: its state item in format 1,
 * an item per offset in format 2, transaction-items.ts); a group's readers find
 * the transactions that may hold some for it through one marker per (group, transactional id)
 * (pk `txn-offsets#{group}`, sk the id), so the check is one query of the group, not a scan of
 * every transactional id. The item stays the truth: a marker only says where to look.
 *
 * The marker is written before the offsets (each attempt of the conditional write puts it again,
 * naming the item version that write is conditioned on), so no offset is ever pending without
 * one. Once the transaction is complete, the coordinator deletes the markers of its groups that
 * name an older version than the completing write, each on condition of the marker's own version:
 * a marker put again meanwhile, for the id's next transaction, names a newer item version and stays.
 * A marker left by a process that died is deleted by the next reader that finds it stale.
 */
import { ConditionFailedError, type MetadataStore, type MetaItem } from '../storage/ports.js';
import { pendingOffsetsPk, TXN_STATE_SK, txnPk } from '../storage/key-layout.js';
import { TransactionItems } from './transaction-items.js';
import { isComplete, isSplit, type StoredTransaction } from './transaction-state.js';

interface Marker {
  /** The version of the transaction item the offsets' conditional write was conditioned on. */
  afterVersion: number;
}

/** Marks `groups` as maybe holding offsets of `transactionalId`'s transaction, before a write over item version `itemVersion`. */
export async function markPendingOffsets(
  metadata: MetadataStore,
  groups: string[],
  transactionalId: string,
  itemVersion: number,
): Promise<void> {
  await Promise.all(
    groups.map((g) => metadata.put<Marker>(pendingOffsetsPk(g), transactionalId, { afterVersion: itemVersion })),
  );
}

/** After the transaction completed with item version `completedVersion`: its markers go, unless put again since. */
export async function clearPendingOffsets(
  metadata: MetadataStore,
  groups: string[],
  transactionalId: string,
  completedVersion: number,
): Promise<void> {
  await Promise.all(
    groups.map(async (g) => {
      const marker = await metadata.get<Marker>(pendingOffsetsPk(g), transactionalId);
      if (marker && marker.value.afterVersion < completedVersion) await forget(metadata, marker);
    }),
  );
}

/**
 * The partitions (`topic#partition`) of `groupId` with offsets in a transaction not yet complete.
 * A marker found stale (its transaction complete since, or its id gone) is deleted on the way, by
 * the coordinator's rule, so one left by a crash costs readers a read only until the next one.
 */
export async function unstableOffsets(metadata: MetadataStore, groupId: string): Promise<Set<string>> {
  const unstable = new Set<string>();
  const markers = await metadata.query<Marker>(pendingOffsetsPk(groupId));
  await Promise.all(
    markers.map(async (m) => {
      const txn = await metadata.get<StoredTransaction>(txnPk(m.sk), TXN_STATE_SK);
      // Complete (or Empty): committed to the group, or dropped. Prepare*: decided, not yet written.
      if (txn && !isComplete(txn.value.state)) {
        const rec = txn.value;
        const offsets = isSplit(rec) ? await new TransactionItems(metadata).offsetsOf(rec, groupId) : rec.offsets;
        for (const o of offsets) if (o.groupId === groupId) unstable.add(`${o.topic}#${o.partition}`);
      } else if (!txn || m.value.afterVersion < txn.version) {
        await forget(metadata, m).catch(() => {}); // tidying only
      }
    }),
  );
  return unstable;
}

/** Deletes the marker as it was read: one put again since (a newer transaction's) stays. */
async function forget(metadata: MetadataStore, marker: MetaItem<Marker>): Promise<void> {
  await metadata.delete(marker.pk, marker.sk, { ifVersion: marker.version }).catch((e: unknown) => {
    if (!(e instanceof ConditionFailedError)) throw e;
  });
}
