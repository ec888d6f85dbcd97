/**
 * The sender (Kafka's Sender + the idempotent half of TransactionManager): drains ready batches
 * from the accumulator and sends them, as RecordBatch v2 bytes (one request for every partition
 * with a batch, of every topic, up to max.request.size, as Kafka sends one ProduceRequest per
 * broker; once a batch is ready, the other partitions' head batches go with it where they fit) or as JSON
 * records:batch requests (one request per topic holding at most one batch per partition), and
 * handles every answer per partition.
 *
 * Idempotence. The producer gets an id and epoch from `producers:init`. When a batch is first sent it
 * takes the partition's next sequence; a retry resends it with the same sequence, so the server
 * answers a batch it already wrote with the original offsets instead of writing it twice. Up to
 * max.in.flight.requests.per.connection batches per partition are in flight. When one fails and is
 * retried, later batches of that partition may come back OUT_OF_ORDER_SEQUENCE_NUMBER: that is
 * expected while an earlier batch is unacknowledged, so they are requeued behind it in sequence order
 * and the partition sends one batch at a time until the retried batches are through (order kept).
 * A sequence gap nothing explains (a batch failed for good or expired after taking a sequence,
 * UNKNOWN_PRODUCER_ID) is repaired as KIP-360 does: wait for in-flight requests, bump the epoch
 * with `producers:init {producer_id, producer_epoch}`, restart every partition's sequences at 0.
 * Before the bump, a batch whose last send got no answer is resent under the old epoch until the
 * server says whether it has it: with fresh sequences it would be written a second time.
 * INVALID_PRODUCER_EPOCH means another instance took over the id: the producer is fenced for good.
 */
import { encodeTopicDataParts, PRODUCE_REQUEST_MEDIA_TYPE } from '../../wire/produce-request.js';
import { KafkaClientError, KafkaProtocolError, errorFromBody, isRetriable } from '../errors.js';
import type { Metadata } from '../metadata.js';
import { backoffMs, retry } from '../retry.js';
import { enc, RECORD_BATCH_MEDIA_TYPE, type Transport, type WireFormat } from '../transport.js';
import { wireEntry, type WireEntry } from '../codec.js';
import { encodeProducerBatch, RECORD_BATCH_OVERHEAD } from '../record-batches.js';
import { BatchBuffers } from './batch-buffers.js';
import type { BufferPool } from './buffer-pool.js';
import type { PartitionQueue, ProducerBatch, RecordAccumulator } from './record-accumulator.js';
import type { Acks } from '../../wire/protocol.js';
import type { CompressionType } from '../../wire/compression/index.js';

export type { Acks };

export interface SenderConfig {
  acks: Acks;
  idempotent: boolean;
  batchSize: number;
  lingerMs: number;
  maxRequestSize: number;
  retries: number;
  retryBackoffMs: number;
  retryBackoffMaxMs: number;
  requestTimeoutMs: number;
  deliveryTimeoutMs: number;
  maxInFlight: number;
  /** Compression of record batches (Kafka's compression.type), at the codec's level where it has one. */
  compression: { type: CompressionType; level?: number };
  /** How batches travel (the connection's format when unset). */
  format?: WireFormat;
  /** Resume (and fence) a previous incarnation's producer id: its epoch is bumped on init. */
  initialProducerId?: { producerId: number; producerEpoch: number };
  /** A transactional producer: its id comes from `transactions/{id}/init`, its batches are transactional. */
  transactional?: { transactionalId: string; transactionTimeoutMs: number };
}

export interface ProducerIdAndEpoch {
  producerId: number;
  producerEpoch: number;
}

interface BatchResult {
  offsets?: (number | undefined)[];
  timestamps?: (number | undefined)[];
  /** Per record, when the server failed some entries. */
  errors?: (KafkaClientError | undefined)[];
  /** The batch's error: the first failed entry's, or the whole request's. */
  error?: KafkaClientError;
}

/** The record-batch produce answer (`KafkaProduceResult`). */
interface WireProduceResult {
  base_offset: number;
  last_offset: number;
  record_count: number;
  /** ms, or -1 for a CreateTime topic. */
  log_append_time: number;
  log_start_offset: number;
  duplicate?: boolean;
}

/** One partition of the multi-partition produce answer (Kafka's PartitionProduceResponse). */
interface WirePartitionResponse {
  index: number;
  error_code: number;
  error?: string;
  error_message?: string;
  base_offset: number;
  log_append_time_ms: number;
}

interface WireProduceResponse {
  responses?: { name: string; partition_responses?: WirePartitionResponse[] }[];
}

interface WireBatchResponse {
  successes?: { id: string; partition_id: number; offset: number; timestamp?: string }[];
  failures?: { id: string; error_code?: number; message?: string; error?: string }[];
}

const asClientError = (e: unknown) =>
  e instanceof KafkaClientError ? e : new KafkaClientError('UNKNOWN_SERVER_ERROR', String(e), { cause: e });

/** Answers that a smaller batch would not get: the batch is split rather than failed. */
const TOO_LARGE = new Set(['MESSAGE_TOO_LARGE', 'PAYLOAD_TOO_LARGE']);

/** A batch's size in a multi-partition request: its RecordBatch and the partition's framing (index, length). */
const batchBytes = (b: ProducerBatch) => RECORD_BATCH_OVERHEAD + b.sizeInBytes + 8;

const SEQUENCE_ERRORS = new Set(['OUT_OF_ORDER_SEQUENCE_NUMBER', 'UNKNOWN_PRODUCER_ID']);
const FENCED = new Set(['INVALID_PRODUCER_EPOCH', 'PRODUCER_FENCED']);

export class Sender {
  private identity: ProducerIdAndEpoch | undefined;
  private identityTask: Promise<void> | undefined;
  private needsEpochBump = false;
  private fatal: KafkaClientError | undefined;
  private flushing = 0;
  private closing = false;
  private runScheduled = false;
  private timer: NodeJS.Timeout | undefined;
  private timerAt = Infinity;
  private inFlightRequests = 0;

  constructor(
    private readonly transport: Transport,
    private readonly accumulator: RecordAccumulator,
    private readonly pool: BufferPool,
    private readonly metadata: Metadata,
    private readonly config: SenderConfig,
  ) {
    this.buffers = new BatchBuffers(pool.totalBytes);
  }

  /** Memory of encoded batches, reused from one request to the next. */
  private readonly buffers: BatchBuffers;

  get producerIdentity(): ProducerIdAndEpoch | undefined {
    return this.identity;
  }

  get fatalError(): KafkaClientError | undefined {
    return this.fatal;
  }

  /** A fatal error found outside the send path (a fenced commit): every later send fails with it. */
  setFatal(e: KafkaClientError): void {
    this.fatal ??= e;
    this.abort(this.fatal);
  }

  /** Gets the producer id now (connect()) rather than on the first send. */
  async initProducerId(): Promise<void> {
    if (!this.config.idempotent || this.identity) return;
    await this.ensureIdentity();
  }

  /** Runs the drain loop soon (coalescing wake-ups within one turn of the event loop). */
  wakeup(): void {
    if (this.runScheduled) return;
    this.runScheduled = true;
    setImmediate(() => {
      this.runScheduled = false;
      this.run();
    });
  }

  /** Makes every batch ready now and waits until all that exist at this moment are settled. */
  async flush(): Promise<void> {
    const pending = [...this.accumulator.incomplete()].map((b) => b.done);
    if (pending.length === 0) return;
    this.flushing++;
    this.wakeup();
    try {
      await Promise.all(pending);
    } finally {
      this.flushing--;
    }
  }

  async close(timeoutMs: number): Promise<void> {
    this.closing = true;
    this.wakeup();
    const all = Promise.all([...this.accumulator.incomplete()].map((b) => b.done));
    let t: NodeJS.Timeout | undefined;
    const expired = await Promise.race([
      all.then(() => false),
      new Promise<boolean>((r) => (t = setTimeout(() => r(true), timeoutMs))),
    ]);
    clearTimeout(t);
    if (expired) {
      this.fatal = new KafkaClientError(
        'ILLEGAL_STATE',
        `The producer closed with records still unacknowledged after ${timeoutMs} ms`,
      );
      this.abort(this.fatal);
    }
    this.clearTimer();
  }

  /** Fails everything waiting (close with a timeout, or a fatal error). */
  private abort(e: KafkaClientError): void {
    for (const q of this.accumulator.queues.values()) {
      for (const b of q.batches.splice(0)) this.failBatch(b, e);
    }
    this.pool.abort(e);
  }

  private clearTimer(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.timerAt = Infinity;
  }

  private scheduleAt(at: number, now: number): void {
    if (at >= this.timerAt) return;
    this.clearTimer();
    this.timerAt = at;
    this.timer = setTimeout(
      () => {
        this.timer = undefined;
        this.timerAt = Infinity;
        this.run();
      },
      Math.max(0, at - now),
    );
  }

  private ensureIdentity(): Promise<void> {
    this.identityTask ??= retry(
      async () => {
        const body = this.identity ?? (this.config.initialProducerId ? this.config.initialProducerId : undefined);
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
        this.wakeup();
      },
      (e) => {
        this.identityTask = undefined;
        this.fatal =
          e instanceof KafkaClientError ? e : new KafkaClientError('UNKNOWN_SERVER_ERROR', String(e), { cause: e });
        this.abort(this.fatal);
        throw this.fatal;
      },
    );
    return this.identityTask;
  }

  /** KIP-360: once nothing is in flight, bump the epoch and restart all sequences at 0. */
  private bumpEpoch(): void {
    if (this.identityTask || this.inFlightRequests > 0) return;
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
        this.wakeup();
      })
      .catch(() => {});
  }

  private run(): void {
    if (this.fatal) return this.abort(this.fatal);
    const now = Date.now();
    this.expire(now);
    if (this.config.idempotent) {
      if (!this.identity) {
        if (!this.accumulator.isEmpty) this.ensureIdentity().catch(() => {});
        return;
      }
    }
    // An epoch bump is due: first the batches at a partition's head that may have been written are
    // resent as they were (what stands behind a batch the server lacks cannot be written either).
    const resolving = this.needsEpochBump;
    if (resolving && ![...this.accumulator.queues.values()].some((q) => q.batches[0]?.outcomeUnknown))
      return this.bumpEpoch();
    let nextWake = Infinity;
    const byTopic = new Map<string, ProducerBatch[][]>();
    const multi = this.transport.useRecordBatches(this.config.format) && this.multiPartition !== 'unsupported';
    if (multi) return this.drainAll(now, resolving);
    const anyReady = this.flushing > 0 || this.closing;
    for (const q of this.accumulator.queues.values()) {
      const drained: ProducerBatch[] = [];
      if (resolving && !q.batches[0]?.outcomeUnknown) continue;
      while (q.batches.length > 0) {
        const head = q.batches[0]!;
        if (!this.canSend(q, drained.length, now)) {
          if (head.retryAtMs > now) nextWake = Math.min(nextWake, head.retryAtMs);
          break;
        }
        if (!anyReady && !this.isReady(q, head, now)) {
          nextWake = Math.min(nextWake, head.createdMs + this.config.lingerMs);
          break;
        }
        drained.push(this.take(q));
        if (resolving) break;
      }
      if (drained.length === 0) continue;
      let rounds = byTopic.get(q.topic);
      if (!rounds) byTopic.set(q.topic, (rounds = []));
      drained.forEach((b, i) => (rounds[i] ??= []).push(b));
    }
    const perPartition = this.transport.useRecordBatches(this.config.format);
    for (const rounds of byTopic.values()) {
      if (perPartition) {
        // A server without the multi-partition produce: each batch is its own request, and they all
        // go out at once (in round order, so a partition's batches leave in sequence order).
        for (const round of rounds) for (const b of round) this.dispatch([b]);
        continue;
      }
      // Round i holds each partition's i-th batch: requests go out in round order, so a partition's
      // batches leave in sequence order; a round is split further by max.request.size.
      for (const round of rounds) {
        let request: ProducerBatch[] = [];
        let bytes = 0;
        for (const b of round) {
          if (request.length > 0 && bytes + b.wireBytes > this.config.maxRequestSize) {
            this.dispatch(request);
            request = [];
            bytes = 0;
          }
          request.push(b);
          bytes += b.wireBytes;
        }
        if (request.length > 0) this.dispatch(request);
      }
    }
    if (nextWake !== Infinity) this.scheduleAt(nextWake, now);
  }

  /** Whether a head batch is due on its own: full, lingered long enough, or behind it another waits. */
  private isReady(q: PartitionQueue, head: ProducerBatch, now: number): boolean {
    return (
      head.closed ||
      head.full ||
      head.sizeInBytes >= this.config.batchSize ||
      q.batches.length > 1 ||
      now - head.createdMs >= this.config.lingerMs
    );
  }

  /** Takes the queue's head for sending: closed to new records, its sequence fixed (idempotence). */
  private take(q: PartitionQueue): ProducerBatch {
    const head = q.batches.shift()!;
    head.closed = true;
    if (this.config.idempotent && head.baseSequence === undefined) {
      head.baseSequence = q.nextSequence;
      q.nextSequence += head.records.length;
    }
    return head;
  }

  /**
   * Requests of many partitions and topics (Kafka's one ProduceRequest per broker), one batch per
   * partition, up to max.request.size each. The heads that are due go first; the others join only
   * where they fit in the last request and have waited half of linger.ms, as Kafka drains a ready
   * node's other partitions: a head that is not due never makes a request of its own, so ~1 MiB
   * requests stay one object each.
   */
  private drainAll(now: number, resolving: boolean): void {
    // A request takes one batch per partition, so one pass sends a partition's head only: passes
    // repeat while they send due batches, up to max.in.flight per partition (Kafka's sender loop
    // drains again at once). One pass per wake-up left a lone busy partition with a request or two
    // in flight, waking only as answers came back. Heads that are not due join the first pass's
    // requests only, as they did with one pass: each that joins may cost its request's object a
    // PUT to one more store.
    let pass = this.drainPass(now, resolving, true);
    let nextWake = pass.nextWake;
    while (pass.sent && !resolving) {
      pass = this.drainPass(now, resolving, false);
      nextWake = Math.min(nextWake, pass.nextWake);
    }
    if (nextWake !== Infinity) this.scheduleAt(nextWake, now);
  }

  private drainPass(now: number, resolving: boolean, withExtras: boolean): { sent: boolean; nextWake: number } {
    let nextWake = Infinity;
    const all = this.flushing > 0 || this.closing;
    const due: [PartitionQueue, ProducerBatch][] = [];
    const extra: [PartitionQueue, ProducerBatch][] = [];
    let extraBytes = 0;
    for (const q of this.accumulator.queues.values()) {
      const head = q.batches[0];
      if (!head || (resolving && !head.outcomeUnknown)) continue;
      if (!this.canSend(q, 0, now)) {
        if (head.retryAtMs > now) nextWake = Math.min(nextWake, head.retryAtMs);
        continue;
      }
      if (all || this.isReady(q, head, now)) due.push([q, head]);
      else if (!resolving) {
        extra.push([q, head]);
        extraBytes += batchBytes(head);
      }
    }
    // Small heads that together fill a request are due as a request: as many as fit in one (with
    // keyless records spread over many partitions, the rest would make a stub request of its own).
    if (withExtras && due.length === 0 && extraBytes >= this.config.maxRequestSize) {
      let bytes = 0;
      const rest = extra.splice(0).filter((e) => {
        const fits = due.length === 0 || bytes + batchBytes(e[1]) <= this.config.maxRequestSize;
        if (fits) {
          due.push(e);
          bytes += batchBytes(e[1]);
        }
        return !fits;
      });
      extra.push(...rest);
    }
    let request: ProducerBatch[] = [];
    let bytes = 0;
    const send = () => {
      if (request.length > 0) this.dispatch(request);
      request = [];
      bytes = 0;
    };
    for (const [q, head] of due) {
      if (request.length > 0 && bytes + batchBytes(head) > this.config.maxRequestSize) send();
      request.push(this.take(q));
      bytes += batchBytes(head);
    }
    for (const [q, head] of extra) {
      // A batch begun less than half of linger.ms ago stays to fill up. Sent now it would leave a
      // stub: with keyless records, the sticky partitioner's next partition, one record old,
      // beside every full batch; a commit of its own, and where that partition is kept in another
      // store than the request's others, one more PUT of the whole object (Kafka drains only the
      // ready broker's partitions).
      const waited = now - head.createdMs >= this.config.lingerMs / 2;
      if (withExtras && waited && request.length > 0 && bytes + batchBytes(head) <= this.config.maxRequestSize) {
        request.push(this.take(q));
        bytes += batchBytes(head);
      } else nextWake = Math.min(nextWake, head.createdMs + this.config.lingerMs);
    }
    send();
    return { sent: due.length > 0, nextWake };
  }

  /** Whether the queue's head may leave now, with `drained` of its batches already taken this round. */
  private canSend(q: PartitionQueue, drained: number, now: number): boolean {
    if (q.inFlight.length + drained >= this.config.maxInFlight) return false;
    if (q.retrying && q.inFlight.length + drained > 0) return false;
    return q.batches[0]!.retryAtMs <= now;
  }

  /** delivery.timeout.ms: batches waiting (not in flight) that are too old fail. */
  private expire(now: number): void {
    for (const q of this.accumulator.queues.values()) {
      for (let i = 0; i < q.batches.length; ) {
        const b = q.batches[i]!;
        if (now - b.createdMs < this.config.deliveryTimeoutMs) {
          i++;
          continue;
        }
        q.batches.splice(i, 1);
        if (b.baseSequence !== undefined) this.needsEpochBump = true;
        this.failBatch(
          b,
          new KafkaClientError(
            'REQUEST_TIMED_OUT',
            `Expiring ${b.records.length} record(s) for ${b.topic}-${b.partition}: ${now - b.createdMs} ms has passed since batch creation (delivery.timeout.ms)`,
            { retriable: true, topic: b.topic, partition: b.partition },
          ),
        );
      }
    }
  }

  /** Batches of one topic (JSON), of one partition, or of many partitions and topics (topic_data). */
  private dispatch(batches: ProducerBatch[]): void {
    const queues = batches.map((b) => this.accumulator.queue(b.topic, b.partition));
    batches.forEach((b, i) => {
      b.attempts++;
      b.sentBehindUnacked = queues[i]!.hasEarlierUnacked(b);
      queues[i]!.inFlight.push(b);
    });
    this.inFlightRequests++;
    this.produce(batches)
      .then(
        (results) => results.forEach((r, i) => this.handle(queues[i]!, batches[i]!, r)),
        (e) => {
          const error =
            e instanceof KafkaClientError ? e : new KafkaClientError('UNKNOWN_SERVER_ERROR', String(e), { cause: e });
          batches.forEach((b, i) => this.handle(queues[i]!, b, { error }));
        },
      )
      .finally(() => {
        this.inFlightRequests--;
        this.wakeup();
      });
  }

  private produce(batches: ProducerBatch[]): Promise<BatchResult[]> {
    const topic = batches[0]!.topic;
    if (!this.transport.useRecordBatches(this.config.format)) return this.produceJson(topic, batches);
    if (this.multiPartition !== 'unsupported') return this.produceTopicData(batches);
    return this.produceRecordBatch(topic, batches[0]!);
  }

  /** Whether the server has the multi-partition produce: unknown until the first one tells. */
  private multiPartition: 'unknown' | 'supported' | 'unsupported' = 'unknown';

  /**
   * Many partitions' batches in one request (`POST .../records`, Kafka's ProduceRequest
   * topic_data), answered per partition. A server without that route (404 NOT_FOUND) is
   * remembered, and the batches go one request each at once: nothing was written, so no retry.
   */
  private async produceTopicData(batches: ProducerBatch[]): Promise<BatchResult[]> {
    const topics = new Map<string, { index: number; records: Uint8Array }[]>();
    const held: Uint8Array[] = [];
    for (const b of batches) {
      let list = topics.get(b.topic);
      if (!list) topics.set(b.topic, (list = []));
      list.push({ index: b.partition, records: this.encode(b, held) });
    }
    let res;
    try {
      const txn = this.config.transactional;
      res = await this.transport.request<WireProduceResponse>('POST', '/records', {
        // A transactional producer's request names its transaction, as Kafka's ProduceRequest does.
        query: { acks: this.config.acks, ...(txn ? { transactional_id: txn.transactionalId } : {}) },
        bytes: encodeTopicDataParts([...topics].map(([name, partitions]) => ({ name, partitions }))),
        contentType: PRODUCE_REQUEST_MEDIA_TYPE,
        timeoutMs: this.config.requestTimeoutMs,
      });
    } catch (e) {
      if (
        this.multiPartition === 'unknown' &&
        e instanceof KafkaClientError &&
        e.type === 'NOT_FOUND' &&
        e.status === 404
      ) {
        this.multiPartition = 'unsupported';
        return Promise.all(
          batches.map(
            async (b) =>
              (await this.produceRecordBatch(b.topic, b).catch((x: unknown) => [{ error: asClientError(x) }]))[0]!,
          ),
        );
      }
      throw e;
    } finally {
      this.releaseAll(held);
    }
    this.multiPartition = 'supported';
    this.transport.recordBatchSupport = 'supported';
    const answers = new Map<string, WirePartitionResponse>();
    for (const t of res.body.responses ?? [])
      for (const p of t.partition_responses ?? []) answers.set(`${t.name}\0${p.index}`, p);
    return batches.map((b): BatchResult => {
      const a = answers.get(`${b.topic}\0${b.partition}`);
      if (!a)
        return {
          error: new KafkaClientError('UNKNOWN_SERVER_ERROR', `The produce answer left out ${b.topic}-${b.partition}`, {
            topic: b.topic,
            partition: b.partition,
            retriable: true,
          }),
        };
      if (a.error_code !== 0) {
        // A partition's error inside a 200 answer: no HTTP status of its own.
        return {
          error: new KafkaProtocolError(a.error ?? 'UNKNOWN_SERVER_ERROR', a.error_message ?? `error ${a.error_code}`, {
            topic: b.topic,
            partition: b.partition,
          }),
        };
      }
      return this.resultOf(b, a.base_offset, a.log_append_time_ms);
    });
  }

  /**
   * A batch's RecordBatch v2 bytes, with the producer's id, epoch and the batch's sequence when
   * idempotent, in reused memory that is added to `held`: the caller gives it back after the request.
   */
  private encode(b: ProducerBatch, held: Uint8Array[]): Uint8Array {
    const producer =
      this.config.idempotent && this.identity && b.baseSequence !== undefined
        ? { ...this.identity, baseSequence: b.baseSequence }
        : undefined;
    return encodeProducerBatch(
      b.records.map((r) => r.rec),
      producer && this.config.transactional ? { ...producer, transactional: true } : producer,
      { topic: b.topic, partition: b.partition },
      this.config.compression,
      (n) => {
        const memory = this.buffers.take(n);
        held.push(memory);
        return memory;
      },
    );
  }

  /**
   * Once a request has its answer (or failed), its batches' memory goes back. An answer can come
   * before the whole body was written (a server refusing it early): the rest of that body may then
   * go out altered, to a server that has answered and discards it.
   */
  private releaseAll(held: Uint8Array[]): void {
    for (const b of held) this.buffers.release(b);
  }

  /** Offsets (and LogAppendTime timestamps) of a batch appended at `baseOffset` (-1 with acks=0). */
  private resultOf(b: ProducerBatch, baseOffset: number, logAppendTime: number): BatchResult {
    const n = b.records.length;
    const offsets: (number | undefined)[] = new Array(n);
    if (typeof baseOffset === 'number' && baseOffset >= 0) for (let i = 0; i < n; i++) offsets[i] = baseOffset + i;
    const timestamps =
      typeof logAppendTime === 'number' && logAppendTime >= 0 ? new Array<number>(n).fill(logAppendTime) : undefined;
    return { offsets, ...(timestamps ? { timestamps } : {}) };
  }

  /**
   * One partition's batch as RecordBatch v2 bytes (`POST .../partitions/{p}/records`). With format
   * 'auto', a server without that API (NOT_FOUND: no such route) is remembered and the batch goes as
   * JSON at once; nothing was written, so this is no retry.
   */
  private async produceRecordBatch(topic: string, b: ProducerBatch): Promise<BatchResult[]> {
    const txn = this.config.transactional;
    const held: Uint8Array[] = [];
    const bytes = this.encode(b, held);
    let res;
    try {
      res = await this.transport.request<WireProduceResult>(
        'POST',
        `/topics/${enc(topic)}/partitions/${b.partition}/records`,
        {
          query: { acks: this.config.acks, ...(txn ? { transactional_id: txn.transactionalId } : {}) },
          bytes,
          contentType: RECORD_BATCH_MEDIA_TYPE,
          topic,
          partition: b.partition,
          timeoutMs: this.config.requestTimeoutMs,
        },
      );
    } catch (e) {
      if (
        (this.config.format ?? this.transport.format) === 'auto' &&
        e instanceof KafkaClientError &&
        ((e.type === 'NOT_FOUND' && e.status === 404) || e.type === 'UNSUPPORTED_MEDIA_TYPE')
      ) {
        this.transport.recordBatchSupport = 'unsupported';
        return this.produceJson(topic, [b]);
      }
      throw e;
    } finally {
      this.releaseAll(held);
    }
    this.transport.recordBatchSupport = 'supported';
    return [this.resultOf(b, res.body.base_offset, res.body.log_append_time)];
  }

  private async produceJson(topic: string, batches: ProducerBatch[]): Promise<BatchResult[]> {
    const entries: WireEntry[] = [];
    batches.forEach((b, bi) =>
      b.records.forEach((r, ri) => entries.push({ id: `${bi}.${ri}`, partition_id: b.partition, ...wireEntry(r.rec) })),
    );
    const body: Record<string, unknown> = { entries };
    if (this.config.idempotent && this.identity) {
      body.producer_id = this.identity.producerId;
      body.producer_epoch = this.identity.producerEpoch;
      body.sequences = batches.map((b) => ({ partition_id: b.partition, base_sequence: b.baseSequence }));
      if (this.config.transactional) body.transactional_id = this.config.transactional.transactionalId;
    }
    const res = await this.transport.request<WireBatchResponse | undefined>(
      'POST',
      `/topics/${enc(topic)}/records:batch`,
      {
        query: { acks: this.config.acks },
        body,
        topic,
        timeoutMs: this.config.requestTimeoutMs,
      },
    );
    const results: BatchResult[] = batches.map((b) => ({
      offsets: new Array(b.records.length),
      timestamps: new Array(b.records.length),
    }));
    const at = (id: string) => {
      const [bi, ri] = id.split('.').map(Number) as [number, number];
      return { r: results[bi], ri, b: batches[bi] };
    };
    for (const s of res.body?.successes ?? []) {
      const { r, ri } = at(String(s.id));
      if (!r) continue;
      r.offsets![ri] = s.offset;
      // The server reports the log append time for LogAppendTime topics, else the record's own.
      if (s.timestamp) r.timestamps![ri] = Date.parse(s.timestamp);
    }
    for (const f of res.body?.failures ?? []) {
      const { r, ri, b } = at(String(f.id));
      if (!r) continue;
      const error = errorFromBody(res.status, f, { topic, partition: b?.partition });
      (r.errors ??= [])[ri] = error;
      r.error ??= error;
    }
    return results;
  }

  private handle(q: PartitionQueue, b: ProducerBatch, r: BatchResult): void {
    const i = q.inFlight.indexOf(b);
    if (i >= 0) q.inFlight.splice(i, 1);
    const e = r.error;
    b.outcomeUnknown = e !== undefined && (e.status === undefined || e.status === 502 || e.status === 504);
    if (!e) {
      this.complete(b, r);
      this.maybeEndRetry(q);
      return;
    }
    if (r.offsets?.some((o) => o !== undefined)) {
      // Part of the batch was written: settle record by record and do not retry (no duplicates).
      if (this.config.idempotent) this.needsEpochBump = true;
      this.pool.release(b.records.reduce((n, x) => n + x.rec.sizeInBytes, 0));
      b.settleEach(r.offsets, r.timestamps, r.errors ?? [], e);
      return this.maybeEndRetry(q);
    }
    if (TOO_LARGE.has(e.type) && b.records.length > 1 && r.errors === undefined) {
      // The batch as a whole is over the topic's max.message.bytes, or its request over what the
      // connection can send (a batch.size above maxRequestBytes): resend it in halves at once
      // (requeued last half first, so that they stand in order at the head of the queue).
      const [first, second] = b.split();
      q.requeue(second);
      q.requeue(first);
      if (this.config.idempotent) q.retrying = true;
      return;
    }
    if (this.config.idempotent && FENCED.has(e.type)) {
      // A transactional producer reports Kafka's ProducerFencedException, whichever of the two the server sent.
      const type = this.config.transactional ? 'PRODUCER_FENCED' : e.type;
      this.fatal ??= new KafkaProtocolError(
        type,
        `The producer was fenced: another producer took over producer id ${this.identity?.producerId} (${e.message})`,
        { status: e.status, topic: b.topic, partition: b.partition },
      );
      this.failBatch(b, this.fatal);
      return this.abort(this.fatal);
    }
    if (this.config.idempotent && e.type === 'DUPLICATE_SEQUENCE_NUMBER') {
      this.complete(b, {}); // written before; the server no longer knows the offsets
      return this.maybeEndRetry(q);
    }
    let retriable = isRetriable(e);
    if (this.config.idempotent && SEQUENCE_ERRORS.has(e.type)) {
      // Out of order behind an earlier batch that is (or was, when this one left) unacknowledged:
      // requeue behind it. Otherwise a gap nothing explains: the batch is retried after the epoch
      // bump gives it a fresh sequence.
      retriable = true;
      if (e.type === 'UNKNOWN_PRODUCER_ID' || !(b.sentBehindUnacked || q.hasEarlierUnacked(b)))
        this.needsEpochBump = true;
    }
    if (e.type === 'UNKNOWN_TOPIC_OR_PARTITION') this.metadata.invalidate(b.topic);
    const now = Date.now();
    // A quota's throttle time is waited out in full (Kafka's throttle_time_ms).
    const wait = Math.max(
      backoffMs(b.attempts - 1, this.config.retryBackoffMs, this.config.retryBackoffMaxMs),
      e.throttleTimeMs ?? 0,
    );
    const inTime = now + wait - b.createdMs < this.config.deliveryTimeoutMs;
    // A batch that got no answer on its last try may still have been written: with idempotence the
    // server tells on retry; without it Kafka accepts the possible duplicate too.
    if (retriable && b.attempts <= this.config.retries && inTime) {
      b.retryAtMs = now + wait;
      q.requeue(b);
      if (this.config.idempotent) q.retrying = true;
      return;
    }
    if (this.config.idempotent && b.baseSequence !== undefined) this.needsEpochBump = true;
    this.failBatch(b, e);
  }

  private maybeEndRetry(q: PartitionQueue): void {
    if (q.retrying && q.inFlight.length === 0 && !q.batches.some((x) => x.closed)) q.retrying = false;
  }

  private complete(b: ProducerBatch, r: BatchResult): void {
    this.pool.release(b.records.reduce((n, x) => n + x.rec.sizeInBytes, 0));
    b.complete(r.offsets ?? [], r.timestamps);
  }

  private failBatch(b: ProducerBatch, e: Error): void {
    this.pool.release(b.records.reduce((n, x) => n + x.rec.sizeInBytes, 0));
    b.fail(e);
  }
}
