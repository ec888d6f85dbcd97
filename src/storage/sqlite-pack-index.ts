import Database from 'better-sqlite3';
import { requireFileFormat } from './sqlite-format.js';

/** Where an object's bytes are: `size` bytes from `offset` in pack file `pack`. */
export interface PackLocation {
  pack: number;
  offset: number;
  size: number;
  /** Epoch milliseconds of the put. */
  modified: number;
}

export interface IndexedObject {
  key: string;
  size: number;
  modified: number;
}

/** Pack files whose last object went: the caller unlinks them (their rows are already gone). */
export type RemovedPacks = number[];

/**
 * The local object store's index (src/storage/local-object-store.ts): which object lives where in
 * which pack file, and how much of each pack is still live. One SQLite database per store
 * directory, shared by every process that opens the directory.
 *
 * An object exists when, and only when, its row does: the store writes the bytes first and inserts
 * the row after, so a write torn by a crash has no row and is never read. A pack is removed (its
 * row deleted here, its file unlinked by the caller) when it is sealed and holds no live object.
 * Pack ids come from AUTOINCREMENT, so an id is never reused: a file handle or a row naming pack 7
 * always means the same file.
 *
 * better-sqlite3 is synchronous: each method is one short transaction on the main thread, so no
 * other writer, in this process or another, runs in between.
 */
export class SqlitePackIndex {
  private readonly db: Database.Database;
  private readonly statements = new Map<string, Database.Statement>();
  /** Built once (one per put): making a transaction function per call is measurable on a small produce. */
  private readonly commitPutTransaction: Database.Transaction<
    (key: string, location: PackLocation) => RemovedPacks | undefined
  >;

  constructor(path: string, options: { fsync?: boolean } = {}) {
    this.db = new Database(path, { timeout: 10_000 });
    requireFileFormat(this.db, 'pack-index', path);
    this.db.pragma('journal_mode = WAL');
    // As the metadata store: without FSYNC a commit survives a crash of the process (the OS has
    // it), not of the machine, and the main thread never waits for a sync.
    this.db.pragma(options.fsync ? 'synchronous = FULL' : 'synchronous = OFF');
    this.db.exec(`
      CREATE TABLE IF NOT EXISTS packs (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        live INTEGER NOT NULL DEFAULT 0,
        live_bytes INTEGER NOT NULL DEFAULT 0,
        size INTEGER NOT NULL DEFAULT 0,
        sealed INTEGER NOT NULL DEFAULT 0,
        created INTEGER NOT NULL
      );
      CREATE TABLE IF NOT EXISTS objects (
        key TEXT NOT NULL PRIMARY KEY,
        pack INTEGER NOT NULL,
        offset INTEGER NOT NULL,
        size INTEGER NOT NULL,
        modified INTEGER NOT NULL
      ) WITHOUT ROWID;
      CREATE INDEX IF NOT EXISTS objects_by_pack ON objects (pack);
    `);
    this.commitPutTransaction = this.db.transaction((key: string, location: PackLocation) =>
      this.commitPutRow(key, location),
    );
  }

  /** A new, unsealed pack; its file is the caller's to create. */
  newPack(now: number): number {
    const row = this.statement('INSERT INTO packs (created) VALUES (?) RETURNING id').get(now) as { id: number };
    return row.id;
  }

  lookup(key: string): PackLocation | undefined {
    return this.statement('SELECT pack, offset, size, modified FROM objects WHERE key = ?').get(key) as
      | PackLocation
      | undefined;
  }

  /**
   * Makes `key` point at `location` (replacing what it pointed at). `undefined` when the pack is gone
   * (removed while the bytes were being written, a writer paused past the stale age): nothing
   * changed, and the caller writes the bytes again elsewhere.
   */
  commitPut(key: string, location: PackLocation): RemovedPacks | undefined {
    return this.commitPutTransaction.immediate(key, location);
  }

  private commitPutRow(key: string, location: PackLocation): RemovedPacks | undefined {
    if (!this.addLive(location.pack, 1, location.size)) return undefined;
    const old = this.lookup(key);
    this.statement(
      `INSERT INTO objects (key, pack, offset, size, modified) VALUES (@key, @pack, @offset, @size, @modified)
       ON CONFLICT (key) DO UPDATE SET pack = excluded.pack, offset = excluded.offset,
         size = excluded.size, modified = excluded.modified`,
    ).run({ key, ...location });
    if (!old) return [];
    this.addLive(old.pack, -1, -old.size);
    return this.removeIfEmpty(old.pack);
  }

  /** Deletes the keys' rows; answers the packs removed and the sealed packs now mostly dead. */
  delete(keys: string[], minRepackBytes: number): { removed: RemovedPacks; sparse: number[] } {
    return this.db
      .transaction(() => {
        const touched = new Set<number>();
        for (const key of keys) {
          const row = this.statement('DELETE FROM objects WHERE key = ? RETURNING pack, size').get(key) as
            | { pack: number; size: number }
            | undefined;
          if (!row) continue;
          this.addLive(row.pack, -1, -row.size);
          touched.add(row.pack);
        }
        const removed: number[] = [];
        const sparse: number[] = [];
        for (const pack of touched) {
          if (this.removeIfEmpty(pack).length > 0) removed.push(pack);
          else if (this.isSparse(pack, minRepackBytes)) sparse.push(pack);
        }
        return { removed, sparse };
      })
      .immediate();
  }

  /** Keys in byte order (SQLite compares TEXT as UTF-8 bytes, S3's order), from `lower`, below `upper`, after `startAfter`. */
  list(range: { lower?: string; upper?: string; startAfter?: string }, limit: number): IndexedObject[] {
    const where: string[] = [];
    const params: Record<string, string | number> = { limit };
    if (range.lower !== undefined) {
      where.push('key >= @lower');
      params.lower = range.lower;
    }
    if (range.upper !== undefined) {
      where.push('key < @upper');
      params.upper = range.upper;
    }
    if (range.startAfter !== undefined) {
      where.push('key > @startAfter');
      params.startAfter = range.startAfter;
    }
    const sql = `SELECT key, size, modified FROM objects ${where.length > 0 ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY key LIMIT @limit`;
    return this.statement(sql).all(params) as IndexedObject[];
  }

  /** The writer is done with the pack (`size` bytes appended): it may go once it holds nothing. */
  seal(pack: number, size: number): RemovedPacks {
    return this.db
      .transaction(() => {
        this.statement('UPDATE packs SET sealed = 1, size = MAX(size, ?) WHERE id = ?').run(size, pack);
        return this.removeIfEmpty(pack);
      })
      .immediate();
  }

  /**
   * Seals the packs still open since before `createdBefore` (their writer died, or is long past
   * rotating them) and removes every sealed pack with nothing live.
   */
  sealStale(createdBefore: number): RemovedPacks {
    return this.db
      .transaction(() => {
        this.statement('UPDATE packs SET sealed = 1 WHERE sealed = 0 AND created < ?').run(createdBefore);
        const empty = this.statement('DELETE FROM packs WHERE sealed = 1 AND live <= 0 RETURNING id').all() as {
          id: number;
        }[];
        return empty.map((r) => r.id);
      })
      .immediate();
  }

  /** Every pack that has a row (a pack file with none is left over from a removal). */
  packIds(): Set<number> {
    return new Set((this.statement('SELECT id FROM packs').all() as { id: number }[]).map((r) => r.id));
  }

  /** The live objects of a pack, for moving them out of it. */
  objectsIn(pack: number): (PackLocation & { key: string })[] {
    return this.statement('SELECT key, pack, offset, size, modified FROM objects WHERE pack = ?').all(
      pack,
    ) as (PackLocation & {
      key: string;
    })[];
  }

  /**
   * Points `key` at its copy in `to` if it still is where `from` says (not deleted or replaced
   * meanwhile). `undefined` when the target pack is gone; otherwise the packs removed.
   */
  move(key: string, from: PackLocation, to: PackLocation): { moved: boolean; removed: RemovedPacks } | undefined {
    return this.db
      .transaction(() => {
        const current = this.lookup(key);
        if (!current || current.pack !== from.pack || current.offset !== from.offset)
          return { moved: false, removed: [] };
        if (!this.addLive(to.pack, 1, to.size)) return undefined;
        this.statement('UPDATE objects SET pack = ?, offset = ? WHERE key = ?').run(to.pack, to.offset, key);
        this.addLive(from.pack, -1, -from.size);
        return { moved: true, removed: this.removeIfEmpty(from.pack) };
      })
      .immediate();
  }

  close(): void {
    this.statements.clear();
    this.db.close();
  }

  private addLive(pack: number, count: number, bytes: number): boolean {
    const { changes } = this.statement(
      'UPDATE packs SET live = live + ?, live_bytes = live_bytes + ? WHERE id = ?',
    ).run(count, bytes, pack);
    return changes === 1;
  }

  private removeIfEmpty(pack: number): RemovedPacks {
    const row = this.statement('DELETE FROM packs WHERE id = ? AND sealed = 1 AND live <= 0 RETURNING id').get(pack);
    return row ? [pack] : [];
  }

  /** Sealed, and less than half of it live, with at least `minBytes` to win back. */
  private isSparse(pack: number, minBytes: number): boolean {
    const row = this.statement('SELECT size, live_bytes FROM packs WHERE id = ? AND sealed = 1').get(pack) as
      | { size: number; live_bytes: number }
      | undefined;
    return row !== undefined && row.size - row.live_bytes >= minBytes && row.live_bytes * 2 < row.size;
  }

  private statement(sql: string): Database.Statement {
    let s = this.statements.get(sql);
    if (!s) {
      s = this.db.prepare(sql);
      this.statements.set(sql, s);
    }
    return s;
  }
}
