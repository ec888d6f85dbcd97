/**
 * Exactly once through crashes: a consume-transform-produce worker (support/eos-worker.ts) is
 * SIGKILLed again and again mid-transaction, and the server is killed and restarted too; a
 * read_committed consumer of the output must see every input exactly once, in order, and nothing
 * of an aborted transaction. On the local backend and on the S3/DynamoDB adapters (emulators).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { build } from 'esbuild';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Kafka } from '../../src/client/index.js';
import { createStorage } from '../../src/compose.js';
import { DynamoDbMetadataStore } from '../../src/storage/dynamodb-metadata-store.js';
import type { MetadataStore } from '../../src/storage/ports.js';
import { describePipeline } from './support/eos-diagnosis.js';
import { ROOT, startServer, stopServer, tempDir, type LocalServer } from '../support/local-server.js';
import {
  startDynalite,
  startS3rver,
  TEST_CREDENTIALS,
  type DynaliteHandle,
  type S3rverHandle,
} from '../support/emulators.js';

const INPUTS = 120;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The worker bundled once by esbuild: a restart costs node's start-up, not tsx's. */
let workerBundle = '';

/** Workers and servers still running: a test that times out leaves none behind (afterAll kills them). */
const live = new Set<ChildProcess>();
function track(proc: ChildProcess): void {
  live.add(proc);
  proc.once('exit', () => live.delete(proc));
}

/** Every worker's lines (what each transaction read and wrote, under which epoch), quoted on failure. */
const workerLines: string[] = [];

function startWorker(origin: string): { proc: ChildProcess; committed: () => number } {
  const name = `worker ${workerLines.filter((l) => l.endsWith('started')).length + 1}`;
  workerLines.push(`${name} started`);
  const proc = spawn(process.execPath, [workerBundle, origin, 'eos-pipeline', 'eos-group'], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  track(proc);
  let committed = 0;
  let buffer = '';
  proc.stdout!.on('data', (chunk: Buffer) => {
    buffer += chunk.toString();
    const lines = buffer.split('\n');
    buffer = lines.pop()!;
    for (const l of lines) {
      workerLines.push(`${name} ${l}`);
      committed = Math.max(committed, (JSON.parse(l) as { committed: number }).committed);
    }
  });
  proc.once('exit', (code, signal) => workerLines.push(`${name} exited ${signal ?? code}`));
  return { proc, committed: () => committed };
}

async function kill(proc: ChildProcess): Promise<void> {
  if (proc.exitCode !== null || proc.signalCode !== null) return;
  const exited = new Promise((r) => proc.once('exit', r));
  proc.kill('SIGKILL');
  await exited;
}

/** The output's records as `offset:value`, read from the start. */
async function readOutput(
  origin: string,
  isolationLevel: 'read_committed' | 'read_uncommitted',
  until: number,
): Promise<string[]> {
  const consumer = new Kafka({ url: origin }).consumer({ isolationLevel, fetchMaxWaitMs: 50 });
  consumer.assign([{ topic: 'out', partition: 0 }]);
  consumer.seekToBeginning();
  const values: string[] = [];
  // Until 5 s pass with nothing new: a loaded machine reads slowly, a stuck log not at all.
  for (let lastNews = Date.now(); Date.now() - lastNews < 5000; ) {
    const records = await consumer.poll({ timeoutMs: 200 });
    if (records.length > 0) lastNews = Date.now();
    values.push(...records.map((r) => `${r.offset}:${r.value!.toString()}`));
    if (values.length >= until && records.length === 0) break;
  }
  await consumer.close();
  return values;
}

const recordValue = (r: string) => r.slice(r.indexOf(':') + 1);

/**
 * `kills` SIGKILLs of the worker, the second one followed by a SIGKILL and restart of the server.
 * `stored` opens the metadata store once the server is stopped, to say what it holds on failure.
 */
async function runPipeline(
  start: (port?: number) => Promise<LocalServer>,
  kills: number,
  stored: () => Promise<{ metadata: MetadataStore; close(): void }>,
): Promise<void> {
  workerLines.length = 0;
  const startTracked = async (port?: number) => {
    const started = await start(port);
    track(started.proc);
    return started;
  };
  let server = await startTracked();
  const kafka = new Kafka({ url: server.origin });
  const admin = kafka.admin();
  await admin.createTopics({
    topics: [
      { topic: 'in', numPartitions: 1 },
      { topic: 'out', numPartitions: 1 },
    ],
  });
  const input = kafka.producer();
  await input.send({
    topic: 'in',
    messages: Array.from({ length: INPUTS }, (_, i) => ({ partition: 0, value: `v${i}` })),
  });
  await input.close();

  let killed = 0;
  let progress = 0;
  for (let round = 0; round < kills; round++) {
    const worker = startWorker(server.origin);
    // Let it commit something (or at least start), then kill it at a random point.
    const started = Date.now();
    while (worker.committed() <= progress && progress < INPUTS && Date.now() - started < 8000) await sleep(20);
    await sleep(50 + Math.random() * 150);
    await kill(worker.proc);
    killed++;
    progress = Math.max(progress, worker.committed());
    if (round === 1) {
      // The server dies too, and comes back on the same port and data.
      const port = server.port;
      await stopServer(server);
      server = await startTracked(port);
    }
  }
  if (progress < INPUTS) {
    const last = startWorker(server.origin);
    // Until it is done, or 15 s pass without a commit (a loaded machine is slow, a stuck pipeline stops).
    for (let seen = last.committed(), at = Date.now(); last.committed() < INPUTS && Date.now() - at < 15_000; ) {
      await sleep(50);
      if (last.committed() > seen) [seen, at] = [last.committed(), Date.now()];
    }
    await kill(last.proc);
  }
  expect(killed).toBe(kills);

  const expected = Array.from({ length: INPUTS }, (_, i) => `out-v${i}`);
  const committed = await readOutput(server.origin, 'read_committed', INPUTS);
  // The killed transactions left aborted records in the log, which only read_uncommitted shows.
  const uncommitted = await readOutput(server.origin, 'read_uncommitted', INPUTS);
  await stopServer(server);
  const seen = (rs: string[]) => new Set(rs.map(recordValue));
  const wrong =
    JSON.stringify(committed.map(recordValue)) !== JSON.stringify(expected) ||
    uncommitted.length < INPUTS ||
    seen(uncommitted).size !== INPUTS ||
    [...seen(uncommitted)].some((v) => !expected.includes(v));
  if (wrong) {
    const facts = await stored()
      .then(async (store) => {
        try {
          return await describePipeline(store.metadata, {
            output: 'out',
            group: 'eos-group',
            transactionalId: 'eos-pipeline',
          });
        } finally {
          store.close();
        }
      })
      .catch((e: unknown) => `(the store could not be read: ${String(e)})`);
    expect.fail(
      [
        `read_committed saw ${committed.length} records (expected out-v0..out-v${INPUTS - 1} once each, in order):`,
        committed.join(' '),
        `read_uncommitted saw ${uncommitted.length}:`,
        uncommitted.join(' '),
        'workers:',
        ...workerLines,
        'stored:',
        facts,
      ].join('\n'),
    );
  }
}

describe('exactly-once consume-transform-produce through SIGKILLs', () => {
  const cleanups: (() => Promise<void>)[] = [];
  beforeAll(async () => {
    const dir = await tempDir('eos-worker-');
    cleanups.push(dir.remove);
    workerBundle = join(dir.path, 'eos-worker.mjs');
    await build({
      entryPoints: [join(import.meta.dirname, 'support/eos-worker.ts')],
      outfile: workerBundle,
      bundle: true,
      platform: 'node',
      format: 'esm',
      target: 'node20',
      logLevel: 'silent',
    });
  });
  afterAll(async () => {
    await Promise.all([...live].map(kill));
    for (const c of cleanups.reverse()) await c();
  });

  it('on the local backend', async () => {
    const dir = await tempDir('eos-local-');
    cleanups.push(dir.remove);
    await runPipeline(
      (port) => startServer(dir.path, port ?? 0, { SCHEDULER_INTERVAL_MS: '500' }),
      4,
      async () => {
        const storage = createStorage({ kind: 'local', dataDir: dir.path, replicaStores: 1, fsync: false });
        return { metadata: storage.metadata, close: () => storage.close() };
      },
    );
  }, 180_000);

  it('on the S3/DynamoDB adapters (s3rver + dynalite)', async () => {
    const [s3, ddb]: [S3rverHandle, DynaliteHandle] = await Promise.all([startS3rver(), startDynalite()]);
    cleanups.push(
      () => s3.stop(),
      () => ddb.stop(),
    );
    const dir = await tempDir('eos-aws-');
    cleanups.push(dir.remove);
    const env = {
      STORAGE_BACKEND: 'aws',
      BUCKETS: s3.bucket,
      TABLE_NAME: ddb.table,
      AWS_REGION: 'us-east-1',
      AWS_ENDPOINT_URL_S3: s3.endpoint,
      AWS_ENDPOINT_URL_DYNAMODB: ddb.endpoint,
      AWS_ACCESS_KEY_ID: TEST_CREDENTIALS.accessKeyId,
      AWS_SECRET_ACCESS_KEY: TEST_CREDENTIALS.secretAccessKey,
      SCHEDULER_INTERVAL_MS: '500',
    };
    await runPipeline(
      (port) => startServer(dir.path, port ?? 0, env),
      3,
      async () => ({ metadata: new DynamoDbMetadataStore({ table: ddb.table, client: ddb.client }), close: () => {} }),
    );
  }, 180_000);
});
