/**
 * The idempotent producer's state (the idempotent half of Kafka's TransactionManager): its id and
 * epoch, each partition's sequences, the epoch bump that repairs a sequence gap, and the fatal
 * error that ends the producer.
 *
 * The producer gets an id and epoch from `producers:init` (a transactional producer from
 * `transactions/{id}/init`, which fences the id's earlier producer and ends what it left open).
 * When a batch is first sent it takes the partition's next sequence; a retry resends it with the
 * same sequence, so the server answers a batch it already wrote with the original offsets instead
 * of writing it twice. When one fails and is retried, later batches of that partition may come
 * back OUT_OF_ORDER_SEQUENCE_NUMBER: that is expected while an earlier batch is unacknowledged, so
 * the sender requeues them behind it in sequence order. A sequence gap nothing explains (a batch
 * failed for good or expired after taking a sequence, UNKNOWN_PRODUCER_ID) is repaired as KIP-360
 * does: wait for in-flight requests, bump the epoch with `producers:init {producer_id,
 * producer_epoch}`, restart every partition's sequences at 0. Before the bump, a batch whose last
 * send got no answer is resent under the old epoch until the server says whether it has it: with
 * fresh sequences it would be written a second time. INVALID_PRODUCER_EPOCH means another instance
 * took over the id: the producer is fenced for good.
 */
import { asClientError, type KafkaClientError, KafkaProtocolError } from '../errors.js';
import { retry } from '../retry.js';
import { enc, type Transport } from '../transport.js';
import type { PartitionQueue, ProducerBatch, RecordAccumulator } from './record-accumulator.js';

export interface ProducerIdAndEpoch {
  producerId: number;
  producerEpoch: number;
}

export interface TransactionManagerConfig {
  idempotent: boolean;
  retries: number;
  retryBackoffMs: number;
  retryBackoffMaxMs: number;
  deliveryTimeoutMs: number;
  /** Resume (and fence) a previous incarnation's producer id: its epoch is bumped on init. */
  initialProducerId?: ProducerIdAndEpoch;
  /** A transactional producer: its id comes from `transactions/{id}/init`, its batches are transactional. */
  transactional?: { transactionalId: string; transactionTimeoutMs: number };
}

const SEQUENCE_ERRORS = new Set(['OUT_OF_ORDER_SEQUENCE_NUMBER', 'UNKNOWN_PRODUCER_ID']);
const FENCED = new Set(['INVALID_PRODUCER_EPOCH', 'PRODUCER_FENCED']);

export class TransactionManager {
  private identity: ProducerIdAndEpoch | undefined;
  private identityTask: Promise<void> | undefined;
  /** A sequence gap was found: bump the epoch once nothing is in flight. */
  needsEpochBump = false;
  private fatal: KafkaClientError | undefined;

  constructor(
    private readonly transport: Transport,
    private readonly accumulator: RecordAccumulator,
    private readonly config: TransactionManagerConfig,
    private readonly hooks: {
      /** The sender should look at its queues again (an id arrived, sequences were reset). */
      wakeup: () => void;
      /** A fatal error: every batch waiting fails with it. */
      abort: (e: KafkaClientError) => void;
    },
  ) {}

  get idempotent(): boolean {
    return this.config.idempotent;
  }

  get producerIdentity(): ProducerIdAndEpoch | undefined {
    return this.identity;
  }

  /** The id and epoch batches are written under: none for a producer that is not idempotent. */
  batchIdentity(): ProducerIdAndEpoch | undefined {
    return this.config.idempotent ? this.identity : undefined;
  }

  get fatalError(): KafkaClientError | undefined {
    return this.fatal;
  }

  /**
   * Ends the producer with `e` unless it has ended already (or in any case with `replace`: a close
   * that timed out has the last word); answers the error it ended with.
   */
  setFatal(e: KafkaClientError, options: { replace?: boolean } = {}): KafkaClientError {
    if (options.replace) this.fatal = e;
    else this.fatal ??= e;
    return this.fatal;
  }

  /** Gets the producer id now (connect()) rather than on the first send. */
  async initProducerId(): Promise<void> {
    if (!this.config.idempotent || this.identity) return;
    await this.ensureIdentity();
  }

  /** Whether batches may be drained: an idempotent producer first needs its id (asked for here). */
  readyToSend(): boolean {
    if (!this.config.idempotent || this.identity) return true;
    if (!this.accumulator.isEmpty) this.ensureIdentity().catch(() => {});
    return false;
  }

  private ensureIdentity(): Promise<void> {
    this.identityTask ??= retry(
      async () => {
        const body = this.identity ?? this.config.initialProducerId;
        const txn = this.config.transactional;
        // A transactional id's init fences its previous producer and ends what it left open.
        const res = await this.transport.request<{ producer_id: number; producer_epoch: number }>(
          'POST',
          txn ? `/transactions/${enc(txn.transactionalId)}/init` : '/producers:init',
          {
            body: {
              ...(body ? { producer_id: body.producerId, producer_epoch: body.producerEpoch } : {}),
              ...(txn ? { transaction_timeout_ms: txn.transactionTimeoutMs } : {}),
            },
          },
        );
        return { producerId: res.body.producer_id, producerEpoch: res.body.producer_epoch };
      },
      {
        retries: this.config.retries,
        initialBackoffMs: this.config.retryBackoffMs,
        maxBackoffMs: this.config.retryBackoffMaxMs,
        deadline: Date.now() + this.config.deliveryTimeoutMs,
      },
    ).then(
      (id) => {
        this.identity = id;
        this.identityTask = undefined;
        this.hooks.wakeup();
      },
      (e) => {
        this.identityTask = undefined;
        this.fatal = asClientError(e);
        this.hooks.abort(this.fatal);
        throw this.fatal;
      },
    );
    return this.identityTask;
  }

  /** KIP-360: once nothing is in flight, bump the epoch and restart all sequences at 0. */
  bumpEpoch(inFlightRequests: number): void {
    if (this.identityTask || inFlightRequests > 0) return;
    this.ensureIdentity()
      .then(() => {
        this.needsEpochBump = false;
        for (const q of this.accumulator.queues.values()) {
          q.nextSequence = 0;
          q.retrying = false;
          for (const b of q.batches) {
            b.baseSequence = undefined;
            b.outcomeUnknown = false;
          }
        }
        this.hooks.wakeup();
      })
      .catch(() => {});
  }

  /** A batch leaving for the first time takes the partition's next sequences; a retry keeps its own. */
  assignSequence(q: PartitionQueue, b: ProducerBatch): void {
    if (!this.config.idempotent || b.baseSequence !== undefined) return;
    b.baseSequence = q.nextSequence;
    q.nextSequence += b.records.length;
  }

  /** Part of a batch was written and the rest failed: its sequences are spent, bump the epoch. */
  partlyWritten(): void {
    if (this.config.idempotent) this.needsEpochBump = true;
  }

  /**
   * The fatal error of an answer that says another producer took over the id, else undefined. A
   * transactional producer reports Kafka's ProducerFencedException, whichever of the two the server sent.
   */
  fencedBy(e: KafkaClientError, b: ProducerBatch): KafkaClientError | undefined {
    if (!this.config.idempotent || !FENCED.has(e.type)) return undefined;
    const type = this.config.transactional ? 'PRODUCER_FENCED' : e.type;
    return this.setFatal(
      new KafkaProtocolError(
        type,
        `The producer was fenced: another producer took over producer id ${this.identity?.producerId} (${e.message})`,
        { status: e.status, topic: b.topic, partition: b.partition },
      ),
    );
  }

  /** DUPLICATE_SEQUENCE_NUMBER: written before; the server no longer knows the offsets. */
  isDuplicate(e: KafkaClientError): boolean {
    return this.config.idempotent && e.type === 'DUPLICATE_SEQUENCE_NUMBER';
  }

  /**
   * Whether a sequence error is one to retry (all are). Out of order behind an earlier batch that
   * is (or was, when this one left) unacknowledged: the batch is requeued behind it. Otherwise a
   * gap nothing explains: the batch is retried after the epoch bump gives it a fresh sequence.
   */
  retriableSequenceError(e: KafkaClientError, q: PartitionQueue, b: ProducerBatch): boolean {
    if (!this.config.idempotent || !SEQUENCE_ERRORS.has(e.type)) return false;
    if (e.type === 'UNKNOWN_PRODUCER_ID' || !(b.sentBehindUnacked || q.hasEarlierUnacked(b)))
      this.needsEpochBump = true;
    return true;
  }

  /** A batch that took sequences failed for good or expired: the gap it leaves needs an epoch bump. */
  sequencesLost(b: ProducerBatch): void {
    if (this.config.idempotent && b.baseSequence !== undefined) this.needsEpochBump = true;
  }
}
