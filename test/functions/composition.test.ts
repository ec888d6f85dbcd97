/**
 * The composition root: which engines it loads for a backend, and the typed config it reads.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createServices, createStorage, openStorage, startInProcessScheduler } from '../../src/compose.js';
import { loggerOf } from '../../src/metrics.js';
import { serverConfigFromEnv } from '../../src/config/server-config.js';
import { createApp } from '../../src/http/app.js';

// Counts loads of better-sqlite3 (the real module, passed through) by anything this file imports.
const sqlite = vi.hoisted(() => ({ loads: 0 }));
vi.mock('better-sqlite3', async (importOriginal) => {
  sqlite.loads++;
  return importOriginal();
});

const dirs: string[] = [];
afterEach(async () => {
  await Promise.all(dirs.splice(0).map((d) => rm(d, { recursive: true, force: true })));
});
const tempDir = async () => {
  const dir = await mkdtemp(join(tmpdir(), 'composition-'));
  dirs.push(dir);
  return dir;
};

// One case, in order: the first loads must not happen before the local backend is picked.
describe('SQLite is loaded only for the local backend', () => {
  it('memory and aws leave better-sqlite3 unloaded; local loads it, by createStorage or openStorage', async () => {
    createStorage({ kind: 'memory', replicaStores: 1 }).close();
    const aws = await openStorage({
      kind: 'aws',
      region: 'us-east-1',
      buckets: ['b'],
      table: 't',
      s3Endpoint: 'http://127.0.0.1:1',
      dynamoDbEndpoint: 'http://127.0.0.1:1',
    });
    aws.close();
    expect(sqlite.loads).toBe(0);

    const dataDir = await tempDir();
    const opened = await openStorage({ kind: 'local', dataDir, replicaStores: 1, fsync: false });
    expect(sqlite.loads).toBe(1);
    await opened.metadata.put('pk', 'sk', { n: 1 }, { ifAbsent: true });
    opened.close();

    // createStorage answers at once; the store opens meanwhile and its calls wait for it.
    const deferred = createStorage({ kind: 'local', dataDir, replicaStores: 1, fsync: false });
    expect(await deferred.metadata.get('pk', 'sk')).toMatchObject({ version: 1, value: { n: 1 } });
    deferred.close();
  });

  it('a local backend that cannot open rejects its calls, not the process', async () => {
    const file = join(await tempDir(), 'a-file');
    await (await import('node:fs/promises')).writeFile(file, '');
    const backend = { kind: 'local', dataDir: join(file, 'below'), replicaStores: 1, fsync: false } as const;
    await expect(openStorage(backend)).rejects.toThrow();
    const storage = createStorage(backend);
    await expect(storage.metadata.get('pk', 'sk')).rejects.toThrow();
    storage.close();
  });
});

describe('maintenance knobs in the typed server config', () => {
  it('reads ORPHAN_GRACE_MS and LOG_RETENTION_CHECK_INTERVAL_MS into the scheduler options, leaving defaults to src/maintenance', () => {
    expect(serverConfigFromEnv({}).scheduler.options).toEqual({});
    expect(
      serverConfigFromEnv({ ORPHAN_GRACE_MS: '60000', LOG_RETENTION_CHECK_INTERVAL_MS: '1000' }).scheduler.options,
    ).toEqual({ orphanGraceMs: 60_000, roundIntervalMs: 1000 });
    expect(() => serverConfigFromEnv({ LOG_RETENTION_CHECK_INTERVAL_MS: '-1' })).toThrow();
  });
});

describe("the coordinators' timers and the scheduler's scan", () => {
  it("share the scheduler's timer slot width (maintenance option timerSlotMs), whatever it is", async () => {
    const config = serverConfigFromEnv({ STORAGE_BACKEND: 'memory', CLUSTER_ID: 'c' });
    config.scheduler.options.timerSlotMs = 1_000;
    const storage = createStorage(config.backend);
    const timerKeys: { pk: string; sk: string }[] = [];
    const { metadata } = storage;
    const put = metadata.put.bind(metadata);
    metadata.put = (pk, sk, ...rest) => {
      if (pk.startsWith('timer#')) timerKeys.push({ pk, sk });
      return put(pk, sk, ...rest);
    };
    const app = createApp(createServices(config, storage), { logError: () => {} });
    const post = (path: string, body: unknown) =>
      app.request(`/v3/clusters/c${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
    expect((await post('/topics', { topic_name: 't', partitions_count: 1 })).status).toBe(201);
    // A transactional id's expiry timer, and a group member's session timer.
    expect((await post('/transactions/tx/init', {})).status).toBe(200);
    expect((await post('/consumer-groups/g/consumers:heartbeat', { subscribed_topic_names: ['t'] })).status).toBe(200);
    const kinds = timerKeys.map((k) => k.sk.split('#')[1]);
    expect(kinds).toEqual(expect.arrayContaining(['txn-id-expiry', 'group-session']));
    // The slot of a timer is its expiry (the sort key's first field) over the slot width.
    for (const { pk, sk } of timerKeys) expect(pk).toBe(`timer#${Math.floor(Number(sk.split('#')[0]) / 1_000)}`);
    storage.close();
  });
});

describe("the in-process scheduler's lines", () => {
  it("go through the process's Logger, with their level, message and fields", async () => {
    const config = serverConfigFromEnv({ STORAGE_BACKEND: 'memory', CLUSTER_ID: 'c', SCHEDULER_INTERVAL_MS: '10' });
    const storage = createStorage(config.backend);
    const lines: { level: string; msg: string; fields: Record<string, unknown> }[] = [];
    const logger = loggerOf((level, msg, fields) => void lines.push({ level, msg, fields }));
    const loop = startInProcessScheduler(config, storage, createServices(config, storage), logger)!;
    await vi.waitFor(() => expect(lines.map((l) => l.msg)).toContain('scheduler pass'), { timeout: 5_000 });
    await loop.stop();
    expect(lines.find((l) => l.msg === 'scheduler pass')).toMatchObject({
      level: 'info',
      fields: { durationMs: expect.any(Number) },
    });
    storage.close();
  });
});

describe('BENCH_COUNTERS in the typed server config', () => {
  it('is off by default, on for 1 or true, and rejects anything else', () => {
    expect(serverConfigFromEnv({}).countOperations).toBe(false);
    expect(serverConfigFromEnv({ BENCH_COUNTERS: '0' }).countOperations).toBe(false);
    expect(serverConfigFromEnv({ BENCH_COUNTERS: '1' }).countOperations).toBe(true);
    expect(serverConfigFromEnv({ BENCH_COUNTERS: 'true' }).countOperations).toBe(true);
    expect(() => serverConfigFromEnv({ BENCH_COUNTERS: 'yes' })).toThrow();
  });

  it('turns on GET /debug/counters through the config, whatever process.env says', async () => {
    vi.stubEnv('BENCH_COUNTERS', '0');
    try {
      const on = serverConfigFromEnv({ STORAGE_BACKEND: 'memory', BENCH_COUNTERS: '1' });
      const app = createApp(createServices(on, createStorage(on.backend)), { logError: () => {} });
      const res = await app.request('/debug/counters');
      expect(res.status).toBe(200);
      expect(await res.json()).toMatchObject({ metadata: { get: expect.any(Number) }, objects: { put: 0 } });

      vi.stubEnv('BENCH_COUNTERS', '1');
      const off = serverConfigFromEnv({ STORAGE_BACKEND: 'memory' });
      const plain = createApp(createServices(off, createStorage(off.backend)), { logError: () => {} });
      expect((await plain.request('/debug/counters')).status).toBe(404);
    } finally {
      vi.unstubAllEnvs();
    }
  });
});
