/**
 * Today's code on data written by every release (test/upgrade/fixtures/<release>/, written by that
 * release's own server through write-fixtures.ts): for each fixture and backend (the local data dir,
 * and the DynamoDB items plus S3 objects loaded into fresh dynalite and s3rver), the current server
 * answers exactly the snapshot the release answered (every record in both isolation levels, offsets,
 * committed offsets, transactions, ACLs, quotas, topic configs), keeps the idempotent producer's
 * sequences, ends the transaction left open, and goes on producing and consuming where the release
 * stopped.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Kafka, logLevel } from 'kafkajs';
import { afterEach, describe, expect, it } from 'vitest';
import { awsServerEnv, startDynalite, startS3rver } from '../support/emulators.js';
import { copyDataDir, loadBucket, loadTable } from './fixture-store.js';
import { startReleaseServer, type ReleaseServer } from './release-server.js';
import { Api, takeSnapshot, type Snapshot } from './snapshot.js';
import type { WorkloadFacts } from './workload.js';

const ROOT = join(import.meta.dirname, '../..');
const FIXTURES = join(import.meta.dirname, 'fixtures');
const releases = readdirSync(FIXTURES).sort();

interface Expected {
  release: string;
  buckets: number;
  local: { facts: WorkloadFacts; snapshot: Snapshot };
  aws: { facts: WorkloadFacts; snapshot: Snapshot };
}

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/**
 * The storage of a copy of the fixture (a data dir, or emulators loaded with its items and objects),
 * and today's server on it: first with no scheduler (what it reads, not what maintenance makes of
 * it), later again with `env` (its maintenance over the release's data).
 */
async function fixtureStorage(dir: string, backend: 'local' | 'aws', expected: Expected) {
  const base = { KAFKA_AUTO_CREATE_TOPICS: 'false' };
  let storageEnv: Record<string, string>;
  if (backend === 'local') {
    const dataDir = await mkdtemp(join(tmpdir(), 'upgrade-local-'));
    cleanups.push(() => rm(dataDir, { recursive: true, force: true }));
    await copyDataDir(join(dir, 'local'), dataDir);
    storageEnv = { STORAGE_BACKEND: 'local', DATA_DIR: dataDir };
  } else {
    const buckets = Array.from({ length: expected.buckets }, (_, i) => `upgrade-${i}`);
    const s3 = await startS3rver({ buckets });
    cleanups.push(() => s3.stop());
    const ddb = await startDynalite();
    cleanups.push(() => ddb.stop());
    await loadTable(ddb.client, ddb.table, join(dir, 'aws', 'items.json'));
    for (const [i, bucket] of buckets.entries())
      await loadBucket(s3.client, bucket, join(dir, 'aws', 'objects', String(i)));
    storageEnv = awsServerEnv({ table: ddb.table, buckets, dynamoDbEndpoint: ddb.endpoint, s3Endpoint: s3.endpoint });
  }
  return async (env: Record<string, string> = { SCHEDULER_INTERVAL_MS: '0' }): Promise<ReleaseServer> => {
    const server = await startReleaseServer(ROOT, { ...base, ...storageEnv, ...env });
    cleanups.push(() => server.stop());
    return server;
  };
}

type BatchAnswer = {
  successes: { offset: number; duplicate?: boolean }[];
  failures: { error_code: number; message: string }[];
};

describe.each(releases)('data written by %s', (release) => {
  const dir = join(FIXTURES, release);
  const expected = JSON.parse(readFileSync(join(dir, 'expected.json'), 'utf8')) as Expected;

  it.each(['local', 'aws'] as const)(
    'is read completely and written on by today’s code (%s backend)',
    async (backend) => {
      const { facts, snapshot } = expected[backend];
      const start = await fixtureStorage(dir, backend, expected);
      const server = await start();
      const api = new Api(server.origin);

      // Everything the release answered, answered the same.
      expect(await takeSnapshot(api, facts.groups)).toEqual(snapshot);

      // The idempotent producer's sequences: its last batch again is a duplicate answered with the
      // offsets it got, a gap is refused, and the next sequence is appended.
      for (const p of facts.idempotent.partitions) {
        const again = await api.post<BatchAnswer>('/topics/orders/records:batch', p.lastBatch);
        expect(again.failures).toEqual([]);
        expect(again.successes.at(-1)!.offset).toBe(p.lastOffset);
        const batch = (base: number) => ({
          producer_id: facts.idempotent.producerId,
          producer_epoch: facts.idempotent.producerEpoch,
          sequences: [{ partition_id: p.partition, base_sequence: base }],
          entries: [{ id: 0, partition_id: p.partition, value: { type: 'STRING', data: `after upgrade ${base}` } }],
        });
        const gap = await api.post<BatchAnswer>('/topics/orders/records:batch', batch(p.nextSequence + 5));
        expect(gap.failures[0]?.message ?? '').toMatch(/sequence/i);
        const next = await api.post<BatchAnswer>('/topics/orders/records:batch', batch(p.nextSequence));
        expect(next.failures).toEqual([]);
        expect(next.successes[0]!.offset).toBe(p.lastOffset + 1);
      }

      const kafka = new Kafka({
        brokers: [`127.0.0.1:${server.kafkaPort}`],
        clientId: 'upgrade-test',
        logLevel: logLevel.NOTHING,
        retry: { retries: 5 },
      });
      // The transaction left open: a new producer of its id fences it and aborts what it wrote, so
      // the last stable offset of tx-out-0 reaches the high watermark; then it commits one of its own.
      const openBefore = snapshot.partitions.find((x) => x.topic === 'tx-out' && x.partition === 0)!;
      expect(openBefore.latestCommitted).toBeLessThan(openBefore.latest);
      const txProducer = kafka.producer({
        transactionalId: facts.openTransactionalId,
        idempotent: true,
        maxInFlightRequests: 1,
      });
      await txProducer.connect();
      cleanups.push(() => txProducer.disconnect());
      const txn = await txProducer.transaction();
      await txn.send({ topic: 'tx-out', messages: [{ partition: 0, value: 'after upgrade, committed' }] });
      await txn.commit();
      const described = await api.get<{ state: string; producer_epoch: number }>(
        `/transactions/${facts.openTransactionalId}`,
      );
      expect(described.state).toBe('CompleteCommit');
      expect(described.producer_epoch).toBeGreaterThan(
        snapshot.transactions.find((t) => t.transactionalId === facts.openTransactionalId)!.producerEpoch,
      );
      const txOut = await takeSnapshot(api);
      const p0 = txOut.partitions.find((x) => x.topic === 'tx-out' && x.partition === 0)!;
      expect(p0.latestCommitted).toBe(p0.latest);
      const values = (rs: { value: string | null }[]) => rs.map((r) => Buffer.from(r.value ?? '', 'base64').toString());
      expect(values(p0.committed)).toEqual([...values(openBefore.committed), 'after upgrade, committed']);

      // The consumer group resumes from the offsets the release committed: it reads only what came after.
      const fresh = [0, 1, 2].map((partition) => ({ partition, value: `new for the group ${partition}` }));
      const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
      await producer.connect();
      cleanups.push(() => producer.disconnect());
      await producer.send({ topic: 'orders', messages: fresh });
      const committed = snapshot.groups['fixture-group']!;
      const ends = await takeSnapshot(api);
      const consumer = kafka.consumer({
        groupId: 'fixture-group',
        sessionTimeout: 6000,
        heartbeatInterval: 300,
        maxWaitTimeInMs: 100,
      });
      await consumer.connect();
      cleanups.push(() => consumer.disconnect());
      await consumer.subscribe({ topic: 'orders' });
      const seen: { partition: number; offset: number }[] = [];
      await consumer.run({
        autoCommitInterval: 100,
        eachMessage: async ({ partition, message }) => void seen.push({ partition, offset: Number(message.offset) }),
      });
      const wanted = ends.partitions
        .filter((x) => x.topic === 'orders')
        .reduce((n, x) => n + x.latest - committed.find((c) => c.partition === x.partition)!.offset, 0);
      const until = Date.now() + 30_000;
      while (seen.length < wanted && Date.now() < until) await new Promise((r) => setTimeout(r, 50));
      await consumer.disconnect();
      const firstSeen = (partition: number) =>
        Math.min(...seen.filter((s) => s.partition === partition).map((s) => s.offset));
      for (const c of committed) expect(firstSeen(c.partition)).toBe(c.offset);
      expect(seen).toHaveLength(wanted);
      const after = await takeSnapshot(api, facts.groups);
      for (const x of after.partitions.filter((p) => p.topic === 'orders'))
        expect(after.groups['fixture-group']!.find((c) => c.partition === x.partition)!.offset).toBe(x.latest);

      // Today's maintenance over the release's objects and index (merge, compaction, sweeps): readers
      // see the same records after it (the compacted topic at least its latest value of each key).
      // The fixture's records and its cleaning get older every day: past 24 h its tombstone may go
      // (delete.retention.ms), past 7 days the default retention.ms removes whole topics' records.
      // Those are today's rules working as meant, so they are taken out of what this compares.
      for (const topic of ['events', 'tx-out'])
        await api.post(`/topics/${topic}/configs:alter`, { data: [{ name: 'retention.ms', value: '-1' }] });
      await api.post('/topics/compacted/configs:alter', {
        data: [{ name: 'delete.retention.ms', value: String(100 * 365 * 86_400_000) }],
      });
      await server.stop();
      const maintained = await start({
        SCHEDULER_INTERVAL_MS: '300',
        LOG_RETENTION_CHECK_INTERVAL_MS: '300',
        ORPHAN_GRACE_MS: '1000',
      });
      await new Promise((r) => setTimeout(r, 4000));
      const final = await takeSnapshot(new Api(maintained.origin), facts.groups);
      const latestByKey = (p: Snapshot['partitions'][number]) =>
        Object.fromEntries(p.committed.filter((r) => r.key !== null).map((r) => [r.key, r.value]));
      for (const p of after.partitions) {
        const q = final.partitions.find((x) => x.topic === p.topic && x.partition === p.partition)!;
        if (p.topic === 'compacted') expect(latestByKey(q)).toEqual(latestByKey(p));
        else expect(q).toEqual(p);
      }
      expect(final.groups).toEqual(after.groups);

      // The release's data holds no feature level: the cluster stays at level 1 (a topic created now
      // does not make it new), so what the release cannot read (zstd) is refused until it is raised.
      const today = new Api(maintained.origin);
      await today.post('/topics', {
        topic_name: 'zstd-after-upgrade',
        partitions_count: 1,
        configs: [{ name: 'compression.type', value: 'zstd' }],
      });
      expect((await today.get<{ feature_level: number }>('/features')).feature_level).toBe(1);
      await expect(
        today.post('/topics/zstd-after-upgrade/records', { value: { type: 'STRING', data: 'x' } }),
      ).rejects.toThrow(/400 .*UNSUPPORTED_COMPRESSION_TYPE|400 .*feature level 2/);
    },
    240_000, // two server starts and four emulators on a loaded machine
  );
});
