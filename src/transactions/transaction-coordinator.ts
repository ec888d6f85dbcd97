/**
 * The transaction coordinator (Kafka's TransactionCoordinator + TransactionMarkerChannelManager),
 * stateless over the metadata store: every operation reads the transactional.id's item, applies
 * one transition (transaction-state.ts) and writes it back on condition of the version read. A
 * lost race or an ambiguous write (applied, answer lost, retried by the SDK) comes back as the item
 * as it now is, and the operation is decided again from there, so every step may be retried.
 *
 * Ending a transaction is three steps, each safe to repeat and to die after:
 *   1. Prepare{Commit,Abort} is written: from here the outcome is decided.
 *   2. A marker is written to every partition of the transaction (idempotent: a partition without
 *      the producer's open transaction takes none) and, on commit, its offsets to their groups.
 *   3. Complete{Commit,Abort} is written.
 * A process that dies between them leaves Prepare*, which whoever comes next finishes: the
 * producer's retry, its next init, any request for the id, or the transaction's timeout timer
 * (fired by the scheduler with no request at all).
 *
 * From feature level 8 (transaction format 2) the transaction's partitions, groups and offsets are
 * items of their own (transaction-items.ts): a join writes those, and the state item only when it
 * starts a transaction; step 2 reads them after step 1.
 */
import type { Clock } from '../clock.js';
import { KafkaError, isKafkaError } from '../wire/errors.js';
import type { OffsetRecord } from '../groups/offsets.js';
import type { PartitionLog } from '../log/partition-log.js';
import { requirePartition, type Topic, type TopicRegistry } from '../topics/topics.js';
import { DEFAULT_TRANSACTION_CONFIG, type TransactionConfig } from './transaction-config.js';
import { mapBounded, partitionPage, type PartitionCursor } from '../topics/partition-scan.js';
import type { ProducerIds } from '../producer/producer-ids.js';
import { ConditionFailedError, type MetadataStore, type MetaItem } from '../storage/ports.js';
import { holdsWrite, optimisticUpdate, type Decision, type UpdateOutcome } from '../storage/optimistic-update.js';
import type { DurableTimer, DurableTimers } from '../timer/durable-timers.js';
import { TXN_REGISTRY_PK, TXN_STATE_SK as TXN_SK, txnPk } from '../storage/key-layout.js';
import { SUPPORTED_FEATURE_LEVEL, writeVersion } from '../storage/formats.js';
import { clearPendingOffsets, markPendingOffsets, unstableOffsets } from './pending-offsets.js';
import { entriesOf, holdsEntry, TransactionItems } from './transaction-items.js';
import { PACED_WRITE_BURST, PACED_WRITE_RATE, type Pace, pacer, realSleep } from '../storage/write-pace.js';
import {
  checkProducer,
  completeEnd,
  fence,
  isComplete,
  isOpen,
  isPrepare,
  isSplit,
  join,
  joined,
  MAX_PRODUCER_EPOCH,
  mergeOffsets,
  prepareEnd,
  startSplit,
  withoutEntries,
  type PendingOffset,
  type StoredTransaction,
  type TransactionRecord,
  type TransactionState,
  type TransactionStatus,
  type TxnPartition,
} from './transaction-state.js';

export const TXN_TIMEOUT_KIND = 'txn-timeout';
export const TXN_EXPIRY_KIND = 'txn-id-expiry';
export const TXN_TIDY_KIND = 'txn-tidy';

/**
 * An end deletes at most this many entries itself (four batches, as it did before pacing); more
 * go to the tidy timer. Each firing of it deletes at most TIDY_PER_FIRING, at TIDY_RATE write units
 * a second (a delete is billed by the size of the item it deletes: an offset with 4 KB of metadata
 * is 5): one transactional id is one DynamoDB partition key, which takes 1,000 a second; half is
 * left to the id's next transaction (its joins take PACED_WRITE_RATE). 11,000 small entries: 11
 * firings of 2 s, one per scheduler tick.
 */
export const INLINE_TIDY = 100;
export const TIDY_PER_FIRING = 1_000;
export const TIDY_RATE = 500;

interface TidyPayload {
  transactionalId: string;
  /** The entries of transactions up to this `seq` are deleted. */
  through: number;
  /** The last entry a previous firing read (sort-key order). */
  after?: string;
}

export interface TransactionDeps {
  metadata: MetadataStore;
  clock: Clock;
  topics: TopicRegistry;
  log: PartitionLog;
  producerIds: ProducerIds;
  /** Writes committed offsets to a group, each once `pace` lets it (writeOffsetRecords). */
  writeOffsets: (groupId: string, records: OffsetRecord[], pace?: Pace) => Promise<void>;
  /** KIP-447: checks the consumer's member id and generation (GroupOffsets.checkMember); absent, none is checked. */
  checkMember?: (
    groupId: string,
    memberId: string,
    generation: number,
    offsets: { topic: string; partition: number; offset: number }[],
  ) => Promise<void>;
  timers: DurableTimers;
  /** How a tidy and a join's entries wait to keep to their rates (default setTimeout). */
  sleep?: (ms: number) => Promise<void>;
  config?: Partial<TransactionConfig>;
  /** The cluster's feature level (src/storage/feature-level.ts): level 8 writes transaction format 2. Absent: the newest. */
  featureLevel?: () => Promise<number> | number;
}

export interface ProducerRef {
  producerId: number;
  producerEpoch: number;
}

/** A transaction open in a partition whose coordinator does not (or no longer) lists that partition. */
export interface HangingTransaction {
  topic: string;
  partition: number;
  producerId: number;
  producerEpoch: number;
  firstOffset: number;
  startedAt: number;
  transactionalId?: string;
  coordinatorState?: TransactionStatus;
}

/** Timer ids may not hold '#'; transactional ids may. */
const timerId = (transactionalId: string) => encodeURIComponent(transactionalId);
const ATTEMPTS = 50;

export class TransactionCoordinator {
  readonly config: TransactionConfig;
  private readonly items: TransactionItems;
  private readonly sleep: (ms: number) => Promise<void>;

  constructor(private readonly deps: TransactionDeps) {
    this.sleep = deps.sleep ?? realSleep;
    this.config = { ...DEFAULT_TRANSACTION_CONFIG, ...deps.config };
    this.items = new TransactionItems(deps.metadata);
  }

  /** Whether the cluster's feature level lets this process write transaction format 2. */
  private async splitting(): Promise<boolean> {
    const level = this.deps.featureLevel ? await this.deps.featureLevel() : SUPPORTED_FEATURE_LEVEL;
    return writeVersion('transaction', level) >= 2;
  }

  /**
   * Kafka's InitProducerId with a transactional.id: finishes what the previous producer left
   * (completes a Prepare*, aborts an open transaction after fencing it), then bumps the epoch, which
   * fences every other producer of the id. A new id gets a producer id at epoch 0.
   */
  async init(transactionalId: string, timeoutMs: number, expected?: ProducerRef): Promise<ProducerRef> {
    validateTransactionalId(transactionalId);
    if (!Number.isInteger(timeoutMs) || timeoutMs <= 0 || timeoutMs > this.config.maxTimeoutMs) {
      throw new KafkaError(
        'INVALID_TRANSACTION_TIMEOUT',
        `transaction.timeout.ms must be between 1 and transaction.max.timeout.ms (${this.config.maxTimeoutMs}), got ${timeoutMs}`,
      );
    }
    type Step = { ref: ProducerRef } | { finish: MetaItem<StoredTransaction> };
    let item = await this.read(transactionalId);
    // Each round is one update of the item; a Prepare* (left, or made by fencing an open
    // transaction) is carried to Complete* between rounds.
    for (let round = 0; round < ATTEMPTS; round++) {
      const { result } = await this.update<Step>(transactionalId, item, async (item) => {
        const now = this.deps.clock.now();
        if (!item) {
          const { producerId } = await this.deps.producerIds.init();
          const state: TransactionState = {
            transactionalId,
            producerId,
            producerEpoch: 0,
            lastProducerEpoch: -1,
            timeoutMs,
            state: 'Empty',
            startedAt: -1,
            updatedAt: now,
          };
          // Format 2's first `seq` is the time (startSplit says why).
          const rec: StoredTransaction = (await this.splitting())
            ? { ...state, fv: 2, seq: now }
            : { ...state, partitions: [], groups: [], offsets: [] };
          // Registry and expiry timer first: an id whose item write fails is found and expired anyway.
          await this.deps.metadata.put(TXN_REGISTRY_PK, transactionalId, { transactionalId });
          await this.scheduleExpiry(transactionalId, now);
          return { write: rec, answer: () => ({ ref: { producerId, producerEpoch: 0 } }) };
        }
        const rec = item.value;
        if (
          expected &&
          (expected.producerId !== rec.producerId ||
            (expected.producerEpoch !== rec.producerEpoch && expected.producerEpoch !== rec.lastProducerEpoch))
        ) {
          throw new KafkaError(
            'PRODUCER_FENCED',
            `Producer ${expected.producerId} epoch ${expected.producerEpoch} no longer owns transactional id ${transactionalId}`,
          );
        }
        if (isPrepare(rec.state)) return { done: { finish: item } };
        // The previous producer left a transaction open: fence it, abort under the new epoch.
        if (rec.state === 'Ongoing') return { write: fence(rec, now), answer: (w) => ({ finish: w }) };
        let next: StoredTransaction;
        if (rec.producerEpoch >= MAX_PRODUCER_EPOCH - 1) {
          // Epoch exhausted: a fresh producer id, as Kafka does.
          const { producerId } = await this.deps.producerIds.init();
          next = {
            ...rec,
            producerId,
            producerEpoch: 0,
            lastProducerEpoch: -1,
            timeoutMs,
            state: 'Empty',
            updatedAt: now,
          };
        } else next = { ...fence(rec, now), timeoutMs, state: 'Empty' };
        return {
          write: next,
          answer: () => ({ ref: { producerId: next.producerId, producerEpoch: next.producerEpoch } }),
        };
      });
      if ('ref' in result) return result.ref;
      item = await this.finish(result.finish);
    }
    throw contention(transactionalId);
  }

  /**
   * The check a transactional produce makes before it appends (KIP-890's server-side defence): the
   * producer must be the id's current one, and the partitions join its transaction (starting one)
   * unless they are in it already. A produce of a fenced producer or of a completing transaction
   * appends nothing.
   */
  async verifyProduce(transactionalId: string, producer: ProducerRef, partitions: TxnPartition[]): Promise<void> {
    await this.joinTransaction(transactionalId, producer, { partitions }, 'INVALID_PRODUCER_EPOCH');
  }

  /** Kafka's AddPartitionsToTxn (optional here: the first produce to a partition adds it). */
  async addPartitions(transactionalId: string, producer: ProducerRef, partitions: TxnPartition[]): Promise<void> {
    for (const p of partitions) {
      requirePartition(await this.deps.topics.get(p.topic), p.partition);
    }
    await this.joinTransaction(transactionalId, producer, { partitions });
  }

  /**
   * Kafka's AddOffsetsToTxn and TxnOffsetCommit in one: the group joins the transaction and the
   * offsets wait in the transaction's item; they are written to the group when it commits, and
   * dropped when it aborts.
   */
  async commitOffsets(
    transactionalId: string,
    producer: ProducerRef,
    groupId: string,
    offsets: Omit<PendingOffset, 'groupId'>[],
    member?: { memberId: string; generation: number },
  ): Promise<void> {
    if (groupId === '') throw new KafkaError('INVALID_GROUP_ID', 'The group id must not be empty');
    for (const o of offsets) {
      const topic = await this.deps.topics.get(o.topic);
      requirePartition(topic, o.partition);
      if (!Number.isSafeInteger(o.offset) || o.offset < 0)
        throw new KafkaError(
          'INVALID_REQUEST',
          `Offset ${o.offset} for ${o.topic}-${o.partition} must be a non-negative integer`,
        );
      if (Buffer.byteLength(o.metadata, 'utf8') > 4096)
        throw new KafkaError(
          'OFFSET_METADATA_TOO_LARGE',
          `Offset metadata for ${o.topic}-${o.partition} exceeds 4096 bytes`,
        );
    }
    if (member && this.deps.checkMember)
      await this.deps.checkMember(groupId, member.memberId, member.generation, offsets);
    const pending = offsets.map((o) => ({ ...o, groupId }));
    await this.joinTransaction(transactionalId, producer, { groups: [groupId], offsets: pending });
  }

  /**
   * KIP-447: the partitions (`topic#partition`) of `groupId` whose offsets wait in a transaction
   * not yet complete. OffsetFetch with require_stable answers them UNSTABLE_OFFSET_COMMIT.
   */
  unstableOffsets(groupId: string): Promise<Set<string>> {
    return unstableOffsets(this.deps.metadata, groupId);
  }

  /** Kafka's EndTxn, carried through to Complete* before it answers (see the module comment). */
  async end(transactionalId: string, producer: ProducerRef, commit: boolean): Promise<TransactionRecord> {
    let item: MetaItem<StoredTransaction> | undefined = await this.require(transactionalId);
    const want: TransactionStatus = commit ? 'PrepareCommit' : 'PrepareAbort';
    const done: TransactionStatus = commit ? 'CompleteCommit' : 'CompleteAbort';
    type Step = { ended: StoredTransaction } | { finish: MetaItem<StoredTransaction> };
    for (let round = 0; round < ATTEMPTS; round++) {
      const { result } = await this.update<Step>(transactionalId, item, (item) => {
        if (!item) throw unknownTransactionalId(transactionalId, 'INVALID_PRODUCER_ID_MAPPING');
        const rec = item.value;
        checkProducer(rec, producer.producerId, producer.producerEpoch);
        if (rec.state === done) return { done: { ended: rec } }; // a retry of an end whose answer was lost
        // Nothing open to abort (the client could not know whether its first produce joined): a no-op.
        if (!commit && isComplete(rec.state)) return { done: { ended: rec } };
        if (rec.state === want) return { done: { finish: item } };
        if (rec.state === 'Ongoing')
          return { write: prepareEnd(rec, commit, this.deps.clock.now()), answer: (w) => ({ finish: w }) };
        throw new KafkaError(
          'INVALID_TXN_STATE',
          `Cannot ${commit ? 'commit' : 'abort'} transactional id ${transactionalId}: its transaction is ${rec.state}`,
        );
      });
      // Complete or Empty: nothing is open, so format 2's entries are none.
      if ('ended' in result) return isSplit(result.ended) ? withoutEntries(result.ended) : result.ended;
      item = await this.finish(result.finish);
      if (!item) throw unknownTransactionalId(transactionalId, 'INVALID_PRODUCER_ID_MAPPING');
    }
    throw contention(transactionalId);
  }

  async describe(transactionalId: string): Promise<TransactionRecord> {
    return this.view(await this.require(transactionalId, 'TRANSACTIONAL_ID_NOT_FOUND'));
  }

  /** The transaction with its lists: format 2's entries read when it is open (one query). */
  private async view(item: MetaItem<StoredTransaction>): Promise<TransactionRecord> {
    const rec = item.value;
    return isSplit(rec) ? (await this.items.load(rec, isOpen(rec.state))).record : rec;
  }

  /** Kafka's ListTransactions: every id, optionally of some states or producer ids. */
  async list(filter: { states?: TransactionStatus[]; producerIds?: number[] } = {}): Promise<TransactionRecord[]> {
    const ids = await this.deps.metadata.query<{ transactionalId: string }>(TXN_REGISTRY_PK);
    const items = await Promise.all(ids.map((i) => this.read(i.value.transactionalId)));
    const recs = await Promise.all(items.map((i) => (i ? this.view(i) : undefined)));
    return recs
      .flatMap((r) => (r ? [r] : []))
      .filter(
        (r) =>
          (!filter.states || filter.states.includes(r.state)) &&
          (!filter.producerIds || filter.producerIds.includes(r.producerId)),
      );
  }

  /**
   * Transactions open in a topic's partitions (every topic's without one) for longer than
   * `olderThanMs` whose coordinator does not list the partition in an ongoing transaction of the same
   * producer: no end will ever write their marker (kafka-transactions.sh find-hanging).
   *
   * One call reads at most `maxPartitions` partition states (FIND_HANGING_PAGE), HANGING_READS at a
   * time, in (topic name, partition) order from `after` on, and says where the next call goes on:
   * however many partitions there are, each call fits in an admin request.
   */
  async findHanging(
    options: { topic?: string; olderThanMs?: number; after?: PartitionCursor; maxPartitions?: number } = {},
  ): Promise<{ hanging: HangingTransaction[]; next?: PartitionCursor }> {
    const now = this.deps.clock.now();
    const olderThan = options.olderThanMs ?? this.config.maxTimeoutMs;
    const topics = options.topic ? [await this.deps.topics.get(options.topic)] : await this.deps.topics.list();
    const { page, next } = partitionPage(topics, {
      ...(options.after ? { after: options.after } : {}),
      ...(options.maxPartitions !== undefined ? { max: options.maxPartitions } : {}),
    });
    const byProducer = new Map((await this.list()).map((r) => [r.producerId, r]));
    const states = await mapBounded(page, ({ topic, partition }) => this.deps.log.state(topic, partition));
    const out: HangingTransaction[] = [];
    page.forEach(({ topic, partition: p }, i) => {
      for (const [id, open] of Object.entries(states[i]!.openTxns ?? {})) {
        if (now - open.startedAt < olderThan) continue;
        const rec = byProducer.get(Number(id));
        const listed =
          rec &&
          rec.state === 'Ongoing' &&
          rec.producerEpoch === open.producerEpoch &&
          rec.partitions.some((x) => x.topic === topic.name && x.partition === p);
        if (listed) continue;
        out.push({
          topic: topic.name,
          partition: p,
          producerId: Number(id),
          producerEpoch: open.producerEpoch,
          firstOffset: open.firstOffset,
          startedAt: open.startedAt,
          ...(rec ? { transactionalId: rec.transactionalId, coordinatorState: rec.state } : {}),
        });
      }
    });
    return next ? { hanging: out, next } : { hanging: out };
  }

  /** kafka-transactions.sh abort: an ABORT marker for a (hanging) transaction in one partition. */
  async abortInPartition(
    topicName: string,
    partition: number,
    producer: ProducerRef,
  ): Promise<{ written: boolean; offset: number }> {
    const topic = await this.deps.topics.get(topicName);
    return this.deps.log.writeMarker(topic, partition, {
      type: 'ABORT',
      producerId: producer.producerId,
      producerEpoch: producer.producerEpoch,
      coordinatorEpoch: 0,
    });
  }

  /**
   * The transaction timeout (durable timer): an open transaction past transaction.timeout.ms is
   * fenced and aborted; a Prepare* left by a dead process is completed. Idempotent.
   */
  async onTimeout(timer: DurableTimer): Promise<void> {
    const { transactionalId } = timer.payload as { transactionalId: string };
    type Step = 'nothing' | { rescheduleAt: number } | { finish: MetaItem<StoredTransaction> };
    let item = await this.read(transactionalId);
    for (let round = 0; item && round < ATTEMPTS; round++) {
      const { result } = await this.update<Step>(transactionalId, item, (item) => {
        if (!item) return { done: 'nothing' };
        const rec = item.value;
        const now = this.deps.clock.now();
        if (isPrepare(rec.state)) return { done: { finish: item } };
        if (rec.state !== 'Ongoing') return { done: 'nothing' };
        const due = rec.startedAt + rec.timeoutMs;
        // Another transaction (its own timer exists), or a clock behind the scheduler's.
        if (due > now) return { done: { rescheduleAt: due } };
        return { write: fence(rec, now), answer: (w) => ({ finish: w }) };
      });
      if (result === 'nothing') return;
      if ('rescheduleAt' in result) {
        await this.scheduleTimeout(transactionalId, result.rescheduleAt, this.deps.clock.now());
        return;
      }
      item = await this.finish(result.finish);
    }
  }

  /** transactional.id.expiration.ms: an id with no transaction for that long is removed (Dead). */
  async onIdExpiry(timer: DurableTimer): Promise<void> {
    const { transactionalId } = timer.payload as { transactionalId: string };
    const item = await this.read(transactionalId);
    if (item) {
      const { result } = await this.update<'removed' | { expireFrom: number }>(transactionalId, item, async (item) => {
        if (!item) return { done: 'removed' }; // gone (a repeat of this removal, or another's)
        const now = this.deps.clock.now();
        const due = item.value.updatedAt + this.config.idExpirationMs;
        // In use (again): look again when it may be due.
        if (!isComplete(item.value.state) || due > now)
          return { done: { expireFrom: Math.max(due, now + 1) - this.config.idExpirationMs } };
        // Format 2's entries left from ended transactions go first: none is left without its id.
        // A page a firing, paced: many left, the removal comes back at the next tick.
        if (isSplit(item.value)) {
          const page = await this.items.tidyPage(transactionalId, { limit: TIDY_PER_FIRING }, this.pacer(TIDY_RATE));
          if (!page.done) return { done: { expireFrom: now + 1 - this.config.idExpirationMs } };
        }
        return { remove: true, answer: () => 'removed' as const };
      });
      if (result !== 'removed') {
        await this.scheduleExpiry(transactionalId, result.expireFrom);
        return;
      }
    }
    await this.deps.metadata.delete(TXN_REGISTRY_PK, transactionalId);
  }

  /**
   * Deletes the entries of ended transactions an end left (`tidyThrough`), a page a firing: more
   * left, the next page is a timer of the next tick; none, the state item forgets `tidyThrough`.
   * A firing that dies is fired again (the timer stays) from the page it started at.
   */
  async onTidy(timer: DurableTimer): Promise<void> {
    const { transactionalId, through, after } = timer.payload as TidyPayload;
    const item = await this.read(transactionalId);
    if (!item || !isSplit(item.value)) return; // removed (its entries with it)
    const now = this.deps.clock.now();
    // Scheduled before the Complete* that names it: the end is still writing its markers.
    if (item.value.seq === through && isPrepare(item.value.state)) {
      await this.scheduleTidy({ transactionalId, through, ...(after !== undefined && { after }) }, now + 1);
      return;
    }
    if (item.value.tidyThrough === undefined) return; // tidied, or the end never completed here
    const page = await this.items.tidyPage(
      transactionalId,
      { through, after, limit: TIDY_PER_FIRING },
      this.pacer(TIDY_RATE),
    );
    if (!page.done) {
      await this.scheduleTidy(
        { transactionalId, through, ...(page.last !== undefined && { after: page.last }) },
        now + 1,
      );
      return;
    }
    await this.update<void>(transactionalId, item, (found) => {
      if (!found || !isSplit(found.value) || (found.value.tidyThrough ?? Infinity) > through)
        return { done: undefined };
      const { tidyThrough: _, ...rest } = found.value;
      return { write: rest, answer: () => undefined };
    });
  }

  /** The timer handlers the scheduler fires. */
  timerHandlers(): Record<string, (t: DurableTimer) => Promise<void>> {
    return {
      [TXN_TIMEOUT_KIND]: (t) => this.onTimeout(t),
      [TXN_EXPIRY_KIND]: (t) => this.onIdExpiry(t),
      [TXN_TIDY_KIND]: (t) => this.onTidy(t),
    };
  }

  /**
   * Joins partitions, groups and offsets to the producer's transaction, starting one unless it is
   * Ongoing. Format 1 (below level 8, or a transaction open in it): one conditional write of the
   * state item with its lists. Format 2: the entries the transaction lacks, then a read of the
   * state item that must find the same transaction still Ongoing (transaction-items.ts); the state
   * item is written only to start a transaction. Nothing to add: no write at all.
   */
  private async joinTransaction(
    transactionalId: string,
    producer: ProducerRef,
    add: { partitions?: TxnPartition[]; groups?: string[]; offsets?: PendingOffset[] },
    fenced: 'PRODUCER_FENCED' | 'INVALID_PRODUCER_EPOCH' = 'PRODUCER_FENCED',
  ): Promise<void> {
    const splitting = await this.splitting();
    const writes = entriesOf(add);
    // The entries are read before the state item: one found in the state's transaction was written
    // before that read, so an end decided after the read finds it.
    let found = splitting
      ? await this.items.read(
          transactionalId,
          writes.map((w) => w.sk),
        )
      : undefined;
    let item = await this.require(transactionalId);
    for (let round = 0; round < ATTEMPTS; round++) {
      const rec = item.value;
      checkProducer(rec, producer.producerId, producer.producerEpoch, fenced);
      if (!isSplit(rec) && (!splitting || isOpen(rec.state))) {
        // Format 1, kept while its transaction is open: it moves to format 2 at its next start.
        if (await this.joinUnsplit(transactionalId, item, producer, add, fenced)) return;
      } else if (isPrepare(rec.state)) {
        throw completing(transactionalId, rec.state);
      } else if (rec.state !== 'Ongoing') {
        // A start: the entries go first, into the transaction it starts, so its write confirms them
        // too. The groups' markers before them (no offset is pending where require_stable readers
        // do not look), and the timeout timer (a transaction is never open without one).
        const now = this.deps.clock.now();
        const next = startSplit(rec, now);
        if (add.groups) await markPendingOffsets(this.deps.metadata, add.groups, transactionalId, item.version);
        await this.items.write(transactionalId, next.seq, writes, this.pacer(PACED_WRITE_RATE, PACED_WRITE_BURST));
        await this.scheduleTimeout(transactionalId, now + rec.timeoutMs, now);
        const started = await this.deps.metadata
          .put(txnPk(transactionalId), TXN_SK, next, { ifVersion: item.version })
          .catch((e: unknown) => (e instanceof ConditionFailedError ? undefined : Promise.reject(e)));
        if (started) return;
        // Lost, or its answer lost: decided again on the item as it is, whoever started it.
        item = await this.require(transactionalId);
        found = undefined;
        continue;
      } else if (isSplit(rec)) {
        const missing = writes.filter((w) => !holdsEntry(found?.get(w.sk), w, rec.seq));
        if (missing.length === 0) return;
        if (add.groups) await markPendingOffsets(this.deps.metadata, add.groups, transactionalId, item.version);
        await this.items.write(transactionalId, rec.seq, missing, this.pacer(PACED_WRITE_RATE, PACED_WRITE_BURST));
        // Joined only if the transaction is still Ongoing after the entries landed (transaction-items.ts).
        const after = await this.require(transactionalId);
        if (isSplit(after.value) && after.value.state === 'Ongoing' && after.value.seq === rec.seq) return;
        item = after;
        found = undefined;
        continue;
      }
      // Format 2 met by a format 1 writer's loop, or the other way round: read again.
      item = await this.require(transactionalId);
      found = undefined;
    }
    throw contention(transactionalId);
  }

  /** Format 1's join: one conditional write of the state item with its lists. False: the item is format 2 now. */
  private async joinUnsplit(
    transactionalId: string,
    item: MetaItem<StoredTransaction>,
    producer: ProducerRef,
    add: { partitions?: TxnPartition[]; groups?: string[]; offsets?: PendingOffset[] },
    fenced: 'PRODUCER_FENCED' | 'INVALID_PRODUCER_EPOCH',
  ): Promise<boolean> {
    const { result } = await this.update<boolean>(transactionalId, item, async (item) => {
      if (!item) throw contention(transactionalId);
      const rec = item.value;
      if (isSplit(rec)) return { done: false };
      checkProducer(rec, producer.producerId, producer.producerEpoch, fenced);
      if (joined(rec, add) && !add.offsets) return { done: true };
      const now = this.deps.clock.now();
      let next = join(rec, add, now);
      if (add.offsets) next = mergeOffsets(next, add.offsets, now);
      if (rec.state !== 'Ongoing') await this.scheduleTimeout(transactionalId, now + rec.timeoutMs, now);
      if (add.groups) await markPendingOffsets(this.deps.metadata, add.groups, transactionalId, item.version);
      return { write: next, answer: () => true };
    });
    return result;
  }

  /**
   * Step 2 and 3 of ending a transaction, from a Prepare* item: markers to every partition (in
   * parallel), committed offsets to their groups, then Complete*. Returns the item as it ends up.
   */
  private async finish(item: MetaItem<StoredTransaction>): Promise<MetaItem<StoredTransaction> | undefined> {
    const stored = item.value;
    // Format 2: the entries, read after Prepare* (transaction-items.ts).
    const { record: rec, entries } = isSplit(stored)
      ? await this.items.load(stored, true)
      : { record: stored, entries: [] };
    const commit = rec.state === 'PrepareCommit';
    // Each topic read once, not once per partition (a transaction may span thousands of one topic).
    const topics = new Map<string, Promise<Topic | undefined>>();
    const topicOf = (name: string) => {
      let found = topics.get(name);
      if (!found) {
        found = this.deps.topics
          .get(name)
          .catch((e: unknown) => (isKafkaError(e, 'UNKNOWN_TOPIC_OR_PARTITION') ? undefined : Promise.reject(e)));
        topics.set(name, found);
      }
      return found;
    };
    await Promise.all(
      rec.partitions.map(async (p) => {
        const topic = await topicOf(p.topic);
        if (!topic) return; // deleted with the transaction open: nothing left to mark
        await this.deps.log.writeMarker(topic, p.partition, {
          type: commit ? 'COMMIT' : 'ABORT',
          producerId: rec.producerId,
          producerEpoch: rec.producerEpoch,
          coordinatorEpoch: 0,
        });
      }),
    );
    if (commit && rec.offsets.length > 0) await this.materialiseOffsets(rec, item.version);
    // Many entries: the tidy timer deletes them, paced, and the Complete* says so (scheduled first,
    // so a Complete* naming it never lacks its timer).
    const tidyLater = isSplit(stored) && entries.length > INLINE_TIDY;
    if (tidyLater) await this.scheduleTidy({ transactionalId: rec.transactionalId, through: stored.seq });
    // Complete* over the Prepare* finished here; if another process completed it (or moved on)
    // meanwhile, the item as it is.
    const same = (r: StoredTransaction) =>
      r.state === rec.state &&
      r.producerId === rec.producerId &&
      r.producerEpoch === rec.producerEpoch &&
      (!isSplit(stored) || (isSplit(r) && r.seq === stored.seq));
    const outcome = await this.update<boolean>(rec.transactionalId, item, (found) =>
      found && same(found.value)
        ? { write: tidying(completeEnd(found.value, this.deps.clock.now()), tidyLater), answer: () => true }
        : { done: false },
    );
    if (outcome.result && rec.groups.length > 0 && outcome.item) {
      // Tidying only: a marker left behind costs a require_stable reader one read of this item.
      await clearPendingOffsets(this.deps.metadata, rec.groups, rec.transactionalId, outcome.item.version).catch(
        () => {},
      );
    }
    // Tidying too: an entry left is deleted at the next end, or with the id.
    if (outcome.result && entries.length > 0 && !tidyLater)
      await this.items.delete(rec.transactionalId, entries).catch(() => {});
    return outcome.item;
  }

  /**
   * The transaction's offsets written to their groups. A group's offsets share its partition key,
   * which takes 1,000 write units a second: 1,000 offsets with 4 KB of metadata were 5,000 units
   * at once there. They are paced as a join's entries are (its first PACED_WRITE_BURST units at
   * once, then PACED_WRITE_RATE a second), since they came in as such joins. Each carries the end's
   * id (the Prepare* item's version, `prepared`): an end retried after a try that died part way
   * writes only what is not there yet. The Complete* follows them all, as before.
   */
  private async materialiseOffsets(rec: TransactionRecord, prepared: number): Promise<void> {
    const now = this.deps.clock.now();
    const commitId = `txn:${rec.transactionalId}:${rec.producerId}:${rec.producerEpoch}:${prepared}`;
    const byGroup = new Map<string, OffsetRecord[]>();
    for (const o of rec.offsets) {
      const topic = await this.deps.topics.get(o.topic).catch(() => undefined);
      if (!topic) continue;
      const list = byGroup.get(o.groupId) ?? [];
      list.push({
        topic: o.topic,
        partition: o.partition,
        topicId: topic.id,
        offset: o.offset,
        metadata: o.metadata,
        generation: -1,
        commitTimestamp: now,
        commitId,
      });
      byGroup.set(o.groupId, list);
    }
    await Promise.all(
      [...byGroup].map(([g, records]) =>
        this.deps.writeOffsets(g, records, this.pacer(PACED_WRITE_RATE, PACED_WRITE_BURST)),
      ),
    );
  }

  private scheduleTimeout(transactionalId: string, expiry: number, now: number): Promise<void> {
    return this.deps.timers.schedule(
      { kind: TXN_TIMEOUT_KIND, id: timerId(transactionalId), expiry, payload: { transactionalId } },
      now,
    );
  }

  private scheduleTidy(payload: TidyPayload, expiry = this.deps.clock.now()): Promise<void> {
    return this.deps.timers.schedule(
      { kind: TXN_TIDY_KIND, id: timerId(payload.transactionalId), expiry, payload },
      this.deps.clock.now(),
    );
  }

  /** A pacer (storage/write-pace.ts) on this coordinator's clock and sleep. */
  private pacer(rate: number, free = 0): Pace {
    return pacer(() => this.deps.clock.now(), this.sleep, rate, free);
  }

  private scheduleExpiry(transactionalId: string, from: number): Promise<void> {
    const now = this.deps.clock.now();
    return this.deps.timers.schedule(
      {
        kind: TXN_EXPIRY_KIND,
        id: timerId(transactionalId),
        expiry: from + this.config.idExpirationMs,
        payload: { transactionalId },
      },
      now,
    );
  }

  private read(transactionalId: string): Promise<MetaItem<StoredTransaction> | undefined> {
    return this.deps.metadata.get<StoredTransaction>(txnPk(transactionalId), TXN_SK);
  }

  /**
   * The id's item. An unknown id is TRANSACTIONAL_ID_NOT_FOUND for a describe, and for what a
   * producer sends (AddPartitionsToTxn, AddOffsetsToTxn, EndTxn, a transactional produce)
   * INVALID_PRODUCER_ID_MAPPING, as Kafka's TransactionCoordinator answers a producer id that maps
   * to no transaction.
   */
  private async require(
    transactionalId: string,
    unknown: 'TRANSACTIONAL_ID_NOT_FOUND' | 'INVALID_PRODUCER_ID_MAPPING' = 'INVALID_PRODUCER_ID_MAPPING',
  ): Promise<MetaItem<StoredTransaction>> {
    validateTransactionalId(transactionalId);
    const item = await this.read(transactionalId);
    if (!item) throw unknownTransactionalId(transactionalId, unknown);
    return item;
  }

  /**
   * One read-modify-write of the id's item (optimisticUpdate): decided again on the item a lost
   * race found, and a repeat of this call's own write (its answer lost) recognised by its value.
   */
  private update<R>(
    transactionalId: string,
    item: MetaItem<StoredTransaction> | undefined,
    decide: (
      item: MetaItem<StoredTransaction> | undefined,
    ) => Decision<StoredTransaction, R> | Promise<Decision<StoredTransaction, R>>,
  ): Promise<UpdateOutcome<StoredTransaction, R>> {
    return optimisticUpdate<StoredTransaction, R>({
      metadata: this.deps.metadata,
      pk: txnPk(transactionalId),
      sk: TXN_SK,
      known: { item },
      attempts: ATTEMPTS,
      giveUp: {
        errorName: 'CONCURRENT_TRANSACTIONS',
        message: `Too much contention on transactional id ${transactionalId}; retry`,
      },
      decide,
      recognise: (found, attempted) =>
        holdsWrite(found, attempted) && 'write' in attempted ? attempted.answer(found) : undefined,
    });
  }
}

/** A Complete* that leaves its entries to the tidy timer says up to which transaction (this one). */
function tidying(rec: StoredTransaction, later: boolean): StoredTransaction {
  return later && isSplit(rec) ? { ...rec, tidyThrough: Math.max(rec.tidyThrough ?? rec.seq, rec.seq) } : rec;
}

function validateTransactionalId(id: string): void {
  if (typeof id !== 'string' || id.length === 0 || id.length > 249) {
    throw new KafkaError('INVALID_REQUEST', 'A transactional id must be 1 to 249 characters');
  }
}

const completing = (id: string, state: TransactionStatus) =>
  new KafkaError(
    'CONCURRENT_TRANSACTIONS',
    `Transactional id ${id} is completing its last transaction (${state}); retry`,
  );

const contention = (id: string) =>
  new KafkaError('CONCURRENT_TRANSACTIONS', `Too much contention on transactional id ${id}; retry`);

const unknownTransactionalId = (
  transactionalId: string,
  name: 'TRANSACTIONAL_ID_NOT_FOUND' | 'INVALID_PRODUCER_ID_MAPPING',
) => new KafkaError(name, `Transactional id ${transactionalId} is unknown; init it first (InitProducerId)`);
