/**
 * A transaction's partitions, groups and pending offsets as items of their own under the
 * transactional id's key (transaction format 2, written from feature level 8), so the state item
 * stays small however many there are: a partition `p#{topic}#{p}`, an offset `o#{groupId}#{topic}#{p}`
 * (4 KB of metadata at most each), and a group `g#{groupId}` when it joined with no offset yet (a
 * group with offsets is named by them). Each entry names the transaction it joined by the state
 * item's `seq`; an entry of another `seq` counts for nothing.
 *
 * No entry is in force that an end could miss (transaction-coordinator.ts, `joinTransaction`): an
 * entry counts as joined only once, after it was written, the state item is found Ongoing at its
 * `seq` (a read, or the conditional write that starts that transaction). An end writes Prepare*
 * first and reads the entries after it, so it finds every such entry. An entry left without that
 * (its writer died, or found Prepare* and answered CONCURRENT_TRANSACTIONS) may or may not be
 * found, as a request whose answer was lost may or may not have applied: a marker for a partition
 * nothing was produced to finds no open transaction and writes nothing, and an offset is one the
 * producer asked to commit. Once Complete* is written the entries found are deleted (best effort:
 * what a crash leaves is deleted at the next end, or with the id): a few at once by the end itself,
 * many (a transaction over thousands of partitions) by the maintenance function, a bounded page
 * per firing of a durable timer, in batches, paced under what one partition key of DynamoDB takes
 * (transaction-coordinator.ts, `onTidy`).
 */
import { ConditionFailedError, type MetadataStore, type MetaItem } from '../storage/ports.js';
import { type Pace, writeUnitsOf } from '../storage/write-pace.js';
import {
  TXN_GROUP_PREFIX,
  TXN_OFFSET_PREFIX,
  TXN_PARTITION_PREFIX,
  TXN_STATE_SK,
  txnGroupSk,
  txnOffsetSk,
  txnPartitionSk,
  txnPk,
} from '../storage/key-layout.js';
import {
  withoutEntries,
  type PendingOffset,
  type TransactionMeta,
  type TransactionRecord,
  type TxnPartition,
} from './transaction-state.js';

/** One entry: a partition, a group (`groupId` alone) or an offset, of transaction `seq`. */
export type TxnEntry = { seq: number } & (TxnPartition | { groupId: string } | PendingOffset);

/** What a join writes: each entry's key and value without its `seq`. */
export interface EntryWrite {
  sk: string;
  value: TxnPartition | { groupId: string } | PendingOffset;
}

export function entriesOf(add: {
  partitions?: TxnPartition[];
  groups?: string[];
  offsets?: PendingOffset[];
}): EntryWrite[] {
  return [
    ...(add.partitions ?? []).map((p) => ({
      sk: txnPartitionSk(p.topic, p.partition),
      value: { topic: p.topic, partition: p.partition },
    })),
    // A group with offsets here is named by them; a group entry is for one without (AddOffsetsToTxn).
    ...(add.groups ?? [])
      .filter((g) => !add.offsets?.some((o) => o.groupId === g))
      .map((groupId) => ({ sk: txnGroupSk(groupId), value: { groupId } })),
    ...(add.offsets ?? []).map((o) => ({ sk: txnOffsetSk(o.groupId, o.topic, o.partition), value: { ...o } })),
  ];
}

/** Whether the stored entry is `write` in transaction `seq` (nothing to write). */
export const holdsEntry = (found: MetaItem<TxnEntry> | undefined, write: EntryWrite, seq: number): boolean =>
  found !== undefined && JSON.stringify(found.value) === JSON.stringify({ seq, ...write.value });

/** Deletes in flight at once: BatchWriteItem's 25, made as conditional deletes (a batch write has no condition). */
export const DELETE_BATCH = 25;

export class TransactionItems {
  constructor(private readonly metadata: MetadataStore) {}

  /** The entries at `sks` as stored now (undefined: absent). */
  async read(transactionalId: string, sks: string[]): Promise<Map<string, MetaItem<TxnEntry> | undefined>> {
    const pk = txnPk(transactionalId);
    const found = await Promise.all(sks.map((sk) => this.metadata.get<TxnEntry>(pk, sk)));
    return new Map(sks.map((sk, i) => [sk, found[i]]));
  }

  /**
   * Writes the entries into transaction `seq` (unconditional: a join only adds, and a repeat writes
   * the same), each once `pace` lets its units through. The join counts only once the state item is
   * read after them (transaction-coordinator.ts), so a paced write changes when it joins, not whether.
   */
  async write(transactionalId: string, seq: number, writes: EntryWrite[], pace?: Pace): Promise<void> {
    const pk = txnPk(transactionalId);
    let units = 0;
    await Promise.all(
      writes.map(async (w) => {
        const value = { seq, ...w.value } as TxnEntry;
        const through = (units += writeUnitsOf(pk, w.sk, value));
        await pace?.(through);
        await this.metadata.put<TxnEntry>(pk, w.sk, value);
      }),
    );
  }

  /** Every entry under the id (one query), the state item left out. */
  private async all(transactionalId: string, beginsWith?: string): Promise<MetaItem<TxnEntry>[]> {
    const items = await this.metadata.query<TxnEntry>(txnPk(transactionalId), beginsWith ? { beginsWith } : {});
    return items.filter((i) => i.sk !== TXN_STATE_SK);
  }

  /**
   * The transaction of a format 2 state item with its lists: the entries of its `seq` (none when it
   * is not open). `entries`: every entry found, of any `seq` (what to delete once it is complete).
   */
  async load(
    meta: TransactionMeta,
    open: boolean,
  ): Promise<{ record: TransactionRecord; entries: MetaItem<TxnEntry>[] }> {
    const record = withoutEntries(meta);
    if (!open) return { record, entries: [] };
    const entries = await this.all(meta.transactionalId);
    for (const item of entries) {
      const { seq, ...entry } = item.value;
      if (seq !== meta.seq) continue;
      if (item.sk.startsWith(TXN_PARTITION_PREFIX)) record.partitions.push(entry as TxnPartition);
      else if (item.sk.startsWith(TXN_GROUP_PREFIX)) record.groups.push((entry as { groupId: string }).groupId);
      else if (item.sk.startsWith(TXN_OFFSET_PREFIX)) record.offsets.push(entry as PendingOffset);
    }
    for (const o of record.offsets) if (!record.groups.includes(o.groupId)) record.groups.push(o.groupId);
    return { record, entries };
  }

  /** The pending offsets of `groupId` in the open transaction of `meta` (one query of the group's entries). */
  async offsetsOf(meta: TransactionMeta, groupId: string): Promise<PendingOffset[]> {
    const items = await this.all(meta.transactionalId, `${TXN_OFFSET_PREFIX}${groupId}#`);
    // The prefix also matches groups whose id continues with `#...`: the value says whose it is.
    return items
      .map((i) => i.value)
      .filter((v): v is { seq: number } & PendingOffset => v.seq === meta.seq && 'offset' in v && v.groupId === groupId)
      .map(({ seq: _, ...o }) => o);
  }

  /**
   * Deletes the entries given, each on condition of the version read: one written again since (by
   * the id's next transaction) stays. DELETE_BATCH at a time, `pace` between batches.
   */
  async delete(transactionalId: string, items: MetaItem<TxnEntry>[], pace?: Pace): Promise<void> {
    const pk = txnPk(transactionalId);
    let units = 0;
    for (let i = 0; i < items.length; i += DELETE_BATCH) {
      const batch = items.slice(i, i + DELETE_BATCH);
      await Promise.all(
        batch.map((item) =>
          this.metadata.delete(pk, item.sk, { ifVersion: item.version }).catch((e: unknown) => {
            if (!(e instanceof ConditionFailedError)) throw e;
          }),
        ),
      );
      for (const item of batch) units += writeUnitsOf(pk, item.sk, item.value);
      await pace?.(units);
    }
  }

  /**
   * One page of a tidy: reads up to `limit` entries after `after` (sort-key order) and deletes
   * those of a transaction `through` or earlier (every one without `through`: the id is being
   * removed). `last`: where the next page starts; `done`: no entry is left past it.
   */
  async tidyPage(
    transactionalId: string,
    page: { through?: number; after?: string; limit: number },
    pace?: Pace,
  ): Promise<{ last?: string; done: boolean; deleted: number }> {
    const items = await this.metadata.query<TxnEntry>(txnPk(transactionalId), {
      ...(page.after !== undefined && { gt: page.after }),
      lt: TXN_STATE_SK, // every entry's prefix sorts before it
      limit: page.limit,
    });
    const ended = items.filter((i) => page.through === undefined || i.value.seq <= page.through);
    await this.delete(transactionalId, ended, pace);
    return { last: items.at(-1)?.sk ?? page.after, done: items.length < page.limit, deleted: ended.length };
  }
}
