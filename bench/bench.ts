/**
 * `npm run bench [-- --quick] [-- --profile produce|fetch]`: throughput, latency and request cost of
 * the local server (src/server.ts on the embedded backend, in a temporary data directory), side
 * by side with the machine's own ceiling for the same HTTP traffic (bench/ceiling-server.ts).
 * Prints markdown tables and writes every figure to bench/results/bench-<time>.json.
 *
 * Options:
 *   --quick              a subset of the matrix with 2 s windows (under a minute)
 *   --window-ms N        measured window per cell (default 3000; quick 2000)
 *   --producers N        concurrent producer (and consumer) connections (default 4)
 *   --load in-process|workers|auto   where load is generated (default auto: measured in a full run)
 *   --client node-http|fetch         HTTP client of the load generator (default node-http; auto measures)
 *   --profile produce|fetch          run only the headline cell for 20 s with the server under
 *                                     --cpu-prof, then print its top self-time functions
 *   --out FILE           where to write the JSON (default bench/results/bench-<time>.json)
 *   --no-counters        run the server without the counting store wrappers (no request counts or cost)
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { cpus, loadavg, tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import type { OperationCounts } from '../src/storage/counting-stores.js';
import { costPerGib, diffCounts, PRICES, type CostPerGib } from './cost.js';
import { createClient, type ClientKind } from './http-client.js';
import { RECORD_BYTES, type Acks, type Job, type JobResult } from './load.js';
import { produceBody } from './payload.js';
import { forkedWorkers, inProcess, procStats, REPO, sampleRss, startServer, type ChildServer, type LoadRunner } from './processes.js';
import { summarize } from './profile-summary.js';
import { fixed, int, mib, ms, pct, percentiles, table, type Percentiles } from './report.js';

const { values: opts } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    'window-ms': { type: 'string' },
    producers: { type: 'string' },
    load: { type: 'string' },
    client: { type: 'string' },
    profile: { type: 'string' },
    out: { type: 'string' },
    'no-counters': { type: 'boolean', default: false },
  },
});
const COUNTERS = !opts['no-counters'];
const QUICK = opts.quick!;
const PROFILE = opts.profile as 'produce' | 'fetch' | undefined;
const WINDOW_MS = Number(opts['window-ms'] ?? (QUICK ? 2000 : 3000));
const WARMUP_MS = QUICK ? 500 : 1000;
const PRODUCERS = Number(opts.producers ?? 4);
const FETCH_MAX_BYTES = 1024 * 1024;
const MiB = 2 ** 20;

/** kafka-producer-perf-test's MB/sec: record bytes / 2^20 per second. */
const mbPerSec = (recordsPerSec: number) => (recordsPerSec * RECORD_BYTES) / MiB;

interface Cell {
  acks: Acks;
  replicas: number;
  minInsync: number;
  partitions: number;
  batch: number;
}

interface Measured {
  result: JobResult;
  counts: OperationCounts;
  serverCpuMicros: number;
  peakRssBytes: number;
}

interface ProduceRow extends Cell {
  producers: number;
  recordsPerSec: number;
  mbPerSec: number;
  latency: Percentiles;
  serverCpuCores: number;
  loadCpuCores: number;
  errors: Record<string, number>;
  perGib: CostPerGib;
  objectPutsPerMiB: number;
  metadataWritesPerPartitionRequest: number;
  requestBytes: number;
  peakRssBytes: number;
}

interface FetchRow {
  replicas: number;
  minInsync: number;
  partitions: number;
  writtenInBatchesOf: number;
  consumers: number;
  recordsPerSec: number;
  mbPerSec: number;
  latency: Percentiles;
  serverCpuCores: number;
  loadCpuCores: number;
  errors: Record<string, number>;
  perGib: CostPerGib;
  responseBytes: number;
  peakRssBytes: number;
}

interface CeilingRow {
  kind: 'produce' | 'fetch';
  /** records/s of every run; the row shows the best. */
  runs: number[];
  batch: number;
  recordsPerSec: number;
  mbPerSec: number;
  latency: Percentiles;
  serverCpuCores: number;
}

interface LatencyRun {
  peakRssBytes: number;
  offeredRecordsPerSec: number;
  achievedRecordsPerSec: number;
  produce: Percentiles;
  endToEnd?: Percentiles;
  errors: Record<string, number>;
}

/**
 * Latency of one cell at half its measured maximum, twice: producers alone (produce latency), and
 * producers with one consumer per partition tailing the log (end-to-end latency). Consumers cost
 * the server as much as producers, so the second load is half the pipeline's maximum,
 * 1 / (1 / produce max + 1 / fetch max), not half the produce maximum.
 */
interface LatencyRow extends Cell {
  produceOnly: LatencyRun;
  withConsumer?: LatencyRun;
}

/**
 * Flushes dirty pages before a cell, so a cell does not pay for the previous cells' writeback: with
 * gigabytes of dirty page cache, this VM's disk stalls file operations for up to a second.
 */
const flushPageCache = () => execFileSync('sync');

/** The 1-minute load average before the bench started: other work on the machine skews every figure. */
const LOAD_AT_START = loadavg()[0]!;

const log = (msg: string) => process.stderr.write(`[bench ${fixed((performance.now() - T0) / 1000, 1)}s] ${msg}\n`);
const T0 = performance.now();

async function main() {
  const startedAt = new Date();
  const tmp = await mkdtemp(join(tmpdir(), 'log-bench-'));
  const resultsDir = join(REPO, 'bench/results');
  const profileDir = join(resultsDir, 'profiles');
  mkdirSync(resultsDir, { recursive: true });
  const ceilingDir = join(tmp, 'ceiling');
  if (LOAD_AT_START > 0.5) log(`WARNING: the load average is ${fixed(LOAD_AT_START, 2)} before the bench starts; other work will skew the figures`);
  log(`data in ${tmp}; ${QUICK ? 'quick' : PROFILE ? `profile ${PROFILE}` : 'full'} run, ${WINDOW_MS} ms windows after ${WARMUP_MS} ms warm-up, ${PRODUCERS} producers`);

  const profileStamp = Date.now();
  const [server, ceiling] = await Promise.all([
    // The in-process maintenance scheduler (segment merge, retention, orphan GC) is off: it would
    // rewrite the cells' data at random moments. The bench measures the request path only.
    startServer('src/server.ts', ['--port', '0', '--data-dir', join(tmp, 'server'), '--replicas', '3', '--scheduler-interval-ms', '0'], {
      env: { BENCH_COUNTERS: COUNTERS ? '1' : '0', STORAGE_BACKEND: 'local' },
      // One profile per thread (tsx's loader runs in a worker thread): the busiest is the server's.
      nodeArgs: PROFILE ? ['--cpu-prof', `--cpu-prof-dir=${join(profileDir, `${PROFILE}-${profileStamp}`)}`] : [],
    }),
    PROFILE ? undefined : startServer('bench/ceiling-server.ts', ['--port', '0', '--data-dir', ceilingDir]),
  ]);
  const cleanup = async () => {
    await Promise.all([server.stop(), ceiling?.stop()]);
    rmSync(tmp, { recursive: true, force: true });
  };
  try {
    const out = await run(server, ceiling, ceilingDir);
    const finishedAt = new Date();
    await server.stop();
    if (PROFILE) {
      const dir = join(profileDir, `${PROFILE}-${profileStamp}`);
      const files = readdirSync(dir).map((f) => join(dir, f));
      const busiest = files.sort((a, b) => statSync(b).size - statSync(a).size)[0];
      if (busiest) console.log(`\n${summarize(busiest, 20)}`);
    }
    const durationS = (finishedAt.getTime() - startedAt.getTime()) / 1000;
    console.log(`\nRun took ${fixed(durationS, 0)} s.`);
    const path = opts.out ?? join(resultsDir, `bench-${startedAt.toISOString().replace(/[:.]/g, '-')}${QUICK ? '-quick' : ''}.json`);
    writeFileSync(path, JSON.stringify({ startedAt, durationS, ...out }, null, 2));
    console.log(`Results: ${path}`);
  } finally {
    await cleanup();
  }
}

async function run(server: ChildServer, ceiling: ChildServer | undefined, ceilingDir: string) {
  const api = `${server.url}/v3/clusters/local`;
  const admin = createClient('node-http', server.url, 2);
  const call = async (method: 'GET' | 'POST' | 'DELETE', path: string, body?: unknown) => {
    const r = await admin.send(method, path, body === undefined ? undefined : Buffer.from(JSON.stringify(body)));
    return { status: r.status, body: r.body.byteLength > 0 ? (JSON.parse(r.body.toString('utf8')) as Record<string, unknown>) : {} };
  };
  const noCounts = (): OperationCounts => {
    const objects = { put: 0, putBytes: 0, get: 0, getBytes: 0, head: 0, list: 0, delete: 0, deletedKeys: 0, errors: 0 };
    const metadata = { get: 0, getMisses: 0, query: 0, queryItems: 0, put: 0, conditionalPut: 0, delete: 0, conditionFailed: 0, errors: 0, readUnits: 0, writeUnits: 0 };
    return { objects, perStore: [], metadata };
  };
  const counters = async () => (COUNTERS ? ((await call('GET', '/debug/counters')).body as unknown as OperationCounts) : noCounts());
  let topicSeq = 0;
  const createTopic = async (cell: Omit<Cell, 'acks' | 'batch'>, prefix: string) => {
    const name = `${prefix}-${topicSeq++}`;
    const res = await call('POST', '/v3/clusters/local/topics', {
      topic_name: name,
      partitions_count: cell.partitions,
      replication_factor: cell.replicas,
      configs: [{ name: 'min.insync.replicas', value: String(cell.minInsync) }],
    });
    if (res.status !== 201) throw new Error(`creating ${name}: ${res.status} ${JSON.stringify(res.body)}`);
    return name;
  };
  const deleteTopic = async (name: string) => {
    await call('DELETE', `/v3/clusters/local/topics/${name}`);
  };
  const producePath = (topic: string, acks: Acks) => `/v3/clusters/local/topics/${topic}/records:batch?acks=${acks}`;
  const fetchTemplate = (topic: string) => `/v3/clusters/local/topics/${topic}/partitions/\${p}/records?offset=\${offset}&max_bytes=${FETCH_MAX_BYTES}&format=string`;

  // Does the server honour ?acks=? A server that parses it rejects acks=2; one that ignores it appends.
  const probe = await createTopic({ replicas: 1, minInsync: 1, partitions: 1 }, 'probe');
  const probeReply = await admin.send('POST', producePath(probe, '2' as Acks), produceBody(1));
  const acks0Reply = await admin.send('POST', producePath(probe, '0'), produceBody(1));
  const acksSupported = probeReply.status >= 400 && probeReply.status < 500;
  log(`acks: ${acksSupported ? 'the server parses ?acks=' : `the server ignores ?acks= (acks=2 answered ${probeReply.status}); acks=0/1 rows run as acks=all`}; acks=0 answers ${acks0Reply.status}`);
  await deleteTopic(probe);

  const measure = async (runner: LoadRunner, job: Job): Promise<Measured> => {
    const before = await counters();
    const cpu0 = procStats(server.pid).cpuMicros;
    const rss = sampleRss(server.pid);
    const result = await runner.run(job);
    const peakRssBytes = rss.stop();
    const serverCpuMicros = procStats(server.pid).cpuMicros - cpu0;
    return { result, counts: diffCounts(await counters(), before), serverCpuMicros, peakRssBytes };
  };

  let client = (opts.client as ClientKind | undefined) ?? 'node-http';
  let runner: LoadRunner = inProcess;
  const base = { base: server.url, warmupMs: WARMUP_MS, durationMs: WINDOW_MS };

  const produceCell = async (cell: Cell, topic: string, r: LoadRunner = runner, c: ClientKind = client): Promise<ProduceRow> => {
    const body = produceBody(cell.batch);
    const m = await measure(r, { ...base, client: c, kind: 'produce', path: producePath(topic, cell.acks), batch: cell.batch, producers: PRODUCERS });
    const w = m.result.window;
    const recordsPerSec = (w.records * 1000) / w.ms;
    const totalBytes = m.result.total.records * RECORD_BYTES;
    const requests = m.result.total.requests;
    return {
      ...cell,
      producers: PRODUCERS,
      recordsPerSec,
      mbPerSec: mbPerSec(recordsPerSec),
      latency: percentiles(m.result.latency),
      serverCpuCores: m.serverCpuMicros / 1000 / m.result.total.ms,
      loadCpuCores: m.result.cpuMicros / 1000 / m.result.total.ms,
      errors: m.result.errors,
      perGib: costPerGib(m.counts, totalBytes, requests, body.byteLength, m.serverCpuMicros / 1e6),
      objectPutsPerMiB: m.counts.objects.put / Math.max(1e-9, totalBytes / MiB),
      // Keyless records are sticky: every request lands on one partition.
      metadataWritesPerPartitionRequest: (m.counts.metadata.put + m.counts.metadata.delete) / Math.max(1, requests),
      requestBytes: body.byteLength,
      peakRssBytes: m.peakRssBytes,
    };
  };

  const fetchCell = async (cell: Omit<Cell, 'acks'>, topic: string): Promise<{ row: FetchRow; sample?: string }> => {
    const m = await measure(runner, { ...base, client, kind: 'fetch', pathTemplate: fetchTemplate(topic), partitions: cell.partitions, consumers: PRODUCERS });
    const w = m.result.window;
    const recordsPerSec = (w.records * 1000) / w.ms;
    const responseBytes = w.bytesReceived / Math.max(1, w.requests);
    return {
      row: {
        replicas: cell.replicas,
        minInsync: cell.minInsync,
        partitions: cell.partitions,
        writtenInBatchesOf: cell.batch,
        consumers: PRODUCERS,
        recordsPerSec,
        mbPerSec: mbPerSec(recordsPerSec),
        latency: percentiles(m.result.latency),
        serverCpuCores: m.serverCpuMicros / 1000 / m.result.total.ms,
        loadCpuCores: m.result.cpuMicros / 1000 / m.result.total.ms,
        errors: m.result.errors,
        perGib: costPerGib(m.counts, m.result.total.records * RECORD_BYTES, m.result.total.requests, responseBytes, m.serverCpuMicros / 1e6),
        responseBytes,
        peakRssBytes: m.peakRssBytes,
      },
      ...(m.result.sample ? { sample: m.result.sample } : {}),
    };
  };

  const headline: Cell = { acks: 'all', replicas: 1, minInsync: 1, partitions: 1, batch: 1000 };

  // Warm-up: JIT, SQLite and the page cache, on the headline cell.
  {
    const t = await createTopic(headline, 'warmup');
    await runner.run({ ...base, client, kind: 'produce', path: producePath(t, 'all'), batch: 1000, producers: PRODUCERS, warmupMs: 0, durationMs: QUICK ? 1500 : 4000 });
    await runner.run({ ...base, client, kind: 'fetch', pathTemplate: fetchTemplate(t), partitions: 1, consumers: PRODUCERS, warmupMs: 0, durationMs: QUICK ? 500 : 1000 });
    await deleteTopic(t);
  }

  if (PROFILE) {
    const t = await createTopic(headline, 'profile');
    const long = { ...base, warmupMs: 0, durationMs: 20_000 };
    if (PROFILE === 'produce') {
      const m = await measure(runner, { ...long, client, kind: 'produce', path: producePath(t, 'all'), batch: 1000, producers: PRODUCERS });
      console.log(`Profiled produce (acks=all, RF=1, 1 partition, batches of 1000): ${int((m.result.window.records * 1000) / m.result.window.ms)} records/s`);
    } else {
      await runner.run({ ...base, client, kind: 'produce', path: producePath(t, 'all'), batch: 1000, producers: PRODUCERS, warmupMs: 0, durationMs: 3000 });
      const m = await measure(runner, { ...long, client, kind: 'fetch', pathTemplate: fetchTemplate(t), partitions: 1, consumers: PRODUCERS });
      console.log(`Profiled fetch (1 partition written in batches of 1000): ${int((m.result.window.records * 1000) / m.result.window.ms)} records/s`);
    }
    admin.close();
    return { mode: 'profile', profile: PROFILE };
  }

  // Which load generator leaves the server the most: measured on the headline cell.
  const calibration: { setup: string; recordsPerSec: number; loadCpuCores: number; serverCpuCores: number }[] = [];
  const wantAuto = !QUICK && (opts.load ?? 'auto') === 'auto' && !opts.client;
  if (wantAuto) {
    const workers = await forkedWorkers(2);
    const options: { setup: string; runner: LoadRunner; client: ClientKind }[] = [
      { setup: 'node:http keep-alive, in the bench process', runner: inProcess, client: 'node-http' },
      { setup: 'fetch (undici) keep-alive, in the bench process', runner: inProcess, client: 'fetch' },
      { setup: 'node:http keep-alive, 2 forked load processes', runner: workers, client: 'node-http' },
    ];
    let best = -1;
    for (const o of options) {
      const t = await createTopic(headline, 'calibrate');
      const row = await produceCell(headline, t, o.runner, o.client);
      await deleteTopic(t);
      calibration.push({ setup: o.setup, recordsPerSec: row.recordsPerSec, loadCpuCores: row.loadCpuCores, serverCpuCores: row.serverCpuCores });
      log(`calibration: ${o.setup}: ${int(row.recordsPerSec)} records/s`);
      if (row.recordsPerSec > best) {
        best = row.recordsPerSec;
        runner = o.runner;
        client = o.client;
      }
    }
    if (runner !== workers) workers.close();
  } else if (opts.load === 'workers') runner = await forkedWorkers(2);
  const loadSetup = `${client}, ${runner.description}`;
  log(`load generator: ${loadSetup}`);

  // The machine's ceiling: the same requests to a handler that only writes them to a file. The
  // full run measures it before and after the matrix and keeps the better of the two.
  const ceilings: CeilingRow[] = [];
  const clearCeiling = () => {
    for (const f of readdirSync(ceilingDir)) if (f !== 'fixture.json') rmSync(join(ceilingDir, f), { force: true });
  };
  const ceilingMeasure = async (c: ChildServer, job: Job) => {
    flushPageCache();
    const cpu0 = procStats(c.pid).cpuMicros;
    const result = await runner.run(job);
    clearCeiling();
    const rps = (result.window.records * 1000) / result.window.ms;
    return { rps, latency: percentiles(result.latency), cpu: (procStats(c.pid).cpuMicros - cpu0) / 1000 / result.total.ms };
  };
  const keepBest = (row: CeilingRow) => {
    const i = ceilings.findIndex((c) => c.kind === row.kind && c.batch === row.batch);
    if (i < 0) ceilings.push(row);
    else {
      const runs = [...ceilings[i]!.runs, ...row.runs];
      ceilings[i] = { ...(row.recordsPerSec > ceilings[i]!.recordsPerSec ? row : ceilings[i]!), runs };
    }
  };
  const measureCeilings = async (batches: number[], fetchSample?: string) => {
    if (!ceiling) return;
    for (const batch of batches) {
      const m = await ceilingMeasure(ceiling, { ...base, base: ceiling.url, client, kind: 'produce', path: '/produce', batch, producers: PRODUCERS });
      keepBest({ kind: 'produce', batch, recordsPerSec: m.rps, mbPerSec: mbPerSec(m.rps), latency: m.latency, serverCpuCores: m.cpu, runs: [m.rps] });
      log(`ceiling produce batch=${batch}: ${int(m.rps)} records/s`);
    }
    if (fetchSample) {
      const records = (JSON.parse(fetchSample) as { records: unknown[] }).records.length;
      const fixtureClient = createClient('node-http', ceiling.url, 1);
      await fixtureClient.send('PUT', '/fixture', Buffer.from(fetchSample));
      fixtureClient.close();
      const job: Job = { ...base, base: ceiling.url, client, kind: 'fetch', pathTemplate: '/fetch', partitions: 1, consumers: PRODUCERS, fixedRecords: records };
      const m = await ceilingMeasure(ceiling, job);
      keepBest({ kind: 'fetch', batch: records, recordsPerSec: m.rps, mbPerSec: mbPerSec(m.rps), latency: m.latency, serverCpuCores: m.cpu, runs: [m.rps] });
      log(`ceiling fetch (${records} records per answer): ${int(m.rps)} records/s`);
    }
  };
  const batchSizes = [1000, 100, 1];
  if (!QUICK) await measureCeilings(batchSizes);

  // The matrix.
  const replication: [number, number][] = [
    [1, 1],
    [3, 1],
    [3, 2],
  ];
  const cells: Cell[] = [];
  if (QUICK) {
    for (const batch of [1000, 100, 1]) cells.push({ ...headline, batch });
    cells.push({ ...headline, acks: '1' }, { ...headline, acks: '0' }, { ...headline, partitions: 12 }, { ...headline, replicas: 3, minInsync: 2 });
  } else {
    for (const [replicas, minInsync] of replication)
      for (const partitions of [1, 12])
        for (const batch of [1000, 100, 1]) for (const acks of ['all', '1', '0'] as Acks[]) cells.push({ acks, replicas, minInsync, partitions, batch });
  }
  const fetchWanted = (c: Cell) => c.acks === 'all' && (!QUICK || c.batch === 1000);
  const produced: ProduceRow[] = [];
  const fetched: FetchRow[] = [];
  let fetchSample: string | undefined;
  for (const cell of cells) {
    flushPageCache();
    const topic = await createTopic(cell, 'bench');
    const row = await produceCell(cell, topic);
    produced.push(row);
    log(`produce acks=${cell.acks} RF=${cell.replicas} min.insync=${cell.minInsync} P=${cell.partitions} batch=${cell.batch}: ${int(row.recordsPerSec)} records/s${errorText(row.errors)}`);
    if (fetchWanted(cell)) {
      const { row: f, sample } = await fetchCell(cell, topic);
      fetched.push(f);
      if (cell.replicas === 1 && cell.partitions === 1 && cell.batch === 1000) fetchSample = sample;
      log(`fetch RF=${cell.replicas} P=${cell.partitions} written in ${cell.batch}s: ${int(f.recordsPerSec)} records/s${errorText(f.errors)}`);
    }
    await deleteTopic(topic);
  }
  await measureCeilings(batchSizes, fetchSample);

  // Latency at a fixed offered load: half the measured maximum of the same cell.
  const latencyCells: Cell[] = QUICK
    ? [headline]
    : [headline, { ...headline, batch: 100 }, { ...headline, batch: 1 }, { ...headline, replicas: 3, minInsync: 2 }];
  const latencies: LatencyRow[] = [];
  const latencyRun = async (cell: Cell, recordsPerSec: number, consume: boolean): Promise<LatencyRun> => {
    flushPageCache();
    const topic = await createTopic(cell, 'latency');
    const rss = sampleRss(server.pid);
    const result = await runner.run({
      ...base,
      durationMs: QUICK ? 3000 : 8000,
      client,
      kind: 'latency',
      producePath: producePath(topic, cell.acks),
      fetchPathTemplate: fetchTemplate(topic),
      partitions: cell.partitions,
      batch: cell.batch,
      requestsPerSecond: recordsPerSec / cell.batch,
      maxInFlight: 64,
      consume,
    });
    const peakRssBytes = rss.stop();
    await deleteTopic(topic);
    return {
      peakRssBytes,
      offeredRecordsPerSec: recordsPerSec,
      achievedRecordsPerSec: (result.window.records * 1000) / result.window.ms,
      produce: percentiles(result.latency),
      ...(result.e2e ? { endToEnd: percentiles(result.e2e) } : {}),
      errors: result.errors,
    };
  };
  for (const cell of latencyCells) {
    const produceMax = produced.find((r) => sameCell(r, cell))?.recordsPerSec;
    if (!produceMax) continue;
    const fetchMax = fetched.find((f) => f.replicas === cell.replicas && f.minInsync === cell.minInsync && f.partitions === cell.partitions && f.writtenInBatchesOf === cell.batch)?.recordsPerSec;
    const produceOnly = await latencyRun(cell, produceMax / 2, false);
    const withConsumer = fetchMax ? await latencyRun(cell, 1 / (1 / produceMax + 1 / fetchMax) / 2, true) : undefined;
    latencies.push({ ...cell, produceOnly, ...(withConsumer ? { withConsumer } : {}) });
    log(
      `latency batch=${cell.batch} RF=${cell.replicas}: produce p99 ${ms(produceOnly.produce.p99)} ms at ${int(produceOnly.offeredRecordsPerSec)} records/s` +
        (withConsumer ? `; end-to-end p99 ${ms(withConsumer.endToEnd!.p99)} ms at ${int(withConsumer.offeredRecordsPerSec)} records/s` : ''),
    );
  }

  const peakRssBytes = procStats(server.pid).peakRssBytes;
  admin.close();
  runner.close();

  const machine = { cpus: cpus().length, cpuModel: cpus()[0]?.model ?? '?', memoryBytes: totalmem(), node: process.version, platform: process.platform, loadAverageAtStart: LOAD_AT_START };
  const settings = {
    windowMs: WINDOW_MS,
    warmupMs: WARMUP_MS,
    producers: PRODUCERS,
    recordBytes: RECORD_BYTES,
    valueEncoding: 'STRING of 1024 ASCII characters, keyless (sticky partitioning: one partition per request)',
    fetchMaxBytes: FETCH_MAX_BYTES,
    fetchFormat: 'string',
    backend: 'local (files + SQLite), 3 replica directories, fsync off, in-process scheduler off',
    loadSetup,
    acksSupported,
  };
  const results = { mode: QUICK ? 'quick' : 'full', machine, settings, calibration, produce: produced, fetch: fetched, ceilings, latency: latencies, peakRssBytes, prices: PRICES };
  console.log(render(results));
  return results;
}

const sameCell = (a: Cell, b: Cell) => a.acks === b.acks && a.replicas === b.replicas && a.minInsync === b.minInsync && a.partitions === b.partitions && a.batch === b.batch;
const errorText = (e: Record<string, number>) => (Object.keys(e).length > 0 ? ` (errors: ${Object.entries(e).map(([k, v]) => `${k} x${v}`).join(', ')})` : '');

function render(r: {
  machine: { cpus: number; cpuModel: string; memoryBytes: number; node: string; loadAverageAtStart: number };
  settings: { windowMs: number; warmupMs: number; producers: number; loadSetup: string; acksSupported: boolean };
  calibration: { setup: string; recordsPerSec: number; loadCpuCores: number; serverCpuCores: number }[];
  produce: ProduceRow[];
  fetch: FetchRow[];
  ceilings: CeilingRow[];
  latency: LatencyRow[];
  peakRssBytes: number;
}): string {
  const out: string[] = [];
  const s = r.settings;
  out.push(
    `Machine: ${r.machine.cpus} x ${r.machine.cpuModel}, ${mib(r.machine.memoryBytes)}, node ${r.machine.node}, load average ${fixed(r.machine.loadAverageAtStart, 2)} at start. ` +
      `Server: src/server.ts, local backend (files + SQLite, fsync off), 3 replica directories, maintenance scheduler off. ` +
      `Records: 1 KiB STRING values, keyless. ${s.producers} producers/consumers, load ${s.loadSetup}. ` +
      `Windows: ${s.windowMs} ms after ${s.warmupMs} ms warm-up. MB/s = record bytes / 2^20 (as kafka-producer-perf-test).`,
  );
  if (!s.acksSupported) out.push('\nNOTE: this server ignores ?acks= (acks=2 was accepted): acks=0 and acks=1 rows ran as acks=all and are marked "ignored".');
  if (r.calibration.length > 0) {
    out.push('\n## Load generator (headline cell)\n');
    out.push(table(['setup', 'records/s', 'load CPU (cores)', 'server CPU (cores)'], r.calibration.map((c) => [c.setup, int(c.recordsPerSec), fixed(c.loadCpuCores, 2), fixed(c.serverCpuCores, 2)])));
  }
  const ceilingFor = (kind: 'produce' | 'fetch', batch?: number) => r.ceilings.find((c) => c.kind === kind && (batch === undefined || c.batch === batch));
  out.push('\n## Produce\n');
  out.push(
    table(
      ['acks', 'RF', 'min.insync', 'partitions', 'batch', 'records/s', 'MB/s', 'p50 ms', 'p99 ms', 'server CPU', 'bench CPU', 'of ceiling', 'notes'],
      r.produce.map((p) => {
        const c = ceilingFor('produce', p.batch);
        const notes = [p.acks !== 'all' && !s.acksSupported ? 'acks ignored' : '', errorText(p.errors).trim()].filter(Boolean).join(' ');
        return [p.acks, p.replicas, p.minInsync, p.partitions, p.batch, int(p.recordsPerSec), fixed(p.mbPerSec), ms(p.latency.p50), ms(p.latency.p99), fixed(p.serverCpuCores, 2), fixed(p.loadCpuCores, 2), c ? pct(p.recordsPerSec / c.recordsPerSec) : '', notes];
      }),
    ),
  );
  out.push('\n## Fetch (reading back what the acks=all cell wrote)\n');
  const fc = ceilingFor('fetch');
  out.push(
    table(
      ['RF', 'min.insync', 'partitions', 'written in batches of', 'records/s', 'MB/s', 'p50 ms', 'p99 ms', 'server CPU', 'bench CPU', 'of ceiling', 'notes'],
      r.fetch.map((f) => [f.replicas, f.minInsync, f.partitions, f.writtenInBatchesOf, int(f.recordsPerSec), fixed(f.mbPerSec), ms(f.latency.p50), ms(f.latency.p99), fixed(f.serverCpuCores, 2), fixed(f.loadCpuCores, 2), fc ? pct(f.recordsPerSec / fc.recordsPerSec) : '', errorText(f.errors).trim()]),
    ),
  );
  out.push('\n## Machine ceiling (same requests, minimal Hono handler writing the body to a file)\n');
  out.push(
    table(
      ['traffic', 'records/s', 'MB/s', 'p50 ms', 'p99 ms', 'server CPU', 'all runs (records/s)'],
      r.ceilings.map((c) => [
        c.kind === 'produce' ? `produce, batches of ${c.batch}` : `fetch, ${c.batch} records per answer`,
        int(c.recordsPerSec),
        fixed(c.mbPerSec),
        ms(c.latency.p50),
        ms(c.latency.p99),
        fixed(c.serverCpuCores, 2),
        c.runs.map(int).join(', '),
      ]),
    ),
  );
  out.push('\n## Latency at half the measured maximum (open loop, HDR histograms, milliseconds)\n');
  const lat = (p: Percentiles | undefined) => (p ? [ms(p.p50), ms(p.p99), ms(p.p999), ms(p.max)] : ['', '', '', '']);
  out.push(
    table(
      ['cell', 'load', 'offered rec/s', 'achieved rec/s', 'produce p50', 'p99', 'p99.9', 'max', 'end-to-end p50', 'p99', 'p99.9', 'max'],
      r.latency.flatMap((l) => {
        const cell = `acks=${l.acks} RF=${l.replicas} min.insync=${l.minInsync} P=${l.partitions} batch=${l.batch}`;
        const runs: [string, LatencyRun][] = [['producers only', l.produceOnly]];
        if (l.withConsumer) runs.push(['producers + consumer', l.withConsumer]);
        return runs.map(([load, x]) => [cell, load, int(x.offeredRecordsPerSec), int(x.achievedRecordsPerSec), ...lat(x.produce), ...lat(x.endToEnd)]);
      }),
    ),
  );

  out.push('\n## Storage requests and request cost per GiB of record values (us-east-1 list prices)\n');
  const costRows: { label: string; c: CostPerGib }[] = [];
  for (const p of r.produce.filter((p) => p.acks === 'all')) costRows.push({ label: `produce RF=${p.replicas} min.insync=${p.minInsync} P=${p.partitions} batch=${p.batch}`, c: p.perGib });
  for (const f of r.fetch) costRows.push({ label: `fetch RF=${f.replicas} min.insync=${f.minInsync} P=${f.partitions} (written in ${f.writtenInBatchesOf}s)`, c: f.perGib });
  out.push(
    table(
      ['traffic', 'S3 PUT', 'S3 GET', 'meta get', 'meta query', 'meta put', 'DDB RRU', 'DDB WRU', 'Lambda inv.', 'API req.', '$ S3', '$ DDB', '$ Lambda', '$ API GW', '$ total'],
      costRows.map(({ label, c }) => [
        label,
        int(c.s3Puts),
        int(c.s3Gets),
        int(c.metaGets),
        int(c.metaQueries),
        int(c.metaPuts),
        int(c.ddbReadUnits),
        int(c.ddbWriteUnits),
        int(c.lambdaInvocations),
        int(c.apiRequests),
        fixed(c.dollars.s3, 3),
        fixed(c.dollars.dynamodb, 3),
        fixed(c.dollars.lambdaRequests + c.dollars.lambdaComputeLowerBound, 3),
        fixed(c.dollars.apiGateway, 3),
        fixed(c.dollars.total, 3),
      ]),
    ),
  );
  out.push(
    '(counts per GiB; $ Lambda = invocations + a lower bound on compute: the server CPU time measured here at 1,769 MB arm64; ' +
      'API requests metered per 512 KB of request (produce) or response (fetch) body; storage and transfer not included)',
  );

  // The issue's targets.
  const best = <T extends { recordsPerSec: number }>(rows: T[]): T => rows.reduce((a, b) => (b.recordsPerSec > a.recordsPerSec ? b : a), rows[0]!);
  const headProduce = r.produce.filter((p) => p.acks === 'all' && p.replicas === 1 && p.batch === 1000);
  const hp = headProduce.length > 0 ? best(headProduce) : undefined;
  const headFetch = r.fetch.filter((f) => f.replicas === 1 && f.writtenInBatchesOf === 1000);
  const hf = headFetch.length > 0 ? best(headFetch) : undefined;
  const hl = r.latency.find((l) => l.acks === 'all' && l.replicas === 1 && l.batch === 1000);
  const pc = hp && ceilingFor('produce', 1000);
  const rows: [string, string, string, boolean | undefined][] = [
    ['produce, 1 KiB, batches of 1000, acks=all, RF=1', '>= 100,000 records/s', hp ? `${int(hp.recordsPerSec)} (P=${hp.partitions})` : 'n/a', hp && hp.recordsPerSec >= 100_000],
    ['fetch of the same', '>= 250,000 records/s', hf ? `${int(hf.recordsPerSec)} (P=${hf.partitions})` : 'n/a', hf && hf.recordsPerSec >= 250_000],
    ['produce p99 at half the max load', '<= 25 ms', hl ? `${ms(hl.produceOnly.produce.p99)} ms` : 'n/a', hl && hl.produceOnly.produce.p99 <= 25_000],
    ['produce vs machine ceiling', '>= 70%', hp && pc ? pct(hp.recordsPerSec / pc.recordsPerSec) : 'n/a', hp && pc ? hp.recordsPerSec / pc.recordsPerSec >= 0.7 : undefined],
    ['fetch vs machine ceiling', '>= 70%', hf && fc ? pct(hf.recordsPerSec / fc.recordsPerSec) : 'n/a', hf && fc ? hf.recordsPerSec / fc.recordsPerSec >= 0.7 : undefined],
    ['server peak RSS', '<= 300 MB', `${int(r.peakRssBytes / 1e6)} MB`, r.peakRssBytes <= 300e6],
    ['object PUTs per MiB (~1 MiB requests, RF=1)', '<= 1.05', hp ? fixed(hp.objectPutsPerMiB, 3) : 'n/a', hp && hp.objectPutsPerMiB <= 1.05],
    ['metadata writes per partition per request', '<= 2', hp ? fixed(hp.metadataWritesPerPartitionRequest, 2) : 'n/a', hp && hp.metadataWritesPerPartitionRequest <= 2],
  ];
  const peak = (xs: number[]) => (xs.length > 0 ? mib(Math.max(...xs)) : 'n/a');
  out.push('\n## Server memory\n');
  out.push(
    table(
      ['phase', 'peak RSS (sampled every 100 ms)'],
      [
        ['produce matrix (closed loop)', peak(r.produce.map((p) => p.peakRssBytes))],
        ['fetch matrix (closed loop)', peak(r.fetch.map((f) => f.peakRssBytes))],
        ['latency runs (open loop, up to 64 requests in flight)', peak(r.latency.flatMap((l) => [l.produceOnly.peakRssBytes, l.withConsumer?.peakRssBytes ?? 0]))],
        ['whole run (VmHWM)', mib(r.peakRssBytes)],
      ],
    ),
  );
  out.push('\n## Targets\n');
  out.push(table(['target', 'goal', 'measured', 'met'], rows.map(([a, b, c, d]) => [a, b, c, d === undefined ? '?' : d ? 'yes' : 'NO']), ['l', 'l', 'r', 'l']));
  return out.join('\n');
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
