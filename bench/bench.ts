/**
 * `npm run bench [-- --quick] [-- --format json|batch|both] [-- --profile produce|fetch]`: throughput,
 * latency and request cost of the local server (src/server.ts on the embedded backend, in a
 * temporary data directory), side by side with the machine's own ceiling for the same HTTP traffic
 * (bench/ceiling-server.ts), in both body formats (bench/formats.ts):
 *  - batch: Kafka RecordBatch v2 bodies and the binary fetch, the format comparable to Kafka's own
 *    numbers: the whole matrix;
 *  - json: records:batch with STRING values and the JSON fetch: the headline cells (acks=all, RF=1,
 *    P=1 and 12, batches of 1, 100 and 1000) and their fetches.
 * Each format runs on its own server process (so its memory is its own). Prints markdown tables and
 * writes every figure to bench/results/bench-<time>.json.
 *
 * Options:
 *   --quick              both formats on the headline cells (12 partitions only at batches of 1000), shorter windows (under a minute)
 *   --format F           json, batch or both (default both; --profile: batch)
 *   --window-ms N        measured window per cell (default 3000; quick 1500)
 *   --producers N        concurrent producer (and consumer) connections (default 4)
 *   --load in-process|workers|auto   where load is generated (default auto: measured in a full run)
 *   --client node-http|fetch|raw     HTTP client of the load generator (default node-http; auto measures the
 *                                     first two; raw: sockets read into a reused buffer, the cheapest receiver)
 *   --profile produce|fetch          run only the headline cell of --format for 20 s with the server
 *                                     under --cpu-prof, then print its top self-time functions
 *   --profile-batch N                records per produce request of the profile (default 1000; 1 profiles
 *                                     the fixed cost of a request)
 *   --out FILE           where to write the JSON (default bench/results/bench-<time>.json)
 *   --no-counters        run the server without the counting store wrappers (no request counts or cost)
 *   --no-client          skip the client path (kafka-log perf produce/consume with the client's defaults
 *                        at P=1 and 12, RF 1 and 3, beside the raw batch cells; full runs add 60 s at half
 *                        the P=12 maximum for the sustained p99)
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { cpus, loadavg, tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { type OperationCounts, zeroMetadataCounts, zeroObjectCounts } from '../src/storage/counting-stores.js';
import { DEFAULT_MAX_PARTITION_FETCH_BYTES } from '../src/client/consumer/consumer.js';
import { clientPathRows, type ClientRow } from './client-path.js';
import { costPerGib, diffCounts } from './cost.js';
import { FORMATS, WIRE, type BodyFormat } from './formats.js';
import { createClient, type ClientKind } from './http-client.js';
import { RECORD_BYTES, type Acks, type FetchSample, type Job, type JobResult } from './load.js';
import {
  forkedWorkers,
  inProcess,
  machineBusyMicros,
  procStats,
  REPO,
  sampleRss,
  startServer,
  type ChildServer,
  type LoadRunner,
} from './processes.js';
import { summarize } from './profile-summary.js';
import { render } from './render.js';
import { fixed, int, ms, percentiles } from './report.js';
import {
  errorText,
  sameCell,
  type Calibration,
  type Cell,
  type CeilingRow,
  type FetchRow,
  type LatencyRow,
  type LatencyRun,
  type ProduceRow,
  type Results,
} from './rows.js';

const { values: opts } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    format: { type: 'string' },
    'window-ms': { type: 'string' },
    producers: { type: 'string' },
    load: { type: 'string' },
    client: { type: 'string' },
    profile: { type: 'string' },
    'profile-batch': { type: 'string' },
    out: { type: 'string' },
    'no-counters': { type: 'boolean', default: false },
    'no-client': { type: 'boolean', default: false },
  },
});
const COUNTERS = !opts['no-counters'];
const QUICK = opts.quick!;
const PROFILE = opts.profile as 'produce' | 'fetch' | undefined;
const PROFILE_BATCH = Number(opts['profile-batch'] ?? 1000);
if (!Number.isInteger(PROFILE_BATCH) || PROFILE_BATCH < 1) throw new Error('--profile-batch takes a whole number >= 1');
if (PROFILE && PROFILE !== 'produce' && PROFILE !== 'fetch') throw new Error('--profile takes produce or fetch');
const FORMAT_OPTION = opts.format ?? (PROFILE ? 'batch' : 'both');
if (!['json', 'batch', 'both'].includes(FORMAT_OPTION) || (PROFILE && FORMAT_OPTION === 'both'))
  throw new Error('--format takes json, batch or both (--profile: json or batch)');
/** Batch first: its matrix is the long one, and it runs on a fresh machine state. */
const RUN_FORMATS: BodyFormat[] = FORMAT_OPTION === 'both' ? [...FORMATS] : [FORMAT_OPTION as BodyFormat];
const WINDOW_MS = Number(opts['window-ms'] ?? (QUICK ? 1500 : 3000));
const WARMUP_MS = QUICK ? 500 : 1000;
/** The ceiling's handler is trivial and steady: shorter windows do in quick mode. */
const CEILING_WINDOW_MS = QUICK ? 1000 : WINDOW_MS;
const CEILING_WARMUP_MS = QUICK ? 300 : WARMUP_MS;
const LATENCY_WINDOW_MS = QUICK ? 1500 : 8000;
const PRODUCERS = Number(opts.producers ?? 4);
const FETCH_MAX_BYTES = 1024 * 1024;
/** Records per client-path run (kafka-log perf produce --num-records): a few seconds each. */
const CLIENT_RECORDS = 300_000;
/** Quick runs: enough that the CLI's first second (metadata, producer id, the JIT) is not most of the figure. */
const CLIENT_RECORDS_QUICK = 150_000;
const MiB = 2 ** 20;

/** kafka-producer-perf-test's MB/sec: record bytes / 2^20 per second. */
const mbPerSec = (recordsPerSec: number) => (recordsPerSec * RECORD_BYTES) / MiB;

interface Measured {
  result: JobResult;
  counts: OperationCounts;
  serverCpuMicros: number;
  peakRssBytes: number;
  /** Cores other work on the machine used meanwhile. */
  otherCpuCores: number;
}

/** Cores the machine spent on other work while `run` ran: busy time less the server's and the load generator's. */
async function withOtherCpu<T>(
  pids: number[],
  run: () => Promise<T>,
  loadMicros: (t: T) => number,
): Promise<{ value: T; otherCpuCores: number }> {
  const busy0 = machineBusyMicros();
  const own0 = pids.reduce((n, pid) => n + procStats(pid).cpuMicros, 0);
  const t0 = performance.now();
  const value = await run();
  const own = pids.reduce((n, pid) => n + procStats(pid).cpuMicros, 0) - own0;
  const other = machineBusyMicros() - busy0 - own - loadMicros(value);
  return { value, otherCpuCores: Math.max(0, other / 1000 / (performance.now() - t0)) };
}

/** Whether the page cache can be dropped here: unknown until the first try. */
let dropCaches: boolean | undefined;

/**
 * Flushes dirty pages before a cell, so a cell does not pay for the previous cells' writeback: with
 * gigabytes of dirty page cache, this VM's disk stalls file operations for up to a second. Then,
 * where the bench may (as root), drops the clean page cache too. On a server that had written
 * 4.7 GB, perf produce P=1 read 65-88k records/s in three runs and 266-276k in the three right
 * after a drop, the client's and the server's CPU per record both about halved. A drop does not
 * stop this VM's drift, but what earlier cells wrote no longer weighs on the next.
 */
const flushPageCache = () => {
  execFileSync('sync');
  if (dropCaches === false) return;
  try {
    writeFileSync('/proc/sys/vm/drop_caches', '1');
    dropCaches = true;
  } catch {
    dropCaches = false;
    log('cannot drop the page cache (not root, or /proc/sys is read-only): figures depend on what earlier cells wrote');
  }
};

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
  if (LOAD_AT_START > 0.5)
    log(
      `WARNING: the load average is ${fixed(LOAD_AT_START, 2)} before the bench starts; other work will skew the figures`,
    );
  log(
    `data in ${tmp}; ${QUICK ? 'quick' : PROFILE ? `profile ${PROFILE}` : 'full'} run, formats ${RUN_FORMATS.join(', ')}, ${WINDOW_MS} ms windows after ${WARMUP_MS} ms warm-up, ${PRODUCERS} producers`,
  );

  const profileStamp = Date.now();
  const profileRun = `${PROFILE}-${RUN_FORMATS[0]}-${profileStamp}`;
  // One server per format, all started now (an idle one costs nothing) and each stopped when its
  // format is done, so that each format's memory figures are its own.
  const [ceiling, ...started] = await Promise.all([
    PROFILE ? undefined : startServer('bench/ceiling-server.ts', ['--port', '0', '--data-dir', ceilingDir]),
    ...RUN_FORMATS.map((format) =>
      // The in-process maintenance scheduler (segment merge, retention, orphan GC) is off: it would
      // rewrite the cells' data at random moments. The bench measures the request path only.
      startServer(
        'src/server.ts',
        [
          '--port',
          '0',
          '--data-dir',
          join(tmp, `server-${format}`),
          '--replicas',
          '3',
          '--scheduler-interval-ms',
          '0',
          '--kafka-port',
          '0',
        ],
        {
          env: { BENCH_COUNTERS: COUNTERS ? '1' : '0', STORAGE_BACKEND: 'local' },
          // One profile per thread (tsx's loader runs in a worker thread): the busiest is the server's.
          nodeArgs: PROFILE ? ['--cpu-prof', `--cpu-prof-dir=${join(profileDir, profileRun)}`] : [],
        },
      ),
    ),
  ]);
  const servers = new Map(RUN_FORMATS.map((f, i) => [f, started[i]!]));
  const cleanup = async () => {
    await Promise.all([...servers.values()].map((s) => s.stop()).concat(ceiling ? [ceiling.stop()] : []));
    rmSync(tmp, { recursive: true, force: true });
  };
  try {
    const out = await run(servers, ceiling, ceilingDir);
    const finishedAt = new Date();
    await Promise.all([...servers.values()].map((s) => s.stop()));
    if (PROFILE) {
      const dir = join(profileDir, profileRun);
      const files = readdirSync(dir).map((f) => join(dir, f));
      const busiest = files.sort((a, b) => statSync(b).size - statSync(a).size)[0];
      if (busiest) console.log(`\n${summarize(busiest, 20)}`);
    }
    const durationS = (finishedAt.getTime() - startedAt.getTime()) / 1000;
    console.log(`\nRun took ${fixed(durationS, 0)} s.`);
    const path =
      opts.out ??
      join(
        resultsDir,
        `bench-${startedAt.toISOString().replace(/[:.]/g, '-')}${QUICK ? '-quick' : PROFILE ? `-profile-${PROFILE}-${RUN_FORMATS[0]}` : ''}.json`,
      );
    writeFileSync(path, JSON.stringify({ startedAt, durationS, ...out }, null, 2));
    console.log(`Results: ${path}`);
  } finally {
    await cleanup();
  }
}

/** Admin calls, counters and measurements against one server. */
function session(server: ChildServer) {
  const admin = createClient('node-http', server.url, 2);
  const call = async (method: 'GET' | 'POST' | 'DELETE', path: string, body?: unknown) => {
    const r = await admin.send(method, path, body === undefined ? undefined : Buffer.from(JSON.stringify(body)));
    return {
      status: r.status,
      body: r.body.byteLength > 0 ? (JSON.parse(r.body.toString('utf8')) as Record<string, unknown>) : {},
    };
  };
  const noCounts = (): OperationCounts => ({
    objects: zeroObjectCounts(),
    perStore: [],
    metadata: zeroMetadataCounts(),
  });
  const counters = async () =>
    COUNTERS ? ((await call('GET', '/debug/counters')).body as unknown as OperationCounts) : noCounts();
  let topicSeq = 0;
  return {
    server,
    admin,
    counters,
    createTopic: async (cell: Pick<Cell, 'replicas' | 'minInsync' | 'partitions'>, prefix: string) => {
      const name = `${prefix}-${topicSeq++}`;
      const res = await call('POST', '/v3/clusters/local/topics', {
        topic_name: name,
        partitions_count: cell.partitions,
        replication_factor: cell.replicas,
        configs: [{ name: 'min.insync.replicas', value: String(cell.minInsync) }],
      });
      if (res.status !== 201) throw new Error(`creating ${name}: ${res.status} ${JSON.stringify(res.body)}`);
      return name;
    },
    deleteTopic: async (name: string) => {
      await call('DELETE', `/v3/clusters/local/topics/${name}`);
    },
    measure: async (runner: LoadRunner, job: Job): Promise<Measured> => {
      const before = await counters();
      const cpu0 = procStats(server.pid).cpuMicros;
      const rss = sampleRss(server.pid);
      const { value: result, otherCpuCores } = await withOtherCpu(
        [server.pid],
        () => runner.run(job),
        (r) => r.cpuMicros,
      );
      const peakRssBytes = rss.stop();
      const serverCpuMicros = procStats(server.pid).cpuMicros - cpu0;
      return { result, counts: diffCounts(await counters(), before), serverCpuMicros, peakRssBytes, otherCpuCores };
    },
  };
}
type Session = ReturnType<typeof session>;

async function run(
  servers: Map<BodyFormat, ChildServer>,
  ceiling: ChildServer | undefined,
  ceilingDir: string,
): Promise<Results | { mode: 'profile'; profile: string; format: BodyFormat }> {
  const sessions = new Map([...servers].map(([f, s]) => [f, session(s)]));
  const first = sessions.get(RUN_FORMATS[0]!)!;
  const producePath = (format: BodyFormat, topic: string, acks: Acks) => WIRE[format].producePath(topic, acks);
  const fetchTemplate = (format: BodyFormat, topic: string) => WIRE[format].fetchTemplate(topic, FETCH_MAX_BYTES);
  const atPartition = (path: string, p: number) => path.replace('${p}', String(p));

  // Does the server honour ?acks=? A server that parses it rejects acks=2; one that ignores it
  // appends. And does every format's produce answer 200 (the binary API is there)?
  const probe = await first.createTopic({ replicas: 1, minInsync: 1, partitions: 1 }, 'probe');
  const probeReply = await first.admin.send(
    'POST',
    atPartition(producePath('json', probe, '2' as Acks), 0),
    WIRE.json.produceBody(1),
  );
  const acks0Reply = await first.admin.send(
    'POST',
    atPartition(producePath('json', probe, '0'), 0),
    WIRE.json.produceBody(1),
  );
  const acksSupported = probeReply.status >= 400 && probeReply.status < 500;
  log(
    `acks: ${acksSupported ? 'the server parses ?acks=' : `the server ignores ?acks= (acks=2 answered ${probeReply.status}); acks=0/1 rows run as acks=all`}; acks=0 answers ${acks0Reply.status}`,
  );
  for (const f of RUN_FORMATS) {
    const reply = await first.admin.send(
      'POST',
      atPartition(producePath(f, probe, 'all'), 0),
      WIRE[f].produceBody(1),
      WIRE[f].produceHeaders,
    );
    if (reply.status !== 200 && reply.status !== 207)
      throw new Error(`the ${f} produce answers ${reply.status}: ${reply.body.toString('utf8').slice(0, 300)}`);
  }
  await first.deleteTopic(probe);

  let client = (opts.client as ClientKind | undefined) ?? 'node-http';
  let runner: LoadRunner = inProcess;
  const base = { warmupMs: WARMUP_MS, durationMs: WINDOW_MS };
  const bodyBytes = new Map<string, number>();
  const requestBytes = (format: BodyFormat, batch: number) => {
    const key = `${format}/${batch}`;
    if (!bodyBytes.has(key)) bodyBytes.set(key, WIRE[format].produceBody(batch).byteLength);
    return bodyBytes.get(key)!;
  };

  const produceCell = async (
    s: Session,
    cell: Cell,
    topic: string,
    r: LoadRunner = runner,
    c: ClientKind = client,
  ): Promise<ProduceRow> => {
    const m = await s.measure(r, {
      ...base,
      base: s.server.url,
      client: c,
      format: cell.format,
      kind: 'produce',
      path: producePath(cell.format, topic, cell.acks),
      partitions: cell.partitions,
      batch: cell.batch,
      producers: PRODUCERS,
    });
    const w = m.result.window;
    const recordsPerSec = (w.records * 1000) / w.ms;
    const totalBytes = m.result.total.records * RECORD_BYTES;
    const requests = m.result.total.requests;
    const bytes = requestBytes(cell.format, cell.batch);
    return {
      ...cell,
      producers: PRODUCERS,
      recordsPerSec,
      mbPerSec: mbPerSec(recordsPerSec),
      latency: percentiles(m.result.latency),
      serverCpuCores: m.serverCpuMicros / 1000 / m.result.total.ms,
      loadCpuCores: m.result.cpuMicros / 1000 / m.result.total.ms,
      otherCpuCores: m.otherCpuCores,
      errors: m.result.errors,
      perGib: costPerGib(m.counts, totalBytes, requests, bytes, m.serverCpuMicros / 1e6),
      objectPutsPerMiB: m.counts.objects.put / Math.max(1e-9, totalBytes / MiB),
      // Every request lands on one partition (json: keyless records are sticky; batch: one partition per request).
      metadataWritesPerPartitionRequest: (m.counts.metadata.put + m.counts.metadata.delete) / Math.max(1, requests),
      requestBytes: bytes,
      peakRssBytes: m.peakRssBytes,
    };
  };

  const fetchCell = async (
    s: Session,
    cell: Omit<Cell, 'acks'>,
    topic: string,
  ): Promise<{ row: FetchRow; sample?: FetchSample }> => {
    const m = await s.measure(runner, {
      ...base,
      base: s.server.url,
      client,
      format: cell.format,
      kind: 'fetch',
      pathTemplate: fetchTemplate(cell.format, topic),
      partitions: cell.partitions,
      consumers: PRODUCERS,
    });
    const w = m.result.window;
    const recordsPerSec = (w.records * 1000) / w.ms;
    const responseBytes = w.bytesReceived / Math.max(1, w.requests);
    return {
      row: {
        format: cell.format,
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
        otherCpuCores: m.otherCpuCores,
        errors: m.result.errors,
        perGib: costPerGib(
          m.counts,
          m.result.total.records * RECORD_BYTES,
          m.result.total.requests,
          responseBytes,
          m.serverCpuMicros / 1e6,
        ),
        responseBytes,
        peakRssBytes: m.peakRssBytes,
      },
      ...(m.result.sample ? { sample: m.result.sample } : {}),
    };
  };

  const headlineOf = (format: BodyFormat): Cell => ({
    format,
    acks: 'all',
    replicas: 1,
    minInsync: 1,
    partitions: 1,
    batch: 1000,
  });

  // Warm-up: JIT, SQLite and the page cache, on the headline cell.
  const warmUp = async (s: Session, format: BodyFormat) => {
    const t = await s.createTopic(headlineOf(format), 'warmup');
    const common = { ...base, base: s.server.url, client, format, warmupMs: 0 };
    await runner.run({
      ...common,
      kind: 'produce',
      path: producePath(format, t, 'all'),
      partitions: 1,
      batch: 1000,
      producers: PRODUCERS,
      durationMs: QUICK ? 1000 : 4000,
    });
    await runner.run({
      ...common,
      kind: 'fetch',
      pathTemplate: fetchTemplate(format, t),
      partitions: 1,
      consumers: PRODUCERS,
      durationMs: QUICK ? 500 : 1000,
    });
    await s.deleteTopic(t);
  };

  if (PROFILE) {
    const format = RUN_FORMATS[0]!;
    await warmUp(first, format);
    const t = await first.createTopic(headlineOf(format), 'profile');
    const common = { ...base, base: first.server.url, client, format };
    const long = { ...common, warmupMs: 0, durationMs: 20_000 };
    if (PROFILE === 'produce') {
      const m = await first.measure(runner, {
        ...long,
        kind: 'produce',
        path: producePath(format, t, 'all'),
        partitions: 1,
        batch: PROFILE_BATCH,
        producers: PRODUCERS,
      });
      console.log(
        `Profiled ${format} produce (acks=all, RF=1, 1 partition, batches of ${PROFILE_BATCH}): ${int((m.result.window.records * 1000) / m.result.window.ms)} records/s`,
      );
    } else {
      await runner.run({
        ...common,
        kind: 'produce',
        path: producePath(format, t, 'all'),
        partitions: 1,
        batch: PROFILE_BATCH,
        producers: PRODUCERS,
        warmupMs: 0,
        durationMs: 3000,
      });
      const m = await first.measure(runner, {
        ...long,
        kind: 'fetch',
        pathTemplate: fetchTemplate(format, t),
        partitions: 1,
        consumers: PRODUCERS,
      });
      console.log(
        `Profiled ${format} fetch (1 partition written in batches of ${PROFILE_BATCH}): ${int((m.result.window.records * 1000) / m.result.window.ms)} records/s`,
      );
    }
    first.admin.close();
    return { mode: 'profile', profile: PROFILE, format };
  }

  // Which load generator leaves the server the most: measured on the first format's headline cell.
  const calibration: Calibration[] = [];
  const wantAuto = !QUICK && (opts.load ?? 'auto') === 'auto' && !opts.client;
  if (wantAuto) {
    await warmUp(first, RUN_FORMATS[0]!);
    const workers = await forkedWorkers(2);
    const options: { setup: string; runner: LoadRunner; client: ClientKind }[] = [
      { setup: 'node:http keep-alive, in the bench process', runner: inProcess, client: 'node-http' },
      { setup: 'fetch (undici) keep-alive, in the bench process', runner: inProcess, client: 'fetch' },
      { setup: 'node:http keep-alive, 2 forked load processes', runner: workers, client: 'node-http' },
    ];
    let best = -1;
    for (const o of options) {
      const headline = headlineOf(RUN_FORMATS[0]!);
      const t = await first.createTopic(headline, 'calibrate');
      const row = await produceCell(first, headline, t, o.runner, o.client);
      await first.deleteTopic(t);
      calibration.push({
        setup: o.setup,
        recordsPerSec: row.recordsPerSec,
        loadCpuCores: row.loadCpuCores,
        serverCpuCores: row.serverCpuCores,
      });
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

  // The machine's ceiling: the same requests to a handler that only writes them to a file (and
  // answers a stored fetch answer). The full run measures it before and after the matrix and keeps
  // the better of the two.
  const ceilings: CeilingRow[] = [];
  const clearCeiling = () => {
    for (const f of readdirSync(ceilingDir))
      if (!f.startsWith('fixture-')) rmSync(join(ceilingDir, f), { force: true });
  };
  const ceilingMeasure = async (c: ChildServer, job: Job) => {
    flushPageCache();
    const cpu0 = procStats(c.pid).cpuMicros;
    const { value: result, otherCpuCores } = await withOtherCpu(
      [c.pid],
      () => runner.run(job),
      (r) => r.cpuMicros,
    );
    clearCeiling();
    const rps = (result.window.records * 1000) / result.window.ms;
    return {
      rps,
      latency: percentiles(result.latency),
      cpu: (procStats(c.pid).cpuMicros - cpu0) / 1000 / result.total.ms,
      load: result.cpuMicros / 1000 / result.total.ms,
      other: otherCpuCores,
    };
  };
  const keepBest = (row: CeilingRow) => {
    const i = ceilings.findIndex((c) => c.format === row.format && c.kind === row.kind && c.batch === row.batch);
    if (i < 0) ceilings.push(row);
    else {
      const runs = [...ceilings[i]!.runs, ...row.runs];
      ceilings[i] = { ...(row.recordsPerSec > ceilings[i]!.recordsPerSec ? row : ceilings[i]!), runs };
    }
  };
  const batchSizes = [1000, 100, 1];
  const measureCeilings = async (samples: Map<BodyFormat, FetchSample> = new Map()) => {
    if (!ceiling) return;
    for (const format of RUN_FORMATS) {
      const job = { warmupMs: CEILING_WARMUP_MS, durationMs: CEILING_WINDOW_MS, base: ceiling.url, client, format };
      for (const batch of batchSizes) {
        const m = await ceilingMeasure(ceiling, {
          ...job,
          kind: 'produce',
          path: '/produce',
          partitions: 1,
          batch,
          producers: PRODUCERS,
        });
        keepBest({
          format,
          kind: 'produce',
          batch,
          recordsPerSec: m.rps,
          mbPerSec: mbPerSec(m.rps),
          latency: m.latency,
          serverCpuCores: m.cpu,
          loadCpuCores: m.load,
          otherCpuCores: m.other,
          runs: [m.rps],
        });
        log(`ceiling ${format} produce batch=${batch}: ${int(m.rps)} records/s`);
      }
      const sample = samples.get(format);
      if (sample) {
        const fixtureClient = createClient('node-http', ceiling.url, 1);
        await fixtureClient.send('PUT', `/fixture/${format}`, Buffer.from(sample.body, 'base64'), {
          'content-type': 'application/octet-stream',
          'x-fixture-headers': JSON.stringify(sample.headers),
        });
        fixtureClient.close();
        const m = await ceilingMeasure(ceiling, {
          ...job,
          kind: 'fetch',
          pathTemplate: `/fetch/${format}`,
          partitions: 1,
          consumers: PRODUCERS,
          fixedRecords: sample.records,
        });
        keepBest({
          format,
          kind: 'fetch',
          batch: sample.records,
          recordsPerSec: m.rps,
          mbPerSec: mbPerSec(m.rps),
          latency: m.latency,
          serverCpuCores: m.cpu,
          loadCpuCores: m.load,
          otherCpuCores: m.other,
          runs: [m.rps],
        });
        log(`ceiling ${format} fetch (${sample.records} records per answer): ${int(m.rps)} records/s`);
      }
    }
  };
  if (!QUICK) await measureCeilings();

  // The cells: the whole matrix in the batch format (quick: its headline cells), the headline cells
  // in the json format.
  // Quick mode keeps 12 partitions for batches of 1000 only, to stay under a minute.
  const headlineCells = (format: BodyFormat): Cell[] =>
    [1, 12].flatMap((partitions) =>
      batchSizes
        .filter((batch) => !QUICK || partitions === 1 || batch === 1000)
        .map((batch) => ({ ...headlineOf(format), partitions, batch })),
    );
  const cellsOf = (format: BodyFormat): Cell[] => {
    if (QUICK || format === 'json') return headlineCells(format);
    const cells: Cell[] = [];
    const replication: [number, number][] = [
      [1, 1],
      [3, 1],
      [3, 2],
    ];
    for (const [replicas, minInsync] of replication)
      for (const partitions of [1, 12])
        for (const batch of batchSizes)
          for (const acks of ['all', '1', '0'] as Acks[])
            cells.push({ format, acks, replicas, minInsync, partitions, batch });
    return cells;
  };
  const fetchWanted = (c: Cell) => c.acks === 'all' && (!QUICK || c.batch === 1000);
  const latencyCellsOf = (format: BodyFormat): Cell[] => {
    const h = headlineOf(format);
    return QUICK || format === 'json'
      ? [h]
      : [h, { ...h, batch: 100 }, { ...h, batch: 1 }, { ...h, replicas: 3, minInsync: 2 }];
  };

  const produced: ProduceRow[] = [];
  const fetched: FetchRow[] = [];
  const latencies: LatencyRow[] = [];
  const clientRows: ClientRow[] = [];
  const samples = new Map<BodyFormat, FetchSample>();
  const peakRssBytes: Partial<Record<BodyFormat, number>> = {};
  for (const format of RUN_FORMATS) {
    const s = sessions.get(format)!;
    if (!(wantAuto && format === RUN_FORMATS[0])) await warmUp(s, format);
    for (const cell of cellsOf(format)) {
      flushPageCache();
      const topic = await s.createTopic(cell, 'bench');
      const row = await produceCell(s, cell, topic);
      produced.push(row);
      log(
        `${format} produce acks=${cell.acks} RF=${cell.replicas} min.insync=${cell.minInsync} P=${cell.partitions} batch=${cell.batch}: ${int(row.recordsPerSec)} records/s${errorText(row.errors)}`,
      );
      if (fetchWanted(cell)) {
        const { row: f, sample } = await fetchCell(s, cell, topic);
        fetched.push(f);
        if (cell.replicas === 1 && cell.partitions === 1 && cell.batch === 1000 && sample) samples.set(format, sample);
        log(
          `${format} fetch RF=${cell.replicas} P=${cell.partitions} written in ${cell.batch}s: ${int(f.recordsPerSec)} records/s${errorText(f.errors)}`,
        );
      }
      await s.deleteTopic(topic);
    }

    // Latency at a fixed offered load: half the measured maximum of the same cell.
    const latencyRun = async (cell: Cell, recordsPerSec: number, consume: boolean): Promise<LatencyRun> => {
      flushPageCache();
      const topic = await s.createTopic(cell, 'latency');
      const rss = sampleRss(s.server.pid);
      const { value: result, otherCpuCores } = await withOtherCpu(
        [s.server.pid],
        () =>
          runner.run({
            ...base,
            base: s.server.url,
            durationMs: LATENCY_WINDOW_MS,
            client,
            format,
            kind: 'latency',
            producePath: producePath(format, topic, cell.acks),
            fetchPathTemplate: fetchTemplate(format, topic),
            partitions: cell.partitions,
            batch: cell.batch,
            requestsPerSecond: recordsPerSec / cell.batch,
            maxInFlight: 64,
            consume,
          }),
        (r) => r.cpuMicros,
      );
      const peak = rss.stop();
      await s.deleteTopic(topic);
      return {
        peakRssBytes: peak,
        offeredRecordsPerSec: recordsPerSec,
        achievedRecordsPerSec: (result.window.records * 1000) / result.window.ms,
        produce: percentiles(result.latency),
        ...(result.e2e ? { endToEnd: percentiles(result.e2e) } : {}),
        errors: result.errors,
        loadCpuCores: result.cpuMicros / 1000 / result.total.ms,
        otherCpuCores,
      };
    };
    for (const cell of latencyCellsOf(format)) {
      const produceMax = produced.find((r) => sameCell(r, cell))?.recordsPerSec;
      if (!produceMax) continue;
      const fetchMax = fetched.find(
        (f) =>
          f.format === format &&
          f.replicas === cell.replicas &&
          f.minInsync === cell.minInsync &&
          f.partitions === cell.partitions &&
          f.writtenInBatchesOf === cell.batch,
      )?.recordsPerSec;
      const produceOnly = await latencyRun(cell, produceMax / 2, false);
      const withConsumer = fetchMax ? await latencyRun(cell, 1 / (1 / produceMax + 1 / fetchMax) / 2, true) : undefined;
      latencies.push({ ...cell, produceOnly, ...(withConsumer ? { withConsumer } : {}) });
      log(
        `${format} latency batch=${cell.batch} RF=${cell.replicas}: produce p99 ${ms(produceOnly.produce.p99)} ms at ${int(produceOnly.offeredRecordsPerSec)} records/s` +
          (withConsumer?.endToEnd
            ? `; end-to-end p99 ${ms(withConsumer.endToEnd.p99)} ms at ${int(withConsumer.offeredRecordsPerSec)} records/s`
            : ''),
      );
    }
    if (format === 'batch' && !opts['no-client']) {
      // The path users take, on the same server: the library and `kafka-log perf` with defaults.
      const clientCeiling = await startServer('bench/ceiling-server.ts', [
        '--port',
        '0',
        '--data-dir',
        `${ceilingDir}-client`,
        '--upstream',
        s.server.url,
      ]);
      clientRows.push(
        ...(await clientPathRows(
          {
            url: s.server.url,
            serverPid: s.server.pid,
            createTopic: s.createTopic,
            deleteTopic: s.deleteTopic,
            counters: s.counters,
            clientCeilingUrl: clientCeiling.url,
            flushPageCache,
            rawProduce: async ({ replicas, partitions }) => {
              const cell: Cell = { ...headlineOf('batch'), replicas, partitions };
              const topic = await s.createTopic(cell, 'client-raw');
              const row = await produceCell(s, cell, topic);
              await s.deleteTopic(topic);
              return row.recordsPerSec;
            },
            rawConsume: async (topic, partitions) => {
              const m = await s.measure(runner, {
                ...base,
                base: s.server.url,
                client,
                format: 'batch',
                kind: 'fetch',
                // As much per request as `perf consume` asks of a partition by default.
                pathTemplate: WIRE.batch.fetchTemplate(topic, DEFAULT_MAX_PARTITION_FETCH_BYTES),
                partitions,
                consumers: 1,
              });
              return (m.result.window.records * 1000) / m.result.window.ms;
            },
          },
          { records: QUICK ? CLIENT_RECORDS_QUICK : CLIENT_RECORDS, ...(QUICK ? {} : { fixedRateSeconds: 60 }), log },
        )),
      );
      await clientCeiling.stop();
    }
    peakRssBytes[format] = procStats(s.server.pid).peakRssBytes;
    s.admin.close();
    await s.server.stop(); // the next format has the machine to itself
  }
  await measureCeilings(samples);
  runner.close();

  const machine = {
    cpus: cpus().length,
    cpuModel: cpus()[0]?.model ?? '?',
    memoryBytes: totalmem(),
    node: process.version,
    platform: process.platform,
    loadAverageAtStart: LOAD_AT_START,
  };
  const settings = {
    formats: RUN_FORMATS,
    windowMs: WINDOW_MS,
    warmupMs: WARMUP_MS,
    ceilingWindowMs: CEILING_WINDOW_MS,
    latencyWindowMs: LATENCY_WINDOW_MS,
    producers: PRODUCERS,
    recordBytes: RECORD_BYTES,
    valueEncoding:
      'json: STRING of 1024 ASCII characters; batch: the same 1024 bytes in a RecordBatch v2; keyless, one partition per request',
    fetchMaxBytes: FETCH_MAX_BYTES,
    fetchFormat: 'json: format=string; batch: Accept application/vnd.kafka.record-batch.v2',
    backend:
      'local (files + SQLite), 3 replica directories, fsync off, in-process scheduler off, one server process per format',
    loadSetup,
    acksSupported,
  };
  const results: Results = {
    mode: QUICK ? 'quick' : 'full',
    machine,
    settings,
    calibration,
    produce: produced,
    fetch: fetched,
    ceilings,
    latency: latencies,
    client: clientRows,
    peakRssBytes,
  };
  console.log(render(results));
  return results;
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
