/**
 * bench:share: 20 share consumers (the client's shareConsumer over HTTP) on one share group of a
 * 12-partition topic on the local backend, receiving up to 100 records each per poll, acknowledging
 * each record in its own request (individual) or all of a poll in one (batched); records/s
 * acknowledged, and the CPU time per record acknowledged of the server process and of this one
 * (the 20 clients), which the machine's load moves less than the rate.
 *
 * Beside them, the machine's ceiling for small requests in the same run: the same 20 workers, the
 * client's HTTP path (node:http keep-alive), POSTing an individual acknowledgement's body to a
 * minimal Hono handler (bench/ceiling-server.ts: reads the body, appends it to a file, answers a
 * small JSON) in its own process; requests/s and that process's CPU per request. An individually
 * acknowledged record costs one such request (and a hundredth of a receive).
 */
import { mkdtemp, readFile } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { Kafka } from '../src/client/index.js';
import { nodeExchanger } from '../src/client/http-exchange.js';
import { startServer } from './processes.js';

const WORKERS = 20;
const PARTITIONS = 12;
const RECORDS = Number(process.env.SHARE_RECORDS ?? 24_000);

async function run(kafka: Kafka, topic: string, mode: 'individual' | 'batched'): Promise<number> {
  const group = `bench-${mode}`;
  await kafka.admin().alterShareGroupConfigs(group, { 'share.auto.offset.reset': 'earliest' });
  let acked = 0;
  const start = performance.now();
  await Promise.all(
    Array.from({ length: WORKERS }, async (_, w) => {
      const c = kafka.shareConsumer({
        groupId: group,
        memberId: `${mode}-${w}`,
        maxPollRecords: 100,
        acknowledgementMode: 'explicit',
      });
      c.subscribe([topic]);
      let idle = 0;
      while (acked < RECORDS && idle < 5) {
        const got = await c.poll(200);
        if (got.length === 0) {
          idle++;
          continue;
        }
        idle = 0;
        for (const r of got) {
          c.acknowledge(r, 'accept');
          if (mode === 'individual') await c.commitSync();
        }
        if (mode === 'batched') await c.commitSync();
        acked += got.length;
      }
      await c.close();
    }),
  );
  return acked / ((performance.now() - start) / 1000);
}

/** CPU time (user + system) of a process so far, in ms, from /proc (NaN where there is none). */
async function cpuMs(pid: number): Promise<number> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => undefined);
  if (!stat) return Number.NaN;
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // utime and stime are fields 14 and 15 of stat(5), in clock ticks (100 a second on Linux).
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
}

/** The ceiling: `requests` small POSTs by WORKERS workers; requests/s and the server's CPU per request. */
async function ceiling(requests: number): Promise<string> {
  const server = await startServer('bench/ceiling-server.ts', ['--port', '0', '--data-dir', join(dir, 'ceiling')]);
  try {
    const exchange = nodeExchanger();
    const url = new URL(`${server.url}/produce`);
    const post = (w: number, i: number) =>
      exchange(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          member_id: `individual-${w}`,
          request_id: `${w}-${i}-0123456789`,
          acknowledgements: [{ topic_name: 'share-bench', partition_id: w % PARTITIONS, offset: i, type: 'accept' }],
        }),
        signal: AbortSignal.timeout(30_000),
      });
    for (let i = 0; i < WORKERS * 10; i++) await post(0, i);
    const before = await cpuMs(server.pid);
    let sent = 0;
    const start = performance.now();
    await Promise.all(
      Array.from({ length: WORKERS }, async (_, w) => {
        while (sent < requests) await post(w, sent++);
      }),
    );
    const rate = sent / ((performance.now() - start) / 1000);
    const perRequest = (((await cpuMs(server.pid)) - before) * 1000) / sent;
    return `ceiling: ${Math.round(rate)} requests/s (load ${load()}); CPU per request: server ${perRequest.toFixed(0)} µs`;
  } finally {
    await server.stop();
  }
}

const load = () =>
  loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');

const dir = await mkdtemp(join(tmpdir(), 'bench-share-'));
// SHARE_PROFILE=dir: the server runs under --cpu-prof, its profile written to dir when it stops.
const profileDir = process.env.SHARE_PROFILE;
const server = await startServer('src/server.ts', ['--port', '0', '--data-dir', dir], {
  nodeArgs: profileDir ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : [],
});
try {
  const kafka = new Kafka({ url: `${server.url}/v3/clusters/local` });
  await kafka.admin().createTopics({ topics: [{ topic: 'share-bench', numPartitions: PARTITIONS }] });
  const producer = kafka.producer();
  for (let i = 0; i < RECORDS; i += 1000)
    await producer.send({
      topic: 'share-bench',
      messages: Array.from({ length: 1000 }, (_, j) => ({ key: `k${i + j}`, value: 'x'.repeat(100) })),
    });
  await producer.disconnect();
  const modes = (process.env.SHARE_MODES ?? 'batched,individual').split(',') as ('batched' | 'individual')[];
  for (const mode of modes) {
    if (mode === 'individual' && process.env.SHARE_CEILING !== '0') console.log(await ceiling(RECORDS));
    const serverBefore = await cpuMs(server.pid);
    const clientBefore = process.cpuUsage();
    const rate = await run(kafka, 'share-bench', mode);
    const client = process.cpuUsage(clientBefore);
    const serverCpu = (await cpuMs(server.pid)) - serverBefore;
    const perRecord = (ms: number) => `${((ms * 1000) / RECORDS).toFixed(0)} µs`;
    console.log(
      `${mode}: ${Math.round(rate)} records/s acknowledged (load ${load()}); CPU per record: server ${Number.isNaN(serverCpu) ? '?' : perRecord(serverCpu)}, clients ${perRecord(
        (client.user + client.system) / 1000,
      )}`,
    );
  }
} finally {
  await server.stop();
}
