/**
 * bench:triggers: what a trigger costs and how fast it delivers, on the local backend (the server as
 * a child process, `npm start`'s, with BENCH_COUNTERS=1 so GET /debug/counters answers its storage
 * operations) and a webhook target in this process that answers 200 at once.
 *
 *   npx tsx bench/triggers.ts [--idle-ms 20000] [--samples 200] [--records 240000] [--batch-size 1000]
 *
 * - idle: storage operations and invocations over --idle-ms, first with no trigger (the server's own
 *   background work: its process registration), then with an enabled trigger on an idle 12-partition
 *   topic; the scheduler is off (its tick re-arms triggers: that cost is per tick, not per idle hour).
 * - latency: --samples single records, each produced after a short gap into a trigger with a 0 ms
 *   window; from the produce request's start to the webhook receiving the record.
 * - throughput: --records produced to a 12-partition topic while its trigger is paused, then resumed:
 *   records/s delivered (acknowledged by the webhook) until every partition is caught up.
 *
 * Prints one JSON line with the machine's load average; docs/performance.md quotes it.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Kafka } from '../src/client/index.js';
import type { OperationCounts } from '../src/storage/counting-stores.js';
import type { KafkaEvent } from '../src/triggers/kafka-event.js';
import { procStats, startServer } from './processes.js';

const { values: flags } = parseArgs({
  options: {
    'idle-ms': { type: 'string', default: '20000' },
    samples: { type: 'string', default: '200' },
    'gap-ms': { type: 'string', default: '20' },
    records: { type: 'string', default: '240000' },
    'batch-size': { type: 'string', default: '1000' },
    'value-bytes': { type: 'string', default: '100' },
    /** A V8 CPU profile of the server, written to this directory when it stops. */
    'cpu-prof': { type: 'string' },
  },
});
const PARTITIONS = 12;
const idleMs = Number(flags['idle-ms']);
const RECORDS = Number(flags.records);

/** The webhook target: answers 200 at once; tells each record's arrival to `onRecord`. */
let onRecord: (partition: number, offset: number, value: string | undefined, at: number) => void = () => {};
let invocations = 0;
const target = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    const at = performance.now();
    invocations++;
    res.writeHead(200).end();
    const event = JSON.parse(Buffer.concat(chunks).toString()) as KafkaEvent;
    for (const records of Object.values(event.records))
      for (const r of records) onRecord(r.partition, r.offset, r.value, at);
  });
});
target.keepAliveTimeout = 60_000;
await new Promise<void>((r) => target.listen(0, '127.0.0.1', r));
const hookUrl = `http://127.0.0.1:${(target.address() as AddressInfo).port}/hook`;

const dir = mkdtempSync(join(tmpdir(), 'bench-triggers-'));
const server = await startServer(
  'src/server.ts',
  ['--port', '0', '--data-dir', dir, '--scheduler-interval-ms', '0', '--kafka-port', '0'],
  {
    env: { STORAGE_BACKEND: 'local', BENCH_COUNTERS: '1' },
    ...(flags['cpu-prof'] && { nodeArgs: ['--cpu-prof', '--cpu-prof-dir', flags['cpu-prof']] }),
  },
);
const B = `${server.url}/v3/clusters/local`;
const call = async (method: string, path: string, body?: unknown) => {
  const res = await fetch(`${B}/${path}`, {
    method,
    headers: { 'content-type': 'application/json' },
    ...(body !== undefined && { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${text}`);
  return text ? JSON.parse(text) : undefined;
};
const counters = async () => (await (await fetch(`${server.url}/debug/counters`)).json()) as OperationCounts;
/** Storage operations (S3 and DynamoDB requests, as the counting decorator sees them) between two snapshots. */
const requests = (a: OperationCounts, b: OperationCounts) => {
  const o = (k: keyof OperationCounts['objects']) => b.objects[k] - a.objects[k];
  const m = (k: keyof OperationCounts['metadata']) => b.metadata[k] - a.metadata[k];
  return {
    objects: o('put') + o('get') + o('head') + o('list') + o('delete'),
    metadata: m('get') + m('query') + m('put') + m('delete'),
  };
};
const createTrigger = (name: string, topic: string, knobs: Record<string, unknown>) =>
  call('POST', 'triggers', {
    trigger_name: name,
    topic_name: topic,
    target: { type: 'WEBHOOK', url: hookUrl, timeout_ms: 30_000 },
    ...knobs,
  });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const quantile = (sorted: number[], f: number) =>
  Math.round(sorted[Math.min(sorted.length - 1, Math.ceil(f * sorted.length) - 1)]! * 10) / 10;

try {
  // Idle: the server's own background requests first, then the same window with a trigger.
  await call('POST', 'topics', { topic_name: 'idle', partitions_count: PARTITIONS });
  await sleep(1000);
  const idleWindow = async () => {
    const c0 = await counters();
    const i0 = invocations;
    const cpu0 = procStats(server.pid).cpuMicros;
    await sleep(idleMs);
    const c1 = await counters();
    return {
      ...requests(c0, c1),
      invocations: invocations - i0,
      serverCpuMs: Math.round((procStats(server.pid).cpuMicros - cpu0) / 1000),
    };
  };
  const withoutTrigger = await idleWindow();
  await createTrigger('idle-hook', 'idle', { maximum_batching_window_ms: 0 });
  await sleep(1000);
  const withTrigger = await idleWindow();

  // Produce to invocation, 0 ms window.
  await call('POST', 'topics', { topic_name: 'lat', partitions_count: PARTITIONS });
  await createTrigger('lat-hook', 'lat', { maximum_batching_window_ms: 0, batch_size: 100 });
  const arrived = new Map<string, number>();
  onRecord = (_p, _o, value, at) => {
    if (value !== undefined) arrived.set(Buffer.from(value, 'base64').toString(), at);
  };
  const latencies: number[] = [];
  const samples = Number(flags.samples);
  for (let i = -10; i < samples; i++) {
    await sleep(Number(flags['gap-ms']));
    const id = `s${i}`;
    const sent = performance.now();
    await call('POST', 'topics/lat/records', {
      partition_id: (i + 10) % PARTITIONS,
      value: { type: 'STRING', data: id },
    });
    const deadline = sent + 10_000;
    while (!arrived.has(id) && performance.now() < deadline) await sleep(1);
    // The first ten warm the path (connections, JIT) and are not counted.
    if (i >= 0) latencies.push((arrived.get(id) ?? deadline) - sent);
  }
  latencies.sort((a, b) => a - b);

  // Throughput: a backlog produced while the trigger is paused, delivered once it is resumed.
  await call('POST', 'topics', { topic_name: 'thr', partitions_count: PARTITIONS });
  const batchSize = Number(flags['batch-size']);
  await createTrigger('thr-hook', 'thr', { maximum_batching_window_ms: 0, batch_size: batchSize });
  await call('POST', 'triggers/thr-hook/pause');
  const kafka = new Kafka({ url: B });
  const producer = kafka.producer();
  const value = 'x'.repeat(Number(flags['value-bytes']));
  for (let i = 0; i < RECORDS; i += 2000)
    await producer.send({
      topic: 'thr',
      messages: Array.from({ length: Math.min(2000, RECORDS - i) }, (_, j) => ({
        partition: (i + j) % PARTITIONS,
        value,
      })),
    });
  await producer.disconnect();
  const next = new Array<number>(PARTITIONS).fill(0);
  let delivered = 0;
  let outOfOrder = 0;
  onRecord = (p, o) => {
    if (o !== next[p]) outOfOrder++;
    next[p] = o + 1;
    delivered++;
  };
  const i0 = invocations;
  const c0 = await counters();
  const cpu0 = procStats(server.pid).cpuMicros;
  const start = performance.now();
  await call('POST', 'triggers/thr-hook/resume');
  const deadline = start + 600_000;
  while (next.reduce((a, b) => a + b, 0) < RECORDS && performance.now() < deadline) await sleep(5);
  const seconds = (performance.now() - start) / 1000;
  const thrRequests = requests(c0, await counters());
  const thrCpuMs = (procStats(server.pid).cpuMicros - cpu0) / 1000;

  console.log(
    JSON.stringify({
      idle: { seconds: idleMs / 1000, partitions: PARTITIONS, withoutTrigger, withTrigger },
      latencyMs: {
        window: 0,
        samples: latencies.length,
        p50: quantile(latencies, 0.5),
        p99: quantile(latencies, 0.99),
        max: quantile(latencies, 1),
      },
      throughput: {
        partitions: PARTITIONS,
        batchSize,
        records: RECORDS,
        valueBytes: value.length,
        seconds: Math.round(seconds * 100) / 100,
        recordsPerSecond: Math.round(next.reduce((a, b) => a + b, 0) / seconds),
        invocations: invocations - i0,
        redelivered: delivered - RECORDS,
        outOfOrder,
        storageRequests: thrRequests,
        serverCpuMsPerSecond: Math.round(thrCpuMs / seconds),
      },
      load: loadavg().map((l) => Math.round(l * 100) / 100),
    }),
  );
} finally {
  await server.stop();
  target.closeAllConnections();
  target.close();
  rmSync(dir, { recursive: true, force: true });
}
