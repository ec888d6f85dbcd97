import { randomBytes } from 'node:crypto';
import { constants as fsConstants, type Dirent } from 'node:fs';
import { mkdir, open, readdir, rename, rm, rmdir, stat, unlink } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { compareKeys } from './key-order.js';
import {
  listLimit,
  ObjectNotFoundError,
  type ByteRange,
  type ObjectInfo,
  type ObjectPage,
  type ObjectStore,
} from './ports.js';

export interface LocalObjectStoreOptions {
  /**
   * fsync each object and its directory before `put` resolves, so an acknowledged write survives
   * a power loss, not only a process crash. Off by default (a rename is already atomic).
   */
  fsync?: boolean;
}

/** Temp file names: unique per process (a random prefix) and per write (a counter), without a random draw per put. */
const TEMP_PREFIX = randomBytes(6).toString('hex');
let tempCounter = 0;

/**
 * Objects as files under one directory, for the single-machine mode and for tests.
 *
 * Layout: a key is split on '/', and each segment becomes one path component:
 *  - bytes outside `[A-Za-z0-9._-]`, and a leading '.', are percent-encoded (`%2F`-style), so no
 *    segment can be '.', '..' or contain a separator, and a key can never escape the directory;
 *  - a segment that continues the key is a directory named `<segment>+` ('+' never survives
 *    encoding), so the keys `a` and `a/b` can coexist as the file `a` and the file `a+/b`;
 *  - an empty segment (`a//b`, `a/`) is the lone name `%`, which encoding never produces either.
 * So `data/t1/00000000000000000042.log` is stored at `data+/t1+/00000000000000000042.log`.
 * Names starting with '.' are never produced by encoding: they are in-flight temp files, and
 * `list` skips them.
 *
 * Writes go to a temp file in the target directory and are renamed into place, so readers see
 * a whole object or none. Deleting the last object of a directory removes the directory.
 *
 * Limits: a segment is bounded by the file system's name length (255 bytes on most, after
 * encoding), and on a case-insensitive file system keys differing only in case collide.
 */
export class LocalObjectStore implements ObjectStore {
  readonly name: string;
  private readonly root: string;
  private readonly fsync: boolean;
  /** Directories this store has made (one per topic and hour, say): put skips their mkdir. */
  private readonly madeDirectories = new Set<string>();

  constructor(dir: string, options: LocalObjectStoreOptions = {}) {
    this.root = resolve(dir);
    this.name = this.root;
    this.fsync = options.fsync ?? false;
  }

  async put(key: string, body: Uint8Array): Promise<void> {
    const path = this.pathOf(key);
    const dir = dirname(path);
    const temp = join(dir, `.tmp-${TEMP_PREFIX}-${++tempCounter}`);
    // A concurrent delete may prune an (empty) directory of the path before the temp file is
    // in it: retry. Once the temp file exists, its directory is not empty and stays.
    for (let attempt = 0; ; attempt++) {
      try {
        // Directories made before are assumed to be there; a pruned one fails the write with ENOENT.
        if (!this.madeDirectories.has(dir)) {
          await mkdir(dir, { recursive: true });
          this.madeDirectories.add(dir);
        }
        await this.writeFile(temp, body);
        break;
      } catch (err) {
        this.madeDirectories.delete(dir);
        if (errorCode(err) !== 'ENOENT' || attempt >= 10) {
          await rm(temp, { force: true });
          throw err;
        }
      }
    }
    try {
      await rename(temp, path);
    } catch (err) {
      await rm(temp, { force: true });
      throw err;
    }
    if (this.fsync) await syncDirectory(dir);
  }

  async get(key: string, range?: ByteRange): Promise<Uint8Array> {
    let handle;
    try {
      handle = await open(this.pathOf(key), fsConstants.O_RDONLY);
    } catch (err) {
      if (isMissing(err)) throw new ObjectNotFoundError(key);
      throw err;
    }
    try {
      // A bounded range needs no stat: a read past the end comes back short, which is the clipping.
      const size = range?.end === undefined ? (await handle.stat()).size : Number.MAX_SAFE_INTEGER;
      const start = Math.min(Math.max(range?.start ?? 0, 0), size);
      const end = Math.min(Math.max(range?.end ?? size, start), size);
      const unfilled = Buffer.allocUnsafe(end - start); // no zeroing: filled below, and what the read leaves is cut off
      const out = new Uint8Array(unfilled.buffer, unfilled.byteOffset, unfilled.byteLength);
      let filled = 0;
      while (filled < out.byteLength) {
        const { bytesRead } = await handle.read(out, filled, out.byteLength - filled, start + filled);
        if (bytesRead === 0) break; // the end of the file (a clipped range)
        filled += bytesRead;
      }
      return filled === out.byteLength ? out : out.subarray(0, filled);
    } finally {
      await handle.close();
    }
  }

  async head(key: string): Promise<ObjectInfo | undefined> {
    try {
      const s = await stat(this.pathOf(key));
      return s.isFile() ? { key, size: s.size, lastModified: Math.floor(s.mtimeMs) } : undefined;
    } catch (err) {
      if (isMissing(err)) return undefined;
      throw err;
    }
  }

  /**
   * Walks the tree depth first in key order (S3's: UTF-8 bytes, see `compareKeys`). At each level a file sorts by its segment and a
   * directory by its segment plus '/', which is exactly where its keys fall among the siblings'
   * (no segment contains '/'). Subtrees that cannot hold a key matching the prefix, or a key
   * after `startAfter`, are skipped without being read.
   */
  async list(prefix: string, page: { startAfter?: string; limit?: number } = {}): Promise<ObjectPage> {
    const limit = listLimit(page.limit);
    const startAfter = page.startAfter;
    const found: string[] = [];
    const wanted = limit + 1; // one extra tells whether there is a next page

    const walk = async (dirPath: string, keyPrefix: string): Promise<void> => {
      for (const entry of await readEntries(dirPath)) {
        if (found.length >= wanted) return;
        if (entry.isDirectory) {
          const sub = `${keyPrefix + entry.segment}/`;
          if (!sub.startsWith(prefix) && !prefix.startsWith(sub)) continue;
          if (startAfter !== undefined && compareKeys(sub, startAfter) < 0 && !startAfter.startsWith(sub)) continue;
          await walk(join(dirPath, entry.name), sub);
        } else {
          const key = keyPrefix + entry.segment;
          if (!key.startsWith(prefix)) continue;
          if (startAfter !== undefined && compareKeys(key, startAfter) <= 0) continue;
          found.push(key);
        }
      }
    };
    await walk(this.root, '');

    const keys = found.slice(0, limit);
    const objects: ObjectInfo[] = [];
    for (const key of keys) {
      const info = await this.head(key); // undefined when deleted since the walk
      if (info) objects.push(info);
    }
    const more = found.length > limit && keys.length > 0;
    return more ? { objects, nextStartAfter: keys.at(-1)! } : { objects };
  }

  async delete(keys: string[]): Promise<void> {
    for (const key of keys) {
      const path = this.pathOf(key);
      try {
        await unlink(path);
      } catch (err) {
        if (isMissing(err)) continue;
        throw err;
      }
      await this.pruneEmptyDirectories(dirname(path));
    }
  }

  /** The file path of a key; see the class comment for the encoding. */
  private pathOf(key: string): string {
    const segments = key.split('/');
    const file = encodeSegment(segments.pop()!);
    return join(this.root, ...segments.map((s) => encodeSegment(s) + DIR_SUFFIX), file);
  }

  private async writeFile(path: string, body: Uint8Array): Promise<void> {
    const handle = await open(path, 'wx');
    try {
      let written = 0;
      while (written < body.byteLength) {
        const { bytesWritten } = await handle.write(body, written, body.byteLength - written);
        written += bytesWritten;
      }
      if (this.fsync) await handle.sync();
    } finally {
      await handle.close();
    }
  }

  /** Removes now-empty directories from `dir` up to (not including) the root. */
  private async pruneEmptyDirectories(dir: string): Promise<void> {
    while (dir.length > this.root.length && dir.startsWith(this.root)) {
      try {
        await rmdir(dir);
      } catch {
        return; // not empty (ENOTEMPTY/EEXIST), already gone, or not ours to remove
      }
      dir = dirname(dir);
    }
  }
}

const DIR_SUFFIX = '+';
const EMPTY_SEGMENT = '%';

interface Entry {
  name: string;
  segment: string;
  isDirectory: boolean;
  /** Where the entry's keys sort among its siblings'. */
  sortKey: string;
}

async function readEntries(dirPath: string): Promise<Entry[]> {
  let dirents: Dirent[];
  try {
    dirents = await readdir(dirPath, { withFileTypes: true });
  } catch (err) {
    if (isMissing(err)) return [];
    throw err;
  }
  const entries: Entry[] = [];
  for (const d of dirents) {
    if (d.name.startsWith('.')) continue; // temp files
    const isDirectory = d.isDirectory();
    if (isDirectory !== d.name.endsWith(DIR_SUFFIX) || !(isDirectory || d.isFile())) continue;
    const segment = decodeSegment(isDirectory ? d.name.slice(0, -DIR_SUFFIX.length) : d.name);
    if (segment === undefined) continue; // not a name this store wrote
    entries.push({ name: d.name, segment, isDirectory, sortKey: isDirectory ? `${segment}/` : segment });
  }
  return entries.sort((a, b) => compareKeys(a.sortKey, b.sortKey));
}

const SAFE_BYTE = /^[A-Za-z0-9._-]$/;

function encodeSegment(segment: string): string {
  if (segment === '') return EMPTY_SEGMENT;
  let out = '';
  const bytes = new TextEncoder().encode(segment);
  for (let i = 0; i < bytes.length; i++) {
    const b = bytes[i]!;
    const ch = String.fromCharCode(b);
    out +=
      b < 0x80 && SAFE_BYTE.test(ch) && !(i === 0 && ch === '.')
        ? ch
        : `%${b.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out;
}

function decodeSegment(name: string): string | undefined {
  if (name === EMPTY_SEGMENT) return '';
  if (name === '') return undefined;
  const bytes: number[] = [];
  for (let i = 0; i < name.length; i++) {
    const ch = name[i]!;
    if (ch === '%') {
      const hex = name.slice(i + 1, i + 3);
      if (!/^[0-9A-F]{2}$/.test(hex)) return undefined;
      bytes.push(parseInt(hex, 16));
      i += 2;
    } else if (SAFE_BYTE.test(ch)) {
      bytes.push(ch.charCodeAt(0));
    } else {
      return undefined;
    }
  }
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(Uint8Array.from(bytes));
  } catch {
    return undefined;
  }
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

/** ENOENT, or ENOTDIR when a path component is a file: either way the object is not there. */
function isMissing(err: unknown): boolean {
  const code = errorCode(err);
  return code === 'ENOENT' || code === 'ENOTDIR';
}
