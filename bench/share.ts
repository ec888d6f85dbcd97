/**
 * bench:share: 20 share consumers (the client's shareConsumer over HTTP) on one share group of a
 * 12-partition topic on the local backend, receiving up to 100 records each per poll, acknowledging
 * each record in its own request (individual) or all of a poll in one (batched); records/s acknowledged.
 */
import { mkdtemp } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { Kafka } from '../src/client/index.js';
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
  for (const mode of modes)
    console.log(
      `${mode}: ${Math.round(await run(kafka, 'share-bench', mode))} records/s acknowledged (load ${loadavg()
        .map((l) => l.toFixed(2))
        .join(' ')})`,
    );
} finally {
  await server.stop();
}
