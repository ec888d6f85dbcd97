import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CreateBucketCommand } from '@aws-sdk/client-s3';
import { afterAll, beforeAll } from 'vitest';
import { LocalObjectStore } from '../../src/storage/local-object-store.js';
import { MemoryObjectStore } from '../../src/storage/memory-object-store.js';
import { S3ObjectStore } from '../../src/storage/s3-object-store.js';
import { startS3rver, type S3rverHandle } from '../support/emulators.js';
import { objectStoreContract } from './object-store.contract.js';

objectStoreContract('memory', async () => ({ store: new MemoryObjectStore(), teardown: async () => {} }));

objectStoreContract('local filesystem', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'local-object-store-'));
  const store = new LocalObjectStore(dir);
  return {
    store,
    teardown: async () => {
      await store.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
});

// Tiny packs and rewrites: every few puts start a new pack, and deletes move objects between them.
objectStoreContract('local filesystem, small packs', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'local-object-store-'));
  const store = new LocalObjectStore(dir, { packBytes: 64, minRepackBytes: 1 });
  return {
    store,
    teardown: async () => {
      await store.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
});

objectStoreContract('local filesystem, fsync', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'local-object-store-'));
  const store = new LocalObjectStore(join(dir, 'not/yet/created'), { fsync: true });
  return {
    store,
    teardown: async () => {
      await store.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
});

let s3: S3rverHandle | undefined;
let buckets = 0;
beforeAll(async () => {
  s3 = await startS3rver();
});
afterAll(async () => {
  await s3?.stop();
});

// s3rver with its two deviations from S3 patched (listing order, ranged GET of an empty object):
// see patchS3rverDeviations in test/support/emulators.ts.
objectStoreContract('s3 (s3rver)', async () => {
  // A fresh bucket per case on the one server: cheap, and each case starts empty.
  const bucket = `contract-${++buckets}`;
  await s3!.client.send(new CreateBucketCommand({ Bucket: bucket }));
  return { store: new S3ObjectStore({ bucket, client: s3!.client }), teardown: async () => {} };
});
