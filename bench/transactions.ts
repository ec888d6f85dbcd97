/**
 * `npm run bench:transactions [-- --window-ms 5000 --producers 4 --partitions 4]`: transactional
 * produce next to idempotent produce at batches of 1000 records, through the client library
 * against the local server (src/server.ts, embedded backend, a temporary data directory).
 *
 * Each of `--producers` loops sends one 1000-record batch (100-byte values) to its own partition,
 * idempotent, or as a transaction: `producer.transaction()`, the send, `commit()` (so one produce,
 * a PrepareCommit, a marker and a CompleteCommit per 1000 records), and as transactions of ten
 * such batches. Prints records/s of each and the ratio to idempotent; the target is >= 80%.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Kafka, type Producer } from '../src/client/index.js';
import { startServer } from './processes.js';

const { values: opts } = parseArgs({
  options: { 'window-ms': { type: 'string' }, producers: { type: 'string' }, batch: { type: 'string' } },
});
const WINDOW_MS = Number(opts['window-ms'] ?? 5000);
const PRODUCERS = Number(opts.producers ?? 4);
const BATCH = Number(opts.batch ?? 1000);
const VALUE = 'x'.repeat(100);

interface Row {
  kind: string;
  records: number;
  seconds: number;
  p50: number;
  p99: number;
}

/** `perTransaction` 0: idempotent sends; n: transactions of n batches each. */
async function measure(url: string, perTransaction: number, round = -1): Promise<Row> {
  const kafka = new Kafka({ url });
  const kind =
    perTransaction === 0
      ? 'idempotent'
      : `transactional, ${perTransaction} batch${perTransaction > 1 ? 'es' : ''} per transaction`;
  const topic = `bench-${perTransaction}-${round}`;
  await kafka.admin().createTopics({ topics: [{ topic, numPartitions: PRODUCERS }] });
  const messages = (p: number) => Array.from({ length: BATCH }, () => ({ partition: p, value: VALUE }));
  const latencies: number[] = [];
  let records = 0;
  const producers: Producer[] = [];
  const deadline = Date.now() + WINDOW_MS;
  const loop = async (p: number) => {
    const producer = kafka.producer(
      perTransaction > 0
        ? { transactionalId: `bench-${perTransaction}-${round}-${p}`, batchSize: 1 << 20, lingerMs: 0 }
        : { batchSize: 1 << 20, lingerMs: 0 },
    );
    producers.push(producer);
    if (perTransaction > 0)
      await (await producer.transaction()).abort(); // init outside the window
    else await producer.connect();
    while (Date.now() < deadline) {
      const t0 = performance.now();
      if (perTransaction > 0) {
        const txn = await producer.transaction();
        for (let i = 0; i < perTransaction; i++) await txn.send({ topic, messages: messages(p) });
        await txn.commit();
      } else await producer.send({ topic, messages: messages(p) });
      latencies.push((performance.now() - t0) / Math.max(1, perTransaction));
      records += BATCH * Math.max(1, perTransaction);
    }
  };
  const started = performance.now();
  await Promise.all(Array.from({ length: PRODUCERS }, (_, p) => loop(p)));
  const seconds = (performance.now() - started) / 1000;
  await Promise.all(producers.map((x) => x.close()));
  latencies.sort((a, b) => a - b);
  const at = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? NaN;
  return { kind, records, seconds, p50: at(0.5), p99: at(0.99) };
}

const dataDir = await mkdtemp(join(tmpdir(), 'bench-txn-'));
const server = await startServer('src/server.ts', ['--port', '0', '--data-dir', dataDir], {
  env: { STORAGE_BACKEND: 'local', SCHEDULER_INTERVAL_MS: '0' },
});
try {
  const rate = (r: Row) => r.records / r.seconds;
  // Two interleaved rounds (after a warm-up), the better of each kept: a shared machine's noise and
  // the JIT's warm-up would otherwise decide the order.
  await measure(server.url, 0);
  const rows: Row[] = [];
  for (let round = 0; round < 2; round++) {
    for (const [i, perTransaction] of [0, 1, 10].entries()) {
      const r = await measure(server.url, perTransaction, round);
      if (!rows[i] || rate(r) > rate(rows[i]!)) rows[i] = r;
    }
  }
  console.log(
    `| produce, ${BATCH}-record batches, ${PRODUCERS} producers x 1 partition | records/s | vs idempotent | per batch p50 | p99 |`,
  );
  console.log('| --- | --- | --- | --- | --- |');
  for (const r of rows) {
    console.log(
      `| ${r.kind} | ${Math.round(rate(r)).toLocaleString('en')} | ${((100 * rate(r)) / rate(rows[0]!)).toFixed(0)}% | ${r.p50.toFixed(1)} ms | ${r.p99.toFixed(1)} ms |`,
    );
  }
} finally {
  await server.stop();
  await rm(dataDir, { recursive: true, force: true });
}
