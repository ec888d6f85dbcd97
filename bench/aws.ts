/**
 * `npm run bench:aws`: the deployed shape on this machine. The server runs on the aws backend over
 * the in-process emulators (dynalite, s3rver), its stores behind the latency of
 * bench/latency-profiles.ts, each HTTP request an invocation of a Lambda model
 * (bench/aws-lambda.ts: produce, fetch and admin functions, one request per environment, each
 * environment a process of its own: its services and app over the shared stores). The
 * client path with its defaults (`kafka-log perf produce` and a `perf consume` running beside it,
 * child processes) at P=1 and 12, RF 1 and 3, per profile. Reports produce and end-to-end latency,
 * throughput per producer, invocations, concurrency, GB-seconds and $ per GiB, and where a
 * produce's time goes (its storage calls, from the per-request traces).
 *
 *   npm run bench:aws                         # both profiles, 100,000 records per cell
 *   npm run bench:aws -- --quick              # s3-express and s3-standard, 10,000 records per cell, about a minute
 *   npm run bench:aws -- --profile s3-express --records 50000 --concurrency 100
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { serve } from '@hono/node-server';
import { systemClock } from '../src/clock.js';
import { ALL_PARTS, composeServices, createServices, createStorage, type Storage } from '../src/compose.js';
import { serverConfigFromEnv, type ServerConfig } from '../src/config/server-config.js';
import { ALL_ROUTES, createApp } from '../src/http/app.js';
import { createRoutedApp } from '../src/http/routed-app.js';
import { pushSocket } from '../src/http/push-socket.js';
import { DynamoDbMetadataStore } from '../src/storage/dynamodb-metadata-store.js';
import { S3ObjectStore } from '../src/storage/s3-object-store.js';
import { countOperations, type OperationCounts } from '../src/storage/counting-stores.js';
import type { Subscriptions } from '../src/push/subscriptions.js';
import { awsServerEnv, startDynalite, startS3rver } from '../test/support/emulators.js';
import { LambdaFunction, type FinishedTrace, type LambdaFigures } from './aws-lambda.js';
import { callsByItem, callsByRoute, chainStorageMs, overruns, tracedWaits, withLatency } from './aws-storage.js';
import { parseTotals, runCli } from './client-path.js';
import { diffCounts, GIB, PRICES } from './cost.js';
import { latencyProfile, OBJECT_PROFILES, DYNAMODB } from './latency-profiles.js';
import { RECORD_BYTES } from './payload.js';
import { REPO } from './processes.js';
import { FUNCTION_SPECS } from '../infra/log-functions.js';
import { routeFor } from '../infra/routes.js';
import type { FunctionServes } from '../functions/http-entry.js';
import { FETCH_SERVES } from '../functions/fetch-routes.js';
import { PRODUCE_SERVES } from '../functions/produce-routes.js';

const { values: args } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    profile: { type: 'string', multiple: true },
    records: { type: 'string' },
    concurrency: { type: 'string', default: '1000' },
    stores: { type: 'string', default: 'emulators' },
    /** The producer's rate in records/s (`perf produce --throughput`); -1: closed loop, as fast as it goes. */
    throughput: { type: 'string', default: '-1' },
    /** Cells as P:RF (e.g. `--cell 12:1`); default: the quick or full set. */
    cell: { type: 'string', multiple: true },
    out: { type: 'string' },
  },
});
const QUICK = args.quick;
const PROFILES = args.profile ?? ['s3-standard', 's3-express'];
const RECORDS = Number(args.records ?? (QUICK ? 10_000 : 100_000));
const CELLS: { partitions: number; replicas: number }[] = args.cell
  ? args.cell.map((c) => {
      const [partitions, replicas] = c.split(':').map(Number);
      return { partitions: partitions!, replicas: replicas ?? 1 };
    })
  : QUICK
    ? [
        { partitions: 12, replicas: 1 },
        { partitions: 1, replicas: 3 },
      ]
    : [
        { partitions: 1, replicas: 1 },
        { partitions: 12, replicas: 1 },
        { partitions: 1, replicas: 3 },
        { partitions: 12, replicas: 3 },
      ];
/**
 * Cold start: the produce and fetch bundles' import CPU as deployed (87 and 84 ms, docs/performance.md,
 * "Bundles", `npm run bench:bundles`); Lambda's own runtime start is not in it.
 */
const COLD_START_MS = 87;
const BUCKETS = ['bench-0', 'bench-1', 'bench-2'];
const log = (msg: string) => process.stderr.write(`${msg}\n`);

/**
 * Waits until a consumer has armed a push subscription on the topic (a few list reads, counted with
 * the cell's push-side calls). Gives up after a minute: the cell then runs as before.
 */
async function consumerArmed(subscriptions: Subscriptions, topic: string): Promise<void> {
  const end = Date.now() + 60_000;
  while (Date.now() < end) {
    if ((await subscriptions.list(topic)).length > 0) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  log(`${topic}: no consumer armed within a minute; producing anyway`);
}

interface Row {
  profile: string;
  partitions: number;
  replicas: number;
  records: number;
  produce: { recordsPerSec: number; p50: number; p99: number };
  endToEnd: { p50: number; p99: number };
  lambda: LambdaFigures[];
  counts: OperationCounts;
  /** Lambda at the modelled billed duration (bench/aws-lambda.ts); `lambdaWall` at the measured wall time, for comparison. */
  dollarsPerGib: { lambda: number; lambdaWall: number; s3: number; dynamodb: number; total: number };
  breakdown: Breakdown;
  /** Storage calls per function (produce, fetch, admin, background) and call name, with body bytes. */
  callsByRoute: typeof callsByRoute;
  /** Metadata calls per function and kind of item. */
  callsByItem: typeof callsByItem;
  /** Partition errors in the produce answers, by Kafka error name. */
  produceErrors: Record<string, number>;
  /**
   * Records the topic holds after the cell (its partitions' high watermarks): the records produced,
   * each once, however the environments raced at the conditional writes (the producer is idempotent).
   */
  storedRecords: number;
  /** Share of storage calls whose emulator took longer than the drawn latency. */
  overrunShare: number;
  /** After the commit: the push posts (and those carrying the records), and the consumer's fetches. */
  push: { posts: number; withRecords: number; fetches: number; fetch: { p50Ms: number; p99Ms: number } };
}

/**
 * The function that serves a request in the deployed stack (infra/log-functions.ts); `push`: a post
 * to a consumer's connection, API Gateway's management API there (no function of the stack).
 */
/** A consumer's fetch: a partition's records (GET) or the multi-partition `records:fetch`. */
function isFetch(req: Request): boolean {
  const path = new URL(req.url).pathname;
  return (req.method === 'GET' && path.endsWith('/records')) || path.endsWith('/records:fetch');
}

function routeOf(req: Request): 'produce' | 'fetch' | 'admin' | 'push' {
  const path = new URL(req.url).pathname;
  if (path.startsWith('/@connections/')) return 'push';
  // API Gateway's routes as the stack builds them: the multi-partition fetch (`records:fetch`) is
  // the admin function's, whose routes hold it (the fetch function's do not: a 404 there sends the
  // client back to one fetch per partition).
  return routeFor(req.method, path)?.target ?? 'admin';
}

/**
 * One execution environment's process: its own services and app over the shared (counted, slowed)
 * storage, composed as the function's entry composes them (functions/http-entry.ts: its routes and
 * service parts), so its commit queues, caches and producer state are its own, as a Lambda
 * process's are; environments of one function meet at the stores' conditional writes.
 */
function lambdaProcess(config: ServerConfig, storage: Storage, serves: FunctionServes) {
  const services = composeServices(config, storage, systemClock, { countOperations: false }, serves.parts);
  tracedWaits(services.fetchPurgatory);
  return { services, app: createRoutedApp(services, {}, serves.routes) };
}
type LambdaProcess = ReturnType<typeof lambdaProcess>;

/** The admin function serves every route, with every service (functions/admin.ts). */
const ADMIN_SERVES: FunctionServes = { routes: ALL_ROUTES, parts: ALL_PARTS };

async function main(): Promise<void> {
  const started = performance.now();
  const s3 = await startS3rver({ buckets: BUCKETS });
  const ddb = await startDynalite();
  const config = serverConfigFromEnv(
    awsServerEnv({
      table: ddb.table,
      buckets: BUCKETS,
      dynamoDbEndpoint: ddb.endpoint,
      s3Endpoint: s3.endpoint,
    }),
  );
  const rows: Row[] = [];
  try {
    for (const profileName of PROFILES) {
      const profile = latencyProfile(profileName);
      const slowed: Storage = withLatency(
        args.stores === 'memory'
          ? createStorage({ kind: 'memory', replicaStores: 3 })
          : {
              metadata: new DynamoDbMetadataStore({ table: ddb.table, client: ddb.client }),
              stores: BUCKETS.map((bucket) => new S3ObjectStore({ bucket, client: s3.client })),
              close: () => {},
            },
        profile,
      );
      // Every process's calls counted in one place, below the compositions.
      const counted = countOperations(slowed.metadata, slowed.stores);
      const storage: Storage = { metadata: counted.metadata, stores: counted.stores, close: () => slowed.close() };
      // The bench's own calls (creating the cells' topics, reading what they hold), as an operator's would be.
      const operator = createServices(config, storage, undefined, { countOperations: false });
      const app = createApp(operator);
      // The push consumer's WebSocket (API Gateway's and the push function's part on AWS, not modelled),
      // with services of its own: the push function is another process.
      const pushServices = createServices(config, storage, undefined, { countOperations: false });
      let origin = '';
      const push = pushSocket(pushServices, () => origin);
      const lambda = (name: 'produce' | 'fetch' | 'admin', serves: FunctionServes) =>
        new LambdaFunction<LambdaProcess>({
          name,
          concurrency: Number(args.concurrency),
          coldStartMs: COLD_START_MS,
          memoryMb: FUNCTION_SPECS[name].memorySize,
          environment: () => lambdaProcess(config, storage, serves),
        });
      const functions = {
        produce: lambda('produce', PRODUCE_SERVES),
        fetch: lambda('fetch', FETCH_SERVES),
        admin: lambda('admin', ADMIN_SERVES),
      };
      // Partition errors in produce answers (a 200 answers per partition): refused appends cost
      // their PUTs and a retry.
      let produceErrors: Record<string, number> = {};
      const posts = { posts: 0, withRecords: 0 };
      // The consumer's fetches (and their times), whichever function serves them: the multi-partition
      // `records:fetch` is the admin function's, a partition's GET the fetch function's.
      let fetchMs: number[] = [];
      const handler = async (req: Request, environment: LambdaProcess) => {
        const res = await environment.app.fetch(req);
        if (routeOf(req) === 'produce' && res.headers.get('content-type')?.includes('json')) {
          for (const m of (await res.clone().text()).matchAll(/"error":"([A-Z_]+)"/g))
            produceErrors[m[1]!] = (produceErrors[m[1]!] ?? 0) + 1;
        }
        return res;
      };
      const server = serve({
        fetch: (req: Request) => {
          const route = routeOf(req);
          if (route !== 'push') {
            const start = performance.now();
            const answer = functions[route].invoke(req, handler, route);
            if (!isFetch(req)) return answer;
            return answer.then((res) => {
              if (res.status < 300) fetchMs.push(performance.now() - start);
              return res;
            });
          }
          posts.posts++;
          return req
            .clone()
            .text()
            .then((body) => {
              if (body.includes('"records"')) posts.withRecords++;
              return push.routes.fetch(req);
            });
        },
        port: 0,
        hostname: '127.0.0.1',
      });
      server.on('upgrade', (req, socket, head) => push.handleUpgrade(req, socket, head));
      const url = await new Promise<string>((resolve) =>
        server.once('listening', () => {
          const a = server.address();
          resolve(`http://127.0.0.1:${typeof a === 'object' && a ? a.port : 0}`);
        }),
      );
      origin = url;
      try {
        for (const cell of CELLS) {
          const topic = `aws-${profileName}-p${cell.partitions}-rf${cell.replicas}`;
          const created = await app.request('/v3/clusters/local/topics', {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify({
              topic_name: topic,
              partitions_count: cell.partitions,
              replication_factor: cell.replicas,
            }),
          });
          if (created.status !== 201) throw new Error(`creating ${topic}: ${created.status} ${await created.text()}`);
          for (const f of Object.values(functions)) f.reset();
          overruns.calls = {};
          overruns.overrun = {};
          for (const k of Object.keys(callsByRoute)) delete callsByRoute[k];
          for (const k of Object.keys(callsByItem)) delete callsByItem[k];
          produceErrors = {};
          posts.posts = posts.withRecords = 0;
          fetchMs = [];
          const before = counted.snapshot();
          log(`${profileName} P=${cell.partitions} RF=${cell.replicas}: ${RECORDS} records...`);
          const consume = runCli(
            [
              'perf',
              'consume',
              '--topic',
              topic,
              '--messages',
              String(RECORDS),
              '--timeout',
              '120000',
              '--bootstrap-server',
              url,
            ],
            600_000,
          );
          // End-to-end is the consumer's arrival minus the record's timestamp: records sent while the
          // consumer still starts (its process, group join, first fetch) would count its start-up.
          // The producer starts once the consumer has caught up on the empty topic and armed push.
          await consumerArmed(pushServices.push.subscriptions, topic);
          const produce = await runCli(
            [
              'perf',
              'produce',
              '--topic',
              topic,
              '--num-records',
              String(RECORDS),
              '--record-size',
              String(RECORD_BYTES),
              '--throughput',
              args.throughput,
              '--bootstrap-server',
              url,
            ],
            600_000,
          );
          const consumed = await consume;
          const meta = await operator.topics.get(topic);
          let storedRecords = 0;
          for (let p = 0; p < cell.partitions; p++) storedRecords += (await operator.log.state(meta, p)).highWatermark;
          if (storedRecords !== RECORDS) log(`  ${topic} holds ${storedRecords} records, not the ${RECORDS} produced`);
          const counts = diffCounts(counted.snapshot(), before);
          const p = parseTotals(produce);
          const c = parseTotals(consumed);
          const lambda = Object.values(functions).map((f) => ({ ...f.figures }));
          const row: Row = {
            profile: profileName,
            ...cell,
            records: RECORDS,
            produce: { recordsPerSec: p.recordsPerSec, p50: p.latencyMs.p50, p99: p.latencyMs.p99 },
            endToEnd: { p50: c.latencyMs.p50, p99: c.latencyMs.p99 },
            lambda,
            counts,
            dollarsPerGib: dollars(counts, lambda, RECORDS * RECORD_BYTES),
            breakdown: breakdown(functions.produce.traces),
            callsByRoute: structuredClone(callsByRoute),
            callsByItem: structuredClone(callsByItem),
            produceErrors,
            storedRecords,
            push: {
              ...posts,
              fetches: fetchMs.length,
              fetch: percentiles(fetchMs),
            },
            overrunShare:
              Object.values(overruns.overrun).reduce((a, n) => a + n, 0) /
              Math.max(
                1,
                Object.values(overruns.calls).reduce((a, n) => a + n, 0),
              ),
          };
          rows.push(row);
          log(
            `  produce ${Math.round(p.recordsPerSec)} records/s p50 ${p.latencyMs.p50} p99 ${p.latencyMs.p99} ms; end-to-end p50 ${c.latencyMs.p50} p99 ${c.latencyMs.p99} ms; $${row.dollarsPerGib.total.toFixed(4)}/GiB`,
          );
        }
      } finally {
        push.close();
        server.close();
      }
    }
  } finally {
    await ddb.stop();
    await s3.stop();
  }
  const seconds = Math.round((performance.now() - started) / 1000);
  console.log(render(rows, seconds));
  const out = args.out ?? join(REPO, 'bench/results', `aws-${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
  mkdirSync(join(out, '..'), { recursive: true });
  writeFileSync(out, JSON.stringify({ quick: QUICK, records: RECORDS, seconds, rows }, null, 2));
  log(`${seconds} s; figures in ${out}`);
  process.exit(0);
}

/**
 * Dollars per GiB of record values produced and consumed once: Lambda requests and GB-seconds
 * (arm64), S3 Standard requests (PUT, LIST; GET, HEAD), DynamoDB on-demand units; prices in
 * bench/cost.ts. S3 Express One Zone's lower request prices and its per-GB charges are not applied:
 * both profiles are priced as S3 Standard.
 */
function dollars(counts: OperationCounts, lambda: LambdaFigures[], valueBytes: number): Row['dollarsPerGib'] {
  const per = GIB / valueBytes;
  const invocations = lambda.reduce((a, f) => a + f.invocations, 0);
  const lambdaAt = (gbSeconds: number) =>
    (invocations * PRICES.lambdaRequest + gbSeconds * PRICES.lambdaGbSecondArm) * per;
  const o = counts.objects;
  const m = counts.metadata;
  const lambdaDollars = lambdaAt(lambda.reduce((a, f) => a + f.gbSeconds, 0));
  const lambdaWall = lambdaAt(lambda.reduce((a, f) => a + f.wallGbSeconds, 0));
  const s3 = ((o.put + o.list) * PRICES.s3Put + (o.get + o.head) * PRICES.s3Get) * per;
  const dynamodb = (m.writeUnits * PRICES.ddbWrite + m.readUnits * PRICES.ddbRead) * per;
  return { lambda: lambdaDollars, lambdaWall, s3, dynamodb, total: lambdaDollars + s3 + dynamodb };
}

interface Breakdown {
  requests: number;
  /** Mean over produce requests (ms): the whole request, and the time covered by each kind of call. */
  meanMs: number;
  p50Ms: number;
  p99Ms: number;
  /**
   * The critical path, per request: the chain of calls the answer waited on, traced back from its
   * end (each link the call that ended last before the next one began). `storage`: the drawn times
   * of that chain's calls, what the request would take on AWS with no CPU; `waiting`: the rest of
   * the request (before the first call, between calls, after the last, and a call's answer handled
   * late), this process's CPU queue. p50 and p99 of each, over requests.
   */
  criticalPath: { storage: { p50Ms: number; p99Ms: number }; waiting: { p50Ms: number; p99Ms: number } };
  /** The request's own CPU time (bench/aws-cpu.ts), and its modelled billed duration (bench/aws-lambda.ts). */
  cpu: { p50Ms: number; p99Ms: number };
  billed: { p50Ms: number; p99Ms: number; meanMs: number };
  /**
   * Timers a request set that fired (a sequence gap's wait, a back-off): per request, and the mean
   * of their asked delays per request (ms), which its billed duration counts where on its critical path.
   */
  timers: { perRequest: number; meanMs: number };
  /**
   * The request as a warm Lambda would serve it with its CPU to itself: the billed model without
   * the cold start (storage and waits on the critical path + CPU at the function's vCPU share). An
   * upper bound of the latency on AWS: CPU done while a call is in flight is counted twice, and the
   * races and sequence-gap waits on the path are those of this machine's CPU queue.
   */
  warm: { p50Ms: number; p99Ms: number };
  /**
   * Mean partition state items a produce request reads (GetItem): on a commit-log topic only those
   * its environment has not resolved yet, so this counts cold caches, not the partitions it carries.
   */
  partitionsPerRequest: number;
  /** Per call name: mean calls per request, and mean ms of the request during which one was in flight. */
  calls: Record<string, { perRequest: number; coveredMs: number }>;
  /** The median request's calls, in order: "GetItem 0-5, PutObject 5-40, ...". */
  medianRequest: string;
  /** The same with the items' keys (in the JSON results). */
  medianCalls: FinishedTrace['calls'];
}

/** Where a produce's time goes: per kind of call, the union of its spans (what it holds the request for). */
function breakdown(traces: FinishedTrace[]): Breakdown {
  const ok = traces.filter((t) => t.status < 300).sort((a, b) => a.durationMs - b.durationMs);
  const calls: Breakdown['calls'] = {};
  for (const t of ok) {
    const byOp = new Map<string, { startMs: number; endMs: number }[]>();
    for (const c of t.calls) byOp.set(c.op, [...(byOp.get(c.op) ?? []), c]);
    for (const [op, spans] of byOp) {
      const e = (calls[op] ??= { perRequest: 0, coveredMs: 0 });
      e.perRequest += spans.length / ok.length;
      e.coveredMs += covered(spans) / ok.length;
    }
  }
  const median = ok[Math.floor(ok.length / 2)];
  const storage = ok.map(chainStorageMs);
  const waiting = ok.map((t, i) => t.durationMs - storage[i]!);
  const partitions = (t: FinishedTrace) =>
    new Set(t.calls.filter((c) => c.op === 'GetItem' && c.key?.endsWith(' state')).map((c) => c.key)).size;
  return {
    requests: ok.length,
    partitionsPerRequest: ok.reduce((a, t) => a + partitions(t), 0) / Math.max(1, ok.length),
    meanMs: ok.reduce((a, t) => a + t.durationMs, 0) / Math.max(1, ok.length),
    p50Ms: ok[Math.floor(ok.length / 2)]?.durationMs ?? 0,
    p99Ms: ok[Math.min(ok.length - 1, Math.floor(ok.length * 0.99))]?.durationMs ?? 0,
    criticalPath: { storage: percentiles(storage), waiting: percentiles(waiting) },
    cpu: percentiles(ok.map((t) => t.cpuMs)),
    billed: { ...percentiles(ok.map((t) => t.billedMs)), meanMs: mean(ok.map((t) => t.billedMs)) },
    warm: percentiles(ok.map((t) => t.billedMs - t.coldMs)),
    timers: {
      perRequest: mean(ok.map((t) => t.calls.filter((c) => c.op === 'Timer').length)),
      meanMs: mean(ok.map((t) => t.calls.reduce((a, c) => a + (c.op === 'Timer' ? c.drawnMs : 0), 0))),
    },
    calls,
    medianCalls: median?.calls ?? [],
    medianRequest: median
      ? `${median.durationMs.toFixed(0)} ms: ${median.calls
          .sort((a, b) => a.startMs - b.startMs)
          .map((c) => `${c.op} ${c.startMs.toFixed(0)}-${c.endMs.toFixed(0)}`)
          .join(', ')}`
      : '-',
  };
}

const mean = (values: number[]) => values.reduce((a, v) => a + v, 0) / Math.max(1, values.length);

function percentiles(values: number[]): { p50Ms: number; p99Ms: number } {
  const sorted = [...values].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * q))] ?? 0;
  return { p50Ms: at(0.5), p99Ms: at(0.99) };
}

function covered(spans: { startMs: number; endMs: number }[]): number {
  const sorted = [...spans].sort((a, b) => a.startMs - b.startMs);
  let total = 0;
  let end = -Infinity;
  for (const s of sorted) {
    if (s.endMs <= end) continue;
    total += s.endMs - Math.max(s.startMs, end);
    end = s.endMs;
  }
  return total;
}

function render(rows: Row[], seconds: number): string {
  const f = (n: number, d = 0) => n.toLocaleString('en-US', { maximumFractionDigits: d, minimumFractionDigits: d });
  const pair = (a: { p50Ms: number; p99Ms: number }) => `${f(a.p50Ms)} / ${f(a.p99Ms)}`;
  const rate = Number(args.throughput) > 0 ? `${f(Number(args.throughput))} records/s offered` : 'closed loop';
  const lines = [
    `### AWS-shaped bench (\`npm run bench:aws${process.argv.slice(2).length ? ` -- ${process.argv.slice(2).join(' ')}` : ''}\`, ${seconds} s, ${RECORDS.toLocaleString('en-US')} records of ${RECORD_BYTES} B per cell, ${rate})`,
    '',
    '#### Latency against the targets (ms)',
    '',
    '| profile | P | RF | producer records/s | produce p50 / p99 (client) | produce request p50 / p99 (server) | produce request on a warm Lambda p50 / p99 (modelled) | target p99 | critical path: storage and waits p50 / p99 | critical path: waiting for CPU p50 / p99 | end-to-end p50 / p99 | end-to-end target p99 | calls over profile |',
    '| --- | -: | -: | -: | -: | -: | -: | -: | -: | -: | -: | -: | -: |',
  ];
  for (const r of rows) {
    const o = OBJECT_PROFILES[r.profile]!;
    const target = o.put.p99Ms + 2 * DYNAMODB.write.p99Ms + 20;
    const b = r.breakdown;
    lines.push(
      `| ${r.profile} | ${r.partitions} | ${r.replicas} | ${f(r.produce.recordsPerSec)} | ${r.produce.p50} / ${r.produce.p99} | ${f(b.p50Ms)} / ${f(b.p99Ms)} | ${pair(b.warm)} | ${target} | ${pair(b.criticalPath.storage)} | ${pair(b.criticalPath.waiting)} | ${r.endToEnd.p50} / ${r.endToEnd.p99} | ${f(r.produce.p99 + 100)} | ${f(r.overrunShare * 100)}% |`,
    );
  }
  lines.push(
    '',
    '#### Lambda use and $ per GiB (produced and consumed once)',
    '',
    '| profile | P | RF | produce invocations | fetch / admin invocations | peak concurrency (produce / fetch / admin) | cold starts | produce request CPU p50 / p99 (ms) | produce billed p50 / p99 / mean (ms, modelled) | timers fired per produce request (ms asked, mean) | GB-s modelled / wall | PutObject per produce request | MiB per produce PutObject | other PutObject | partition errors in produce answers | $/GiB Lambda (modelled; at wall time) | $/GiB S3 | $/GiB DynamoDB | $/GiB total |',
    '| --- | -: | -: | -: | -: | -: | -: | -: | -: | -: | -: | -: | -: | -: | --- | -: | -: | -: | -: |',
  );
  for (const r of rows) {
    const [produce, fetch, admin] = r.lambda;
    const puts = r.callsByRoute.produce?.PutObject ?? { calls: 0, bytes: 0 };
    const other = Object.entries(r.callsByRoute)
      .filter(([route]) => route !== 'produce')
      .map(([route, ops]) => (ops.PutObject ? `${route} ${ops.PutObject.calls}` : ''))
      .filter(Boolean)
      .join(', ');
    const gbs = (k: 'gbSeconds' | 'wallGbSeconds') =>
      f(
        r.lambda.reduce((a, l) => a + l[k], 0),
        1,
      );
    lines.push(
      `| ${r.profile} | ${r.partitions} | ${r.replicas} | ${f(produce!.invocations)} | ${f(fetch!.invocations)} / ${f(admin!.invocations)} | ${produce!.peakConcurrency} / ${fetch!.peakConcurrency} / ${admin!.peakConcurrency} | ${r.lambda.reduce((a, l) => a + l.coldStarts, 0)} | ${pair(r.breakdown.cpu)} | ${pair(r.breakdown.billed)} / ${f(r.breakdown.billed.meanMs)} | ${f(r.breakdown.timers.perRequest, 2)} (${f(r.breakdown.timers.meanMs, 1)}) | ${gbs('gbSeconds')} / ${gbs('wallGbSeconds')} | ${f(puts.calls / Math.max(1, produce!.invocations), 2)} | ${f(puts.bytes / Math.max(1, puts.calls) / 2 ** 20, 2)} | ${other || '0'} | ${
        Object.entries(r.produceErrors)
          .map(([name, n]) => `${name} ${n}`)
          .join(', ') || '0'
      }${r.storedRecords === r.records ? '' : `; ${f(r.storedRecords)} records stored of ${f(r.records)}`} | ${f(r.dollarsPerGib.lambda, 4)}; ${f(r.dollarsPerGib.lambdaWall, 4)} | ${f(r.dollarsPerGib.s3, 4)} | ${f(r.dollarsPerGib.dynamodb, 4)} | ${f(r.dollarsPerGib.total, 4)} |`,
    );
  }
  lines.push(
    '',
    '#### After the commit: the push consumer (posts to its connection; fetches it made)',
    '',
    '| profile | P | RF | produce requests | posts | posts carrying the records | consumer fetches (fetch or admin function) | fetch request p50 / p99 (server, ms) | end-to-end p50 / p99 | produce p50 / p99 (client) |',
    '| --- | -: | -: | -: | -: | -: | -: | -: | -: | -: |',
  );
  for (const r of rows) {
    const [produce] = r.lambda;
    lines.push(
      `| ${r.profile} | ${r.partitions} | ${r.replicas} | ${f(produce!.invocations)} | ${f(r.push.posts)} | ${f(r.push.withRecords)} | ${f(r.push.fetches)} | ${pair(r.push.fetch)} | ${r.endToEnd.p50} / ${r.endToEnd.p99} | ${r.produce.p50} / ${r.produce.p99} |`,
    );
  }
  lines.push('', "#### Where a produce request's time goes (server side, per request)", '');
  lines.push(
    '| profile | P | RF | requests | partition states read per request | mean ms | p99 ms | calls: per request, ms in flight (mean) | median request |',
  );
  lines.push('| --- | -: | -: | -: | -: | -: | -: | --- | --- |');
  for (const r of rows) {
    const b = r.breakdown;
    const calls = Object.entries(b.calls)
      .map(([op, c]) => `${op} ${f(c.perRequest, 1)}x ${f(c.coveredMs, 1)} ms`)
      .join('; ');
    lines.push(
      `| ${r.profile} | ${r.partitions} | ${r.replicas} | ${b.requests} | ${f(b.partitionsPerRequest, 1)} | ${f(b.meanMs, 1)} | ${f(b.p99Ms, 1)} | ${calls} | ${b.medianRequest} |`,
    );
  }
  return lines.join('\n');
}

await main();
