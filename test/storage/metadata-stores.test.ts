import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GetItemCommand } from '@aws-sdk/client-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DynamoDbMetadataStore, ensureTable, TTL_ATTRIBUTE } from '../../src/storage/dynamodb-metadata-store.js';
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

describe('an item with an expiry on the DynamoDB adapter (dynalite)', () => {
  it('carries it in the TTL attribute, in epoch seconds; a put without one clears it', async () => {
    const table = `ttl-${++tables}`;
    await ensureTable(dynamo!.client, table);
    const store = new DynamoDbMetadataStore({ table, client: dynamo!.client });
    const raw = async () =>
      (await dynamo!.client.send(new GetItemCommand({ TableName: table, Key: { pk: { S: 'p' }, sk: { S: 's' } } })))
        .Item;
    const written = await store.put('p', 's', { n: 1 }, undefined, { expiresAt: 1_700_000_000_500 });
    expect(written).toEqual({ pk: 'p', sk: 's', version: 1, value: { n: 1 } });
    expect((await raw())?.[TTL_ATTRIBUTE]).toEqual({ N: '1700000001' });
    // A conditional write keeps both its condition and the expiry.
    await store.put('p', 's', { n: 2 }, { ifVersion: 1 }, { expiresAt: 1_700_000_100_000 });
    expect((await raw())?.[TTL_ATTRIBUTE]).toEqual({ N: '1700000100' });
    await store.put('p', 's', { n: 3 });
    expect(await raw()).not.toHaveProperty(TTL_ATTRIBUTE);
    expect(await store.get('p', 's')).toEqual({ pk: 'p', sk: 's', version: 3, value: { n: 3 } });
  });
});
