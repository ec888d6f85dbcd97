import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import { DynamoDbMetadataStore, ensureTable } from '../../src/storage/dynamodb-metadata-store.js';
import { MemoryMetadataStore } from '../../src/storage/memory-metadata-store.js';
import { SqliteMetadataStore } from '../../src/storage/sqlite-metadata-store.js';
import { startDynalite, type DynaliteHandle } from '../support/emulators.js';
import { metadataStoreContract } from './metadata-store.contract.js';

metadataStoreContract('memory', async () => ({ store: new MemoryMetadataStore(), teardown: async () => {} }));

metadataStoreContract('sqlite (file)', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'sqlite-metadata-store-'));
  const store = new SqliteMetadataStore(join(dir, 'metadata.db'));
  return {
    store,
    teardown: async () => {
      store.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
});

metadataStoreContract('sqlite (:memory:)', async () => {
  const store = new SqliteMetadataStore(':memory:');
  return { store, teardown: async () => store.close() };
});

let dynamo: DynaliteHandle | undefined;
let tables = 0;
beforeAll(async () => {
  dynamo = await startDynalite();
});
afterAll(async () => {
  await dynamo?.stop();
});

metadataStoreContract('dynamodb (dynalite)', async () => {
  // A fresh table per case on the one server: dynalite creates it instantly.
  const table = `contract-${++tables}`;
  await ensureTable(dynamo!.client, table);
  return { store: new DynamoDbMetadataStore({ table, client: dynamo!.client }), teardown: async () => {} };
});
