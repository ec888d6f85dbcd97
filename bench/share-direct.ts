/**
 * bench:share's workload without HTTP: ShareGroups called in this process by 20 workers (or
 * SHARE_WORKERS), each receiving up to 100 records and acknowledging them in one call (batched) or
 * one call per record (individual); CPU per record acknowledged and the storage calls made (failed
 * conditions, share-partition reads and writes, index queries, object reads), and with one worker the
 * CPU of the receives' log reads alone. What the
 * share-partition work costs, apart from what every HTTP request costs (bench/share.ts measures
 * both through the server).
 *
 *   SHARE_RECORDS=24000 SHARE_WORKERS=20 npx tsx bench/share-direct.ts [batched|individual]
 */
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createServices, openStorage } from '../src/compose.js';
import { serverConfigFromEnv } from '../src/config/server-config.js';
import { observeStorage, type StorageCall } from '../src/storage/observed-stores.js';
import type { LogRecord } from '../src/wire/record-batch.js';

const RECORDS = Number(process.env.SHARE_RECORDS ?? 24_000);
const WORKERS = Number(process.env.SHARE_WORKERS ?? 20);
const mode = (process.argv[2] ?? 'batched') as 'batched' | 'individual';

const counts = new Map<string, number>();
let counting = false;
const onCall = (c: StorageCall) => {
  if (!counting) return;
  const what =
    c.port === 'object'
      ? `object ${c.op}`
      : 'sk' in c
        ? `${c.op} ${c.sk.startsWith('sp#') ? 'share-partition' : c.sk.split('#')[0]}`
        : `${c.op} ${c.pk.split('#')[0]}`;
  counts.set(what, (counts.get(what) ?? 0) + 1);
  if (c.op === 'UpdateItem' && c.conditionFailed)
    counts.set(`${what} condition failed`, (counts.get(`${what} condition failed`) ?? 0) + 1);
};

const dir = await mkdtemp(join(tmpdir(), 'bench-share-direct-'));
const config = serverConfigFromEnv({ DATA_DIR: dir });
const services = createServices(config, observeStorage(await openStorage(config.backend), onCall));
await services.topics.create({ name: 'share-bench', partitionCount: 12, replicationFactor: 1 });
const topic = await services.topics.get('share-bench');
// As the client's producer sends bench:share's records: 1,000 a request, spread over the 12 partitions.
for (let i = 0; i < RECORDS; i += 1000) {
  const records = (p: number): LogRecord[] =>
    Array.from({ length: 1000 }, (_, j) => j)
      .filter((j) => j % 12 === p)
      .map((j) => ({
        key: Buffer.from(`k${i + j}`),
        value: Buffer.from('x'.repeat(100)),
        headers: [],
        timestamp: Date.now(),
      }));
  await services.log.append(
    topic,
    Array.from({ length: 12 }, (_, p) => ({ partition: p, records: records(p) })),
  );
}
// The CPU of the log reads the receives make, apart from the rest: exact with one worker (nothing
// else runs while a read awaits its storage calls), more includes what the others do meanwhile.
const reader = services.log.reader;
const readBatchesMany = reader.readBatchesMany.bind(reader);
let readMicros = 0;
reader.readBatchesMany = async (...args) => {
  const before = process.cpuUsage();
  try {
    return await readBatchesMany(...args);
  } finally {
    const used = process.cpuUsage(before);
    if (counting) readMicros += used.user + used.system;
  }
};
const { share } = services;
await share.alterConfigs('bench', [{ name: 'share.auto.offset.reset', value: 'earliest' }]);
counting = true;
let acked = 0;
const cpu = process.cpuUsage();
const start = performance.now();
await Promise.all(
  Array.from({ length: WORKERS }, async (_, w) => {
    let idle = 0;
    while (acked < RECORDS && idle < 3) {
      const got = await share.acquire('bench', ['share-bench'], `w${w}`, 100);
      if (got.length === 0) {
        idle++;
        continue;
      }
      idle = 0;
      const acks = got.map((r) => ({
        topic: r.topic,
        partition: r.partition,
        offset: r.record.offset,
        type: 'accept' as const,
      }));
      const batches = mode === 'batched' ? [acks] : acks.map((a) => [a]);
      for (const batch of batches) {
        const errors = await share.acknowledge(
          'bench',
          `w${w}`,
          batch,
          `${w}-${batch[0]!.partition}-${batch[0]!.offset}`,
        );
        if (errors.some((e) => e)) throw new Error(`acknowledgement refused: ${errors.find((e) => e)}`);
      }
      acked += got.length;
    }
  }),
);
const used = process.cpuUsage(cpu);
const seconds = (performance.now() - start) / 1000;
counting = false;
console.log(
  `${mode}, ${WORKERS} workers: ${acked} records in ${seconds.toFixed(1)} s, CPU ${((used.user + used.system) / acked).toFixed(1)} µs per record (in process, storage calls counted)`,
);
if (WORKERS === 1) console.log(`  log reads: CPU ${(readMicros / acked).toFixed(1)} µs per record`);
for (const [what, n] of [...counts].sort()) console.log(`  ${what}: ${n}`);
process.exit(0);
