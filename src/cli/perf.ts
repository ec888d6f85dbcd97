/**
 * `perf produce|consume`: kafka-producer-perf-test.sh and kafka-consumer-perf-test.sh. Output keeps
 * their shapes: a progress line per reporting interval, then the totals with latency percentiles.
 */
import { randomInt, randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { readFileSync } from 'node:fs';
import {
  clientConfig,
  connect,
  int,
  optionalInt,
  pairs,
  parse,
  propertiesFile,
  required,
  UsageError,
  withFileConnection,
  CONNECTION_HELP,
} from './args.js';
import type { Context } from './context.js';
import { fixed, percentile } from './format.js';

export const PERF_HELP = `Usage: kafka-log perf <produce|consume> [options]
  produce --topic T --num-records N (--record-size BYTES | --payload-file F [--payload-delimiter D (\\n)])
          [--throughput RECORDS_PER_SEC (-1: no cap)] [--acks 0|1|all] [--warmup-records N (0)]
          [--producer-props k=v [k=v ...]] [--producer.config FILE] [--reporting-interval MS (5000)]
  consume --topic T --messages N [--group G] [--from-latest] [--timeout MS (10000)] [--fetch-size BYTES]
          [--consumer-props k=v [k=v ...]] [--consumer.config FILE] [--reporting-interval MS (5000)]
          [--hide-header] [--show-detailed-stats (progress lines are always shown)]
Latency: produce, send() to acknowledgement; consume, arrival minus the record's timestamp.
--warmup-records: after the totals, a second line for the records after the first N (steady state).
${CONNECTION_HELP}`;

const MB = 1024 * 1024;

/** Latencies kept for the percentiles at most: Kafka's perf tool keeps as many, in an int[]. */
const MAX_LATENCY_SAMPLES = 500_000;

/**
 * Kafka's perf-test Stats: a window for the progress line (printed every reporting interval), and
 * for the percentiles the latency (in whole ms) of every `sampling`-th record, as Kafka's tool keeps
 * them: at most 4 MB, where every latency of a fixed-rate bench run was 70 MB of growing arrays in
 * the heap of the process under test.
 */
export class Stats {
  private readonly start = performance.now();
  private windowStart = this.start;
  private windowCount = 0;
  private windowBytes = 0;
  private windowMax = 0;
  private windowTotal = 0;
  count = 0;
  bytes = 0;
  private maxLatency = 0;
  private totalLatency = 0;
  private readonly sampling: number;
  private readonly latencies: Int32Array;
  private sampled = 0;

  constructor(
    private readonly verb: string,
    private readonly out: (line: string) => void,
    /** Records the run expects: sets the sampling interval. */
    expected: number,
  ) {
    this.sampling = Math.max(1, Math.floor(expected / Math.min(expected, MAX_LATENCY_SAMPLES)));
    this.latencies = new Int32Array(Math.floor(expected / this.sampling) + 1);
  }

  record(latencyMs: number, bytes: number): void {
    if (this.count % this.sampling === 0 && this.sampled < this.latencies.length)
      this.latencies[this.sampled++] = Math.round(latencyMs);
    this.count++;
    this.bytes += bytes;
    this.totalLatency += latencyMs;
    this.maxLatency = Math.max(this.maxLatency, latencyMs);
    this.windowCount++;
    this.windowBytes += bytes;
    this.windowTotal += latencyMs;
    this.windowMax = Math.max(this.windowMax, latencyMs);
  }

  progress(): void {
    const elapsed = (performance.now() - this.windowStart) / 1000;
    if (this.windowCount > 0) {
      this.out(
        `${this.windowCount} records ${this.verb}, ${fixed(this.windowCount / elapsed, 1)} records/sec (${fixed(this.windowBytes / MB / elapsed, 2)} MB/sec), ` +
          `${fixed(this.windowTotal / this.windowCount, 1)} ms avg latency, ${fixed(this.windowMax, 1)} ms max latency.`,
      );
    }
    this.windowStart = performance.now();
    this.windowCount = this.windowBytes = this.windowMax = this.windowTotal = 0;
  }

  /** `elapsedMs` defaults to the time since the start. */
  summary(elapsedMs = performance.now() - this.start): string {
    const s = elapsedMs / 1000;
    const sorted = Array.from(this.latencies.subarray(0, this.sampled)).sort((a, b) => a - b);
    const p = (q: number) => percentile(sorted, q);
    return (
      `${this.count} records ${this.verb}, ${fixed(this.count / s, 6)} records/sec (${fixed(this.bytes / MB / s, 2)} MB/sec), ` +
      `${fixed(this.count > 0 ? this.totalLatency / this.count : 0, 2)} ms avg latency, ${fixed(this.maxLatency, 2)} ms max latency, ` +
      `${p(0.5)} ms 50th, ${p(0.95)} ms 95th, ${p(0.99)} ms 99th, ${p(0.999)} ms 99.9th.`
    );
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * What the send loop does after record `i` (0-based) of a run that started at `start`: sleep this
 * many ms to stay at or under `throughput` (Kafka's ThroughputThrottler; -1: no cap), else every
 * 1024th record yield to the event loop, else (0) go on. Behind the rate the loop still yields:
 * the Java tool's sender is a thread of its own, but here a loop catching up without a break kept
 * the answers out for up to 200 ms, and their latency was the loop's, not the service's.
 */
export function sendPause(i: number, throughput: number, start: number, now: number): number | 'yield' {
  const ahead = throughput > 0 ? start + ((i + 1) * 1000) / throughput - now : 0;
  if (ahead > 1) return ahead;
  return (i & 1023) === 1023 ? 'yield' : 0;
}

export async function perfCommand(argv: string[], ctx: Context): Promise<void> {
  const [sub, ...rest] = argv;
  if (sub === 'produce') return perfProduce(rest, ctx);
  if (sub === 'consume') return perfConsume(rest, ctx);
  if (sub === undefined || sub === '--help' || sub === '-h') return ctx.out(PERF_HELP);
  throw new UsageError(`Unknown perf command ${sub}`);
}

export const PERF_PRODUCE_OPTIONS = {
  topic: { type: 'string' },
  'num-records': { type: 'string' },
  'record-size': { type: 'string' },
  'payload-file': { type: 'string' },
  'payload-delimiter': { type: 'string' },
  throughput: { type: 'string' },
  acks: { type: 'string' },
  'producer-props': { type: 'string', multiple: true },
  'producer.config': { type: 'string' },
  'reporting-interval': { type: 'string' },
  'warmup-records': { type: 'string' },
} as const;

/** kafka-producer-perf-test.sh options with no meaning here. */
export const PERF_PRODUCE_UNSUPPORTED: Record<string, string> = {
  'print-metrics': "the client has no JMX metrics; the summary line gives Kafka's figures",
  'transactional-id': 'there are no transactions yet',
  'transaction-duration-ms': 'there are no transactions yet',
};

export const PERF_CONSUME_OPTIONS = {
  topic: { type: 'string' },
  messages: { type: 'string' },
  group: { type: 'string' },
  'from-latest': { type: 'boolean' },
  timeout: { type: 'string' },
  'fetch-size': { type: 'string' },
  'consumer-props': { type: 'string', multiple: true },
  'consumer.config': { type: 'string' },
  'reporting-interval': { type: 'string' },
  'hide-header': { type: 'boolean' },
  'show-detailed-stats': { type: 'boolean' },
} as const;

/** kafka-consumer-perf-test.sh options with no meaning here. */
export const PERF_CONSUME_UNSUPPORTED: Record<string, string> = {
  'print-metrics': "the client has no JMX metrics; the summary line gives Kafka's figures",
  'date-format': 'times are printed as the Java tool prints them by default (yyyy-MM-dd HH:mm:ss:SSS)',
  threads: 'one consumer per run (the option is deprecated in Kafka too)',
  'num-fetch-threads': 'one consumer per run (the option is deprecated in Kafka too)',
  'socket-buffer-size': 'requests travel over HTTP, not a Kafka socket',
};

/** --payload-file: the payloads to pick from at random, split by the delimiter (as the Java tool). */
function payloadsFromFile(path: string, delimiter: string): Buffer[] {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    throw new UsageError(
      `cannot read --payload-file ${path}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`,
    );
  }
  const payloads = text
    .split(delimiter.replace(/\\n/g, '\n').replace(/\\t/g, '\t'))
    .filter((p) => p !== '')
    .map((p) => Buffer.from(p));
  if (payloads.length === 0) throw new UsageError(`--payload-file ${path} has no payload`);
  return payloads;
}

async function perfProduce(argv: string[], ctx: Context): Promise<void> {
  const parsed = parse(argv, PERF_PRODUCE_OPTIONS, PERF_PRODUCE_UNSUPPORTED).values;
  if (parsed.help) return ctx.out(PERF_HELP);
  const file = propertiesFile(parsed['producer.config']);
  const values = withFileConnection(parsed, file);
  const topic = required(values.topic, '--topic');
  const numRecords = int(values['num-records'], '--num-records', 1);
  if ((values['record-size'] === undefined) === (values['payload-file'] === undefined))
    throw new UsageError('give one of --record-size or --payload-file');
  const payloads =
    values['payload-file'] !== undefined
      ? payloadsFromFile(values['payload-file'], values['payload-delimiter'] ?? '\n')
      : undefined;
  const recordSize = payloads ? 0 : int(values['record-size'], '--record-size', 1);
  const throughput = values.throughput === undefined ? -1 : int(values.throughput, '--throughput', -1);
  const reportingMs = optionalInt(values['reporting-interval'], '--reporting-interval', 1) ?? 5000;
  const warmupRecords = optionalInt(values['warmup-records'], '--warmup-records', 0) ?? 0;
  if (warmupRecords >= numRecords) throw new UsageError('--warmup-records must be less than --num-records');
  // As the Java tool: --producer-props win over --producer.config.
  const props = { ...clientConfig(file), ...clientConfig(pairs(values['producer-props'], '--producer-props')) };
  if (values.acks !== undefined) {
    if (!['0', '1', 'all', '-1'].includes(values.acks)) throw new UsageError('--acks must be 0, 1, all or -1');
    props.acks = values.acks === 'all' ? 'all' : Number(values.acks);
  }
  const producer = connect(values, ctx.env).producer(props);
  // Like the Java tool: one payload of random upper-case letters, sent over and over.
  const payload = Buffer.alloc(recordSize);
  for (let i = 0; i < recordSize; i++) payload[i] = 65 + randomInt(26);
  const stats = new Stats('sent', ctx.out, numRecords);
  // As the Java tool's --warmup-records (KIP-1052): the first N records count in the totals only.
  let steady: { stats: Stats; start: number } | undefined;
  const ticker = setInterval(() => stats.progress(), reportingMs);
  const maxOutstanding = Math.max(
    1,
    Math.floor((32 * MB) / ((payloads ? Math.max(...payloads.map((p) => p.length)) : recordSize) + 64)),
  );
  let outstanding = 0;
  let slot: (() => void) | undefined;
  const settled = () => {
    outstanding--;
    const s = slot;
    slot = undefined;
    s?.();
  };
  let failures = 0;
  let firstError: Error | undefined;
  const start = performance.now();
  try {
    for (let i = 0; i < numRecords && !ctx.signal.aborted; i++) {
      while (outstanding >= maxOutstanding) await new Promise<void>((r) => (slot = r));
      const sentAt = performance.now();
      outstanding++;
      const value = payloads ? payloads[randomInt(payloads.length)]! : payload;
      if (warmupRecords > 0 && i === warmupRecords)
        steady = { stats: new Stats('sent', ctx.out, numRecords - warmupRecords), start: sentAt };
      const steadyStats = steady?.stats;
      // One callback per record, as the Java tool's PerfCallback.
      producer.send({ topic, messages: [{ value }] }).then(
        () => {
          const latencyMs = performance.now() - sentAt;
          stats.record(latencyMs, value.length);
          steadyStats?.record(latencyMs, value.length);
          settled();
        },
        (e: Error) => {
          failures++;
          firstError ??= e;
          settled();
        },
      );
      const pause = sendPause(i, throughput, start, performance.now());
      if (pause === 'yield') await new Promise((r) => setImmediate(r));
      else if (pause > 0) await sleep(pause);
    }
    await producer.flush();
    while (outstanding > 0) await new Promise<void>((r) => (slot = r));
  } finally {
    clearInterval(ticker);
    await producer.close({ timeoutMs: 30_000 }).catch(() => {});
  }
  const end = performance.now();
  ctx.out(stats.summary(end - start));
  if (steady) ctx.out(`${steady.stats.summary(end - steady.start)} (steady state)`);
  if (firstError) throw new Error(`${failures} of ${numRecords} records failed; the first: ${firstError.message}`);
}

const javaTime = (ms: number) => {
  const d = new Date(ms);
  const p = (n: number, w = 2) => String(n).padStart(w, '0');
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}:${p(d.getMilliseconds(), 3)}`;
};

async function perfConsume(argv: string[], ctx: Context): Promise<void> {
  const parsed = parse(argv, PERF_CONSUME_OPTIONS, PERF_CONSUME_UNSUPPORTED).values;
  if (parsed.help) return ctx.out(PERF_HELP);
  const file = propertiesFile(parsed['consumer.config']);
  const values = withFileConnection(parsed, file);
  const topic = required(values.topic, '--topic');
  const messages = int(values.messages, '--messages', 1);
  const timeoutMs = optionalInt(values.timeout, '--timeout', 1) ?? 10_000;
  const reportingMs = optionalInt(values['reporting-interval'], '--reporting-interval', 1) ?? 5000;
  const fetchSize = optionalInt(values['fetch-size'], '--fetch-size', 1);
  const consumer = connect(values, ctx.env).consumer({
    ...clientConfig(file),
    ...(fetchSize !== undefined ? { maxPartitionFetchBytes: fetchSize } : {}),
    ...clientConfig(pairs(values['consumer-props'], '--consumer-props')),
    groupId: values.group ?? `perf-consumer-${randomUUID().slice(0, 8)}`,
    autoOffsetReset: values['from-latest'] ? 'latest' : 'earliest',
  });
  const stats = new Stats('consumed', ctx.out, messages);
  const ticker = setInterval(() => stats.progress(), reportingMs);
  const startWall = Date.now();
  const start = performance.now();
  let assignedAt: number | undefined;
  let lastRecordAt = performance.now();
  try {
    await consumer.subscribe({
      topics: [topic],
      listener: { onPartitionsAssigned: () => void (assignedAt ??= performance.now()) },
    });
    while (stats.count < messages && !ctx.signal.aborted) {
      const records = await consumer.poll({ timeoutMs: Math.min(1000, timeoutMs) });
      const now = performance.now();
      if (records.length === 0) {
        if (now - lastRecordAt >= timeoutMs) {
          ctx.err(
            `WARNING: Exiting before consuming the expected number of messages: timeout (${timeoutMs} ms) exceeded.`,
          );
          break;
        }
        continue;
      }
      lastRecordAt = now;
      const wall = Date.now();
      for (const r of records.slice(0, messages - stats.count))
        stats.record(Math.max(0, wall - r.timestamp), (r.key?.length ?? 0) + (r.value?.length ?? 0));
    }
  } finally {
    clearInterval(ticker);
    await consumer.close().catch(() => {});
  }
  const end = performance.now();
  const elapsedS = (end - start) / 1000;
  const rebalanceMs = Math.round((assignedAt ?? end) - start);
  const fetchS = Math.max(1e-9, (end - (assignedAt ?? start)) / 1000);
  const mb = stats.bytes / MB;
  if (!values['hide-header'])
    ctx.out(
      'start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec, rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec',
    );
  ctx.out(
    [
      javaTime(startWall),
      javaTime(startWall + (end - start)),
      fixed(mb, 4),
      fixed(mb / elapsedS, 4),
      stats.count,
      fixed(stats.count / elapsedS, 4),
      rebalanceMs,
      Math.round(fetchS * 1000),
      fixed(mb / fetchS, 4),
      fixed(stats.count / fetchS, 4),
    ].join(', '),
  );
  ctx.out(stats.summary(end - start));
}
