import { spawn } from 'node:child_process';
import { appendFile, mkdir, mkdtemp, readdir, rm, stat, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { LocalObjectStore, prefixUpperBound } from '../../src/storage/local-object-store.js';
import { ObjectNotFoundError } from '../../src/storage/ports.js';
import { bodyOf } from './support/pack-writer.js';

const sameBytes = (a: Uint8Array, b: Uint8Array) => Buffer.from(a.buffer, a.byteOffset, a.byteLength).equals(b);
const packsUnder = async (root: string) => (await readdir(join(root, 'packs'))).sort();

describe('LocalObjectStore specifics (pack files)', () => {
  let parent: string;
  let root: string;
  const stores: LocalObjectStore[] = [];
  const openStore = (options: ConstructorParameters<typeof LocalObjectStore>[1] = {}) => {
    const s = new LocalObjectStore(root, options);
    stores.push(s);
    return s;
  };

  beforeEach(async () => {
    parent = await mkdtemp(join(tmpdir(), 'local-object-store-'));
    root = join(parent, 'root');
  });
  afterEach(async () => {
    for (const s of stores.splice(0)) await s.close();
    await rm(parent, { recursive: true, force: true });
  });

  it('appends objects to one pack file instead of a file each', async () => {
    const store = openStore();
    for (let i = 0; i < 50; i++) await store.put(`data/t1/${i}`, Uint8Array.of(i));
    expect(await packsUnder(root)).toHaveLength(1);
    expect(store.name).toBe(root);
  });

  it('keeps hostile keys inside the directory, each one distinct, and leaves no pack once all are deleted', async () => {
    const store = openStore();
    const keys = ['../escape', '../../etc/passwd', '/abs/path', 'a/../../b', '..', '.', '', 'a//b', 'a/', '.hidden'];
    keys.push('a\\..\\b', 'a%2Fb', 'a+', 'a+/b', '%', 'a/b', 'a', 'nul\u0000byte', 'ü/€');
    for (const [i, key] of keys.entries()) await store.put(key, Uint8Array.of(i));
    for (const [i, key] of keys.entries()) expect(await store.get(key)).toEqual(Uint8Array.of(i));
    expect((await store.list('')).objects.map((o) => o.key)).toEqual([...keys].sort());
    expect(await readdir(parent)).toEqual(['root']); // nothing escaped
    await store.delete(keys);
    expect((await store.list('')).objects).toEqual([]);
    await store.close(); // seals the open pack, which holds nothing live any more
    expect(await packsUnder(root)).toEqual([]);
  });

  it('removes a sealed pack once its objects are all deleted, and only then', async () => {
    const store = openStore({ packBytes: 100, minRepackBytes: Number.MAX_SAFE_INTEGER });
    for (let i = 0; i < 6; i++) await store.put(`r/${i}`, new Uint8Array(60).fill(i)); // one pack each
    expect(await packsUnder(root)).toHaveLength(6);
    await store.delete(['r/0', 'r/1']);
    expect(await packsUnder(root)).toHaveLength(4);
    await store.delete(['r/5']); // the open pack: kept until it is sealed
    expect(await packsUnder(root)).toHaveLength(4);
    for (const i of [2, 3, 4]) expect(await store.get(`r/${i}`)).toEqual(new Uint8Array(60).fill(i));
  });

  it('moves the live objects out of a mostly deleted pack, keeping bytes and write times', async () => {
    const store = openStore({ packBytes: 1000, minRepackBytes: 1 });
    for (let i = 0; i < 10; i++) await store.put(`m/${i}`, new Uint8Array(100).fill(i)); // one full pack
    await store.put('m/next', Uint8Array.of(1)); // opens the second pack, sealing the first
    const before = await store.head('m/9');
    expect(await packsUnder(root)).toHaveLength(2);
    await store.delete(['m/0', 'm/1', 'm/2', 'm/3', 'm/4', 'm/5']);
    await store.close(); // waits for the rewrite
    expect(await packsUnder(root)).toHaveLength(1);
    const reopened = openStore();
    for (const i of [6, 7, 8, 9]) expect(await reopened.get(`m/${i}`)).toEqual(new Uint8Array(100).fill(i));
    expect(await reopened.head('m/9')).toEqual(before);
  });

  it('answers gets that race rewrites with the object, wherever it is', async () => {
    const store = openStore({ packBytes: 2000, minRepackBytes: 1 });
    const keys = Array.from({ length: 200 }, (_, i) => `g/${String(i).padStart(3, '0')}`);
    for (const [i, k] of keys.entries()) await store.put(k, new Uint8Array(100).fill(i % 256));
    const kept = keys.filter((_, i) => i % 5 === 0);
    const deletes = keys.filter((_, i) => i % 5 !== 0);
    const reads = async () => {
      for (let round = 0; round < 20; round++)
        for (const k of kept) expect(await store.get(k)).toEqual(new Uint8Array(100).fill(keys.indexOf(k) % 256));
    };
    await Promise.all([
      reads(),
      (async () => {
        for (let i = 0; i < deletes.length; i += 10) await store.delete(deletes.slice(i, i + 10));
      })(),
    ]);
    await store.close();
    expect((await packsUnder(root)).length).toBeLessThan(4); // from 11
  });

  it('is shared by every store open on the directory (several processes)', async () => {
    const a = openStore();
    const b = openStore();
    await a.put('s/1', Uint8Array.of(1));
    expect(await b.get('s/1')).toEqual(Uint8Array.of(1));
    await b.put('s/2', Uint8Array.of(2));
    expect((await a.list('s/')).objects.map((o) => o.key)).toEqual(['s/1', 's/2']);
    await b.delete(['s/1']);
    await expect(a.get('s/1')).rejects.toBeInstanceOf(ObjectNotFoundError);
    expect(await packsUnder(root)).toHaveLength(2); // one each
  });

  it('seals and removes the open pack of a writer that died, once it is old', async () => {
    const dead = new LocalObjectStore(root); // never closed, as after a kill
    await dead.put('d/1', Uint8Array.of(1));
    await dead.delete(['d/1']);
    expect(await packsUnder(root)).toHaveLength(1);
    await new Promise((r) => setTimeout(r, 10));
    const later = openStore({ packMaxAgeMs: 1 }); // dead's pack is older than twice that
    await later.put('d/2', Uint8Array.of(2));
    expect(await packsUnder(root)).toHaveLength(1); // later's own
    expect(await later.get('d/2')).toEqual(Uint8Array.of(2));
    await dead.close();
  });

  it('deletes pack files no row names (a removal that died before its unlink) when it opens', async () => {
    const first = openStore();
    await first.put('o/1', Uint8Array.of(1));
    await first.close();
    await writeFile(join(root, 'packs', '0000009999.pack'), 'left over');
    const again = openStore();
    expect(await again.get('o/1')).toEqual(Uint8Array.of(1));
    expect(await packsUnder(root)).not.toContain('0000009999.pack');
  });

  it('never makes a stored object unreadable, nor a torn one readable, when the writer is killed mid-append', async () => {
    const acked: number[] = [];
    for (let run = 0; run < 3; run++) {
      const child = spawn(process.execPath, ['--import', 'tsx', join(import.meta.dirname, 'support/pack-writer.ts')], {
        env: { ...process.env, PACK_WRITER_DIR: root, PACK_WRITER_FIRST: String(run * 1_000_000) },
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      const target = acked.length + 150 + run * 37;
      await new Promise<void>((done) => {
        createInterface({ input: child.stdout! }).on('line', (line) => {
          acked.push(Number(line.slice(3)));
          if (acked.length >= target && !child.killed) child.kill('SIGKILL'); // with up to 8 puts in flight
        });
        child.once('exit', () => done());
      });
    }
    // A torn write at the end of every pack, as a write cut off by the crash leaves it.
    for (const pack of await packsUnder(root))
      await appendFile(join(root, 'packs', pack), new Uint8Array(5000).fill(0xee));

    const store = openStore();
    // Byte comparison by Buffer.equals: toEqual walks typed arrays element by element, far too slowly for megabytes.
    for (const i of acked) expect(sameBytes(await store.get(`k/${i}`), bodyOf(i)), `k/${i}`).toBe(true);
    const listed = (await store.list('k/', { limit: 100_000 })).objects;
    expect(listed.length).toBeGreaterThanOrEqual(acked.length);
    for (const { key, size } of listed) {
      const i = Number(key.slice(2));
      expect(size).toBe(bodyOf(i).byteLength);
      expect(sameBytes(await store.get(key), bodyOf(i)), key).toBe(true); // a listed object is whole, acknowledged or not
    }
    await store.put('k/after', Uint8Array.of(7));
    expect(await store.get('k/after')).toEqual(Uint8Array.of(7));
  }, 60_000);

  it('moves a directory of the one-file-per-object layout into packs when it opens', async () => {
    await mkdir(join(root, 'data+', 't1+', '0+'), { recursive: true });
    await writeFile(join(root, 'data+', 't1+', '0+', '00000000000000000042.log'), 'forty-two');
    await writeFile(join(root, 'data+', 't1+', '0+', '.tmp-abc-1'), 'never acknowledged');
    await mkdir(join(root, 'a%2Fb+'), { recursive: true });
    await writeFile(join(root, 'a%2Fb+', '%'), 'slash');
    const old = new Date(Date.now() - 3_600_000);
    await utimes(join(root, 'a%2Fb+', '%'), old, old);
    const store = openStore();
    expect((await store.list('')).objects.map((o) => o.key)).toEqual(['a/b/', 'data/t1/0/00000000000000000042.log']);
    expect(new TextDecoder().decode(await store.get('data/t1/0/00000000000000000042.log'))).toBe('forty-two');
    expect(Math.abs((await store.head('a/b/'))!.lastModified - old.getTime())).toBeLessThanOrEqual(1); // mtime in whole ms
    expect((await readdir(root)).sort()).toEqual([
      'objects.sqlite',
      'objects.sqlite-shm',
      'objects.sqlite-wal',
      'packs',
    ]);
  });

  it('reads ranges of a large object', async () => {
    const store = openStore();
    const body = Uint8Array.from({ length: 3 * 1024 * 1024 }, (_, i) => i % 251);
    await store.put('big', body);
    expect(await store.get('big', { start: 1_000_000, end: 1_000_010 })).toEqual(body.slice(1_000_000, 1_000_010));
    expect(await store.get('big', { start: body.length - 5, end: body.length + 5 })).toEqual(body.slice(-5));
    expect(sameBytes(await store.get('big'), body)).toBe(true);
    expect((await stat(join(root, 'packs', (await packsUnder(root))[0]!))).size).toBe(body.length);
  });

  it('bounds a prefix by incrementing its last code point', () => {
    expect(prefixUpperBound('')).toBeUndefined();
    expect(prefixUpperBound('data/')).toBe('data0');
    expect(prefixUpperBound('a\u{10FFFF}')).toBe('b');
    expect(prefixUpperBound('x\uD7FF')).toBe('x\uE000');
    expect(prefixUpperBound('\u{10FFFF}')).toBeUndefined();
  });
});
