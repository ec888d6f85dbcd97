/**
 * The producer (kafkajs's API over Java's producer internals): send() encodes and partitions each
 * record, waits for buffer.memory if it must, and appends it to the accumulator; the sender ships
 * batches once batch.size fills or linger.ms passes; the promise resolves when the records are
 * acknowledged (with acks), or rejects once retries or delivery.timeout.ms are spent.
 */
import { encodeMessage, type Message } from '../codec.js';
import { KafkaClientError, KafkaConfigError } from '../errors.js';
import { Metadata } from '../metadata.js';
import { DEFAULT_PARTITIONER_STICKY_BATCH_SIZE, DefaultPartitioner, type Partitioner } from '../partitioner.js';
import { RECORD_BATCH_OVERHEAD } from '../record-batches.js';
import type { Transport } from '../transport.js';
import { checkWireFormat, type WireFormat } from '../wire-formats.js';
import { COMPRESSION_LEVELS, COMPRESSION_TYPES, type CompressionType } from '../../wire/compression/index.js';
import { BufferPool } from './buffer-pool.js';
import { RecordAccumulator, SendResult, type PendingRecord, type RecordMetadata } from './record-accumulator.js';
import { Sender, type Acks } from './sender.js';
import type { ProducerIdAndEpoch } from './transaction-manager.js';
import { Transaction, type ProducerRecordBatch } from './transaction.js';

export type { RecordMetadata } from './record-accumulator.js';
export type { ProducerIdAndEpoch } from './transaction-manager.js';

/**
 * What an unset producer config is, each in this one place (the resolution below and the docs
 * refer here); Kafka's values unless a comment says why not. Fitted to storage priced per request
 * (docs/client.md): a batch fills a request (one object PUT and one commit per partition), and a
 * batch that is not full waits tens of ms for more.
 */
export const PRODUCER_DEFAULTS = {
  /**
   * The largest whose batch, with its 61-byte header, stays within a 1 MiB request and Kafka's
   * max.message.bytes (1048588), with room for the record size estimate's error; at 1,000,000 a
   * MiB took 1.05 requests at best. Kafka's 16384 (sized for a TCP broker) is accepted and costs
   * about 64 requests per MiB.
   */
  batchSize: 1_048_000,
  /** Kafka's is 5. */
  lingerMs: 50,
  /** Kafka's batch.size, which its sticky partitioner switches at. */
  partitionerStickyBatchSize: DEFAULT_PARTITIONER_STICKY_BATCH_SIZE,
  bufferMemory: 32 * 1024 * 1024,
  maxBlockMs: 60_000,
  /** At most the connection's maxRequestBytes. */
  maxRequestSize: 1024 * 1024,
  compressionType: 'none',
  /** Bounded by deliveryTimeoutMs. */
  retries: 2_147_483_647,
  retryBackoffMs: 100,
  retryBackoffMaxMs: 1000,
  deliveryTimeoutMs: 120_000,
  /** At most 5 with idempotence. */
  maxInFlightRequestsPerConnection: 5,
  metadataMaxAgeMs: 300_000,
  transactionTimeoutMs: 60_000,
} as const satisfies ProducerConfig;

export const DEFAULT_BATCH_SIZE = PRODUCER_DEFAULTS.batchSize;
export const DEFAULT_LINGER_MS = PRODUCER_DEFAULTS.lingerMs;

/**
 * Kafka's producer configs under camelCase names (batch.size is batchSize, and so on); what an
 * unset one is: {@link PRODUCER_DEFAULTS}.
 */
export interface ProducerConfig {
  /** 0: no acknowledgement; 1: the leader's; 'all' or -1 (default): every in-sync replica's. */
  acks?: 0 | 1 | -1 | 'all';
  /** Bytes of records per partition batch (just under Kafka's max.message.bytes: see the default's reason). */
  batchSize?: number;
  /** How long a batch waits for more records before it is sent. */
  lingerMs?: number;
  /**
   * Bytes of keyless records the default partitioner sends to one partition before it moves to
   * another. Named
   * as Kafka's partitioner.* settings would name it (partitioner.sticky.batch.size); separate from
   * batchSize here because a batch grows to a whole request, and a request still packs the
   * batches of many partitions up to maxRequestSize.
   */
  partitionerStickyBatchSize?: number;
  /** Bytes of unacknowledged records before send() waits. */
  bufferMemory?: number;
  /** How long send() may wait for buffer.memory or metadata. */
  maxBlockMs?: number;
  /** Bound of one request's body (at most the connection's maxRequestBytes). */
  maxRequestSize?: number;
  /**
   * How batches travel: 'record-batch' (RecordBatch v2 bytes, every ready partition in one request),
   * 'json' (records:batch, one request per topic), or 'auto' (record batches unless the server
   * lacks that API). Default: the connection's `format` ('auto').
   */
  format?: WireFormat;
  /**
   * Kafka's compression.type for record batches: 'none', 'gzip', 'snappy', 'lz4' or
   * 'zstd' (the batch's records travel and are stored compressed; consumers inflate them). JSON
   * requests are not compressed.
   */
  compressionType?: CompressionType;
  /** Kafka's compression.gzip.level: 1 (fastest) to 9 (smallest); default 6, zlib's (Kafka's -1). */
  compressionGzipLevel?: number;
  /** Kafka's compression.zstd.level: -131072 (fastest) to 22 (smallest); default 3. */
  compressionZstdLevel?: number;
  /** Retries of a retriable failure (bounded by deliveryTimeoutMs). */
  retries?: number;
  retryBackoffMs?: number;
  retryBackoffMaxMs?: number;
  /** One request's time limit (unset: the connection's requestTimeoutMs). */
  requestTimeoutMs?: number;
  /** From send() to success or failure, retries included. */
  deliveryTimeoutMs?: number;
  /** Default true (with acks=all; turned off if acks is set otherwise and this is left unset). */
  enableIdempotence?: boolean;
  /**
   * Requests in flight per place (the stores a request is written to, as Kafka counts them per
   * broker connection), and so batches per partition (at most 5 with idempotence).
   */
  maxInFlightRequestsPerConnection?: number;
  metadataMaxAgeMs?: number;
  /** Overrides the default (murmur2 + sticky) partitioner for records without a partition. */
  partitioner?: Partitioner;
  /** Take over a previous incarnation's producer id, bumping its epoch (fences the old one). */
  producerId?: ProducerIdAndEpoch;
  /**
   * Kafka's transactional.id: the producer sends only inside `transaction()`s, and its first one
   * fences every earlier producer of the id (ending what it left open). Implies idempotence.
   */
  transactionalId?: string;
  /** Kafka's transaction.timeout.ms: the server aborts a transaction open longer. */
  transactionTimeoutMs?: number;
}

export type { ProducerRecordBatch } from './transaction.js';

type ResolvedConfig = Required<
  Omit<ProducerConfig, 'partitioner' | 'producerId' | 'acks' | 'enableIdempotence' | 'format' | 'transactionalId'>
> & {
  acks: Acks;
  idempotent: boolean;
  format: WireFormat | undefined;
  transactionalId: string | undefined;
};

export function resolveProducerConfig(
  c: ProducerConfig,
  requestTimeoutMs: number,
  maxRequestBytes = Number.POSITIVE_INFINITY,
): ResolvedConfig {
  const acks: Acks = c.acks === undefined || c.acks === 'all' || c.acks === -1 ? 'all' : c.acks;
  if (![0, 1, 'all'].includes(acks))
    throw new KafkaConfigError(`acks must be 0, 1, -1 or 'all' (got ${String(c.acks)})`);
  if (c.enableIdempotence === true && acks !== 'all')
    throw new KafkaConfigError("enableIdempotence requires acks='all'");
  if (c.transactionalId !== undefined) {
    if (c.transactionalId === '') throw new KafkaConfigError('transactionalId must not be empty');
    if (c.enableIdempotence === false || acks !== 'all')
      throw new KafkaConfigError("A transactional producer is idempotent: it needs acks='all' and enableIdempotence");
  }
  const idempotent = c.enableIdempotence ?? acks === 'all';
  const maxInFlight = c.maxInFlightRequestsPerConnection ?? PRODUCER_DEFAULTS.maxInFlightRequestsPerConnection;
  if (idempotent && maxInFlight > 5)
    throw new KafkaConfigError('maxInFlightRequestsPerConnection must be at most 5 with idempotence');
  if (c.compressionType !== undefined && !COMPRESSION_TYPES.includes(c.compressionType))
    throw new KafkaConfigError(
      `compressionType must be one of ${COMPRESSION_TYPES.join(', ')} (got ${String(c.compressionType)})`,
    );
  const level = (name: string, value: number | undefined, range: { min: number; max: number; default: number }) => {
    if (value === undefined) return range.default;
    if (!Number.isInteger(value) || value < range.min || value > range.max)
      throw new KafkaConfigError(`${name} must be an integer in [${range.min}, ${range.max}] (got ${String(value)})`);
    return value;
  };
  checkWireFormat(c.format);
  const r: ResolvedConfig = {
    acks,
    idempotent,
    format: c.format,
    transactionalId: c.transactionalId,
    transactionTimeoutMs: c.transactionTimeoutMs ?? PRODUCER_DEFAULTS.transactionTimeoutMs,
    compressionType: c.compressionType ?? PRODUCER_DEFAULTS.compressionType,
    compressionGzipLevel: level('compressionGzipLevel', c.compressionGzipLevel, COMPRESSION_LEVELS.gzip!),
    compressionZstdLevel: level('compressionZstdLevel', c.compressionZstdLevel, COMPRESSION_LEVELS.zstd!),
    batchSize: c.batchSize ?? PRODUCER_DEFAULTS.batchSize,
    lingerMs: c.lingerMs ?? PRODUCER_DEFAULTS.lingerMs,
    partitionerStickyBatchSize: c.partitionerStickyBatchSize ?? PRODUCER_DEFAULTS.partitionerStickyBatchSize,
    bufferMemory: c.bufferMemory ?? PRODUCER_DEFAULTS.bufferMemory,
    maxBlockMs: c.maxBlockMs ?? PRODUCER_DEFAULTS.maxBlockMs,
    // The connection's bound (Lambda's behind API Gateway) caps it: a request over it could not be sent.
    maxRequestSize: Math.min(c.maxRequestSize ?? PRODUCER_DEFAULTS.maxRequestSize, maxRequestBytes),
    retries: c.retries ?? PRODUCER_DEFAULTS.retries,
    retryBackoffMs: c.retryBackoffMs ?? PRODUCER_DEFAULTS.retryBackoffMs,
    retryBackoffMaxMs: c.retryBackoffMaxMs ?? PRODUCER_DEFAULTS.retryBackoffMaxMs,
    requestTimeoutMs: c.requestTimeoutMs ?? requestTimeoutMs,
    deliveryTimeoutMs: c.deliveryTimeoutMs ?? PRODUCER_DEFAULTS.deliveryTimeoutMs,
    maxInFlightRequestsPerConnection: Math.max(1, maxInFlight),
    metadataMaxAgeMs: c.metadataMaxAgeMs ?? PRODUCER_DEFAULTS.metadataMaxAgeMs,
  };
  if (!Number.isInteger(r.partitionerStickyBatchSize) || r.partitionerStickyBatchSize < 1)
    throw new KafkaConfigError(
      `partitionerStickyBatchSize must be a positive integer (got ${String(r.partitionerStickyBatchSize)})`,
    );
  if (r.deliveryTimeoutMs < r.lingerMs + r.requestTimeoutMs) {
    throw new KafkaConfigError('deliveryTimeoutMs must be at least lingerMs + requestTimeoutMs');
  }
  return r;
}

export class Producer {
  private readonly config: ResolvedConfig;
  private readonly metadata: Metadata;
  private readonly accumulator: RecordAccumulator;
  private readonly pool: BufferPool;
  private readonly sender: Sender;
  private readonly partitioner: DefaultPartitioner;
  private readonly custom: Partitioner | undefined;
  private readonly transport: Transport;
  /** Appends in call order even when one send waits for memory or metadata. */
  private appendTail: Promise<void> = Promise.resolve();
  private appendsPending = 0;
  private closed = false;
  private activeTransaction: Transaction | undefined;

  constructor(transport: Transport, config: ProducerConfig = {}) {
    this.config = resolveProducerConfig(config, transport.requestTimeoutMs, transport.maxRequestBytes);
    this.transport = transport;
    this.metadata = new Metadata(transport, this.config.metadataMaxAgeMs, {
      initialMs: this.config.retryBackoffMs,
      maxMs: this.config.retryBackoffMaxMs,
    });
    this.accumulator = new RecordAccumulator(this.config.batchSize);
    this.pool = new BufferPool(this.config.bufferMemory);
    this.partitioner = new DefaultPartitioner(this.config.partitionerStickyBatchSize);
    this.custom = config.partitioner;
    this.sender = new Sender(transport, this.accumulator, this.pool, this.metadata, {
      acks: this.config.acks,
      idempotent: this.config.idempotent,
      batchSize: this.config.batchSize,
      lingerMs: this.config.lingerMs,
      maxRequestSize: this.config.maxRequestSize,
      retries: this.config.retries,
      retryBackoffMs: this.config.retryBackoffMs,
      retryBackoffMaxMs: this.config.retryBackoffMaxMs,
      requestTimeoutMs: this.config.requestTimeoutMs,
      deliveryTimeoutMs: this.config.deliveryTimeoutMs,
      maxInFlight: this.config.maxInFlightRequestsPerConnection,
      compression: {
        type: this.config.compressionType,
        level:
          this.config.compressionType === 'gzip'
            ? this.config.compressionGzipLevel
            : this.config.compressionType === 'zstd'
              ? this.config.compressionZstdLevel
              : undefined,
      },
      ...(this.config.format ? { format: this.config.format } : {}),
      ...(config.producerId ? { initialProducerId: config.producerId } : {}),
      ...(this.config.transactionalId
        ? {
            transactional: {
              transactionalId: this.config.transactionalId,
              transactionTimeoutMs: this.config.transactionTimeoutMs,
            },
          }
        : {}),
    });
  }

  /**
   * Begins a transaction (kafkajs's producer.transaction()). The first one initialises the
   * transactional id (Kafka's initTransactions): the server fences the id's earlier producer and
   * ends what it left open. One transaction at a time.
   */
  async transaction(): Promise<Transaction> {
    this.assertOpen();
    const transactionalId = this.config.transactionalId;
    if (!transactionalId) throw new KafkaConfigError('transaction() needs a producer with a transactionalId');
    if (this.activeTransaction)
      throw new KafkaClientError('ILLEGAL_STATE', 'There is already an ongoing transaction for this producer');
    await this.sender.initProducerId();
    const t = new Transaction({
      transport: this.transport,
      transactionalId,
      identity: () => this.sender.producerIdentity!,
      send: (record) => this.sendRecords(record),
      flush: () => this.flush(),
      fence: (e) => this.sender.setFatal(e),
      ended: () => {
        if (this.activeTransaction === t) this.activeTransaction = undefined;
      },
      retryOptions: () => ({
        retries: this.config.retries,
        initialBackoffMs: this.config.retryBackoffMs,
        maxBackoffMs: this.config.retryBackoffMaxMs,
        deadline: Date.now() + this.config.deliveryTimeoutMs,
      }),
    });
    this.activeTransaction = t;
    return t;
  }

  get idempotent(): boolean {
    return this.config.idempotent;
  }

  /** The id and epoch the idempotent producer writes under (after connect() or the first send). */
  get producerIdentity(): ProducerIdAndEpoch | undefined {
    return this.sender.producerIdentity;
  }

  /** Gets the idempotent producer's id up front (optional: the first send does it otherwise). */
  async connect(): Promise<void> {
    this.assertOpen();
    await this.sender.initProducerId();
  }

  /**
   * Sends records to one topic. Resolves to each record's partition and offset, in message order,
   * once all are acknowledged; rejects with the first failure.
   */
  send(record: ProducerRecordBatch): Promise<RecordMetadata[]> {
    if (this.config.transactionalId) {
      return Promise.reject(
        new KafkaClientError(
          'ILLEGAL_STATE',
          'A transactional producer sends inside a transaction: use producer.transaction() and its send()',
        ),
      );
    }
    return this.sendRecords(record);
  }

  private sendRecords(record: ProducerRecordBatch): Promise<RecordMetadata[]> {
    try {
      this.assertOpen();
    } catch (e) {
      return Promise.reject(e);
    }
    const result = new SendResult(record.messages.length);
    this.enqueue(
      () => this.appendAll(record, result),
      (e) => result.fail(e as Error),
    );
    return result.promise;
  }

  /** kafkajs's sendBatch: several topics at once. */
  async sendBatch(batch: { topicMessages: ProducerRecordBatch[] }): Promise<RecordMetadata[]> {
    const all = await Promise.all(batch.topicMessages.map((t) => this.send(t)));
    return all.flat();
  }

  /** Sends everything buffered now and waits for it (Kafka's flush). */
  async flush(): Promise<void> {
    await this.appendTail;
    await this.sender.flush();
  }

  /** Flushes, then stops; records still unacknowledged after timeoutMs fail. */
  async close(options: { timeoutMs?: number } = {}): Promise<void> {
    if (this.closed) return;
    await this.appendTail.catch(() => {});
    this.closed = true;
    await this.sender.close(options.timeoutMs ?? this.config.deliveryTimeoutMs);
  }

  /** kafkajs's name for close(). */
  disconnect(): Promise<void> {
    return this.close();
  }

  private assertOpen(): void {
    if (this.closed) throw new KafkaClientError('ILLEGAL_STATE', 'The producer is closed');
    const fatal = this.sender.fatalError;
    if (fatal) throw fatal;
  }

  /**
   * Runs appends one after another; runs at once (synchronously) when nothing is queued ahead.
   * A failed append goes to `onError`.
   */
  private enqueue(task: () => void | Promise<void>, onError: (e: unknown) => void): void {
    if (this.appendsPending === 0) {
      let r: void | Promise<void>;
      try {
        r = task();
      } catch (e) {
        return onError(e);
      }
      if (r instanceof Promise) this.track(r, onError);
      return;
    }
    this.track(this.appendTail.then(task, task), onError);
  }

  private track(p: Promise<void>, onError: (e: unknown) => void): void {
    this.appendsPending++;
    this.appendTail = p.then(
      () => void this.appendsPending--,
      (e: unknown) => {
        this.appendsPending--;
        onError(e);
      },
    );
  }

  /** Appends every message of a send, synchronously when metadata is cached and memory free. */
  private appendAll(record: ProducerRecordBatch, result: SendResult): void | Promise<void> {
    const { topic, messages } = record;
    const deadline = Date.now() + this.config.maxBlockMs;
    const count = this.metadata.cached(topic);
    if (count === undefined)
      return this.metadata
        .partitionCount(topic, deadline)
        .then((n) => this.appendFrom(topic, messages, 0, n, deadline, result));
    return this.appendFrom(topic, messages, 0, count, deadline, result);
  }

  private appendFrom(
    topic: string,
    messages: Message[],
    from: number,
    partitionCount: number,
    deadline: number,
    result: SendResult,
  ): void | Promise<void> {
    for (let i = from; i < messages.length; i++) {
      const m = messages[i]!;
      const rec = encodeMessage(m, Date.now());
      // The request a lone record would make: a RecordBatch, or a JSON entry.
      const requestBytes = this.transport.recordBatches.use(this.config.format)
        ? RECORD_BATCH_OVERHEAD + rec.sizeInBytes
        : rec.wireBytes;
      if (requestBytes > this.config.maxRequestSize) {
        throw new KafkaClientError(
          'MESSAGE_TOO_LARGE',
          `The message is ${requestBytes} bytes when encoded, more than maxRequestSize (${this.config.maxRequestSize})`,
          { topic },
        );
      }
      let partition: number;
      if (m.partition !== undefined) {
        if (!Number.isInteger(m.partition) || m.partition < 0 || m.partition >= partitionCount) {
          throw new KafkaClientError(
            'UNKNOWN_TOPIC_OR_PARTITION',
            `Partition ${m.partition} of topic ${topic} does not exist (it has ${partitionCount})`,
            { topic, partition: m.partition, retriable: false },
          );
        }
        partition = m.partition;
      } else if (this.custom) partition = this.custom({ topic, partitionCount, key: rec.key, message: m });
      else {
        partition = this.partitioner.partition(topic, partitionCount, rec.key);
        // Kafka's abortOnNewBatch (KIP-480): a keyless record that would start a new batch on its
        // sticky partition (the last one full, or drained at linger.ms) moves on to the next sticky
        // partition instead, so no stub of a few records follows a batch into a request of its own.
        if (
          rec.key === null &&
          this.partitioner.stuck(topic) &&
          this.accumulator.startsBatch(topic, partition, rec.sizeInBytes)
        )
          partition = this.partitioner.onNewBatch(topic, partitionCount, partition);
      }
      if (!this.pool.tryReserve(rec.sizeInBytes)) {
        // Wait for memory, then carry on with this message and the rest.
        return this.pool.reserve(rec.sizeInBytes, Math.max(0, deadline - Date.now())).then(() => {
          this.appendOne(topic, partition, { rec, result, index: i }, m, partitionCount);
          return this.appendFrom(topic, messages, i + 1, partitionCount, deadline, result);
        });
      }
      this.appendOne(topic, partition, { rec, result, index: i }, m, partitionCount);
    }
  }

  private appendOne(topic: string, partition: number, r: PendingRecord, m: Message, partitionCount: number): void {
    this.accumulator.append(topic, partition, r, Date.now());
    if (m.partition === undefined && r.rec.key === null && !this.custom)
      this.partitioner.onAppend(topic, partition, partitionCount, r.rec.sizeInBytes);
    // The sender sends full batches at once and sleeps until the linger deadline of the others.
    this.sender.wakeup();
  }
}
