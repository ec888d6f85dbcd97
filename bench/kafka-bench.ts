/**
 * `npm run bench:kafka [-- --records N]`: producers through the Kafka protocol listener of the
 * local server (src/server.ts on the embedded backend in a temporary directory, scheduler off):
 * librdkafka (python3-confluent-kafka, one producer; two rows: tuned for throughput, and with
 * librdkafka's own defaults and keyless records, what a user who configures nothing gets) and
 * kafkajs (in this process, several sends in flight), 1 KiB values, acks=all, 12 partitions. `npm run bench` measures the HTTP client on
 * the same server. Prints a markdown table and writes bench/results/kafka-<time>.json.
 * `--only librdkafka|kafkajs` runs one client; `--profile` writes the server's CPU profile.
 */
import { execFile, spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { connect, createServer } from 'node:net';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { promisify } from 'node:util';
import { CompressionTypes, Kafka, logLevel } from 'kafkajs';
import { REPO, startServer } from './processes.js';

const { values: opts } = parseArgs({
  options: {
    records: { type: 'string' },
    /** Only one client (librdkafka or kafkajs), for a shorter run. */
    only: { type: 'string' },
    /** Writes the server's V8 CPU profile to bench/results/profiles (read it with bench/profile-summary.ts). */
    profile: { type: 'boolean' },
  },
});
const RECORDS = Number(opts.records ?? 300_000);
const PARTITIONS = 12;
const SIZE = 1024;
const PYTHON = '/usr/bin/python3';

async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as { port: number }).port;
  await new Promise((r) => s.close(r));
  return port;
}

async function waitForPort(port: number): Promise<void> {
  for (let i = 0; i < 200; i++) {
    const ok = await new Promise<boolean>((r) =>
      connect(port, '127.0.0.1')
        .once('connect', function (this: import('node:net').Socket) {
          this.destroy();
          r(true);
        })
        .once('error', () => r(false)),
    );
    if (ok) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`the Kafka listener did not open port ${port}`);
}

interface Row {
  client: string;
  records: number;
  seconds: number;
  recordsPerSecond: number;
  mbPerSecond: number;
  errors: number;
  note?: string;
}

/** How the librdkafka producer is configured (bench/kafka-producer.py). */
const LIBRDKAFKA_MODES = {
  tuned: 'librdkafka 2.0 (confluent-kafka-python), tuned: linger.ms 10, batch.size 1 MB, record i to partition i % 12',
  defaults:
    "librdkafka 2.0 (confluent-kafka-python), librdkafka's defaults: linger.ms 5, keyless records, default partitioner",
} as const;

async function librdkafka(broker: string, topic: string, mode: keyof typeof LIBRDKAFKA_MODES): Promise<Row> {
  if (spawnSync(PYTHON, ['-c', 'import confluent_kafka']).status !== 0) {
    return {
      client: `librdkafka (${mode})`,
      records: 0,
      seconds: 0,
      recordsPerSecond: 0,
      mbPerSecond: 0,
      errors: 0,
      note: 'python3-confluent-kafka is not installed',
    };
  }
  const { stdout } = await promisify(execFile)(
    PYTHON,
    [join(REPO, 'bench/kafka-producer.py'), broker, topic, String(PARTITIONS), String(RECORDS), String(SIZE), mode],
    { timeout: 600_000 },
  );
  const r = JSON.parse(stdout.trim().split('\n').at(-1)!) as {
    records: number;
    seconds: number;
    recordsPerSecond: number;
    errors: number;
    partitionsUsed: number;
  };
  return {
    client: LIBRDKAFKA_MODES[mode],
    records: r.records,
    seconds: r.seconds,
    recordsPerSecond: r.recordsPerSecond,
    errors: r.errors,
    mbPerSecond: (r.recordsPerSecond * SIZE) / 2 ** 20,
    note: `records went to ${r.partitionsUsed} of ${PARTITIONS} partitions`,
  };
}

async function kafkajs(broker: string, topic: string): Promise<Row> {
  const kafka = new Kafka({ brokers: [broker], clientId: 'bench', logLevel: logLevel.NOTHING });
  const producer = kafka.producer({ allowAutoTopicCreation: false });
  await producer.connect();
  const value = Buffer.alloc(SIZE, 120);
  const batch = 1000;
  const inFlight = 8;
  const run = async (records: number) => {
    let next = 0;
    await Promise.all(
      Array.from({ length: inFlight }, async () => {
        while (next < records) {
          const start = next;
          next += batch;
          const partition = (start / batch) % PARTITIONS;
          await producer.send({
            topic,
            acks: -1,
            compression: CompressionTypes.None,
            messages: Array.from({ length: batch }, () => ({ value, partition })),
          });
        }
      }),
    );
  };
  await run(Math.min(20_000, RECORDS / 10));
  const started = performance.now();
  await run(RECORDS);
  const seconds = (performance.now() - started) / 1000;
  await producer.disconnect();
  const recordsPerSecond = RECORDS / seconds;
  return {
    client: `kafkajs 2.2.4 (${inFlight} sends of ${batch} in flight)`,
    records: RECORDS,
    seconds,
    recordsPerSecond,
    mbPerSecond: (recordsPerSecond * SIZE) / 2 ** 20,
    errors: 0,
  };
}

const dir = await mkdtemp(join(tmpdir(), 'kafka-bench-'));
const kafkaPort = await freePort();
const server = await startServer(
  'src/server.ts',
  ['--port', '0', '--data-dir', join(dir, 'data'), '--scheduler-interval-ms', '0', '--kafka-port', String(kafkaPort)],
  opts.profile ? { nodeArgs: ['--cpu-prof', '--cpu-prof-dir', join(REPO, 'bench/results/profiles')] } : {},
);
const load = loadavg()[0]!;
const rows: Row[] = [];
try {
  await waitForPort(kafkaPort);
  const broker = `127.0.0.1:${kafkaPort}`;
  const admin = new Kafka({ brokers: [broker], logLevel: logLevel.NOTHING }).admin();
  await admin.connect();
  await admin.createTopics({
    topics: [
      { topic: 'bench-rdkafka', numPartitions: PARTITIONS },
      { topic: 'bench-rdkafka-defaults', numPartitions: PARTITIONS },
      { topic: 'bench-kafkajs', numPartitions: PARTITIONS },
    ],
  });
  await admin.disconnect();
  if (opts.only !== 'kafkajs') {
    rows.push(await librdkafka(broker, 'bench-rdkafka', 'tuned'));
    rows.push(await librdkafka(broker, 'bench-rdkafka-defaults', 'defaults'));
  }
  if (opts.only !== 'librdkafka') rows.push(await kafkajs(broker, 'bench-kafkajs'));
} finally {
  await server.stop();
  await rm(dir, { recursive: true, force: true });
}

const fmt = (n: number) => Math.round(n).toLocaleString('en-US');
console.log(
  `Kafka listener, local backend (files + SQLite, fsync off), 1 replica store, scheduler off; ${RECORDS} records of ${SIZE} B, acks=all, ${PARTITIONS} partitions; ${cpus().length} cores, load average ${load.toFixed(2)} at start.\n`,
);
console.log('| client | records/s | MB/s | seconds | errors | note |\n| --- | ---: | ---: | ---: | ---: | --- |');
for (const r of rows)
  console.log(
    `| ${r.client} | ${fmt(r.recordsPerSecond)} | ${r.mbPerSecond.toFixed(1)} | ${r.seconds.toFixed(2)} | ${r.errors} | ${r.note ?? ''} |`,
  );
mkdirSync(join(REPO, 'bench/results'), { recursive: true });
const out = join(REPO, 'bench/results', `kafka-${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
writeFileSync(
  out,
  JSON.stringify({ records: RECORDS, size: SIZE, partitions: PARTITIONS, loadAverage: load, rows }, null, 2),
);
console.log(`\n${out}`);
