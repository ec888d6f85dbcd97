/**
 * The sender (Kafka's Sender): drains ready batches from the accumulator and sends them in the
 * request shape of the wire format in use (produce-requests.ts): as RecordBatch v2 bytes, one
 * request for the partitions with a batch that are written to the same stores (at RF 1, one leader
 * store), of every topic, up to max.request.size, as Kafka sends one ProduceRequest per broker
 * (once a batch is ready, the other partitions' head batches of its place go with it where they
 * fit); or as JSON records:batch requests, one per topic holding at most one batch per partition. It handles every answer per partition: completes, retries (in sequence order, with
 * the idempotent producer's state in transaction-manager.ts), splits a batch too large, or fails.
 *
 * Up to max.in.flight.requests.per.connection requests per place (as Kafka's per broker connection),
 * and so batches per partition, are in flight. When one fails
 * and is retried, the partition sends one batch at a time until the retried batches are through
 * (order kept).
 */
import { asClientError, isRetriable, KafkaClientError } from '../errors.js';
import type { Metadata } from '../metadata.js';
import { backoffMs } from '../retry.js';
import type { Transport } from '../transport.js';
import { RECORD_BATCH_OVERHEAD } from '../record-batches.js';
import type { BufferPool } from './buffer-pool.js';
import { ProduceRequests, type BatchResult, type ProduceRequestsConfig } from './produce-requests.js';
import type { PartitionQueue, ProducerBatch, RecordAccumulator } from './record-accumulator.js';
import { TransactionManager, type ProducerIdAndEpoch, type TransactionManagerConfig } from './transaction-manager.js';
import type { Acks } from '../../wire/protocol.js';

export type { Acks };

/** The sender's own configs, beside those of the idempotent producer's state and of the requests. */
export interface SenderConfig extends TransactionManagerConfig, Omit<ProduceRequestsConfig, 'transactionalId'> {
  batchSize: number;
  lingerMs: number;
  maxRequestSize: number;
  maxInFlight: number;
}

/** Answers that a smaller batch would not get: the batch is split rather than failed. */
const TOO_LARGE = new Set(['MESSAGE_TOO_LARGE', 'PAYLOAD_TOO_LARGE']);

/** Answers that say a partition's leader or in-sync replicas moved: the placements are read again. */
const PLACEMENT_MOVED = new Set([
  'NOT_LEADER_OR_FOLLOWER',
  'LEADER_NOT_AVAILABLE',
  'FENCED_LEADER_EPOCH',
  'NOT_ENOUGH_REPLICAS',
  'NOT_ENOUGH_REPLICAS_AFTER_APPEND',
]);

/** A batch's size in a multi-partition request: its RecordBatch and the partition's framing (index, length). */
const batchBytes = (b: ProducerBatch) => RECORD_BATCH_OVERHEAD + b.sizeInBytes + 8;

export class Sender {
  private flushing = 0;
  private closing = false;
  private runScheduled = false;
  private timer: NodeJS.Timeout | undefined;
  private timerAt = Infinity;
  private inFlightRequests = 0;
  /** Requests in flight per place (`placeOf`), as Kafka counts them per broker connection. */
  private readonly inFlightByPlace = new Map<string, number>();
  /** The idempotent producer's id, epoch and sequences. */
  private readonly transactions: TransactionManager;
  private readonly requests: ProduceRequests;

  constructor(
    transport: Transport,
    private readonly accumulator: RecordAccumulator,
    private readonly pool: BufferPool,
    private readonly metadata: Metadata,
    private readonly config: SenderConfig,
  ) {
    this.transactions = new TransactionManager(transport, accumulator, config, {
      wakeup: () => this.wakeup(),
      abort: (e) => this.abort(e),
    });
    this.requests = new ProduceRequests(
      transport,
      {
        acks: config.acks,
        requestTimeoutMs: config.requestTimeoutMs,
        compression: config.compression,
        ...(config.format ? { format: config.format } : {}),
        ...(config.transactional ? { transactionalId: config.transactional.transactionalId } : {}),
      },
      () => this.transactions.batchIdentity(),
      pool.totalBytes,
    );
  }

  get producerIdentity(): ProducerIdAndEpoch | undefined {
    return this.transactions.producerIdentity;
  }

  get fatalError(): KafkaClientError | undefined {
    return this.transactions.fatalError;
  }

  /** A fatal error found outside the send path (a fenced commit): every later send fails with it. */
  setFatal(e: KafkaClientError): void {
    this.abort(this.transactions.setFatal(e));
  }

  /** Gets the producer id now (connect()) rather than on the first send. */
  initProducerId(): Promise<void> {
    return this.transactions.initProducerId();
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
      const e = new KafkaClientError(
        'ILLEGAL_STATE',
        `The producer closed with records still unacknowledged after ${timeoutMs} ms`,
      );
      this.abort(this.transactions.setFatal(e, { replace: true }));
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

  private run(): void {
    const fatal = this.transactions.fatalError;
    if (fatal) return this.abort(fatal);
    const now = Date.now();
    this.expire(now);
    if (!this.transactions.readyToSend()) return;
    // An epoch bump is due: first the batches at a partition's head that may have been written are
    // resent as they were (what stands behind a batch the server lacks cannot be written either).
    const resolving = this.transactions.needsEpochBump;
    if (resolving && ![...this.accumulator.queues.values()].some((q) => q.batches[0]?.outcomeUnknown))
      return this.transactions.bumpEpoch(this.inFlightRequests);
    let nextWake = Infinity;
    const byTopic = new Map<string, ProducerBatch[][]>();
    const shape = this.requests.shape();
    if (shape === 'topic-data') return this.drainAll(now, resolving);
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
    for (const rounds of byTopic.values()) {
      if (shape === 'partition') {
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
    this.transactions.assignSequence(q, head);
    return head;
  }

  /**
   * Requests of many partitions and topics (Kafka's one ProduceRequest per broker), one batch per
   * partition, up to max.request.size each, per place (`placeOf`). The heads that are due go first;
   * the others of their place join only where they fit in the last request and have waited half of
   * linger.ms, as Kafka drains a ready node's other partitions: a head that is not due never makes a
   * request of its own, so ~1 MiB requests stay one object each, written to one place.
   */
  private drainAll(now: number, resolving: boolean): void {
    // A request takes one batch per partition, so one pass sends a partition's head only: passes
    // repeat while they send due batches, up to max.in.flight per partition (Kafka's sender loop
    // drains again at once). One pass per wake-up left a lone busy partition with a request or two
    // in flight, waking only as answers came back. Heads that are not due join the first pass's
    // requests only, as they did with one pass.
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
    // Per place (the stores a partition's appends are written to), its due and waiting heads.
    const places = new Map<
      string,
      { due: [PartitionQueue, ProducerBatch][]; extra: [PartitionQueue, ProducerBatch][] }
    >();
    for (const q of this.accumulator.queues.values()) {
      const head = q.batches[0];
      if (!head || (resolving && !head.outcomeUnknown)) continue;
      if (!this.canSend(q, 0, now)) {
        if (head.retryAtMs > now) nextWake = Math.min(nextWake, head.retryAtMs);
        continue;
      }
      const key = this.placeOf(q, now);
      let place = places.get(key);
      if (!place) places.set(key, (place = { due: [], extra: [] }));
      if (all || this.isReady(q, head, now)) place.due.push([q, head]);
      else if (!resolving) place.extra.push([q, head]);
    }
    let sent = false;
    for (const [key, { due, extra }] of places) {
      const room = this.config.maxInFlight - (this.inFlightByPlace.get(key) ?? 0);
      if (room <= 0) continue; // woken again as one of the place's requests is answered
      const drained = this.drainPlace(key, room, due, extra, now, withExtras);
      nextWake = Math.min(nextWake, drained.nextWake);
      sent ||= drained.sent;
    }
    return { sent, nextWake };
  }

  /**
   * Where a partition's appends are written, as a key: requests group the partitions of one place,
   * as Kafka's sender drains per broker, since the server writes a request's object once to every
   * store it names (with acks=all the in-sync replicas' stores, else the leader's). At RF 1 that is
   * the leader: a request of one leader's partitions is one PUT. Unknown (not read yet): one place.
   */
  private placeOf(q: PartitionQueue, now: number): string {
    const p = this.metadata.placement(q.topic, q.partition, now);
    if (!p) return '';
    return this.config.acks === 'all' ? [...p.isr].sort((a, b) => a - b).join(',') : String(p.leader);
  }

  /**
   * One place's requests, at most `room` of them: its due heads up to max.request.size each, and the
   * waiting heads that fit. A due head too large for what is left of a request fills it with its
   * first records (`fill`), the rest staying the head (sent next if the place has a slot left): with
   * every partition's head grown while the place's requests were in flight (a saturated producer),
   * whole heads would leave requests a third empty.
   */
  private drainPlace(
    place: string,
    room: number,
    due: [PartitionQueue, ProducerBatch][],
    extra: [PartitionQueue, ProducerBatch][],
    now: number,
    withExtras: boolean,
  ): { sent: boolean; nextWake: number } {
    let nextWake = Infinity;
    let sent = false;
    const extraBytes = extra.reduce((n, [, head]) => n + batchBytes(head), 0);
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
    // Partitions with fewer batches in flight first (then the oldest head), as Kafka's drain
    // rotates over a node's partitions: a saturated place's requests then carry different
    // partitions instead of one partition's next batches side by side. Requests run on parallel
    // functions, so a partition's batches in flight together may commit out of order, and the later
    // one waits on the server for the sequence gap to fill (partition-log.ts SEQUENCE_GAP_WAITS_MS).
    due.sort((a, b) => a[0].inFlight.length - b[0].inFlight.length || a[1].createdMs - b[1].createdMs);
    let request: ProducerBatch[] = [];
    let bytes = 0;
    const send = () => {
      if (request.length > 0) {
        this.dispatch(request, place);
        room--;
        sent = true;
      }
      request = [];
      bytes = 0;
    };
    for (const [q, head] of due) {
      if (request.length > 0 && bytes + batchBytes(head) > this.config.maxRequestSize) {
        const front = this.fill(q, head, this.config.maxRequestSize - bytes);
        if (front) request.push(front);
        send();
      }
      if (room <= 0) break;
      // What `fill` left of a head waits for a slot of its partition if the front took the last.
      if (head !== q.batches[0] || !this.canSend(q, 0, now)) continue;
      request.push(this.take(q));
      bytes += batchBytes(head);
    }
    for (const [q, head] of extra) {
      // A batch begun less than half of linger.ms ago stays to fill up. Sent now it would leave a
      // stub: with keyless records, the sticky partitioner's next partition, one record old,
      // beside every full batch; a commit of its own.
      const waited = now - head.createdMs >= this.config.lingerMs / 2;
      if (
        withExtras &&
        room > 0 &&
        waited &&
        request.length > 0 &&
        bytes + batchBytes(head) <= this.config.maxRequestSize
      ) {
        request.push(this.take(q));
        bytes += batchBytes(head);
      } else nextWake = Math.min(nextWake, head.createdMs + this.config.lingerMs);
    }
    send();
    return { sent, nextWake };
  }

  /**
   * The first records of a queue's head that fit in `free` bytes of a request, cut off as a batch of
   * their own and taken for sending (the rest stays the head); none when little would fit (under a
   * sixteenth of max.request.size: a batch that small is a commit of its own for little), or when
   * the head was sent before (its records and sequences stay together).
   */
  private fill(q: PartitionQueue, head: ProducerBatch, free: number): ProducerBatch | undefined {
    if (head.closed || head.baseSequence !== undefined || free < this.config.maxRequestSize / 16) return undefined;
    let count = 0;
    let bytes = batchBytes(head) - head.sizeInBytes;
    while (count < head.records.length && bytes + head.records[count]!.rec.sizeInBytes <= free)
      bytes += head.records[count++]!.rec.sizeInBytes;
    if (count === 0 || count === head.records.length) return undefined;
    const front = head.cutFront(count);
    q.batches.unshift(front);
    return this.take(q);
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
        this.transactions.sequencesLost(b);
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
  private dispatch(batches: ProducerBatch[], place?: string): void {
    const queues = batches.map((b) => this.accumulator.queue(b.topic, b.partition));
    if (place !== undefined) this.inFlightByPlace.set(place, (this.inFlightByPlace.get(place) ?? 0) + 1);
    batches.forEach((b, i) => {
      b.attempts++;
      b.sentBehindUnacked = queues[i]!.hasEarlierUnacked(b);
      queues[i]!.inFlight.push(b);
    });
    this.inFlightRequests++;
    this.requests
      .produce(batches)
      .then(
        (results) => results.forEach((r, i) => this.handle(queues[i]!, batches[i]!, r)),
        (e) => {
          const error = asClientError(e);
          batches.forEach((b, i) => this.handle(queues[i]!, b, { error }));
        },
      )
      .finally(() => {
        this.inFlightRequests--;
        if (place !== undefined) {
          const n = (this.inFlightByPlace.get(place) ?? 1) - 1;
          if (n > 0) this.inFlightByPlace.set(place, n);
          else this.inFlightByPlace.delete(place);
        }
        this.wakeup();
      });
  }

  private handle(q: PartitionQueue, b: ProducerBatch, r: BatchResult): void {
    const i = q.inFlight.indexOf(b);
    if (i >= 0) q.inFlight.splice(i, 1);
    const e = r.error;
    // The server may have elected a leader inside the request: later requests are grouped by it.
    if (r.placement) this.metadata.placementSeen(b.topic, b.partition, r.placement);
    b.outcomeUnknown = e !== undefined && (e.status === undefined || e.status === 502 || e.status === 504);
    if (!e) {
      this.complete(b, r);
      this.maybeEndRetry(q);
      return;
    }
    if (r.offsets?.some((o) => o !== undefined)) {
      // Part of the batch was written: settle record by record and do not retry (no duplicates).
      this.transactions.partlyWritten();
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
    const fenced = this.transactions.fencedBy(e, b);
    if (fenced) {
      this.failBatch(b, fenced);
      return this.abort(fenced);
    }
    if (this.transactions.isDuplicate(e)) {
      this.complete(b, {}); // written before; the server no longer knows the offsets
      return this.maybeEndRetry(q);
    }
    const retriable = this.transactions.retriableSequenceError(e, q, b) || isRetriable(e);
    if (e.type === 'UNKNOWN_TOPIC_OR_PARTITION') this.metadata.invalidate(b.topic);
    else if (PLACEMENT_MOVED.has(e.type)) this.metadata.invalidatePlacement(b.topic);
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
    this.transactions.sequencesLost(b);
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
