import { setTimeout as sleep } from 'node:timers/promises';
import * as hdr from 'hdr-histogram-js';
import { FETCH_FIXTURE_HEADERS, WIRE, type BodyFormat } from './formats.js';
import { createClient, type ClientKind, type HttpClient, type Reply } from './http-client.js';
import { RECORD_BYTES } from './payload.js';

/**
 * Load-generating jobs. Each runs in whichever process calls `runJob` (the bench itself, or a
 * forked `load-worker.ts`), warms up, then measures a fixed window. Latencies go into HDR
 * histograms in microseconds; results cross process boundaries as plain JSON, histograms as
 * compressed base64.
 */
export type Acks = '0' | '1' | 'all';

interface Common {
  base: string;
  client: ClientKind;
  format: BodyFormat;
  warmupMs: number;
  durationMs: number;
}

/**
 * Closed loop: `producers` connections, each sending the same `batch` body back to back. `${p}` in
 * the path (the batch format names the partition) goes round robin over `partitions`, one
 * partition per request, as the json format's keyless records are sticky on the server.
 */
export interface ProduceJob extends Common {
  kind: 'produce';
  path: string;
  partitions: number;
  batch: number;
  producers: number;
}

/**
 * Closed loop: `consumers` connections, each reading `partitions` from offset 0 with `maxBytes`
 * per fetch and starting over when it reaches the high watermark (the log is read again, as
 * another consumer group would).
 */
export interface FetchJob extends Common {
  kind: 'fetch';
  /** `${p}` in the path is replaced by the partition, `${offset}` by the offset. */
  pathTemplate: string;
  partitions: number;
  consumers: number;
  /** For a fixed response (the ceiling): records per response, as the next_offset field is not used. */
  fixedRecords?: number;
}

/**
 * Open loop at a fixed rate (requests are due on a schedule whatever the answers do, and latency
 * counts from when a request was due, so a stall is not hidden: no coordinated omission), with
 * one consumer per partition polling the tail for end-to-end latency.
 */
export interface LatencyJob extends Common {
  kind: 'latency';
  /** As in ProduceJob. */
  producePath: string;
  /** As in FetchJob. */
  fetchPathTemplate: string;
  partitions: number;
  batch: number;
  requestsPerSecond: number;
  /** Requests in flight at most; later ones wait (and their latency shows it). */
  maxInFlight: number;
  /** Whether consumers tail the partitions (end-to-end latency); without them only produce latency is measured. */
  consume: boolean;
}

export type Job = ProduceJob | FetchJob | LatencyJob;

export interface JobResult {
  /** The measured window. */
  window: { ms: number; requests: number; records: number; bytesSent: number; bytesReceived: number };
  /** Warm-up plus window: what the server's counters saw. */
  total: { ms: number; requests: number; records: number };
  /** Failed requests or records by error name (or HTTP status). */
  errors: Record<string, number>;
  /** Request latency in the window, µs, compressed base64. */
  latency: string;
  /** End-to-end latency (send to seen by a consumer), µs: latency jobs only. */
  e2e?: string;
  /** CPU this process used during the job, µs (user + system). */
  cpuMicros: number;
  /** Sample response, for the ceiling's fetch fixture. */
  sample?: FetchSample;
}

/** A fetch answer of the server, replayed by the ceiling. */
export interface FetchSample {
  /** base64 (results cross process boundaries as JSON). */
  body: string;
  headers: Record<string, string>;
  records: number;
}

const nowMicros = () => (performance.timeOrigin + performance.now()) * 1000;
export const newHistogram = () =>
  hdr.build({ lowestDiscernibleValue: 1, highestTrackableValue: 120_000_000, numberOfSignificantValueDigits: 3 });

class Window {
  readonly startedAt = performance.now();
  readonly measureFrom: number;
  readonly endAt: number;
  requests = 0;
  records = 0;
  bytesSent = 0;
  bytesReceived = 0;
  totalRequests = 0;
  totalRecords = 0;
  readonly errors: Record<string, number> = {};
  readonly latency = newHistogram();

  constructor(warmupMs: number, durationMs: number) {
    this.measureFrom = this.startedAt + warmupMs;
    this.endAt = this.measureFrom + durationMs;
  }

  get open() {
    return performance.now() < this.endAt;
  }

  /** Counts a finished request; only requests both sent and answered inside the window are measured. */
  done(sentAt: number, latencyMicros: number, records: number, sent: number, received: number) {
    const at = performance.now();
    this.totalRequests++;
    this.totalRecords += records;
    if (sentAt >= this.measureFrom && at <= this.endAt) {
      this.requests++;
      this.records += records;
      this.bytesSent += sent;
      this.bytesReceived += received;
      this.latency.recordValue(Math.max(1, Math.round(latencyMicros)));
    }
  }

  error(name: string, count = 1) {
    this.errors[name] = (this.errors[name] ?? 0) + count;
  }

  result(cpuStart: NodeJS.CpuUsage, extra: Partial<JobResult> = {}): JobResult {
    const cpu = process.cpuUsage(cpuStart);
    return {
      window: {
        ms: this.endAt - this.measureFrom,
        requests: this.requests,
        records: this.records,
        bytesSent: this.bytesSent,
        bytesReceived: this.bytesReceived,
      },
      total: { ms: performance.now() - this.startedAt, requests: this.totalRequests, records: this.totalRecords },
      errors: this.errors,
      latency: hdr.encodeIntoCompressedBase64(this.latency),
      cpuMicros: cpu.user + cpu.system,
      ...extra,
    };
  }
}

/** How many records of a produce answer failed, by error name (reads the body only when needed). */
function produceFailures(reply: Reply, batch: number): Record<string, number> | undefined {
  if (reply.status === 207) {
    if (reply.body.subarray(-16).toString('latin1').endsWith('"failures":[]}')) return undefined;
    const parsed = JSON.parse(reply.body.toString('utf8')) as { failures: { error?: string; error_code?: number }[] };
    const out: Record<string, number> = {};
    for (const f of parsed.failures)
      out[f.error ?? String(f.error_code)] = (out[f.error ?? String(f.error_code)] ?? 0) + 1;
    return Object.keys(out).length > 0 ? out : undefined;
  }
  if (reply.status >= 200 && reply.status < 300) return undefined; // e.g. acks=0 answering 204
  let name = `HTTP ${reply.status}`;
  try {
    name = (JSON.parse(reply.body.toString('utf8')) as { error?: string }).error ?? name;
  } catch {
    // not JSON: keep the status
  }
  return { [name]: batch };
}

/** Round robin over the partitions: `${p}` in the path, one partition per request. */
function partitionPaths(template: string, partitions: number): () => string {
  const paths = Array.from({ length: partitions }, (_, p) => template.replace('${p}', String(p)));
  let next = 0;
  return () => paths[next++ % partitions]!;
}

async function produce(job: ProduceJob): Promise<JobResult> {
  const client = createClient(job.client, job.base, job.producers);
  const wire = WIRE[job.format];
  const body = wire.produceBody(job.batch);
  const path = partitionPaths(job.path, job.partitions);
  const w = new Window(job.warmupMs, job.durationMs);
  const cpu = process.cpuUsage();
  const producer = async () => {
    while (w.open) {
      const sentAt = performance.now();
      let reply: Reply;
      try {
        reply = await client.send('POST', path(), body, wire.produceHeaders);
      } catch (e) {
        w.error(`connection: ${(e as Error).message}`);
        await sleep(10);
        continue;
      }
      const failed = produceFailures(reply, job.batch);
      let bad = 0;
      for (const [name, n] of Object.entries(failed ?? {})) {
        w.error(name, n);
        bad += n;
      }
      w.done(sentAt, (performance.now() - sentAt) * 1000, job.batch - bad, body.byteLength, reply.bytes);
    }
  };
  await Promise.all(Array.from({ length: job.producers }, producer));
  client.close();
  return w.result(cpu);
}

const fetchPath = (template: string, partition: number, offset: number) =>
  template.replace('${p}', String(partition)).replace('${offset}', String(offset));

async function consume(job: FetchJob): Promise<JobResult> {
  const client = createClient(job.client, job.base, job.consumers);
  const wire = WIRE[job.format];
  const w = new Window(job.warmupMs, job.durationMs);
  const cpu = process.cpuUsage();
  let sample: FetchSample | undefined;
  const consumer = async (id: number) => {
    const offsets = new Array<number>(job.partitions).fill(0);
    for (let turn = id; w.open; turn++) {
      const p = turn % job.partitions;
      const sentAt = performance.now();
      let reply: Reply;
      try {
        // The whole answer only until a sample for the ceiling is taken.
        reply = await client.send(
          'GET',
          fetchPath(job.pathTemplate, p, offsets[p]!),
          undefined,
          wire.fetchHeaders,
          sample === undefined && job.fixedRecords === undefined ? 'all' : 'tail',
        );
      } catch (e) {
        w.error(`connection: ${(e as Error).message}`);
        await sleep(10);
        continue;
      }
      if (reply.status !== 200) {
        w.error(`HTTP ${reply.status}`);
        offsets[p] = 0;
        continue;
      }
      let records: number;
      if (job.fixedRecords !== undefined) records = job.fixedRecords;
      else {
        const position = wire.position(reply);
        const next = position.next ?? offsets[p]!;
        const hw = position.highWatermark ?? next;
        records = next - offsets[p]!;
        offsets[p] = next >= hw ? 0 : next;
        if (sample === undefined && records > 0) sample = fetchSample(reply, records);
      }
      w.done(sentAt, (performance.now() - sentAt) * 1000, records, 0, reply.bytes);
    }
  };
  await Promise.all(Array.from({ length: job.consumers }, (_, i) => consumer(i)));
  client.close();
  return w.result(cpu, sample !== undefined ? { sample } : {});
}

function fetchSample(reply: Reply, records: number): FetchSample {
  const headers: Record<string, string> = {};
  for (const name of FETCH_FIXTURE_HEADERS) {
    const v = reply.headers[name];
    if (typeof v === 'string') headers[name] = v;
  }
  return { body: reply.body.toString('base64'), headers, records };
}

async function latency(job: LatencyJob): Promise<JobResult> {
  const client = createClient(job.client, job.base, job.maxInFlight + job.partitions);
  const wire = WIRE[job.format];
  const bodies = wire.stamped(job.batch);
  const producePath = partitionPaths(job.producePath, job.partitions);
  const w = new Window(job.warmupMs, job.durationMs);
  const e2e = newHistogram();
  const cpu = process.cpuUsage();
  const interval = 1000 / job.requestsPerSecond;

  // Consumers: the topic is new, so each starts at offset 0 and polls the tail.
  let producing = true;
  const consumer = async (p: number) => {
    let offset = 0;
    while (producing) {
      let reply: Reply;
      const askedAt = performance.now();
      try {
        // A long poll where the server supports it (min_bytes / max_wait_ms); ignored otherwise.
        reply = await client.send(
          'GET',
          `${fetchPath(job.fetchPathTemplate, p, offset)}&min_bytes=1&max_wait_ms=500`,
          undefined,
          wire.fetchHeaders,
        );
      } catch {
        await sleep(1);
        continue;
      }
      const seenAt = nowMicros();
      const next = wire.position(reply).next ?? offset;
      if (next === offset) {
        if (performance.now() - askedAt < 5) await sleep(1); // answered empty at once (no long poll): poll again in 1 ms
        continue;
      }
      if (performance.now() >= w.measureFrom)
        for (const sentAt of wire.stamps(reply, offset)) e2e.recordValue(Math.max(1, Math.round(seenAt - sentAt)));
      offset = next;
    }
  };
  const consumers = job.consume ? Array.from({ length: job.partitions }, (_, p) => consumer(p)) : [];

  // Producer: request i is due at start + i * interval.
  let inFlight = 0;
  const pending: number[] = [];
  const sends: Promise<void>[] = [];
  const send = (dueAt: number) => {
    inFlight++;
    const dueMicros = (performance.timeOrigin + dueAt) * 1000;
    const body = bodies.body(dueMicros);
    sends.push(
      client.send('POST', producePath(), body, wire.produceHeaders).then(
        (reply) => {
          inFlight--;
          bodies.release(body);
          const failed = produceFailures(reply, job.batch);
          let bad = 0;
          for (const [name, n] of Object.entries(failed ?? {})) {
            w.error(name, n);
            bad += n;
          }
          w.done(dueAt, (performance.now() - dueAt) * 1000, job.batch - bad, body.byteLength, reply.bytes);
          if (pending.length > 0) send(pending.shift()!);
        },
        (e: Error) => {
          inFlight--;
          bodies.release(body);
          w.error(`connection: ${e.message}`);
          if (pending.length > 0) send(pending.shift()!);
        },
      ),
    );
  };
  // Sends whatever is due, then sleeps until the next one is (timers fire up to ~1 ms late; that
  // delay counts in the latency, which is measured from when the request was due).
  const start = performance.now();
  for (let i = 0; ; ) {
    const now = performance.now();
    for (; start + i * interval <= now; i++) {
      const dueAt = start + i * interval;
      if (dueAt >= w.endAt) break;
      if (inFlight < job.maxInFlight) send(dueAt);
      else pending.push(dueAt);
    }
    const nextDue = start + i * interval;
    if (nextDue >= w.endAt) break;
    await sleep(Math.max(0, nextDue - performance.now()));
  }
  while (pending.length > 0 || inFlight > 0) await sleep(5);
  await Promise.all(sends);
  if (job.consume) await sleep(200); // let the consumers see the last records
  producing = false;
  await Promise.all(consumers);
  client.close();
  return w.result(cpu, job.consume ? { e2e: hdr.encodeIntoCompressedBase64(e2e) } : {});
}

export function runJob(job: Job): Promise<JobResult> {
  switch (job.kind) {
    case 'produce':
      return produce(job);
    case 'fetch':
      return consume(job);
    case 'latency':
      return latency(job);
  }
}

/** Adds up results of the same job run in several processes. */
export function mergeResults(results: JobResult[]): JobResult {
  if (results.length === 1) return results[0]!;
  const latency = newHistogram();
  const e2e = newHistogram();
  const errors: Record<string, number> = {};
  for (const r of results) {
    latency.add(hdr.decodeFromCompressedBase64(r.latency));
    if (r.e2e) e2e.add(hdr.decodeFromCompressedBase64(r.e2e));
    for (const [k, v] of Object.entries(r.errors)) errors[k] = (errors[k] ?? 0) + v;
  }
  const sum = (f: (r: JobResult) => number) => results.reduce((n, r) => n + f(r), 0);
  const sample = results.find((r) => r.sample)?.sample;
  return {
    window: {
      ms: Math.max(...results.map((r) => r.window.ms)),
      requests: sum((r) => r.window.requests),
      records: sum((r) => r.window.records),
      bytesSent: sum((r) => r.window.bytesSent),
      bytesReceived: sum((r) => r.window.bytesReceived),
    },
    total: {
      ms: Math.max(...results.map((r) => r.total.ms)),
      requests: sum((r) => r.total.requests),
      records: sum((r) => r.total.records),
    },
    errors,
    latency: hdr.encodeIntoCompressedBase64(latency),
    ...(results.some((r) => r.e2e) ? { e2e: hdr.encodeIntoCompressedBase64(e2e) } : {}),
    cpuMicros: sum((r) => r.cpuMicros),
    ...(sample ? { sample } : {}),
  };
}

export { RECORD_BYTES, type HttpClient };
