/**
 * The three storage backends a domain suite runs against: memory, the embedded local backend
 * (files + SQLite in a temp dir) and the AWS adapters against s3rver and dynalite in-process.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach } from 'vitest';
import { createStorage, type Storage } from '../../src/compose.js';
import { DynamoDbMetadataStore } from '../../src/storage/dynamodb-metadata-store.js';
import { S3ObjectStore } from '../../src/storage/s3-object-store.js';
import { startDynalite, startS3rver } from './emulators.js';

export interface TestBackend {
  name: string;
  start(replicaStores?: number): Promise<{ storage: Storage; stop(): Promise<void> }>;
}

export const memoryBackend: TestBackend = {
  name: 'memory',
  start: async (replicaStores = 1) => {
    const storage = createStorage({ kind: 'memory', replicaStores });
    return { storage, stop: async () => storage.close() };
  },
};

export const localBackend: TestBackend = {
  name: 'local (files + SQLite)',
  start: async (replicaStores = 1) => {
    const dataDir = await mkdtemp(join(tmpdir(), 'log-local-'));
    const storage = createStorage({ kind: 'local', dataDir, replicaStores, fsync: false });
    return {
      storage,
      stop: async () => {
        storage.close();
        await rm(dataDir, { recursive: true, force: true });
      },
    };
  },
};

/** One s3rver bucket per replica store (s3rver handles one bucket per server here), one dynalite table. */
export const awsBackend: TestBackend = {
  name: 'aws adapters (s3rver + dynalite)',
  start: async (replicaStores = 1) => {
    const s3s = await Promise.all(Array.from({ length: replicaStores }, () => startS3rver()));
    const ddb = await startDynalite();
    const storage: Storage = {
      metadata: new DynamoDbMetadataStore({ table: ddb.table, client: ddb.client }),
      stores: s3s.map((s) => new S3ObjectStore({ bucket: s.bucket, client: s.client })),
      close: () => {},
    };
    return {
      storage,
      stop: async () => {
        await Promise.all([...s3s.map((s) => s.stop()), ddb.stop()]);
      },
    };
  },
};

export const allBackends = [memoryBackend, localBackend, awsBackend];

/**
 * A fresh storage of `backend` for each test of the enclosing describe, stopped after it: for
 * suites whose work covers every topic of its storage (a scheduler pass, the timers' tick).
 */
export function storagePerTest(backend: TestBackend, replicaStores?: number): { readonly storage: Storage } {
  let started: { storage: Storage; stop(): Promise<void> } | undefined;
  beforeEach(async () => {
    started = await backend.start(replicaStores);
  });
  afterEach(() => started?.stop());
  return {
    get storage() {
      if (!started) throw new Error('storagePerTest: read its storage in a test');
      return started.storage;
    },
  };
}

/**
 * The bound of each test of a suite run on every backend (`describe.each(allBackends)(name, fn,
 * BACKEND_TEST_TIMEOUT_MS)`). On the AWS adapters a test's calls all go through s3rver and dynalite
 * in its own process: a read of a thousand objects takes seconds on a quiet machine, many times that
 * on a loaded one. Only a test that would fail waits it out.
 */
export const BACKEND_TEST_TIMEOUT_MS = 120_000;
