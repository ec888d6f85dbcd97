import { constants as fsConstants, readSync, writeSync } from 'node:fs';
import { mkdir, open, readdir, unlink, type FileHandle } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { importLegacyFiles } from './legacy-object-files.js';
import {
  listLimit,
  ObjectNotFoundError,
  type ByteRange,
  type ObjectInfo,
  type ObjectPage,
  type ObjectStore,
} from './ports.js';
import type { PackLocation, RemovedPacks, SqlitePackIndex } from './sqlite-pack-index.js';

export interface LocalObjectStoreOptions {
  /**
   * fsync each object before `put` resolves (and SQLite with synchronous=FULL), so an acknowledged
   * write survives a power loss, not only a process crash.
   */
  fsync?: boolean;
  /** A writer starts a new pack file past this size (default 64 MiB; an object is never split). */
  packBytes?: number;
  /** ... or past this age (default 10 minutes), so a quiet store's deleted objects are reclaimed too. */
  packMaxAgeMs?: number;
  /** A sealed pack less than half live is rewritten once this many of its bytes are dead (default 8 MiB). */
  minRepackBytes?: number;
}

const MiB = 2 ** 20;
const INDEX_FILE = 'objects.sqlite';
const PACK_DIR = 'packs';
/** Open pack files kept for reads. */
const MAX_OPEN_PACKS = 64;

interface ActivePack {
  id: number;
  handle: FileHandle;
  /** Where the next object goes: offsets are handed out before the bytes are written. */
  end: number;
  created: number;
  /** Writes handed an offset whose row is not committed yet: the pack is sealed only after them. */
  inflight: number;
  retired: boolean;
}

/**
 * Objects in pack files under one directory, for the single-machine mode and for tests.
 *
 * A put appends the body to this process's open pack file (one positional write, no file
 * created, renamed or closed per object: on the project's ext4 VM that was 1.25 ms of mostly
 * kernel time per object, against 40 us for the append) and then inserts the object's row (pack,
 * offset, size) in the directory's SQLite index (src/storage/sqlite-pack-index.ts). The row is the
 * commit point: a process dying mid-append leaves bytes no row points at, never a torn object,
 * and never touches the bytes of another object (each write has its own reserved range).
 *
 * Several processes may share the directory: each appends to packs of its own (ids from the
 * index), and every lookup goes through the index, so a put, get or delete in one is seen by the
 * next call in any other. A writer seals its pack when it is full or old; a sealed pack whose
 * objects are all deleted is removed (row and file). Deletes that leave a sealed pack mostly dead
 * move its live objects to the current pack, so an object kept long (a compacted segment, a
 * topic with long retention) does not keep megabytes of deleted neighbours on disk. A pack left
 * open by a process that died is sealed by the next writer once it is twice the maximum age.
 *
 * The index is opened on first use, importing better-sqlite3 (a native module) only then: the Lambda
 * bundles, which never pick this backend, leave it out (infra/log-functions.ts). A directory
 * written by the earlier one-file-per-object layout is imported into packs when first opened.
 */
export class LocalObjectStore implements ObjectStore {
  readonly name: string;
  private readonly root: string;
  private readonly packDir: string;
  private readonly fsync: boolean;
  private readonly packBytes: number;
  private readonly packMaxAgeMs: number;
  private readonly minRepackBytes: number;
  /** Set once the store is open (reads and writes go ahead without awaiting anything). */
  private index: SqlitePackIndex | undefined;
  /** Set before that, for the writes of the import of a legacy directory. */
  private writeIndex: SqlitePackIndex | undefined;
  private opening: Promise<SqlitePackIndex> | undefined;
  private active: ActivePack | undefined;
  private rotating: Promise<void> | undefined;
  private readonly handles: PackHandles;
  /** Packs queued for rewriting, and the tail of that queue (one rewrite at a time). */
  private readonly repackQueued = new Set<number>();
  private repackTail: Promise<void> = Promise.resolve();
  private closing = false;
  private closed = false;

  constructor(dir: string, options: LocalObjectStoreOptions = {}) {
    this.root = resolve(dir);
    this.name = this.root;
    this.packDir = join(this.root, PACK_DIR);
    this.fsync = options.fsync ?? false;
    this.packBytes = options.packBytes ?? 64 * MiB;
    this.packMaxAgeMs = options.packMaxAgeMs ?? 10 * 60_000;
    this.minRepackBytes = options.minRepackBytes ?? 8 * MiB;
    this.handles = new PackHandles((id) => this.packPath(id));
  }

  async put(key: string, body: Uint8Array): Promise<void> {
    const modified = Date.now();
    const index = this.index ?? (await this.open());
    await this.append(body, (location) => index.commitPut(key, { ...location, modified }));
  }

  async get(key: string, range?: ByteRange): Promise<Uint8Array> {
    const index = this.index ?? (await this.open());
    // A pack can go between the lookup and the open (a rewrite moved the object, or it was
    // deleted): look again, and the row says where the object is now, or that it is gone.
    for (let attempt = 0; attempt < 5; attempt++) {
      const at = index.lookup(key);
      if (!at) throw new ObjectNotFoundError(key);
      const start = Math.min(Math.max(range?.start ?? 0, 0), at.size);
      const end = Math.min(Math.max(range?.end ?? at.size, start), at.size);
      const bytes = await this.readAt(at, start, end);
      if (bytes) return bytes;
    }
    throw new Error(`the pack file holding ${key} is missing from ${this.packDir}`);
  }

  async head(key: string): Promise<ObjectInfo | undefined> {
    const index = this.index ?? (await this.open());
    const at = index.lookup(key);
    return at && { key, size: at.size, lastModified: at.modified };
  }

  async list(prefix: string, page: { startAfter?: string; limit?: number } = {}): Promise<ObjectPage> {
    const limit = listLimit(page.limit);
    if (limit === 0) return { objects: [] };
    const index = this.index ?? (await this.open());
    const upper = prefixUpperBound(prefix);
    const rows = index.list(
      {
        ...(prefix !== '' && { lower: prefix }),
        ...(upper !== undefined && { upper }),
        ...(page.startAfter !== undefined && { startAfter: page.startAfter }),
      },
      limit + 1, // one extra tells whether there is a next page
    );
    const objects = rows.slice(0, limit).map((r) => ({ key: r.key, size: r.size, lastModified: r.modified }));
    return rows.length > limit ? { objects, nextStartAfter: objects.at(-1)!.key } : { objects };
  }

  async delete(keys: string[]): Promise<void> {
    if (keys.length === 0) return;
    const index = this.index ?? (await this.open());
    const { removed, sparse } = index.delete(keys, this.minRepackBytes);
    await this.removePacks(removed);
    for (const pack of sparse) this.queueRepack(pack);
  }

  /** Finishes rewrites in flight, seals this process's pack and closes the index (the store is unusable after). */
  async close(): Promise<void> {
    if (this.closing) return;
    this.closing = true; // no more rewrites are queued; those queued finish first
    await this.repackTail;
    this.closed = true;
    await this.rotating;
    await this.opening?.catch(() => undefined);
    const last = this.active;
    if (last) {
      this.active = undefined;
      last.retired = true;
      if (last.inflight === 0) await this.seal(last);
    }
    await this.handles.closeAll();
    this.writeIndex?.close();
    this.writeIndex = undefined;
    this.index = undefined;
  }

  private packPath(id: number): string {
    return join(this.packDir, `${String(id).padStart(10, '0')}.pack`);
  }

  private open(): Promise<SqlitePackIndex> {
    if (this.closed) return Promise.reject(new Error(`object store ${this.name} is closed`));
    this.opening ??= (async () => {
      await mkdir(this.packDir, { recursive: true });
      const { SqlitePackIndex } = await import('./sqlite-pack-index.js');
      const index = new SqlitePackIndex(join(this.root, INDEX_FILE), { fsync: this.fsync });
      try {
        await this.removePacks(index.sealStale(Date.now() - 2 * this.packMaxAgeMs));
        await this.removeOrphanFiles(index);
        this.writeIndex = index;
        await importLegacyFiles(
          this.root,
          new Set([PACK_DIR, INDEX_FILE, `${INDEX_FILE}-wal`, `${INDEX_FILE}-shm`]),
          (key, body, modified) => this.append(body, (location) => index.commitPut(key, { ...location, modified })),
        );
        this.index = index;
      } catch (err) {
        this.writeIndex = undefined;
        index.close();
        throw err;
      }
      return index;
    })();
    this.opening.catch(() => {
      this.opening = undefined; // a failed open (a full disk, a locked database) is tried again by the next call
    });
    return this.opening;
  }

  /**
   * Writes `body` at a reserved range of the current pack, then runs `commit` (one index
   * transaction) for it. A commit that finds the pack gone (removed as stale while this process was
   * paused) is retried in a new pack.
   */
  private async append(
    body: Uint8Array,
    commit: (at: Omit<PackLocation, 'modified'>) => RemovedPacks | undefined,
  ): Promise<void> {
    for (let attempt = 0; ; attempt++) {
      const pack = await this.packFor(body.byteLength);
      const offset = pack.end;
      pack.end += body.byteLength;
      pack.inflight++;
      let removed: RemovedPacks | undefined;
      try {
        await writeAt(pack.handle, body, offset);
        if (this.fsync && body.byteLength > 0) await pack.handle.datasync();
        removed = commit({ pack: pack.id, offset, size: body.byteLength });
      } catch (err) {
        this.retire(pack); // an I/O error may recur on this file; the next write starts another
        throw err;
      } finally {
        pack.inflight--;
        if (pack.retired && pack.inflight === 0) await this.seal(pack);
      }
      if (removed) return this.removePacks(removed);
      this.retire(pack);
      if (attempt >= 3) throw new Error(`object store ${this.name}: pack ${pack.id} was removed under its writer`);
    }
  }

  /** The pack the next `size` bytes go to: the current one unless it is full or old. */
  private async packFor(size: number): Promise<ActivePack> {
    for (;;) {
      const current = this.active;
      // A new pack takes its first object whatever its size and age (so a huge object, or a
      // maximum age of 0, still makes progress).
      if (
        current &&
        !current.retired &&
        (current.end === 0 ||
          (current.end + size <= this.packBytes && Date.now() - current.created < this.packMaxAgeMs))
      )
        return current;
      if (!this.rotating) {
        if (current) this.retire(current);
        this.rotating = this.startPack().finally(() => {
          this.rotating = undefined;
        });
      }
      await this.rotating;
    }
  }

  private async startPack(): Promise<void> {
    const index = this.writeIndex!;
    const now = Date.now();
    const id = index.newPack(now);
    const handle = await open(this.packPath(id), 'wx+');
    if (this.fsync) await syncDirectory(this.packDir);
    this.handles.pin(id, handle);
    this.active = { id, handle, end: 0, created: now, inflight: 0, retired: false };
    // Every new pack is also the moment to seal the packs of writers that died.
    await this.removePacks(index.sealStale(now - 2 * this.packMaxAgeMs));
  }

  /** No more writes go to `pack`; it is sealed once the writes in flight are committed. */
  private retire(pack: ActivePack): void {
    if (this.active === pack) this.active = undefined;
    if (pack.retired) return;
    pack.retired = true;
    // A seal that fails (a busy index) leaves the pack open: the next writer seals it once it is stale.
    if (pack.inflight === 0) void this.seal(pack).catch(() => {});
  }

  private async seal(pack: ActivePack): Promise<void> {
    this.handles.unpin(pack.id);
    const index = this.writeIndex;
    if (!index) return;
    await this.removePacks(index.seal(pack.id, pack.end));
  }

  private async removePacks(ids: RemovedPacks): Promise<void> {
    for (const id of ids) {
      await this.handles.forget(id);
      await unlink(this.packPath(id)).catch((err: unknown) => {
        if (errorCode(err) !== 'ENOENT') throw err;
      });
    }
  }

  /** Pack files without a row: left by a process that died between a removal's commit and its unlink. */
  private async removeOrphanFiles(index: SqlitePackIndex): Promise<void> {
    const names = await readdir(this.packDir);
    const known = index.packIds(); // read after the listing: a file seen there has its row by now, unless removed
    const orphans = names
      .map((name) => /^(\d+)\.pack$/.exec(name))
      .filter((m): m is RegExpExecArray => m !== null && !known.has(Number(m[1])))
      .map((m) => Number(m[1]));
    await this.removePacks(orphans);
  }

  /** The bytes `[start, end)` of the object at `at`; undefined when its pack file is gone. */
  private async readAt(at: PackLocation, start: number, end: number): Promise<Uint8Array | undefined> {
    if (end === start) return new Uint8Array(0);
    const handle = await this.handles.acquire(at.pack);
    if (!handle) return undefined;
    try {
      const unfilled = Buffer.allocUnsafe(end - start); // no zeroing: every byte is read below
      const out = new Uint8Array(unfilled.buffer, unfilled.byteOffset, unfilled.byteLength);
      if (!(await readAt(handle, out, at.offset + start)))
        throw new Error(`pack ${at.pack} in ${this.packDir} is shorter than its index says`);
      return out;
    } finally {
      this.handles.release(at.pack);
    }
  }

  private queueRepack(pack: number): void {
    if (this.repackQueued.has(pack) || this.closing) return;
    this.repackQueued.add(pack);
    this.repackTail = this.repackTail
      .then(() => this.repack(pack))
      .catch(() => {}) // a rewrite is an optimisation: on failure the pack stays as it is
      .finally(() => this.repackQueued.delete(pack));
  }

  /** Copies the live objects of a sealed pack into the current one; the pack goes with its last object. */
  private async repack(pack: number): Promise<void> {
    const index = this.index;
    if (!index) return;
    for (const from of index.objectsIn(pack)) {
      const bytes = await this.readAt(from, 0, from.size);
      if (!bytes) return; // removed meanwhile
      await this.append(bytes, (to) => {
        const moved = index.move(from.key, from, { ...to, modified: from.modified });
        return moved?.removed;
      });
    }
  }
}

/**
 * Open pack files for reads, shared by concurrent gets and closed least recently used first; a
 * handle in use is never closed under its reader. The writer's pack is pinned (its own read/write
 * handle serves reads).
 */
class PackHandles {
  private readonly open = new Map<
    number,
    { handle: Promise<FileHandle | undefined>; refs: number; pinned: boolean; gone: boolean }
  >();

  constructor(private readonly pathOf: (id: number) => string) {}

  pin(id: number, handle: FileHandle): void {
    this.open.set(id, { handle: Promise.resolve(handle), refs: 0, pinned: true, gone: false });
  }

  unpin(id: number): void {
    const e = this.open.get(id);
    if (e) e.pinned = false;
    void this.trim();
  }

  async acquire(id: number): Promise<FileHandle | undefined> {
    let e = this.open.get(id);
    if (!e) {
      e = {
        handle: open(this.pathOf(id), fsConstants.O_RDONLY).catch((err: unknown) => {
          if (errorCode(err) === 'ENOENT') return undefined;
          throw err;
        }),
        refs: 0,
        pinned: false,
        gone: false,
      };
      this.open.set(id, e);
    }
    // Most recently used last: Map order is insertion order.
    this.open.delete(id);
    this.open.set(id, e);
    e.refs++;
    let handle: FileHandle | undefined;
    try {
      handle = await e.handle;
    } catch (err) {
      e.refs--;
      if (this.open.get(id) === e) this.open.delete(id);
      throw err;
    }
    if (!handle) {
      e.refs--;
      if (this.open.get(id) === e) this.open.delete(id); // the next lookup may find it elsewhere
      return undefined;
    }
    return handle;
  }

  release(id: number): void {
    const e = this.open.get(id);
    if (e) e.refs--;
    void this.trim();
  }

  /** The pack was removed: close its handle once no reader holds it. */
  async forget(id: number): Promise<void> {
    const e = this.open.get(id);
    if (!e) return;
    e.gone = true;
    e.pinned = false;
    await this.trim();
  }

  async closeAll(): Promise<void> {
    const entries = [...this.open.values()];
    this.open.clear();
    await Promise.all(entries.map(async (e) => (await e.handle.catch(() => undefined))?.close()));
  }

  private async trim(): Promise<void> {
    let excess = this.open.size - MAX_OPEN_PACKS;
    const closing: Promise<void>[] = [];
    for (const [id, e] of this.open) {
      if (e.refs > 0 || e.pinned) continue;
      if (!e.gone && excess <= 0) continue;
      this.open.delete(id);
      excess--;
      closing.push(e.handle.then((h) => h?.close()).catch(() => {}));
    }
    await Promise.all(closing);
  }
}

/**
 * Bodies up to this size are written and read with one synchronous call on the main thread: a
 * positional write of a few KiB into the page cache takes microseconds, less than handing it to
 * libuv's thread pool and back (the main thread's share of an asynchronous write was ~100 us per
 * 1-record produce), and the index commit right after is synchronous anyway. Larger bodies go
 * through the pool, so copying megabytes never holds up the event loop.
 */
const SYNC_IO_BYTES = 64 * 1024;

async function writeAt(handle: FileHandle, body: Uint8Array, position: number): Promise<void> {
  let written = 0;
  if (body.byteLength <= SYNC_IO_BYTES) {
    while (written < body.byteLength)
      written += writeSync(handle.fd, body, written, body.byteLength - written, position + written);
    return;
  }
  while (written < body.byteLength) {
    const { bytesWritten } = await handle.write(body, written, body.byteLength - written, position + written);
    written += bytesWritten;
  }
}

/** Fills `out` from `position`; false when the file ends first. */
async function readAt(handle: FileHandle, out: Uint8Array, position: number): Promise<boolean> {
  let filled = 0;
  while (filled < out.byteLength) {
    const bytesRead =
      out.byteLength <= SYNC_IO_BYTES
        ? readSync(handle.fd, out, filled, out.byteLength - filled, position + filled)
        : (await handle.read(out, filled, out.byteLength - filled, position + filled)).bytesRead;
    if (bytesRead === 0) return false;
    filled += bytesRead;
  }
  return true;
}

/**
 * The least string above every key that starts with `prefix`, in code point (UTF-8 byte) order:
 * the prefix with its last code point incremented (past U+10FFFF, the one before it). Undefined
 * when no key is above them all (the empty prefix).
 */
export function prefixUpperBound(prefix: string): string | undefined {
  const points = Array.from(prefix, (c) => c.codePointAt(0)!);
  while (points.length > 0) {
    const last = points.pop()!;
    if (last < 0x10ffff) {
      points.push(last === 0xd7ff ? 0xe000 : last + 1);
      return String.fromCodePoint(...points);
    }
  }
  return undefined;
}

async function syncDirectory(dir: string): Promise<void> {
  const handle = await open(dir, fsConstants.O_RDONLY);
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

function errorCode(err: unknown): string | undefined {
  return typeof err === 'object' && err !== null && 'code' in err ? String(err.code) : undefined;
}
