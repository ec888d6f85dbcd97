import { mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { LocalObjectStore } from '../../src/storage/local-object-store.js';

/** Every file under `dir`, as paths relative to it. */
async function filesUnder(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  return entries
    .filter((e) => e.isFile())
    .map((e) => relative(dir, join(e.parentPath, e.name)))
    .sort();
}

describe('LocalObjectStore specifics', () => {
  let parent: string;
  let root: string;
  let store: LocalObjectStore;

  beforeEach(async () => {
    parent = await mkdtemp(join(tmpdir(), 'local-object-store-'));
    root = join(parent, 'root');
    store = new LocalObjectStore(root);
  });
  afterEach(async () => {
    await rm(parent, { recursive: true, force: true });
  });

  it('stores keys as readable paths', async () => {
    await store.put('data/t1/0/00000000000000000042.log', Uint8Array.of(1));
    expect(await filesUnder(root)).toEqual([join('data+', 't1+', '0+', '00000000000000000042.log')]);
    expect(store.name).toBe(root);
  });

  it('keeps hostile keys inside the directory, each one distinct', async () => {
    const keys = [
      '../escape',
      '../../etc/passwd',
      '/abs/path',
      'a/../../b',
      '..',
      '.',
      '',
      'a//b',
      'a/',
      '.hidden',
      'a\\..\\b',
      'a%2Fb',
      'a+',
      'a+/b',
      '%',
      'a/b',
      'a',
      'nul\u0000byte',
      'ü/€',
    ];
    for (const [i, key] of keys.entries()) await store.put(key, Uint8Array.of(i));
    for (const [i, key] of keys.entries()) expect(await store.get(key)).toEqual(Uint8Array.of(i));
    expect((await store.list('')).objects.map((o) => o.key)).toEqual([...keys].sort());
    expect(await readdir(parent)).toEqual(['root']); // nothing escaped
    await store.delete(keys);
    expect((await store.list('')).objects).toEqual([]);
    expect(await filesUnder(root)).toEqual([]);
  });

  it('does not list temp files of writes in flight, nor files it did not write', async () => {
    await store.put('d/a', Uint8Array.of(1));
    await writeFile(join(root, 'd+', '.tmp-0123456789abcdef'), 'partial');
    await writeFile(join(root, 'd+', 'foreign+'), 'a file named like a directory');
    await mkdir(join(root, 'd+', 'dir-without-marker'));
    await writeFile(join(root, 'd+', 'dir-without-marker', 'x'), 'x');
    await writeFile(join(root, 'stray file'), 'x');
    expect((await store.list('')).objects.map((o) => o.key)).toEqual(['d/a']);
  });

  it('leaves no temp files behind after writes', async () => {
    await Promise.all(Array.from({ length: 20 }, (_, i) => store.put(`w/${i}`, new Uint8Array(1000).fill(i))));
    expect((await filesUnder(root)).filter((f) => f.includes('.tmp-'))).toEqual([]);
  });

  it('removes directories emptied by delete, and not the root', async () => {
    await store.put('x/y/z/1', Uint8Array.of(1));
    await store.put('x/keep', Uint8Array.of(1));
    await store.delete(['x/y/z/1']);
    expect(await readdir(root)).toEqual(['x+']);
    expect(await readdir(join(root, 'x+'))).toEqual(['keep']);
    await store.delete(['x/keep']);
    expect(await readdir(root)).toEqual([]);
  });

  it('survives puts racing deletes that prune the same directory', async () => {
    for (let round = 0; round < 20; round++) {
      await store.put(`race/${round}/old`, Uint8Array.of(1));
      await Promise.all([store.delete([`race/${round}/old`]), store.put(`race/${round}/new`, Uint8Array.of(2))]);
      expect(await store.get(`race/${round}/new`)).toEqual(Uint8Array.of(2));
    }
  });

  it('reads ranges of a large object', async () => {
    const body = Uint8Array.from({ length: 3 * 1024 * 1024 }, (_, i) => i % 251);
    await store.put('big', body);
    expect(await store.get('big', { start: 1_000_000, end: 1_000_010 })).toEqual(body.slice(1_000_000, 1_000_010));
    expect(await store.get('big', { start: body.length - 5, end: body.length + 5 })).toEqual(body.slice(-5));
    expect((await store.get('big')).byteLength).toBe(body.length);
  });

  it('lists an empty result when the directory does not exist yet', async () => {
    expect(await store.list('')).toEqual({ objects: [] });
    expect(await store.head('k')).toBeUndefined();
    await store.delete(['k']);
    expect(dirname(root)).toBe(parent);
  });
});
