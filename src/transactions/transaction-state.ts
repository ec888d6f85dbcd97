/**
 * The transaction coordinator's state per transactional.id (Kafka's TransactionMetadata), one item
 * (pk `txn#{transactionalId}`, sk `state`) changed by one conditional write per transition, and
 * the transitions themselves as plain functions of the item. Kafka's states:
 *
 *   Empty --(first partition or group added)--> Ongoing --(end)--> PrepareCommit | PrepareAbort
 *   Prepare* --(every marker and offset written)--> CompleteCommit | CompleteAbort --> Ongoing ...
 *   Empty | Complete* --(transactional.id.expiration.ms idle)--> Dead (the item is deleted)
 *
 * PrepareEpochFence is Kafka's in-memory step of fencing an ongoing transaction's producer (a new
 * init, or the transaction timeout): here the epoch bump and PrepareAbort are one write, so the
 * state is never stored.
 */
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

export interface TransactionRecord {
  transactionalId: string;
  producerId: number;
  producerEpoch: number;
  /** The epoch before the last bump (Kafka's lastProducerEpoch), -1 if none. */
  lastProducerEpoch: number;
  /** transaction.timeout.ms the producer asked for at init. */
  timeoutMs: number;
  state: TransactionStatus;
  partitions: TxnPartition[];
  groups: string[];
  offsets: PendingOffset[];
  /** When the current transaction started (its first partition or group), -1 when none is open. */
  startedAt: number;
  updatedAt: number;
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
  rec: TransactionRecord,
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
export function prepareEnd(rec: TransactionRecord, commit: boolean, now: number): TransactionRecord {
  return { ...rec, state: commit ? 'PrepareCommit' : 'PrepareAbort', updatedAt: now };
}

/** Every marker and offset of a Prepare* is written: the transaction is over. */
export function completeEnd(rec: TransactionRecord, now: number): TransactionRecord {
  return {
    ...rec,
    state: rec.state === 'PrepareCommit' ? 'CompleteCommit' : 'CompleteAbort',
    partitions: [],
    groups: [],
    offsets: [],
    startedAt: -1,
    updatedAt: now,
  };
}

/**
 * Fences the current producer: bumps the epoch, and an open transaction is aborted under the new
 * epoch (its markers carry it, so the partitions fence the zombie too).
 */
export function fence(rec: TransactionRecord, now: number): TransactionRecord {
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
