/**
 * What an idle consumer costs the local server, and how soon it sees records when they resume
 * (issue 20): one group member on a 12-partition topic, nothing produced for --idle-ms, its HTTP
 * requests counted by route and the server's CPU time taken; then --samples single records, each
 * after an idle gap, timed from the producer's acknowledgement back to the consumer's poll.
 *
 *   npx tsx bench/idle.ts [--no-push | --before] [--idle-ms 20000] [--samples 20] [--gap-ms 1500]
 *
 * --no-push polls with the idle back-off; --before is the behaviour before issue 20 (no push, and
 * fetchIdleBackoffMaxMs = fetchMaxWaitMs: a new long poll as soon as one ends).
 *
 * Prints one JSON line; docs/cost-model.md ("Idle with consumers") quotes it.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Kafka } from '../src/client/index.js';
import { procStats, startServer } from './processes.js';

const { values: flags } = parseArgs({
  options: {
    'no-push': { type: 'boolean', default: false },
    before: { type: 'boolean', default: false },
    'idle-ms': { type: 'string', default: '20000' },
    samples: { type: 'string', default: '20' },
    'gap-ms': { type: 'string', default: '1500' },
    partitions: { type: 'string', default: '12' },
  },
});
const idleMs = Number(flags['idle-ms']);
const partitions = Number(flags.partitions);
const push = !flags['no-push'] && !flags.before;
const mode = flags.before ? 'before' : push ? 'push' : 'poll with idle back-off';

export interface IdleMeasurement {
  mode: string;
  partitions: number;
  idleSeconds: number;
  requestsPerSecond: number;
  requestsByRoute: Record<string, number>;
  serverCpuMsPerSecond: number;
  latencyMs: { samples: number; p50: number; p99: number; max: number };
}

/** Counts the requests the consumer makes, by the route they would take on AWS. */
function countingFetch(counts: Map<string, number>): typeof globalThis.fetch {
  return (input, init) => {
    const url = new URL(input instanceof Request ? input.url : String(input));
    const route = `${init?.method ?? 'GET'} ${url.pathname
      .replace(/^\/v3\/clusters\/[^/]+/, '')
      .replace(/\/topics\/[^/]+/, '/topics/{t}')
      .replace(/\/partitions\/\d+/, '/partitions/{p}')
      .replace(/\/consumer-groups\/[^/]+/, '/consumer-groups/{g}')}`;
    counts.set(route, (counts.get(route) ?? 0) + 1);
    return globalThis.fetch(input, init);
  };
}

const dir = mkdtempSync(join(tmpdir(), 'idle-bench-'));
const server = await startServer('src/server.ts', ['--port', '0', '--data-dir', dir, '--scheduler-interval-ms', '0'], {
  env: { STORAGE_BACKEND: 'local' },
});
try {
  const admin = new Kafka({ url: server.url }).admin();
  await admin.createTopics({ topics: [{ topic: 'idle', numPartitions: partitions }] });
  const counts = new Map<string, number>();
  const kafka = new Kafka({ url: server.url, fetch: countingFetch(counts), ...(push ? {} : { pushUrl: false }) });
  const consumer = kafka.consumer({
    groupId: 'idle-bench',
    autoOffsetReset: 'latest',
    ...(flags.before ? { fetchIdleBackoffMaxMs: 500 } : {}),
  });
  const arrivals = new Map<string, number>();
  await consumer.subscribe({ topics: ['idle'] });
  await consumer.run({
    eachMessage: async ({ message }) => {
      arrivals.set(message.value!.toString(), performance.now());
    },
  });
  // Settle: joined, assigned, positions known, every partition caught up once.
  for (let i = 0; i < 100 && consumer.assignment().length < partitions; i++)
    await new Promise((r) => setTimeout(r, 100));
  await new Promise((r) => setTimeout(r, 3000));

  counts.clear();
  const cpu0 = procStats(server.pid).cpuMicros;
  const t0 = performance.now();
  await new Promise((r) => setTimeout(r, idleMs));
  const seconds = (performance.now() - t0) / 1000;
  const cpuMs = (procStats(server.pid).cpuMicros - cpu0) / 1000;
  const requestsByRoute = Object.fromEntries(counts);
  const total = [...counts.values()].reduce((a, b) => a + b, 0);

  const producer = kafka.producer();
  const latencies: number[] = [];
  for (let i = 0; i < Number(flags.samples); i++) {
    await new Promise((r) => setTimeout(r, Number(flags['gap-ms'])));
    const key = `sample-${i}`;
    await producer.send({ topic: 'idle', messages: [{ value: key }] });
    const acked = performance.now();
    const deadline = acked + 60_000;
    while (!arrivals.has(key) && performance.now() < deadline) await new Promise((r) => setTimeout(r, 1));
    latencies.push((arrivals.get(key) ?? deadline) - acked);
  }
  latencies.sort((a, b) => a - b);
  const q = (f: number) =>
    Math.round(latencies[Math.min(latencies.length - 1, Math.ceil(f * latencies.length) - 1)]! * 10) / 10;
  await producer.close();
  await consumer.close();
  const m: IdleMeasurement = {
    mode,
    partitions,
    idleSeconds: Math.round(seconds * 10) / 10,
    requestsPerSecond: Math.round((total / seconds) * 1000) / 1000,
    requestsByRoute,
    serverCpuMsPerSecond: Math.round((cpuMs / seconds) * 100) / 100,
    latencyMs: { samples: latencies.length, p50: q(0.5), p99: q(0.99), max: q(1) },
  };
  console.log(JSON.stringify(m));
} finally {
  await server.stop();
  rmSync(dir, { recursive: true, force: true });
}
