import type { EncodedRecord } from '../codec.js';

/** Where one produced record ended up. */
export interface RecordMetadata {
  topic: string;
  partition: number;
  /** -1 when unknown (acks=0, or a duplicate older than the server remembers). */
  offset: number;
  timestamp: number;
}

/**
 * What one send() waits for: the metadata of each of its records. Its promise resolves once every
 * record is acknowledged and rejects at the first failure (as Promise.all would over one promise per
 * record, without a promise and two closures per record kept alive until the acknowledgement).
 */
export class SendResult {
  readonly promise: Promise<RecordMetadata[]>;
  private readonly metadata: RecordMetadata[];
  private remaining: number;
  private resolve!: (m: RecordMetadata[]) => void;
  private reject!: (e: Error) => void;

  constructor(count: number) {
    this.metadata = new Array<RecordMetadata>(count);
    this.remaining = count;
    this.promise = new Promise((resolve, reject) => {
      this.resolve = resolve;
      this.reject = reject;
    });
    if (count === 0) this.resolve(this.metadata);
  }

  ack(index: number, m: RecordMetadata): void {
    this.metadata[index] = m;
    if (--this.remaining === 0) this.resolve(this.metadata);
  }

  /** The first failure settles it; later ones (and acknowledgements) change nothing. */
  fail(e: Error): void {
    this.remaining = -1;
    this.reject(e);
  }
}

/** A record in a batch, and where its outcome goes. */
export interface PendingRecord {
  rec: EncodedRecord;
  result: SendResult;
  /** The record's place in its send(). */
  index: number;
}

/** Records for one partition sent (and retried) together, as Kafka's ProducerBatch. */
export class ProducerBatch {
  readonly records: PendingRecord[] = [];
  sizeInBytes = 0;
  wireBytes = 0;
  /** Sends so far. */
  attempts = 0;
  retryAtMs = 0;
  /** Set when the batch is drained for its first send: no more records join it. */
  closed = false;
  /** Set when the next record would not fit (Kafka's isFull): it is due now, and no record joins it. */
  full = false;
  /** The idempotent producer's sequence of the first record, fixed at first send, kept on retry. */
  baseSequence: number | undefined;
  /**
   * Whether an earlier batch of the partition was unacknowledged when this one was last sent. Requests
   * run side by side, so the server may have seen this one first even if the earlier one's answer
   * has come back since: an out-of-order answer then is no gap.
   */
  sentBehindUnacked = false;
  /** Its last send got no answer (a lost connection, a timeout, a gateway's 502/504): it may be written. */
  outcomeUnknown = false;
  private settle!: () => void;
  /** Resolves once every record was acknowledged or failed. */
  readonly done = new Promise<void>((r) => (this.settle = r));

  constructor(
    readonly topic: string,
    readonly partition: number,
    readonly createdMs: number,
  ) {}

  add(r: PendingRecord): void {
    this.records.push(r);
    this.sizeInBytes += r.rec.sizeInBytes;
    this.wireBytes += r.rec.wireBytes;
  }

  complete(offsets: (number | undefined)[], logAppendTimes?: (number | undefined)[]): void {
    this.records.forEach((r, i) => {
      const ts = logAppendTimes?.[i];
      r.result.ack(r.index, {
        topic: this.topic,
        partition: this.partition,
        offset: offsets[i] ?? -1,
        timestamp: ts ?? r.rec.timestamp,
      });
    });
    this.settle();
  }

  /** Some records written, some failed (a partially accepted request). */
  settleEach(
    offsets: (number | undefined)[],
    timestamps: (number | undefined)[] | undefined,
    errors: (Error | undefined)[],
    fallback: Error,
  ): void {
    this.records.forEach((r, i) => {
      const offset = offsets[i];
      if (offset !== undefined)
        r.result.ack(r.index, {
          topic: this.topic,
          partition: this.partition,
          offset,
          timestamp: timestamps?.[i] ?? r.rec.timestamp,
        });
      else r.result.fail(errors[i] ?? fallback);
    });
    this.settle();
  }

  fail(e: Error): void {
    for (const r of this.records) r.result.fail(e);
    this.settle();
  }

  /**
   * Takes the first `count` records into a batch of their own, to be sent ahead of the rest: a
   * request's room filled from a batch that would not fit whole. Only a batch never sent (no
   * sequence yet) is cut; the rest stays this batch, open to more records, as old as it was, and
   * settles once both parts have.
   */
  cutFront(count: number): ProducerBatch {
    const front = new ProducerBatch(this.topic, this.partition, this.createdMs);
    for (const r of this.records.splice(0, count)) front.add(r);
    this.sizeInBytes -= front.sizeInBytes;
    this.wireBytes -= front.wireBytes;
    this.full = false;
    const settleAll = this.settle;
    const rest = new Promise<void>((r) => (this.settle = r));
    void Promise.all([front.done, rest]).then(settleAll);
    return front;
  }

  /**
   * Splits a batch the server found too large (max.message.bytes bounds a whole batch) in two, as
   * Kafka's producer does. The halves keep the creation time and take the batch's sequences in
   * turn, so the sequences of later batches stay valid; this batch settles when both halves have.
   */
  split(): [ProducerBatch, ProducerBatch] {
    const half = Math.ceil(this.records.length / 2);
    const parts = [this.records.slice(0, half), this.records.slice(half)].map((records) => {
      const p = new ProducerBatch(this.topic, this.partition, this.createdMs);
      for (const r of records) p.add(r);
      p.closed = true;
      return p;
    }) as [ProducerBatch, ProducerBatch];
    if (this.baseSequence !== undefined) {
      parts[0].baseSequence = this.baseSequence;
      parts[1].baseSequence = this.baseSequence + half;
    }
    void Promise.all(parts.map((p) => p.done)).then(() => this.settle());
    return parts;
  }
}

/** One partition's queue: batches waiting (oldest first; retried batches go back to the front). */
export class PartitionQueue {
  readonly batches: ProducerBatch[] = [];
  readonly inFlight: ProducerBatch[] = [];
  /** The next sequence the idempotent producer gives out on this partition. */
  nextSequence = 0;
  /** A batch of this partition is being retried: send one at a time until the retried ones succeed. */
  retrying = false;

  constructor(
    readonly topic: string,
    readonly partition: number,
  ) {}

  /** Puts a failed batch back in sequence order ahead of every batch not yet sent. */
  requeue(b: ProducerBatch): void {
    let i = 0;
    while (
      i < this.batches.length &&
      this.batches[i]!.closed &&
      (this.batches[i]!.baseSequence ?? 0) < (b.baseSequence ?? 0)
    )
      i++;
    this.batches.splice(i, 0, b);
  }

  /** Whether any batch with a lower sequence is not yet acknowledged (sent or waiting to be resent). */
  hasEarlierUnacked(b: ProducerBatch): boolean {
    const seq = b.baseSequence ?? 0;
    const earlier = (x: ProducerBatch) => x !== b && x.baseSequence !== undefined && x.baseSequence < seq;
    return this.inFlight.some(earlier) || this.batches.some(earlier);
  }
}

/**
 * The record accumulator: per-partition queues of batches that fill to batch.size and wait up to
 * linger.ms for company before the sender takes them.
 */
export class RecordAccumulator {
  readonly queues = new Map<string, PartitionQueue>();
  /** The same queues by topic and partition: found per record without building a key. */
  private readonly byTopic = new Map<string, PartitionQueue[]>();

  constructor(readonly batchSize: number) {}

  queue(topic: string, partition: number): PartitionQueue {
    let topicQueues = this.byTopic.get(topic);
    if (!topicQueues) this.byTopic.set(topic, (topicQueues = []));
    let q = topicQueues[partition];
    if (!q) {
      q = new PartitionQueue(topic, partition);
      topicQueues[partition] = q;
      this.queues.set(`${topic}\u0000${partition}`, q);
    }
    return q;
  }

  /**
   * Whether a record of `bytes` would start a new batch: none open (none yet, or drained), or the
   * open one too full for it. A batch found too full is marked full: it is due at once.
   */
  startsBatch(topic: string, partition: number, bytes: number): boolean {
    const last = this.byTopic.get(topic)?.[partition]?.batches.at(-1);
    if (last === undefined || last.closed || last.full) return true;
    if (last.records.length > 0 && last.sizeInBytes + bytes > this.batchSize) last.full = true;
    return last.full;
  }

  /** Appends to the partition's open batch (or a new one); tells whether a batch is ready by size. */
  append(topic: string, partition: number, r: PendingRecord, now: number): { batch: ProducerBatch; full: boolean } {
    const q = this.queue(topic, partition);
    let last = q.batches.at(-1);
    if (
      !last ||
      last.closed ||
      last.full ||
      (last.records.length > 0 && last.sizeInBytes + r.rec.sizeInBytes > this.batchSize)
    ) {
      last = new ProducerBatch(topic, partition, now);
      q.batches.push(last);
    }
    last.add(r);
    return { batch: last, full: last.sizeInBytes >= this.batchSize || q.batches.length > 1 };
  }

  /** Every batch not yet settled (waiting or in flight). */
  *incomplete(): Iterable<ProducerBatch> {
    for (const q of this.queues.values()) {
      yield* q.inFlight;
      yield* q.batches;
    }
  }

  get isEmpty(): boolean {
    for (const q of this.queues.values()) if (q.batches.length > 0 || q.inFlight.length > 0) return false;
    return true;
  }
}
