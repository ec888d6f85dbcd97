/**
 * The transaction coordinator's state per transactional.id (Kafka's TransactionMetadata), one item
 * (pk `txn#{transactionalId}`, sk `state`) changed by one conditional write per transition, and
 * the transitions themselves as plain functions of the item. In format 1 the item also lists the
 * transaction's partitions, groups and pending offsets; in format 2 (from feature level 8) those
 * are items of their own (transaction-items.ts) and the state item keeps the same small size.
 * Kafka's states:
 *
 *   Empty --(first partition or group added)--> Ongoing --(end)--> PrepareCommit | PrepareAbort
 *   Prepare* --(every marker and offset written)--> CompleteCommit | CompleteAbort --> Ongoing ...
 *   Empty | Complete* --(transactional.id.expiration.ms idle)--> Dead (the item is deleted)
 *
 * PrepareEpochFence is Kafka's in-memory step of fencing an ongoing transaction's producer (a new
 * init, or the transaction timeout): here the epoch bump and PrepareAbort are one write, so the
 * state is never stored.
 */
import { itemFormatVersion } from '../storage/formats.js';
import { KafkaError } from '../wire/errors.js';

/** Kafka's transaction states, the one list the HTTP API validates and documents. */
export const TRANSACTION_STATES = [
  'Empty',
  'Ongoing',
  'PrepareCommit',
  'PrepareAbort',
  'CompleteCommit',
  'CompleteAbort',
  'Dead',
  'PrepareEpochFence',
] as const;
export type TransactionStatus = (typeof TRANSACTION_STATES)[number];

export interface TxnPartition {
  topic: string;
  partition: number;
}

/** A transactional offset commit, visible in the group only once the transaction commits. */
export interface PendingOffset {
  groupId: string;
  topic: string;
  partition: number;
  offset: number;
  metadata: string;
}

/** What the state item holds in every format. */
export interface TransactionState {
  transactionalId: string;
  producerId: number;
  producerEpoch: number;
  /** The epoch before the last bump (Kafka's lastProducerEpoch), -1 if none. */
  lastProducerEpoch: number;
  /** transaction.timeout.ms the producer asked for at init. */
  timeoutMs: number;
  state: TransactionStatus;
  /** When the current transaction started (its first partition or group), -1 when none is open. */
  startedAt: number;
  updatedAt: number;
}

/** A transaction with its partitions, groups and pending offsets: the state item of format 1, and what readers see. */
export interface TransactionRecord extends TransactionState {
  partitions: TxnPartition[];
  groups: string[];
  offsets: PendingOffset[];
}

/**
 * The state item of format 2: the lists are items of their own, each naming the transaction it
 * joined by `seq`, which every start of a transaction increments; entries of an earlier `seq` are
 * left from a finished transaction (or a writer that died) and count for nothing.
 */
export interface TransactionMeta extends TransactionState {
  fv: 2;
  seq: number;
  /**
   * Entries of transactions up to this `seq` are left to delete (an end with more than it deletes
   * at once wrote it with its Complete*): the maintenance function's tidy timer deletes them and
   * then removes this. Absent: none left but what a dead writer may have dropped.
   */
  tidyThrough?: number;
}

export type StoredTransaction = TransactionRecord | TransactionMeta;

export const isSplit = (rec: StoredTransaction): rec is TransactionMeta => itemFormatVersion(rec) >= 2;

/** Whether a transaction is open (its lists in force): Ongoing or Prepare*. */
export const isOpen = (s: TransactionStatus) => s === 'Ongoing' || isPrepare(s);

/** The state without the lists or the format's fields. */
export function stateOf(rec: StoredTransaction): TransactionState {
  const { transactionalId, producerId, producerEpoch, lastProducerEpoch, timeoutMs, state, startedAt, updatedAt } = rec;
  return { transactionalId, producerId, producerEpoch, lastProducerEpoch, timeoutMs, state, startedAt, updatedAt };
}

/** A transaction with no partitions, groups or offsets (a format 2 state item with none open). */
export const withoutEntries = (rec: StoredTransaction): TransactionRecord => ({
  ...stateOf(rec),
  partitions: [],
  groups: [],
  offsets: [],
});

/**
 * A format 2 state item starting a transaction. Over a format 1 item (none open) the first `seq`
 * is the time: an id removed and made again never meets an entry left from before with its `seq`.
 */
export function startSplit(rec: StoredTransaction, now: number): TransactionMeta {
  return {
    ...stateOf(rec),
    fv: 2,
    ...(isSplit(rec) && rec.tidyThrough !== undefined && { tidyThrough: rec.tidyThrough }),
    seq: isSplit(rec) ? rec.seq + 1 : now,
    state: 'Ongoing',
    startedAt: now,
    updatedAt: now,
  };
}

/** Kafka's producer epoch is a signed 16-bit value; at the last one the coordinator takes a fresh producer id. */
export const MAX_PRODUCER_EPOCH = 32_767;

export const isPrepare = (s: TransactionStatus) => s === 'PrepareCommit' || s === 'PrepareAbort';
export const isComplete = (s: TransactionStatus) => s === 'Empty' || s === 'CompleteCommit' || s === 'CompleteAbort';

export const samePartition = (a: TxnPartition, b: TxnPartition) => a.topic === b.topic && a.partition === b.partition;

/**
 * The producer (id, epoch) a request carries must be the transactional.id's current one. An older
 * epoch is a zombie: PRODUCER_FENCED (INVALID_PRODUCER_EPOCH on produce, as Kafka's broker answers).
 */
export function checkProducer(
  rec: TransactionState,
  producerId: number,
  producerEpoch: number,
  fenced: 'PRODUCER_FENCED' | 'INVALID_PRODUCER_EPOCH' = 'PRODUCER_FENCED',
): void {
  if (rec.producerId !== producerId) {
    throw new KafkaError(
      'INVALID_PRODUCER_ID_MAPPING',
      `Transactional id ${rec.transactionalId} belongs to producer ${rec.producerId}, not ${producerId}`,
    );
  }
  if (producerEpoch !== rec.producerEpoch) {
    throw new KafkaError(
      fenced,
      `Producer ${producerId} epoch ${producerEpoch} of transactional id ${rec.transactionalId} is fenced: the current epoch is ${rec.producerEpoch}`,
    );
  }
}

/** Partitions and groups join the transaction; the first one starts it. */
export function join(
  rec: TransactionRecord,
  add: { partitions?: TxnPartition[]; groups?: string[] },
  now: number,
): TransactionRecord {
  if (isPrepare(rec.state)) {
    throw new KafkaError(
      'CONCURRENT_TRANSACTIONS',
      `Transactional id ${rec.transactionalId} is completing its last transaction (${rec.state}); retry`,
    );
  }
  const starting = rec.state !== 'Ongoing';
  const partitions = starting ? [] : [...rec.partitions];
  for (const p of add.partitions ?? []) if (!partitions.some((q) => samePartition(p, q))) partitions.push(p);
  const groups = starting ? [] : [...rec.groups];
  for (const g of add.groups ?? []) if (!groups.includes(g)) groups.push(g);
  return {
    ...rec,
    state: 'Ongoing',
    partitions,
    groups,
    offsets: starting ? [] : rec.offsets,
    startedAt: starting ? now : rec.startedAt,
    updatedAt: now,
  };
}

/** Whether joining would change nothing (the common case of a produce to a partition already in the transaction). */
export function joined(rec: TransactionRecord, add: { partitions?: TxnPartition[]; groups?: string[] }): boolean {
  if (rec.state !== 'Ongoing') return false;
  return (
    (add.partitions ?? []).every((p) => rec.partitions.some((q) => samePartition(p, q))) &&
    (add.groups ?? []).every((g) => rec.groups.includes(g))
  );
}

/** EndTxn: Ongoing moves to Prepare*, which is persisted before any marker is written. */
export function prepareEnd<T extends StoredTransaction>(rec: T, commit: boolean, now: number): T {
  return { ...rec, state: commit ? 'PrepareCommit' : 'PrepareAbort', updatedAt: now };
}

/** Every marker and offset of a Prepare* is written: the transaction is over (format 2: its entries count for nothing). */
export function completeEnd<T extends StoredTransaction>(rec: T, now: number): T {
  return {
    ...rec,
    state: rec.state === 'PrepareCommit' ? 'CompleteCommit' : 'CompleteAbort',
    ...(isSplit(rec) ? {} : { partitions: [], groups: [], offsets: [] }),
    startedAt: -1,
    updatedAt: now,
  };
}

/**
 * Fences the current producer: bumps the epoch, and an open transaction is aborted under the new
 * epoch (its markers carry it, so the partitions fence the zombie too).
 */
export function fence<T extends StoredTransaction>(rec: T, now: number): T {
  const bumped = { ...rec, producerEpoch: rec.producerEpoch + 1, lastProducerEpoch: rec.producerEpoch, updatedAt: now };
  return rec.state === 'Ongoing' ? { ...bumped, state: 'PrepareAbort' } : bumped;
}

/** The offsets with this commit's replacing any earlier one for the same group and partition. */
export function mergeOffsets(rec: TransactionRecord, offsets: PendingOffset[], now: number): TransactionRecord {
  const same = (a: PendingOffset, b: PendingOffset) =>
    a.groupId === b.groupId && a.topic === b.topic && a.partition === b.partition;
  return {
    ...rec,
    offsets: [...rec.offsets.filter((o) => !offsets.some((n) => same(o, n))), ...offsets],
    updatedAt: now,
  };
}
