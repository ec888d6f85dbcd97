import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ConditionFailedError } from '../../src/storage/ports.js';
import { SqliteMetadataStore } from '../../src/storage/sqlite-metadata-store.js';

describe('SqliteMetadataStore specifics', () => {
  let dir: string;
  let path: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'sqlite-metadata-store-'));
    path = join(dir, 'metadata.db');
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('keeps items across a close and reopen, in WAL mode', async () => {
    const first = new SqliteMetadataStore(path);
    await first.put('p', 's', { kept: true });
    first.close();
    const second = new SqliteMetadataStore(path);
    expect(await second.get('p', 's')).toEqual({ pk: 'p', sk: 's', version: 1, value: { kept: true } });
    second.close();
    const raw = new Database(path, { readonly: true });
    expect(raw.pragma('journal_mode', { simple: true })).toBe('wal');
    raw.close();
  });

  it('syncs only with fsync (synchronous FULL); without it never (OFF), as the object files', () => {
    const synchronous = (store: SqliteMetadataStore) =>
      (store as unknown as { db: Database.Database }).db.pragma('synchronous', { simple: true });
    const plain = new SqliteMetadataStore(path);
    const durable = new SqliteMetadataStore(path, { fsync: true });
    try {
      expect(synchronous(plain)).toBe(0);
      expect(synchronous(durable)).toBe(2);
    } finally {
      plain.close();
      durable.close();
    }
  });

  it('evaluates conditions across connections to the same file', async () => {
    const a = new SqliteMetadataStore(path);
    const b = new SqliteMetadataStore(path);
    try {
      await a.put('p', 's', 'a', { ifAbsent: true });
      const err = await b.put('p', 's', 'b', { ifAbsent: true }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ConditionFailedError);
      expect((err as ConditionFailedError).current).toEqual({ pk: 'p', sk: 's', version: 1, value: 'a' });
      await b.put('p', 's', 'b', { ifVersion: 1 });
      expect(await a.get('p', 's')).toMatchObject({ version: 2, value: 'b' });
    } finally {
      a.close();
      b.close();
    }
  });

  it('answers a get with what another connection committed since this one wrote or read the item', async () => {
    const a = new SqliteMetadataStore(path);
    const b = new SqliteMetadataStore(path);
    try {
      await a.put('p', 's', { n: 1 });
      await a.putAll('p', 'main', { n: 1 }, undefined, [{ sk: 'side', value: { n: 1 } }]);
      expect(await a.get('p', 's')).toEqual({ pk: 'p', sk: 's', version: 1, value: { n: 1 } });
      // Another process's writes and deletes of items this connection wrote or read.
      await b.put('p', 's', { n: 2 }, { ifVersion: 1 });
      await b.put('p', 'side', { n: 2 });
      await b.delete('p', 'main');
      expect(await a.get('p', 's')).toEqual({ pk: 'p', sk: 's', version: 2, value: { n: 2 } });
      expect(await a.get('p', 'side')).toEqual({ pk: 'p', sk: 'side', version: 2, value: { n: 2 } });
      expect(await a.get('p', 'main')).toBeUndefined();
      // This connection's own writes, deletes and failed conditions, read back through it.
      await a.put('p', 's', { n: 3 }, { ifVersion: 2 });
      expect(await a.get('p', 's')).toEqual({ pk: 'p', sk: 's', version: 3, value: { n: 3 } });
      await expect(a.put('p', 's', { n: 4 }, { ifVersion: 2 })).rejects.toBeInstanceOf(ConditionFailedError);
      expect(await a.get('p', 's')).toEqual({ pk: 'p', sk: 's', version: 3, value: { n: 3 } });
      await a.delete('p', 's', { ifVersion: 3 });
      expect(await a.get('p', 's')).toBeUndefined();
      expect(await b.get('p', 's')).toBeUndefined();
      // Read, then changed by the other connection: the read is not answered again.
      await b.put('p', 'r', 'first');
      expect(await a.get('p', 'r')).toMatchObject({ value: 'first' });
      await b.put('p', 'r', 'second');
      expect(await a.get('p', 'r')).toMatchObject({ version: 2, value: 'second' });
    } finally {
      a.close();
      b.close();
    }
  });

  it('gives each get its own copy of a kept item', async () => {
    const a = new SqliteMetadataStore(path);
    try {
      await a.put('p', 's', { list: [1] });
      const first = await a.get<{ list: number[] }>('p', 's');
      first!.value.list.push(2);
      expect((await a.get('p', 's'))!.value).toEqual({ list: [1] });
    } finally {
      a.close();
    }
  });
});
