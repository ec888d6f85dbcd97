/**
 * The path users take: `kafka-log perf produce` and `perf consume` (the client library with its
 * defaults, through the CLI as a user runs it) against the bench's record-batch server, beside the
 * raw cells of the same shape. Each run is a child process; its last line is parsed as
 * kafka-producer-perf-test's / kafka-consumer-perf-test's.
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import type { OperationCounts } from '../src/storage/counting-stores.js';
import { costPerGib, diffCounts, type CostPerGib } from './cost.js';
import { RECORD_BYTES } from './load.js';
import { procStats, REPO } from './processes.js';

export interface ClientRow {
  kind: 'produce' | 'consume' | 'produce-fixed-rate';
  partitions: number;
  replicas: number;
  records: number;
  recordsPerSec: number;
  /** Produce: send() to acknowledgement; consume: record timestamp to arrival. */
  latencyMs: { p50: number; p99: number; max: number };
  /** Offered rate of a fixed-rate run (kafka-log perf --throughput). */
  offeredRecordsPerSec?: number;
  /** A fixed-rate run: latency after its first seconds (--warmup-records), the sustained figure. */
  steadyLatencyMs?: ClientRow['latencyMs'];
  /**
   * The raw cell of the same shape, measured right after this run: produce, the matrix's cell (4
   * producers of pre-built 1000-record batches, acks=all) on a new topic with the same partitions
   * and RF; consume, one raw consumer reading the same topic in a closed loop (as `perf consume`),
   * asking as much of a partition per request as the client does by default (4 MiB).
   */
  rawRecordsPerSec?: number;
  /**
   * Produce: the same `perf produce` against bench/ceiling-server.ts with --upstream, which answers
   * the produce requests without storing them: what the client does with next to no server work.
   */
  clientAloneRecordsPerSec?: number;
  serverCpuCores: number;
  objectPutsPerMiBPerReplica: number;
  /** Produce requests as the server saw them: one object PUT per replica each. */
  requests: number;
  writeUnitsPerRequest: number;
  perGib: CostPerGib;
}

interface ClientPathSession {
  url: string;
  serverPid: number;
  createTopic: (cell: { replicas: number; minInsync: number; partitions: number }, prefix: string) => Promise<string>;
  deleteTopic: (name: string) => Promise<void>;
  counters: () => Promise<OperationCounts>;
  /** Records/s of one raw consumer (pre-built GETs, no decoding) reading `topic` in a closed loop. */
  rawConsume: (topic: string, partitions: number) => Promise<number>;
  /** Records/s of the raw produce cell (4 producers, pre-built 1000-record batches, acks=all) on a new topic. */
  rawProduce: (cell: { replicas: number; partitions: number }) => Promise<number>;
  /** bench/ceiling-server.ts with --upstream at this server: produce answered without storage. */
  clientCeilingUrl?: string;
  /** Before each produce run: the page cache as the raw cells find it (bench.ts's flushPageCache). */
  flushPageCache: () => void;
}

const CLI = join(REPO, 'src/cli/bin.mjs');
/**
 * The fixed-rate run's first seconds, before its `fixedRateSeconds`: a new client process starts
 * cold (its JIT), and its first second or two answer in hundreds of milliseconds while it catches
 * up. Reported apart (Kafka's --warmup-records), so that the p99 is the sustained one.
 */
const FIXED_RATE_WARMUP_SECONDS = 5;

export function runCli(args: string[], timeoutMs: number): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      [CLI, ...args],
      { cwd: REPO, timeout: timeoutMs, maxBuffer: 16 * 1024 * 1024 },
      (e, stdout, stderr) => {
        if (e) reject(new Error(`kafka-log ${args.join(' ')}: ${e.message}\n${stderr.slice(-2000)}`));
        else resolve(`${stdout}\n${stderr}`);
      },
    );
  });
}

/**
 * The totals line: "N records sent|consumed, R records/sec (...), A ms avg latency, M ms max latency,
 * P50 ms 50th, ..., P99 ms 99th, ..."; with `steady`, the line after it for the records after the
 * warm-up ("... (steady state)").
 */
export function parseTotals(
  output: string,
  steady = false,
): { records: number; recordsPerSec: number; latencyMs: ClientRow['latencyMs'] } {
  const line = output
    .split('\n')
    .reverse()
    .find(
      (l) =>
        /records (sent|consumed), [\d.]+ records\/sec/.test(l) &&
        /99th/.test(l) &&
        l.endsWith('(steady state)') === steady,
    );
  if (!line) throw new Error(`no ${steady ? 'steady-state ' : ''}totals line in:\n${output.slice(-2000)}`);
  const num = (re: RegExp) => Number(re.exec(line)?.[1] ?? NaN);
  return {
    records: num(/^(\d+) records/),
    recordsPerSec: num(/([\d.]+) records\/sec/),
    latencyMs: { p50: num(/([\d.]+) ms 50th/), p99: num(/([\d.]+) ms 99th/), max: num(/([\d.]+) ms max latency/) },
  };
}

/**
 * Produce with the client's defaults at P=1 and 12, RF=1 and 3, then consume what was written;
 * with `fixedRateSeconds`, a run at half the P=12 RF=1 maximum for the sustained p99.
 */
export async function clientPathRows(
  s: ClientPathSession,
  options: { records: number; fixedRateSeconds?: number; log: (msg: string) => void },
): Promise<ClientRow[]> {
  const rows: ClientRow[] = [];
  const measured = async (
    kind: ClientRow['kind'],
    partitions: number,
    replicas: number,
    args: string[],
    offered?: number,
  ) => {
    const before = await s.counters();
    const cpu0 = procStats(s.serverPid).cpuMicros;
    const t0 = performance.now();
    const out = await runCli([...args, '--bootstrap-server', s.url], 600_000);
    const wallMs = performance.now() - t0;
    const counts = diffCounts(await s.counters(), before);
    const cpuMicros = procStats(s.serverPid).cpuMicros - cpu0;
    const totals = parseTotals(out);
    const steady = args.includes('--warmup-records') ? parseTotals(out, true).latencyMs : undefined;
    const bytes = totals.records * RECORD_BYTES;
    const requests = kind === 'consume' ? Math.max(1, counts.objects.get) : Math.max(1, counts.objects.put / replicas);
    const row: ClientRow = {
      kind,
      partitions,
      replicas,
      ...totals,
      ...(offered !== undefined ? { offeredRecordsPerSec: offered } : {}),
      ...(steady ? { steadyLatencyMs: steady } : {}),
      // Over the run itself (the CLI's start-up, several seconds under tsx, is not load).
      serverCpuCores:
        cpuMicros / 1000 / Math.min(wallMs, (totals.records / Math.max(1e-9, totals.recordsPerSec)) * 1000),
      objectPutsPerMiBPerReplica: counts.objects.put / replicas / Math.max(1e-9, bytes / 2 ** 20),
      requests,
      writeUnitsPerRequest: counts.metadata.writeUnits / requests,
      perGib: costPerGib(counts, bytes, requests, bytes / requests, cpuMicros / 1e6),
    };
    rows.push(row);
    options.log(
      `client ${kind} P=${partitions} RF=${replicas}: ${Math.round(row.recordsPerSec)} records/s, p99 ${row.latencyMs.p99} ms, ${row.objectPutsPerMiBPerReplica.toFixed(2)} PUT/MiB/replica` +
        (counts.objects.put > 0
          ? ` (objects of ${Math.round(counts.objects.putBytes / counts.objects.put / 1024)} KiB)`
          : ''),
    );
    return row;
  };
  let p12Max = 0;
  for (const replicas of [1, 3]) {
    for (const partitions of [1, 12]) {
      const topic = await s.createTopic({ replicas, minInsync: 1, partitions }, 'client');
      s.flushPageCache();
      const perfProduce = [
        'perf',
        'produce',
        '--topic',
        topic,
        '--num-records',
        String(options.records),
        '--record-size',
        String(RECORD_BYTES),
        '--throughput',
        '-1',
      ];
      const produce = await measured('produce', partitions, replicas, perfProduce);
      if (partitions === 12 && replicas === 1) p12Max = produce.recordsPerSec;
      const consumed = await measured('consume', partitions, replicas, [
        'perf',
        'consume',
        '--topic',
        topic,
        '--messages',
        String(options.records),
        '--timeout',
        '60000',
      ]);
      consumed.rawRecordsPerSec = await s.rawConsume(topic, partitions);
      options.log(
        `raw consume (1 consumer) P=${partitions} RF=${replicas}: ${Math.round(consumed.rawRecordsPerSec)} records/s`,
      );
      // Beside the client run, not minutes away in the matrix: on this VM rates drift by 2x within
      // a run, so only neighbours make a ratio. After the consume: the page cache is dropped first,
      // and the consume reads what the client wrote from the cache, as a consumer close behind does.
      s.flushPageCache();
      produce.rawRecordsPerSec = await s.rawProduce({ replicas, partitions });
      options.log(
        `raw produce (4 producers, batches of 1000) P=${partitions} RF=${replicas}: ${Math.round(produce.rawRecordsPerSec)} records/s`,
      );
      if (s.clientCeilingUrl && replicas === 1) {
        const alone = parseTotals(await runCli([...perfProduce, '--bootstrap-server', s.clientCeilingUrl], 600_000));
        produce.clientAloneRecordsPerSec = alone.recordsPerSec;
        options.log(
          `client alone (produce answered without storage) P=${partitions}: ${Math.round(alone.recordsPerSec)} records/s`,
        );
      }
      await s.deleteTopic(topic);
    }
  }
  if (options.fixedRateSeconds && p12Max > 0) {
    const rate = Math.floor(p12Max / 2);
    const topic = await s.createTopic({ replicas: 1, minInsync: 1, partitions: 12 }, 'client-rate');
    s.flushPageCache();
    await measured(
      'produce-fixed-rate',
      12,
      1,
      [
        'perf',
        'produce',
        '--topic',
        topic,
        '--num-records',
        String(rate * (FIXED_RATE_WARMUP_SECONDS + options.fixedRateSeconds)),
        '--record-size',
        String(RECORD_BYTES),
        '--throughput',
        String(rate),
        '--warmup-records',
        String(rate * FIXED_RATE_WARMUP_SECONDS),
      ],
      rate,
    );
    await s.deleteTopic(topic);
  }
  return rows;
}
