/** The bench's printout: markdown tables of a run's results, pasted as is into docs/performance.md. */
import type { ClientRow } from './client-path.js';
import type { CostPerGib } from './cost.js';
import type { BodyFormat } from './formats.js';
import { RECORD_BYTES } from './payload.js';
import { fixed, int, mib, ms, pct, table, type Percentiles } from './report.js';
import { errorText, type LatencyRun, type Results } from './rows.js';

const FORMAT_NAMES: Record<BodyFormat, string> = { json: 'json', batch: 'batch' };

export function render(r: Results): string {
  const out: string[] = [];
  const s = r.settings;
  out.push(
    `Machine: ${r.machine.cpus} x ${r.machine.cpuModel}, ${mib(r.machine.memoryBytes)}, node ${r.machine.node}, load average ${fixed(r.machine.loadAverageAtStart, 2)} at start. ` +
      `Server: src/server.ts, local backend (files + SQLite, fsync off), 3 replica directories, maintenance scheduler off, one server process per format. ` +
      `Records: ${RECORD_BYTES} B values, keyless; json = records:batch with STRING values and fetch format=string, batch = one RecordBatch v2 per request and the binary fetch. ` +
      `${s.producers} producers/consumers, load ${s.loadSetup}. ` +
      `Windows: ${s.windowMs} ms after ${s.warmupMs} ms warm-up. MB/s = record bytes / 2^20 (as kafka-producer-perf-test).`,
  );
  const others = [...r.produce, ...r.fetch].map((x) => x.otherCpuCores);
  if (others.length > 0) {
    const mean = others.reduce((n, x) => n + x, 0) / others.length;
    out.push(
      `\nOther work on the machine ("other CPU" in the tables: busy time of the machine less the server's and the load generator's) used ${fixed(mean, 2)} cores on average during the produce and fetch cells, ${fixed(Math.max(...others), 2)} at most.`,
    );
  }
  if (!s.acksSupported)
    out.push(
      '\nNOTE: this server ignores ?acks= (acks=2 was accepted): acks=0 and acks=1 rows ran as acks=all and are marked "ignored".',
    );
  if (r.calibration.length > 0) {
    out.push(`\n## Load generator (headline cell, ${r.settings.formats[0]} format)\n`);
    out.push(
      table(
        ['setup', 'records/s', 'load CPU (cores)', 'server CPU (cores)'],
        r.calibration.map((c) => [c.setup, int(c.recordsPerSec), fixed(c.loadCpuCores, 2), fixed(c.serverCpuCores, 2)]),
      ),
    );
  }
  const ceilingFor = (format: BodyFormat, kind: 'produce' | 'fetch', batch?: number) =>
    r.ceilings.find((c) => c.format === format && c.kind === kind && (batch === undefined || c.batch === batch));
  out.push('\n## Produce\n');
  out.push(
    table(
      [
        'format',
        'acks',
        'RF',
        'min.insync',
        'partitions',
        'batch',
        'records/s',
        'MB/s',
        'p50 ms',
        'p99 ms',
        'server CPU',
        'bench CPU',
        'other CPU',
        'of ceiling',
        'notes',
      ],
      r.produce.map((p) => {
        const c = ceilingFor(p.format, 'produce', p.batch);
        const notes = [p.acks !== 'all' && !s.acksSupported ? 'acks ignored' : '', errorText(p.errors).trim()]
          .filter(Boolean)
          .join(' ');
        return [
          FORMAT_NAMES[p.format],
          p.acks,
          p.replicas,
          p.minInsync,
          p.partitions,
          p.batch,
          int(p.recordsPerSec),
          fixed(p.mbPerSec),
          ms(p.latency.p50),
          ms(p.latency.p99),
          fixed(p.serverCpuCores, 2),
          fixed(p.loadCpuCores, 2),
          fixed(p.otherCpuCores, 2),
          c ? pct(p.recordsPerSec / c.recordsPerSec) : '',
          notes,
        ];
      }),
      ['l', 'l', 'r', 'r', 'r', 'r', 'r', 'r', 'r', 'r', 'r', 'r', 'r', 'r', 'l'],
    ),
  );
  out.push('\n## Fetch (reading back what the acks=all cell wrote)\n');
  out.push(
    table(
      [
        'format',
        'RF',
        'min.insync',
        'partitions',
        'written in batches of',
        'records/s',
        'MB/s',
        'p50 ms',
        'p99 ms',
        'server CPU',
        'bench CPU',
        'other CPU',
        'answer KB',
        'of ceiling',
        'notes',
      ],
      r.fetch.map((f) => {
        const fc = ceilingFor(f.format, 'fetch');
        return [
          FORMAT_NAMES[f.format],
          f.replicas,
          f.minInsync,
          f.partitions,
          f.writtenInBatchesOf,
          int(f.recordsPerSec),
          fixed(f.mbPerSec),
          ms(f.latency.p50),
          ms(f.latency.p99),
          fixed(f.serverCpuCores, 2),
          fixed(f.loadCpuCores, 2),
          fixed(f.otherCpuCores, 2),
          int(f.responseBytes / 1000),
          fc ? pct(f.recordsPerSec / fc.recordsPerSec) : '',
          errorText(f.errors).trim(),
        ];
      }),
      ['l', 'r', 'r', 'r', 'r', 'r', 'r', 'r', 'r', 'r', 'r', 'r', 'r', 'r', 'l'],
    ),
  );
  if (r.client?.length) {
    // The raw cell of the same shape, measured beside the client run (rawRecordsPerSec); in results
    // from before that, produce: the matrix's batch cell, acks=all, batches of 1000 (the client's
    // default request holds about that many 1 KiB records), same partitions and RF; consume: one raw
    // consumer reading the topic `perf consume` read (the fetch matrix's cells run 4 consumers).
    const rawProduce = (c: ClientRow) =>
      r.produce.find(
        (p) =>
          p.format === 'batch' &&
          p.acks === 'all' &&
          p.replicas === c.replicas &&
          p.minInsync === 1 &&
          p.partitions === c.partitions &&
          p.batch === 1000,
      );
    const rawFetch = (c: ClientRow) =>
      r.fetch.find(
        (f) =>
          f.format === 'batch' &&
          f.replicas === c.replicas &&
          f.minInsync === 1 &&
          f.partitions === c.partitions &&
          f.writtenInBatchesOf === 1000,
      );
    out.push("\n## Client path (kafka-log perf with the client's defaults, batch server)\n");
    if (r.client.some((c) => c.steadyLatencyMs))
      out.push(
        'The fixed-rate row gives its latency over the whole run / after its warm-up seconds (`--warmup-records`).\n',
      );
    out.push(
      table(
        [
          'run',
          'RF',
          'partitions',
          'records',
          'records/s',
          'p50 ms',
          'p99 ms',
          'server CPU',
          'PUT/MiB/replica',
          'WRU/request',
          '$/GiB',
          'raw cell records/s',
          'client/raw',
          'client alone records/s',
          'alone/raw',
        ],
        r.client.map((c) => {
          const raw =
            c.kind === 'consume'
              ? (c.rawRecordsPerSec ?? rawFetch(c)?.recordsPerSec)
              : c.kind === 'produce'
                ? (c.rawRecordsPerSec ?? rawProduce(c)?.recordsPerSec)
                : undefined;
          const name = c.kind === 'produce-fixed-rate' ? `produce at ${int(c.offeredRecordsPerSec ?? 0)}/s` : c.kind;
          return [
            name,
            c.replicas,
            c.partitions,
            c.records,
            int(c.recordsPerSec),
            // A fixed-rate run: the whole run, then after its warm-up seconds (the sustained figure).
            c.steadyLatencyMs
              ? `${fixed(c.latencyMs.p50, 0)} / ${fixed(c.steadyLatencyMs.p50, 0)}`
              : fixed(c.latencyMs.p50, 0),
            c.steadyLatencyMs
              ? `${fixed(c.latencyMs.p99, 0)} / ${fixed(c.steadyLatencyMs.p99, 0)}`
              : fixed(c.latencyMs.p99, 0),
            fixed(c.serverCpuCores, 2),
            c.kind === 'consume' ? '' : fixed(c.objectPutsPerMiBPerReplica, 2),
            c.kind === 'consume' ? '' : fixed(c.writeUnitsPerRequest, 1),
            fixed(c.perGib.dollars.total, 4),
            raw ? int(raw) : '',
            raw ? pct(c.recordsPerSec / raw) : '',
            c.clientAloneRecordsPerSec ? int(c.clientAloneRecordsPerSec) : '',
            raw && c.clientAloneRecordsPerSec ? pct(c.clientAloneRecordsPerSec / raw) : '',
          ];
        }),
        ['l', 'r', 'r', 'r', 'r', 'r', 'r', 'r', 'r', 'r', 'r', 'r', 'r', 'r', 'r'],
      ),
    );
  }
  out.push(
    '\n## Machine ceiling (same requests, minimal Hono handler appending the body to a file / answering a stored fetch answer)\n',
  );
  out.push(
    table(
      [
        'format',
        'traffic',
        'records/s',
        'MB/s',
        'p50 ms',
        'p99 ms',
        'server CPU',
        'bench CPU',
        'other CPU',
        'all runs (records/s)',
      ],
      r.ceilings.map((c) => [
        FORMAT_NAMES[c.format],
        c.kind === 'produce' ? `produce, batches of ${c.batch}` : `fetch, ${c.batch} records per answer`,
        int(c.recordsPerSec),
        fixed(c.mbPerSec),
        ms(c.latency.p50),
        ms(c.latency.p99),
        fixed(c.serverCpuCores, 2),
        fixed(c.loadCpuCores, 2),
        fixed(c.otherCpuCores, 2),
        c.runs.map(int).join(', '),
      ]),
      ['l', 'l', 'r', 'r', 'r', 'r', 'r', 'r', 'r', 'r'],
    ),
  );
  out.push('\n## Latency at half the measured maximum (open loop, HDR histograms, milliseconds)\n');
  const lat = (p: Percentiles | undefined) => (p ? [ms(p.p50), ms(p.p99), ms(p.p999), ms(p.max)] : ['', '', '', '']);
  out.push(
    table(
      [
        'cell',
        'load',
        'offered rec/s',
        'achieved rec/s',
        'bench CPU',
        'other CPU',
        'produce p50',
        'p99',
        'p99.9',
        'max',
        'end-to-end p50',
        'p99',
        'p99.9',
        'max',
        'notes',
      ],
      r.latency.flatMap((l) => {
        const cell = `${FORMAT_NAMES[l.format]} acks=${l.acks} RF=${l.replicas} min.insync=${l.minInsync} P=${l.partitions} batch=${l.batch}`;
        const runs: [string, LatencyRun][] = [['producers only', l.produceOnly]];
        if (l.withConsumer) runs.push(['producers + consumer', l.withConsumer]);
        return runs.map(([load, x]) => [
          cell,
          load,
          int(x.offeredRecordsPerSec),
          int(x.achievedRecordsPerSec),
          fixed(x.loadCpuCores, 2),
          fixed(x.otherCpuCores, 2),
          ...lat(x.produce),
          ...lat(x.endToEnd),
          errorText(x.errors).trim(),
        ]);
      }),
      ['l', 'l', 'r', 'r', 'r', 'r', 'r', 'r', 'r', 'r', 'r', 'r', 'r', 'r', 'l'],
    ),
  );

  out.push('\n## Storage requests and request cost per GiB of record values (us-east-1 list prices)\n');
  const costRows: { label: string; c: CostPerGib }[] = [];
  for (const p of r.produce.filter((p) => p.acks === 'all'))
    costRows.push({
      label: `${p.format} produce RF=${p.replicas} min.insync=${p.minInsync} P=${p.partitions} batch=${p.batch}`,
      c: p.perGib,
    });
  for (const f of r.fetch)
    costRows.push({
      label: `${f.format} fetch RF=${f.replicas} min.insync=${f.minInsync} P=${f.partitions} (written in ${f.writtenInBatchesOf}s)`,
      c: f.perGib,
    });
  out.push(
    table(
      [
        'traffic',
        'S3 PUT',
        'S3 GET',
        'meta get',
        'meta query',
        'meta put',
        'DDB RRU',
        'DDB WRU',
        'Lambda inv.',
        'API req.',
        '$ S3',
        '$ DDB',
        '$ Lambda',
        '$ API GW',
        '$ total',
      ],
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

  const formats = r.settings.formats;
  const peak = (xs: number[]) => (xs.length > 0 && Math.max(...xs) > 0 ? mib(Math.max(...xs)) : 'n/a');
  out.push('\n## Server memory (one server process per format)\n');
  out.push(
    table(
      ['phase', ...formats.map((f) => `${f}: peak RSS`)],
      [
        [
          'produce matrix (closed loop, sampled every 100 ms)',
          ...formats.map((f) => peak(r.produce.filter((p) => p.format === f).map((p) => p.peakRssBytes))),
        ],
        [
          'fetch matrix (closed loop, sampled)',
          ...formats.map((f) => peak(r.fetch.filter((p) => p.format === f).map((p) => p.peakRssBytes))),
        ],
        [
          'latency runs (open loop, up to 64 requests in flight, sampled)',
          ...formats.map((f) =>
            peak(
              r.latency
                .filter((l) => l.format === f)
                .flatMap((l) => [l.produceOnly.peakRssBytes, l.withConsumer?.peakRssBytes ?? 0]),
            ),
          ),
        ],
        [
          'whole run of the format (VmHWM)',
          ...formats.map((f) => (r.peakRssBytes[f] ? mib(r.peakRssBytes[f]) : 'n/a')),
        ],
      ],
      ['l', ...formats.map(() => 'r' as const)],
    ),
  );

  out.push('\n## Targets\n');
  const t = targets(r);
  out.push(
    table(
      ['target', 'goal', ...formats.flatMap((f) => [`${f}: measured`, 'met'])],
      t.map((row) => [
        row.target,
        row.goal,
        ...formats.flatMap((f) => [
          row.measured[f] ?? 'n/a',
          row.met[f] === undefined ? '?' : row.met[f] ? 'yes' : 'NO',
        ]),
      ]),
      ['l', 'l', ...formats.flatMap(() => ['r', 'l'] as const)],
    ),
  );
  return out.join('\n');
}

export interface TargetRow {
  target: string;
  goal: string;
  measured: Partial<Record<BodyFormat, string>>;
  met: Partial<Record<BodyFormat, boolean | undefined>>;
}

/** The targets, per format. */
export function targets(r: Results): TargetRow[] {
  const best = <T extends { recordsPerSec: number }>(rows: T[]): T | undefined =>
    rows.length === 0 ? undefined : rows.reduce((a, b) => (b.recordsPerSec > a.recordsPerSec ? b : a));
  const rows: TargetRow[] = [
    { target: 'produce, 1 KiB, batches of 1000, acks=all, RF=1', goal: '>= 100,000 records/s', measured: {}, met: {} },
    { target: 'fetch of the same', goal: '>= 250,000 records/s', measured: {}, met: {} },
    { target: 'produce p99 at half the max load', goal: '<= 25 ms', measured: {}, met: {} },
    { target: 'produce vs machine ceiling', goal: '>= 70%', measured: {}, met: {} },
    { target: 'fetch vs machine ceiling', goal: '>= 70%', measured: {}, met: {} },
    { target: 'server peak RSS', goal: '<= 300 MB', measured: {}, met: {} },
    { target: 'object PUTs per MiB (~1 MiB requests, RF=1)', goal: '<= 1.05', measured: {}, met: {} },
    { target: 'metadata writes per partition per request', goal: '<= 2', measured: {}, met: {} },
  ];
  const set = (i: number, f: BodyFormat, measured: string, met: boolean | undefined) => {
    rows[i]!.measured[f] = measured;
    rows[i]!.met[f] = met;
  };
  for (const f of r.settings.formats) {
    const hp = best(
      r.produce.filter((p) => p.format === f && p.acks === 'all' && p.replicas === 1 && p.batch === 1000),
    );
    const hf = best(r.fetch.filter((x) => x.format === f && x.replicas === 1 && x.writtenInBatchesOf === 1000));
    const hl = r.latency.find((l) => l.format === f && l.acks === 'all' && l.replicas === 1 && l.batch === 1000);
    const pc = r.ceilings.find((c) => c.format === f && c.kind === 'produce' && c.batch === 1000);
    const fc = r.ceilings.find((c) => c.format === f && c.kind === 'fetch');
    const rss = r.peakRssBytes[f];
    if (hp) set(0, f, `${int(hp.recordsPerSec)} (P=${hp.partitions})`, hp.recordsPerSec >= 100_000);
    if (hf) set(1, f, `${int(hf.recordsPerSec)} (P=${hf.partitions})`, hf.recordsPerSec >= 250_000);
    if (hl) set(2, f, `${ms(hl.produceOnly.produce.p99)} ms`, hl.produceOnly.produce.p99 <= 25_000);
    if (hp && pc) set(3, f, pct(hp.recordsPerSec / pc.recordsPerSec), hp.recordsPerSec / pc.recordsPerSec >= 0.7);
    if (hf && fc) set(4, f, pct(hf.recordsPerSec / fc.recordsPerSec), hf.recordsPerSec / fc.recordsPerSec >= 0.7);
    if (rss) set(5, f, `${int(rss / 1e6)} MB`, rss <= 300e6);
    if (hp) set(6, f, fixed(hp.objectPutsPerMiB, 3), hp.objectPutsPerMiB <= 1.05);
    if (hp) set(7, f, fixed(hp.metadataWritesPerPartitionRequest, 2), hp.metadataWritesPerPartitionRequest <= 2);
  }
  return rows;
}
