/**
 * Writes the fixtures of a release: runs that checkout's server (its own code and node_modules) on
 * the local backend and on the aws backend (dynalite + s3rver, started here), drives the workload
 * through the public APIs, lets its scheduler merge and compact, takes the release's own snapshot,
 * stops it and captures what it stored.
 *
 *   git worktree add /tmp/v0.1.0 v0.1.0 && cp -al node_modules /tmp/v0.1.0/node_modules
 *   npx tsx test/upgrade/write-fixtures.ts /tmp/v0.1.0 test/upgrade/fixtures/v0.1.0
 */
import { execFileSync } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { awsServerEnv, startDynalite, startS3rver } from '../support/emulators.js';
import { captureBucket, captureTable, checkpointSqlite, copyDataDir } from './fixture-store.js';
import { startReleaseServer, type ReleaseServer } from './release-server.js';
import { Api, takeSnapshot } from './snapshot.js';
import { writeWorkload } from './workload.js';

/** The scheduler runs often so the fixture holds merged segments and a compacted log, not only request objects. */
const MAINTENANCE_ENV = {
  SCHEDULER_INTERVAL_MS: '300',
  LOG_RETENTION_CHECK_INTERVAL_MS: '300',
  ORPHAN_GRACE_MS: '1000',
  DEFAULT_PARTITIONS: '1',
};

async function run(server: ReleaseServer, say: (s: string) => void) {
  const api = new Api(server.origin);
  const { facts, close } = await writeWorkload(api, `127.0.0.1:${server.kafkaPort}`);
  say('workload written; letting maintenance run');
  await new Promise((r) => setTimeout(r, 5000));
  const snapshot = await takeSnapshot(api, facts.groups);
  await close();
  return { facts, snapshot };
}

async function main() {
  const [checkoutArg, outArg] = process.argv.slice(2);
  if (!checkoutArg || !outArg) throw new Error('usage: write-fixtures.ts <checkout> <out-dir>');
  const checkout = resolve(checkoutArg);
  const out = resolve(outArg);
  const say = (s: string) => console.log(`[write-fixtures] ${s}`);
  const commit = execFileSync('git', ['rev-parse', 'HEAD'], { cwd: checkout, encoding: 'utf8' }).trim();
  const version = execFileSync('git', ['describe', '--tags', '--always'], { cwd: checkout, encoding: 'utf8' }).trim();
  await rm(out, { recursive: true, force: true });
  await mkdir(out, { recursive: true });

  // The local backend: files and SQLite in a data dir.
  const dataDir = await mkdtemp(join(tmpdir(), 'fixture-local-'));
  let server = await startReleaseServer(checkout, { ...MAINTENANCE_ENV, STORAGE_BACKEND: 'local', DATA_DIR: dataDir });
  say(`local: ${version} (${commit}) at ${server.origin}, kafka ${server.kafkaPort}`);
  const local = await run(server, say).finally(() => server.stop('SIGTERM'));
  await checkpointSqlite(dataDir);
  await copyDataDir(dataDir, join(out, 'local'));
  await rm(dataDir, { recursive: true, force: true });

  // The aws backend: DynamoDB items and S3 objects, through the emulators.
  const buckets = ['fixture-0', 'fixture-1'];
  const s3 = await startS3rver({ buckets });
  const ddb = await startDynalite();
  let aws: Awaited<ReturnType<typeof run>>;
  try {
    server = await startReleaseServer(checkout, {
      ...MAINTENANCE_ENV,
      DEFAULT_REPLICATION_FACTOR: '2',
      ...awsServerEnv({ table: ddb.table, buckets, dynamoDbEndpoint: ddb.endpoint, s3Endpoint: s3.endpoint }),
    });
    say(`aws: at ${server.origin}, kafka ${server.kafkaPort}`);
    aws = await run(server, say).finally(() => server.stop('SIGTERM'));
    const items = await captureTable(ddb.client, ddb.table, join(out, 'aws', 'items.json'));
    let objects = 0;
    for (const [i, bucket] of buckets.entries())
      objects += await captureBucket(s3.client, bucket, join(out, 'aws', 'objects', String(i)));
    say(`aws: ${items} items, ${objects} objects`);
  } finally {
    await Promise.all([s3.stop(), ddb.stop()]);
  }

  await writeFile(
    join(out, 'expected.json'),
    `${JSON.stringify({ release: version, commit, buckets: buckets.length, local, aws }, null, 1)}\n`,
  );
  say(`written to ${out}`);
}

await main();
