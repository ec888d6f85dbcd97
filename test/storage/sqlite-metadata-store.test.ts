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
});
