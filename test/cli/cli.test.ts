import { execFile } from 'node:child_process';
import { createServer } from 'node:net';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { ZSTD_FALLBACK_PACKAGES } from '../../src/wire/compression/zstd.js';
import { build } from 'esbuild';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CODEC, decodeRecordBatches } from '../../src/wire/record-batch.js';
import { partitionForKey } from '../../src/wire/murmur2.js';
import { isProduce, proxy } from '../client/support/flaky-proxy.js';
import { ROOT, startServer, stopServer, tempDir, type LocalServer } from '../support/local-server.js';

interface Run {
  code: number;
  out: string[];
  err: string[];
}

/** The package bin (`kafka-log`): the TypeScript CLI through tsx. */
const BIN = join(ROOT, 'src/cli/bin.mjs');

/** A port nothing listens on. */
async function closedPort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const { port } = s.address() as { port: number };
  await new Promise((r) => s.close(r));
  return port;
}

describe('kafka-log CLI against the local server', () => {
  let dir: Awaited<ReturnType<typeof tempDir>>;
  let server: LocalServer;
  let bundle: string;

  /**
   * Runs the CLI as a child process with the server URL from the environment. Most runs use the
   * CLI's sources bundled once by esbuild (the same code, without tsx's start-up cost per run);
   * `viaBin` runs the package bin itself.
   */
  const cli = (args: string[], input = '', env: Record<string, string> = {}, viaBin = false): Promise<Run> =>
    new Promise((resolve) => {
      const entry = viaBin ? BIN : bundle;
      const childEnv = { ...process.env, KAFKA_LOG_URL: server.origin, KAFKA_LOG_CLI_ENTRY: '1', ...env };
      const child = execFile(
        process.execPath,
        [entry, ...args],
        { cwd: ROOT, env: childEnv, timeout: 30_000 },
        (error, stdout, stderr) => {
          const lines = (s: string) => (s === '' ? [] : s.replace(/\n$/, '').split('\n'));
          resolve({
            code: error ? ((error as { code?: number }).code ?? 1) : 0,
            out: lines(stdout),
            err: lines(stderr),
          });
        },
      );
      child.stdin!.end(input);
    });

  beforeAll(async () => {
    dir = await tempDir('cli-');
    bundle = join(dir.path, 'kafka-log.mjs');
    const [s] = await Promise.all([
      startServer(join(dir.path, 'data')),
      build({
        entryPoints: [join(ROOT, 'src/cli/main.ts')],
        outfile: bundle,
        bundle: true,
        platform: 'node',
        format: 'esm',
        target: 'node20',
        external: ['@smithy/*', '@aws-sdk/*'],
        // Node 20's zstd fallback stays a package of the repo's node_modules, imported by its path.
        plugins: [
          {
            name: 'zstd-fallback',
            setup: (b) =>
              b.onResolve({ filter: /./ }, (a) =>
                ZSTD_FALLBACK_PACKAGES.includes(a.path)
                  ? { path: pathToFileURL(createRequire(import.meta.url).resolve(a.path)).href, external: true }
                  : undefined,
              ),
          },
        ],
        logLevel: 'silent',
        banner: {
          js: "import { createRequire as __bundleCreateRequire } from 'node:module'; const require = __bundleCreateRequire(import.meta.url);",
        },
      }),
    ]);
    server = s;
  });
  afterAll(async () => {
    await stopServer(server);
    await dir.remove();
  });

  it('the package bin runs the CLI', async () => {
    const help = await cli(['--help'], '', {}, true);
    expect(help.code).toBe(0);
    expect(help.out[0]).toBe('Usage: kafka-log <command> [options]   (kafka-log <command> --help for more)');
    expect(await cli(['topics', 'create', '--topic', 'from-bin'], '', {}, true)).toEqual({
      code: 0,
      out: ['Created topic from-bin.'],
      err: [],
    });
    expect(await cli(['topics', 'delete', '--topic', 'from-bin'], '', {}, true)).toEqual({
      code: 0,
      out: ['Deleted topic from-bin.'],
      err: [],
    });
  });

  it('topics: create, list, describe as kafka-topics.sh, alter, delete', async () => {
    expect(
      await cli(['topics', 'create', '--topic', 'orders', '--partitions', '3', '--config', 'retention.ms=60000']),
    ).toEqual({ code: 0, out: ['Created topic orders.'], err: [] });
    expect(await cli(['topics', 'create', '--topic', 'orders'])).toEqual({
      code: 1,
      out: [],
      err: ["Error: TOPIC_ALREADY_EXISTS: Topic 'orders' already exists."],
    });
    expect(await cli(['topics', 'create', '--topic', 'orders', '--if-not-exists'])).toEqual({
      code: 0,
      out: [],
      err: [],
    });
    await cli(['topics', 'create', '--topic', 'audit']);
    expect((await cli(['topics', 'list'])).out).toEqual(['audit', 'orders']);
    const d = await cli(['topics', 'describe', '--topic', 'orders']);
    expect(d.code).toBe(0);
    expect(d.out[0]).toMatch(
      /^Topic: orders\tTopicId: [0-9a-f-]{36}\tPartitionCount: 3\tReplicationFactor: 1\tConfigs: retention\.ms=60000$/,
    );
    // kafka-topics.sh's partition lines, then the log's own numbers.
    expect(d.out.slice(1)).toEqual(
      [0, 1, 2].map(
        (p) =>
          `\tTopic: orders\tPartition: ${p}\tLeader: 0\tReplicas: 0\tIsr: 0\tElr: \tLastKnownElr: \tLeaderEpoch: 0\tLogStartOffset: 0\tHighWatermark: 0\tLogEndOffset: 0`,
      ),
    );
    expect(
      await cli(['topics', 'alter', '--topic', 'audit', '--partitions', '2', '--config', 'cleanup.policy=compact']),
    ).toEqual({ code: 0, out: ['Altered topic audit.'], err: [] });
    const audit = await cli(['topics', 'describe', '--topic', 'audit']);
    expect(audit.out[0]).toMatch(/PartitionCount: 2\tReplicationFactor: 1\tConfigs: cleanup\.policy=compact$/);
    expect(audit.out).toHaveLength(3);
    expect(await cli(['topics', 'delete', '--topic', 'audit'])).toEqual({
      code: 0,
      out: ['Deleted topic audit.'],
      err: [],
    });
    expect(await cli(['topics', 'delete', '--topic', 'audit'])).toEqual({
      code: 1,
      out: [],
      err: ['Error: UNKNOWN_TOPIC_OR_PARTITION: This server does not host this topic: audit'],
    });
    expect(await cli(['topics', 'list', '--no-such-flag'])).toEqual({
      code: 2,
      out: [],
      err: ["Error: Unknown option '--no-such-flag' (see --help)"],
    });
  });

  it.each([
    ['gzip', []],
    ['snappy', []],
    ['lz4', []],
    ['zstd', ['--producer-property', 'compression.zstd.level=7']],
  ])('produce --compression-codec %s: stored compressed so, consumed as sent', async (codec, extra) => {
    const topic = `codec-${codec}`;
    await cli(['topics', 'create', '--topic', topic, '--partitions', '1']);
    const input = Array.from({ length: 20 }, (_, i) => `k${i}:${'payload '.repeat(20)}${i}`).join('\n');
    const produced = await cli(
      [
        'produce',
        '--topic',
        topic,
        '--key-separator',
        ':',
        '--compression-codec',
        codec,
        '--linger-ms',
        '50',
        ...extra,
      ],
      `${input}\n`,
    );
    expect(produced).toMatchObject({ code: 0, err: [] });
    const raw = await fetch(`${server.origin}/v3/clusters/local/topics/${topic}/partitions/0/records?offset=0`, {
      headers: { accept: 'application/vnd.kafka.record-batch.v2' },
    });
    const batches = decodeRecordBatches(new Uint8Array(await raw.arrayBuffer()));
    expect(batches.map((b) => b.header.attributes & 0x07)).toEqual(batches.map(() => CODEC[codec as 'gzip']));
    const consumed = await cli([
      'consume',
      '--topic',
      topic,
      '--from-beginning',
      '--print-key',
      '--max-messages',
      '20',
      '--timeout-ms',
      '5000',
    ]);
    expect(consumed.out).toEqual(input.split('\n').map((l) => l.replace(':', '\t')));
  });

  it('produce from stdin lines with keys and headers; consume from the beginning, by partition and offset', async () => {
    await cli(['topics', 'create', '--topic', 'lines', '--partitions', '2']);
    const input = 'alice:one\nbob:two\ncarol:three\nalice:four\n';
    const produced = await cli(
      ['produce', '--topic', 'lines', '--key-separator', ':', '--header', 'source=cli', '--print-metadata'],
      input,
    );
    expect(produced.code).toBe(0);
    const p = (k: string) => partitionForKey(Buffer.from(k), 2);
    const next = [0, 0];
    const expected = ['alice', 'bob', 'carol', 'alice'].map((k) => ({ k, p: p(k), o: next[p(k)]!++ }));
    expect(produced.out).toEqual(expected.map((e) => `lines-${e.p}@${e.o}`));

    const all = await cli([
      'consume',
      '--topic',
      'lines',
      '--from-beginning',
      '--print-key',
      '--print-partition',
      '--print-offset',
      '--print-headers',
      '--max-messages',
      '4',
      '--timeout-ms',
      '5000',
    ]);
    expect(all.code).toBe(0);
    const values = ['one', 'two', 'three', 'four'];
    const lines = expected.map((e, i) => `Partition:${e.p}\tOffset:${e.o}\tsource:cli\t${e.k}\t${values[i]}`);
    expect([...all.out].sort()).toEqual([...lines].sort());
    expect(all.err).toEqual(['Processed a total of 4 messages']);
    // Within a partition, the output keeps offset order.
    for (const part of [0, 1])
      expect(all.out.filter((l) => l.startsWith(`Partition:${part}`))).toEqual(
        lines.filter((l) => l.startsWith(`Partition:${part}`)),
      );

    const alice = p('alice');
    const one = await cli([
      'consume',
      '--topic',
      'lines',
      '--partition',
      String(alice),
      '--offset',
      '1',
      '--print-timestamp',
      '--print-key',
      '--key-separator',
      ' | ',
      '--timeout-ms',
      '1500',
    ]);
    const rest = expected
      .filter((e) => e.p === alice && e.o >= 1)
      .map((e) => `${e.k} | ${values[expected.indexOf(e)]}`);
    expect(one.out.map((l) => l.replace(/^CreateTime:\d{13} \| /, ''))).toEqual(rest);
    expect(one.out.every((l) => /^CreateTime:\d{13} \| /.test(l))).toBe(true);
    expect(one.err).toEqual([`Processed a total of ${rest.length} messages`]);

    const hex = await cli([
      'consume',
      '--topic',
      'lines',
      '--partition',
      String(alice),
      '--offset',
      'earliest',
      '--max-messages',
      '1',
      '--value-format',
      'hex',
    ]);
    expect(hex.out).toEqual([Buffer.from('one').toString('hex')]);
  });

  it('--wire-format: Kafka record batches by default, JSON on request, the same records and output either way', async () => {
    await cli(['topics', 'create', '--topic', 'wire']);
    const p = await proxy(server.origin);
    try {
      const at = ['--bootstrap-server', p.origin];
      const produce = [
        'produce',
        '--topic',
        'wire',
        '--key-separator',
        ':',
        '--property',
        'null.marker=NULL',
        '--header',
        'h=1',
        '--print-metadata',
        ...at,
      ];
      expect(await cli(produce, 'k1:v1\nk2:NULL\n')).toEqual({ code: 0, out: ['wire-0@0', 'wire-0@1'], err: [] });
      expect(await cli([...produce, '--wire-format', 'json'], 'k3:v3\nNULL:v4\n')).toEqual({
        code: 0,
        out: ['wire-0@2', 'wire-0@3'],
        err: [],
      });
      const posts = p.log.filter(isProduce);
      // Record batches go in Kafka's multi-partition produce (topic_data), JSON to records:batch.
      expect(posts.map((e) => [e.url.replace(/^.*\/clusters\/[^/]+\//, ''), e.contentType])).toEqual([
        ['records?acks=all', 'application/vnd.kafka.produce-request'],
        ['topics/wire/records:batch?acks=all', 'application/json'],
      ]);

      const consume = [
        'consume',
        '--topic',
        'wire',
        '--from-beginning',
        '--print-key',
        '--print-offset',
        '--print-headers',
        '--max-messages',
        '4',
        '--timeout-ms',
        '5000',
        ...at,
      ];
      const expected = [
        'Offset:0\th:1\tk1\tv1',
        'Offset:1\th:1\tk2\tnull',
        'Offset:2\th:1\tk3\tv3',
        'Offset:3\th:1\tnull\tv4',
      ];
      const seen = p.log.length;
      expect(await cli(consume)).toEqual({ code: 0, out: expected, err: ['Processed a total of 4 messages'] });
      // The consumer fetches all its partitions in one records:fetch, asking for batches or JSON records.
      const formats = (from: number) =>
        p.log
          .slice(from)
          .filter((e) => e.method === 'POST' && e.url.includes('/records:fetch'))
          .map((e) => (JSON.parse(e.body.toString()) as { format: string }).format);
      expect(formats(seen).length).toBeGreaterThan(0);
      expect(formats(seen).every((f) => f === 'record-batch')).toBe(true);
      const mark = p.log.length;
      expect(await cli([...consume, '--wire-format', 'json'])).toEqual({
        code: 0,
        out: expected,
        err: ['Processed a total of 4 messages'],
      });
      expect(formats(mark).length).toBeGreaterThan(0);
      expect(formats(mark).every((f) => f === 'binary')).toBe(true);
      expect(await cli(['consume', '--topic', 'wire', '--wire-format', 'xml', ...at])).toEqual({
        code: 2,
        out: [],
        err: ['Error: --wire-format must be auto, record-batch or json (got xml) (see --help)'],
      });
    } finally {
      await p.close();
    }
  });

  it('produce with the defaults spreads 3,000 keyless lines over every partition of a 6-partition topic', async () => {
    await cli(['topics', 'create', '--topic', 'keyless', '--partitions', '6']);
    // Log lines of about 60 bytes: 180 KB in all, eleven of the sticky partitioner's 16 KiB stints.
    const lines = Array.from(
      { length: 3000 },
      (_, i) => `2026-12-06T04:00:${String(i % 60).padStart(2, '0')}Z INFO request ${i} served in ${i % 97} ms`,
    );
    const produced = await cli(['produce', '--topic', 'keyless', '--print-metadata'], `${lines.join('\n')}\n`);
    expect(produced).toMatchObject({ code: 0, err: [] });
    expect(produced.out).toHaveLength(3000);
    const partitions = produced.out.map((l) => Number(/^keyless-(\d+)@/.exec(l)![1]));
    expect(new Set(partitions)).toEqual(new Set([0, 1, 2, 3, 4, 5]));
  });

  it('groups: consume in a group, list, describe with lag, reset offsets (dry run, execute), delete', async () => {
    await cli(['topics', 'create', '--topic', 'events', '--partitions', '1']);
    await cli(['produce', '--topic', 'events'], 'a\nb\nc\nd\ne\n');
    const consumed = await cli([
      'consume',
      '--topic',
      'events',
      '--group',
      'audit',
      '--from-beginning',
      '--max-messages',
      '3',
      '--timeout-ms',
      '8000',
    ]);
    expect(consumed).toEqual({ code: 0, out: ['a', 'b', 'c'], err: ['Processed a total of 3 messages'] });
    expect((await cli(['groups', 'list'])).out).toEqual(['audit']);
    const described = await cli(['groups', 'describe', '--group', 'audit']);
    expect(described.out).toEqual([
      '',
      "Consumer group 'audit' has no active members.",
      'GROUP  TOPIC   PARTITION  CURRENT-OFFSET  LOG-END-OFFSET  LAG  CONSUMER-ID  HOST  CLIENT-ID',
      'audit  events  0          3               5               2    -            -     -',
    ]);
    // The next consumer of the group continues after what was shown, not after what was fetched.
    expect(
      (await cli(['consume', '--topic', 'events', '--group', 'audit', '--max-messages', '2', '--timeout-ms', '8000']))
        .out,
    ).toEqual(['d', 'e']);

    const dry = await cli([
      'groups',
      'reset-offsets',
      '--group',
      'audit',
      '--topic',
      'events',
      '--to-offset',
      '1',
      '--dry-run',
    ]);
    expect(dry).toEqual({
      code: 0,
      out: ['', 'GROUP  TOPIC   PARTITION  NEW-OFFSET', 'audit  events  0          1'],
      err: [],
    });
    expect((await cli(['groups', 'describe', '--group', 'audit'])).out[3]).toMatch(/^audit {2}events {2}0 +5 +5 +0 /);
    const exec = await cli([
      'groups',
      'reset-offsets',
      '--group',
      'audit',
      '--all-topics',
      '--shift-by',
      '-2',
      '--execute',
    ]);
    expect(exec.out).toEqual(['', 'GROUP  TOPIC   PARTITION  NEW-OFFSET', 'audit  events  0          3']);
    expect((await cli(['groups', 'describe', '--group', 'audit', '--state'])).out).toEqual([
      '',
      'GROUP  COORDINATOR (ID)  ASSIGNMENT-STRATEGY  STATE  #MEMBERS',
      // The server's default assignor, as Kafka's group.consumer.assignors: uniform (ours: sticky).
      'audit  server (0)        sticky               Empty  0',
    ]);
    expect(
      (await cli(['consume', '--topic', 'events', '--group', 'audit', '--max-messages', '5', '--timeout-ms', '2500']))
        .out,
    ).toEqual(['d', 'e']);
    expect(await cli(['groups', 'reset-offsets', '--group', 'audit', '--all-topics'])).toMatchObject({ code: 2 });
    expect(await cli(['groups', 'delete', '--group', 'audit'])).toEqual({
      code: 0,
      out: ["Deletion of requested consumer groups ('audit') was successful."],
      err: [],
    });
    expect((await cli(['groups', 'list'])).out).toEqual([]);
  }, 40_000);

  it('perf produce and perf consume print progress lines, rates and latency percentiles', async () => {
    await cli(['topics', 'create', '--topic', 'perf', '--partitions', '2']);
    const produced = await cli([
      'perf',
      'produce',
      '--topic',
      'perf',
      '--num-records',
      '600',
      '--record-size',
      '100',
      '--throughput',
      '1000',
      '--acks',
      'all',
      '--reporting-interval',
      '200',
    ]);
    expect(produced.code).toBe(0);
    const progress =
      /^\d+ records sent, \d+\.\d records\/sec \(\d+\.\d\d MB\/sec\), \d+\.\d ms avg latency, \d+\.\d ms max latency\.$/;
    expect(produced.out.length).toBeGreaterThanOrEqual(2);
    for (const line of produced.out.slice(0, -1)) expect(line).toMatch(progress);
    expect(produced.out.at(-1)).toMatch(
      /^600 records sent, \d+\.\d{6} records\/sec \(\d+\.\d\d MB\/sec\), \d+\.\d\d ms avg latency, \d+\.\d\d ms max latency, \d+ ms 50th, \d+ ms 95th, \d+ ms 99th, \d+ ms 99\.9th\.$/,
    );
    const rate = Number(/, (\d+\.\d+) records\/sec/.exec(produced.out.at(-1)!)![1]);
    expect(rate).toBeLessThan(1100); // --throughput caps it

    const consumed = await cli([
      'perf',
      'consume',
      '--topic',
      'perf',
      '--messages',
      '600',
      '--timeout',
      '5000',
      '--reporting-interval',
      '10000',
    ]);
    expect(consumed.code).toBe(0);
    expect(consumed.out.slice(-3, -1)).toEqual([
      'start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec, rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec',
      expect.stringMatching(
        /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d:\d{3}, \d{4}-\d\d-\d\d \d\d:\d\d:\d\d:\d{3}, 0\.0572, \d+\.\d{4}, 600, \d+\.\d{4}, \d+, \d+, \d+\.\d{4}, \d+\.\d{4}$/,
      ),
    ]);
    expect(consumed.out.at(-1)).toMatch(
      /^600 records consumed, \d+\.\d{6} records\/sec \(\d+\.\d\d MB\/sec\), .* ms 50th, \d+ ms 95th, \d+ ms 99th, \d+ ms 99\.9th\.$/,
    );

    // --warmup-records (Kafka's KIP-1052): the totals, then the records after the warm-up alone.
    const warm = ['perf', 'produce', '--topic', 'perf', '--num-records', '300', '--record-size', '100'];
    const warmed = await cli([...warm, '--warmup-records', '100']);
    expect(warmed.code).toBe(0);
    expect(warmed.out.at(-2)).toMatch(/^300 records sent, \d+\.\d{6} records\/sec .* \d+ ms 99\.9th\.$/);
    expect(warmed.out.at(-1)).toMatch(
      /^200 records sent, \d+\.\d{6} records\/sec \(\d+\.\d\d MB\/sec\), .* \d+ ms 99th, \d+ ms 99\.9th\. \(steady state\)$/,
    );
    expect(await cli([...warm, '--warmup-records', '300'])).toMatchObject({
      code: 2,
      err: [expect.stringContaining('--warmup-records must be less than --num-records')],
    });
  }, 30_000);

  it('prints one clear error line, and what to start, when the server is unreachable', async () => {
    const port = await closedPort();
    const r = await cli(['topics', 'list', '--bootstrap-server', `http://127.0.0.1:${port}`]);
    expect(r).toEqual({
      code: 1,
      out: [],
      err: [
        `Error: NETWORK_EXCEPTION: GET http://127.0.0.1:${port}/v3/clusters failed: ECONNREFUSED`,
        expect.stringMatching(/^Is the server running\? Start it with `npm start`, or name it with --bootstrap-server/),
      ],
    });
  });

  it('takes --bootstrap-server host:port, as kafka-topics.sh users write it', async () => {
    const { host } = new URL(server.origin);
    const r = await cli(['topics', 'list', '--bootstrap-server', host], '', { KAFKA_LOG_URL: '' });
    expect(r.code).toBe(0);
    expect(r.err).toEqual([]);
  });
});
