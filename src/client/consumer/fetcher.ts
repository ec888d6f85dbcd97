/**
 * The fetcher: keeps one fetch in flight for every assigned, unpaused partition without buffered
 * records, in one request (a long poll when the server holds it for fetch.min.bytes /
 * fetch.max.wait.ms), buffers what comes back, and hands
 * records out up to max.poll.records, advancing positions. A seek or revocation bumps the partition's
 * epoch so an answer to an older fetch is dropped.
 */
import { decodeRecord, type ConsumerRecord, type WireRecord } from '../codec.js';
import { asClientError, KafkaClientError } from '../errors.js';
import { decodeFetchedRecords } from '../record-batches.js';
import { fetchPartitions } from './fetch-partitions.js';
import { backoffMs } from '../retry.js';
import { enc, RECORD_BATCH_MEDIA_TYPE, type Response, type Transport } from '../transport.js';
import type { IdleBackoff } from './idle-backoff.js';
import type { PushedRecords } from './push-channel.js';
import type { TopicPartitionState, SubscriptionState } from './subscription-state.js';
import { RouteProbe, type WireFormat } from '../wire-formats.js';
import { FETCH_HEADERS, parseAbortedTransactions } from '../../wire/protocol.js';

export interface FetcherConfig {
  fetchMinBytes: number;
  fetchMaxWaitMs: number;
  maxPartitionFetchBytes: number;
  /** Kafka's fetch.max.bytes: the whole multi-partition answer (the server's bound when unset). */
  fetchMaxBytes?: number;
  retryBackoffMs: number;
  retryBackoffMaxMs: number;
  requestTimeoutMs: number;
  /** How records travel (the connection's format when unset). */
  format?: WireFormat;
  /** Kafka's isolation.level: read_committed reads up to the LSO and leaves out aborted transactions. */
  isolationLevel: 'read_uncommitted' | 'read_committed';
}

/** A fetch answer, whichever format it came in. */
interface Fetched {
  /** Decoded (and checked) on the first call. */
  records: () => ConsumerRecord[];
  hasRecords: boolean;
  nextOffset: number;
  highWatermark: number;
  logStartOffset: number;
  /** Where a read_committed consumer's readable records end (the high watermark when unknown). */
  lastStableOffset?: number;
}

interface WireRecordList {
  records: WireRecord[];
  next_offset: number;
  high_watermark: number;
  log_start_offset: number;
}

export class Fetcher {
  /** Resolves the current waiter of waitForActivity(). */
  private wake: (() => void) | undefined;
  private readonly errorsByPartition = new Map<TopicPartitionState, number>();
  /** A fetch error poll() must raise (e.g. OFFSET_OUT_OF_RANGE with auto.offset.reset=none). */
  pendingError: KafkaClientError | undefined;
  private readonly abort = new AbortController();

  constructor(
    private readonly transport: Transport,
    private readonly subs: SubscriptionState,
    private readonly config: FetcherConfig,
    /** Called with a partition whose position fell outside the log (auto.offset.reset decides). */
    private readonly onOutOfRange: (s: TopicPartitionState, e: KafkaClientError) => void,
    /** When to fetch a partition that answered nothing (push, or polling back-off). */
    private readonly idle?: IdleBackoff,
  ) {
    if (idle) {
      idle.onPushed = (s, records) => this.pushed(s, records);
      idle.onNotified = (s, end) => this.notified(s, end);
    }
  }

  /**
   * Records a push notification carried: buffered as a fetch's answer would be, when they start
   * where the partition's next fetch would and are all readable (below the high watermark, or for
   * read_committed the last stable offset, so no open or aborted transaction is among them). Else,
   * if they are past where it has read (a notification before them lost or overtaken, or a fetch
   * in flight), it fetches: now, or once the fetch in flight has answered, unless that answer
   * reached them. Returns whether they were taken.
   */
  private pushed(s: TopicPartitionState, records: PushedRecords): boolean {
    const readableEnd = Math.min(
      records.lastOffset + 1,
      this.config.isolationLevel === 'read_committed' ? records.lastStableOffset : records.highWatermark,
    );
    const from = s.fetchOffset;
    const fits = !s.paused && !s.fetching && s.prefetched === undefined && readableEnd === records.lastOffset + 1;
    if (fits && s.reset === undefined && from === records.baseOffset) {
      const answer = {
        decode: () => decodeFetchedRecords(records.batches, s.topic, s.partition, records.baseOffset),
        records: undefined,
        index: 0,
        nextOffset: records.lastOffset + 1,
        epoch: s.epoch,
      };
      if (s.buffered?.epoch === s.epoch) s.prefetched = answer;
      else s.buffered = answer;
      s.highWatermark = Math.max(s.highWatermark ?? 0, records.highWatermark);
      return true;
    }
    this.notified(s, readableEnd);
    return false;
  }

  /**
   * A notification told of records below `end` (unknown: assume some): fetched now, or after the
   * fetch in flight unless its answer reaches them; nothing when what is read already does.
   */
  private notified(s: TopicPartitionState, end = Number.MAX_SAFE_INTEGER): void {
    const from = s.fetchOffset;
    if (s.reset !== undefined || from === undefined || end <= from) return;
    if (s.fetching) s.pushedEnd = Math.max(s.pushedEnd ?? 0, end);
    else s.nextFetchAt = 0;
  }

  /** Wakes a poll() waiting for data (new data, a rebalance, wakeup(), close()). */
  notify(): void {
    const w = this.wake;
    this.wake = undefined;
    w?.();
  }

  /** Resolves on the next notify() or after `ms`. */
  waitForActivity(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const t = setTimeout(done, Math.max(0, ms));
      const prev = this.wake;
      this.wake = done;
      function done() {
        clearTimeout(t);
        resolve();
        prev?.();
      }
    });
  }

  /**
   * Fetches every partition that can take one, all in one request (Kafka's consumer sends one
   * FetchRequest per broker); returns the earliest back-off deadline. While that request is out
   * (a long poll over all of them), partitions that become fetchable wait for its answer. Against
   * a server without the multi-partition fetch, one request per partition.
   */
  sendFetches(now = Date.now()): number {
    let next = Infinity;
    const ready: TopicPartitionState[] = [];
    for (const s of this.subs.states()) {
      if (!s.fetchable) continue;
      if (s.nextFetchAt > now) {
        next = Math.min(next, s.nextFetchAt);
        continue;
      }
      ready.push(s);
    }
    if (!this.multiFetch.available) for (const s of ready) this.fetch(s);
    else if (ready.length > 0 && !this.multiInFlight) {
      // The server fills the answer's fetch.max.bytes in the order asked: each request starts one
      // partition further on (KIP-74), so that no partition is always last and starved.
      const k = this.fetchRotation++ % ready.length;
      this.fetchMany([...ready.slice(k), ...ready.slice(0, k)]);
    }
    return next;
  }

  private fetchRotation = 0;

  /**
   * Whether the server has `records:fetch`. Missing too when it refuses a read_committed
   * consumer's isolation level there (UNSUPPORTED_VERSION): per partition then.
   */
  private readonly multiFetch = new RouteProbe(['UNSUPPORTED_VERSION']);
  private multiInFlight = false;
  /** A fetch was sent since the last flushSent(). */
  private unflushed = false;

  /**
   * Lets the fetches sent since the last call leave. node:http writes a request from a nextTick,
   * which runs only once the promise chain it was sent from ends: from poll(), that chain goes on
   * through the decoding of the answer in hand and the application's handling of its records, so
   * the next answer would be asked for only after all of them (measured: 1.5 ms late per 1 MiB
   * answer at one partition).
   */
  async flushSent(): Promise<void> {
    if (!this.unflushed) return;
    this.unflushed = false;
    await new Promise<void>((resolve) => setImmediate(resolve));
  }

  private fetchMany(states: TopicPartitionState[]): void {
    const sent = states.map((s) => ({ s, epoch: s.epoch, offset: s.fetchOffset! }));
    const started = Date.now();
    const batches = this.transport.recordBatches.use(this.config.format);
    for (const { s } of sent) s.fetching = true;
    this.multiInFlight = true;
    this.unflushed = true;
    fetchPartitions(
      this.transport,
      {
        partitions: sent.map(({ s, offset }) => ({
          topic: s.topic,
          partition: s.partition,
          offset,
          maxBytes: this.config.maxPartitionFetchBytes,
        })),
        ...(this.config.fetchMaxBytes !== undefined ? { maxBytes: this.config.fetchMaxBytes } : {}),
        minBytes: this.config.fetchMinBytes,
        maxWaitMs: this.idle?.maxWaitMs() ?? this.config.fetchMaxWaitMs,
        format: batches ? 'record-batch' : 'json',
        isolationLevel: this.config.isolationLevel,
      },
      { signal: this.abort.signal, timeoutMs: this.config.requestTimeoutMs },
    )
      .then(
        (answers) => {
          this.multiFetch.answered();
          const filled = answers.some((a) => !a.error && a.hasRecords);
          answers.forEach((a, i) => {
            const { s, epoch, offset } = sent[i]!;
            if (a.error) this.failed(s, epoch, a.error);
            else this.answered(s, epoch, offset, started, a, filled);
          });
        },
        (e: unknown) => {
          if (this.multiFetch.refused(e)) {
            for (const { s } of sent) s.fetching = false;
            return;
          }
          for (const { s, epoch } of sent) this.failed(s, epoch, e);
        },
      )
      .finally(() => {
        this.multiInFlight = false;
        // The next fetch leaves now, from the ends of the answers in hand, so that the server reads
        // it while the application decodes and works through these.
        if (!this.abort.signal.aborted) this.sendFetches();
        this.notify();
      });
  }

  /**
   * One partition's fetch answer: buffered for poll(), or nothing new (then wait out
   * fetch.max.wait.ms). `filled`: other partitions of the same answer brought records.
   */
  private answered(
    s: TopicPartitionState,
    epoch: number,
    offset: number,
    started: number,
    body: Fetched,
    filled = false,
  ): void {
    s.fetching = false;
    // Records a notification told of during this fetch, which its answer did not reach: fetch again now.
    const pushedAhead = s.pushedEnd !== undefined && s.pushedEnd > body.nextOffset;
    s.pushedEnd = undefined;
    if (epoch !== s.epoch || this.subs.get(s.topic, s.partition) !== s) return;
    this.errorsByPartition.delete(s);
    s.highWatermark = body.highWatermark;
    s.logStartOffset = body.logStartOffset;
    const readableEnd = this.config.isolationLevel === 'read_committed' ? body.lastStableOffset : body.highWatermark;
    if (body.hasRecords || body.nextOffset > offset) {
      const answer = { decode: body.records, records: undefined, index: 0, nextOffset: body.nextOffset, epoch };
      // A prefetch lines up behind the answer in hand (drain() moves it up).
      if (s.buffered?.epoch === epoch && s.buffered.nextOffset === offset) s.prefetched = answer;
      else s.buffered = answer;
      if (this.idle && readableEnd !== undefined && body.nextOffset >= readableEnd)
        s.nextFetchAt = pushedAhead ? 0 : this.idle.onCaughtUp(s, body.nextOffset);
      else this.idle?.onData(s);
    } else if (filled && readableEnd !== undefined && readableEnd > offset) {
      // Records are there, but the answer's fetch.max.bytes went to the partitions before this
      // one: it goes in the next request at once, not after an idle wait.
      s.nextFetchAt = 0;
    } else {
      // Nothing new. A server that long-polls already waited; one that does not answers at
      // once: wait out the rest of fetch.max.wait.ms rather than spin (longer while idle).
      s.nextFetchAt = this.idle ? this.idle.onEmpty(s, started, offset) : started + this.config.fetchMaxWaitMs;
      if (pushedAhead) s.nextFetchAt = 0;
    }
  }

  /** One partition's fetch failed: reset on OFFSET_OUT_OF_RANGE, else back off (and raise what cannot be retried). */
  private failed(s: TopicPartitionState, epoch: number, e: unknown): void {
    s.fetching = false;
    s.pushedEnd = undefined;
    if (epoch !== s.epoch || this.subs.get(s.topic, s.partition) !== s) return;
    const err = asClientError(e);
    if (err.type === 'ABORTED') return;
    if (err.type === 'OFFSET_OUT_OF_RANGE') return this.onOutOfRange(s, err);
    const n = (this.errorsByPartition.get(s) ?? 0) + 1;
    this.errorsByPartition.set(s, n);
    s.nextFetchAt =
      Date.now() +
      Math.max(backoffMs(n - 1, this.config.retryBackoffMs, this.config.retryBackoffMaxMs), err.throttleTimeMs ?? 0);
    if (!err.retriable) this.pendingError = err;
  }

  private fetch(s: TopicPartitionState): void {
    const epoch = s.epoch;
    const offset = s.fetchOffset!;
    const started = Date.now();
    const batches = this.transport.recordBatches.use(this.config.format);
    const maxWaitMs = this.idle?.maxWaitMs() ?? this.config.fetchMaxWaitMs;
    s.fetching = true;
    this.unflushed = true;
    this.transport
      .request<WireRecordList | Buffer>('GET', `/topics/${enc(s.topic)}/partitions/${s.partition}/records`, {
        query: {
          offset,
          max_bytes: this.config.maxPartitionFetchBytes,
          min_bytes: this.config.fetchMinBytes,
          max_wait_ms: maxWaitMs,
          ...(batches ? {} : { format: 'binary' }),
          ...(this.config.isolationLevel === 'read_committed' ? { isolation_level: 'read_committed' } : {}),
        },
        ...(batches ? { accept: RECORD_BATCH_MEDIA_TYPE } : {}),
        timeoutMs: this.config.requestTimeoutMs + maxWaitMs,
        signal: this.abort.signal,
        topic: s.topic,
        partition: s.partition,
      })
      .then((res) => this.parse(res, s, offset, batches))
      .then(
        (body) => this.answered(s, epoch, offset, started, body),
        (e: unknown) => this.failed(s, epoch, e),
      )
      .finally(() => this.notify());
  }

  /**
   * Records from `offset` on, and the partition's offsets: from RecordBatch bytes (CRCs verified,
   * offsets in the Kafka-* headers) or from the JSON record list. A server that answers a
   * record-batch fetch with JSON has no record-batch API: with format 'auto' it is remembered.
   */
  private parse(
    res: Response<WireRecordList | Buffer>,
    s: TopicPartitionState,
    offset: number,
    asked: boolean,
  ): Fetched {
    if (Buffer.isBuffer(res.body)) {
      this.transport.recordBatches.answered();
      const records = decodeFetchedRecords(
        res.body,
        s.topic,
        s.partition,
        offset,
        parseAbortedTransactions(res.headers.get(FETCH_HEADERS.abortedTransactions)),
      );
      const decoded = () => records;
      const header = (name: string, fallback: number) => {
        const v = res.headers.get(name);
        const n = v === null ? NaN : Number(v);
        return Number.isSafeInteger(n) ? n : fallback;
      };
      const last = records.at(-1);
      const nextOffset = header(FETCH_HEADERS.nextOffset, last ? last.offset + 1 : offset);
      return {
        records: decoded,
        hasRecords: records.length > 0,
        nextOffset,
        highWatermark: header(FETCH_HEADERS.highWatermark, s.highWatermark ?? nextOffset),
        logStartOffset: header(FETCH_HEADERS.logStartOffset, s.logStartOffset ?? 0),
      };
    }
    if (asked) this.transport.recordBatches.answeredWithJson(this.config.format);
    const body = res.body;
    const records = body.records.filter((r) => r.offset >= offset).map((r) => decodeRecord(s.topic, r));
    return {
      records: () => records,
      hasRecords: records.length > 0,
      nextOffset: body.next_offset,
      highWatermark: body.high_watermark,
      logStartOffset: body.log_start_offset,
    };
  }

  /** Whether poll() has records to hand out. */
  hasBuffered(): boolean {
    return this.subs.states().some((s) => !s.paused && s.buffered !== undefined && s.buffered.epoch === s.epoch);
  }

  /**
   * Hands out up to `max` buffered records, partition by partition (rotating the start so that no
   * partition starves), and advances positions past them.
   */
  drain(max: number): ConsumerRecord[] {
    const out: ConsumerRecord[] = [];
    const states = this.subs.states();
    const start = this.rotation++ % Math.max(1, states.length);
    for (let k = 0; k < states.length && out.length < max; k++) {
      const s = states[(start + k) % states.length]!;
      const b = s.buffered;
      if (!b || s.paused) continue;
      if (b.epoch !== s.epoch) {
        s.buffered = undefined;
        continue;
      }
      let records = b.records;
      if (records === undefined) {
        try {
          records = b.records = b.decode();
        } catch (e) {
          // A corrupt batch: poll() raises it, the position stays, and what was fetched after it
          // (the prefetch, a fetch in flight) is dropped, as after a seek to the same place.
          s.buffered = s.prefetched = undefined;
          s.epoch++;
          this.pendingError ??=
            e instanceof KafkaClientError ? e : new KafkaClientError('CORRUPT_MESSAGE', String(e), { cause: e });
          continue;
        }
      }
      while (b.index < records.length && out.length < max) {
        const r = records[b.index++]!;
        if (r.offset < s.position!) continue;
        out.push(r);
        s.position = r.offset + 1;
      }
      if (b.index >= records.length) {
        if (b.nextOffset > s.position!) s.position = b.nextOffset;
        s.buffered = s.prefetched?.epoch === s.epoch ? s.prefetched : undefined;
        s.prefetched = undefined;
        if (s.buffered) k--; // the same partition again, from the prefetched answer
      }
    }
    return out;
  }

  private rotation = 0;

  close(): void {
    this.abort.abort();
    this.notify();
  }
}
