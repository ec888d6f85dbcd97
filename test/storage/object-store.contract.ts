import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ObjectNotFoundError, type ObjectInfo, type ObjectStore } from '../../src/storage/ports.js';

export interface ObjectStoreFixture {
  store: ObjectStore;
  teardown: () => Promise<void>;
}

const bytes = (...values: number[]) => Uint8Array.from(values);
const text = (s: string) => new TextEncoder().encode(s);

/** Every page of a listing, following `nextStartAfter`. */
async function listAll(
  store: ObjectStore,
  prefix: string,
  limit: number,
): Promise<{ pages: ObjectInfo[][]; keys: string[] }> {
  const pages: ObjectInfo[][] = [];
  let startAfter: string | undefined;
  for (;;) {
    const page = await store.list(prefix, { limit, ...(startAfter !== undefined && { startAfter }) });
    pages.push(page.objects);
    if (page.nextStartAfter === undefined) break;
    expect(page.nextStartAfter).toBe(page.objects.at(-1)?.key);
    startAfter = page.nextStartAfter;
    if (pages.length > 1000) throw new Error('listing does not terminate');
  }
  return { pages, keys: pages.flat().map((o) => o.key) };
}

/**
 * The behaviour every ObjectStore adapter must share. `setup` runs before each case and must
 * return an empty store.
 */
export function objectStoreContract(name: string, setup: () => Promise<ObjectStoreFixture>): void {
  describe(`ObjectStore contract: ${name}`, () => {
    let store: ObjectStore;
    let teardown: (() => Promise<void>) | undefined;

    beforeEach(async () => {
      ({ store, teardown } = await setup());
    });
    afterEach(async () => {
      await teardown?.();
      teardown = undefined;
    });

    it('has a name', () => {
      expect(store.name).toEqual(expect.any(String));
      expect(store.name.length).toBeGreaterThan(0);
    });

    it('round-trips every byte value, and an empty object', async () => {
      const all = Uint8Array.from({ length: 512 }, (_, i) => (i * 7 + 3) % 256);
      await store.put('bin/all-bytes', all);
      await store.put('bin/empty', new Uint8Array(0));
      expect(await store.get('bin/all-bytes')).toEqual(all);
      expect(await store.get('bin/empty')).toEqual(new Uint8Array(0));
    });

    it("returns a copy the caller may mutate, and keeps none of the caller's buffer", async () => {
      const body = bytes(1, 2, 3);
      await store.put('k', body);
      body[0] = 99;
      const read = await store.get('k');
      expect(read).toEqual(bytes(1, 2, 3));
      read[1] = 99;
      expect(await store.get('k')).toEqual(bytes(1, 2, 3));
    });

    it('round-trips keys with spaces, unicode and punctuation', async () => {
      const keys = ['dir/with space/file name.txt', 'ünï/cødé/€.bin', 'p/a+b=c,d;e@f!g~h(i)j'];
      for (const [i, key] of keys.entries()) await store.put(key, bytes(i));
      for (const [i, key] of keys.entries()) expect(await store.get(key)).toEqual(bytes(i));
      expect((await store.list('')).objects.map((o) => o.key)).toEqual([...keys].sort());
    });

    it('reads a byte range, end exclusive', async () => {
      await store.put('r', text('0123456789'));
      expect(await store.get('r', { start: 2, end: 5 })).toEqual(text('234'));
      expect(await store.get('r', { start: 0, end: 1 })).toEqual(text('0'));
      expect(await store.get('r', { start: 0, end: 10 })).toEqual(text('0123456789'));
      expect(await store.get('r', { start: 9, end: 10 })).toEqual(text('9'));
    });

    it('clips a range past the end', async () => {
      await store.put('r', text('0123456789'));
      expect(await store.get('r', { start: 7, end: 100 })).toEqual(text('789'));
      expect(await store.get('r', { start: 10, end: 20 })).toEqual(new Uint8Array(0));
      expect(await store.get('r', { start: 50, end: 60 })).toEqual(new Uint8Array(0));
      expect(await store.get('r', { start: 4, end: 4 })).toEqual(new Uint8Array(0));
    });

    it('reads any range of an empty object as empty', async () => {
      await store.put('empty', new Uint8Array(0));
      expect(await store.get('empty', { start: 0, end: 10 })).toEqual(new Uint8Array(0));
      expect(await store.get('empty', { start: 5, end: 10 })).toEqual(new Uint8Array(0));
      expect(await store.get('empty', { start: 0, end: 0 })).toEqual(new Uint8Array(0));
    });

    it('throws ObjectNotFoundError for a missing key, with or without a range', async () => {
      await store.put('present', bytes(1));
      await expect(store.get('missing')).rejects.toBeInstanceOf(ObjectNotFoundError);
      await expect(store.get('missing')).rejects.toMatchObject({ key: 'missing' });
      await expect(store.get('missing', { start: 0, end: 10 })).rejects.toBeInstanceOf(ObjectNotFoundError);
      await expect(store.get('missing', { start: 3, end: 3 })).rejects.toBeInstanceOf(ObjectNotFoundError);
      await expect(store.get('present/child')).rejects.toBeInstanceOf(ObjectNotFoundError);
    });

    it('heads an object: size and write time; undefined when missing', async () => {
      const before = Date.now();
      await store.put('h/one', text('hello'));
      await store.put('h/empty', new Uint8Array(0));
      const info = await store.head('h/one');
      expect(info).toMatchObject({ key: 'h/one', size: 5 });
      // Engines keep whole seconds (S3) or file-system ticks; allow for either.
      expect(info!.lastModified).toBeGreaterThanOrEqual(before - 2000);
      expect(info!.lastModified).toBeLessThanOrEqual(Date.now() + 2000);
      expect(await store.head('h/empty')).toMatchObject({ key: 'h/empty', size: 0 });
      expect(await store.head('h/missing')).toBeUndefined();
      expect(await store.head('h')).toBeUndefined();
    });

    it('lists by prefix, with sizes', async () => {
      await store.put('logs/a/1', text('x'));
      await store.put('logs/a/2', text('xy'));
      await store.put('logs/b/1', text('xyz'));
      await store.put('other/1', text(''));
      const page = await store.list('logs/a/');
      expect(page.objects.map(({ key, size }) => ({ key, size }))).toEqual([
        { key: 'logs/a/1', size: 1 },
        { key: 'logs/a/2', size: 2 },
      ]);
      expect(page.nextStartAfter).toBeUndefined();
      expect((await store.list('logs/')).objects.map((o) => o.key)).toEqual(['logs/a/1', 'logs/a/2', 'logs/b/1']);
      expect((await store.list('lo')).objects.map((o) => o.key)).toEqual(['logs/a/1', 'logs/a/2', 'logs/b/1']);
      expect((await store.list('')).objects).toHaveLength(4);
      expect((await store.list('nope/')).objects).toEqual([]);
      expect((await store.list('logs/a/1')).objects.map((o) => o.key)).toEqual(['logs/a/1']);
      const [first] = (await store.list('logs/b/')).objects;
      expect(first!.lastModified).toBeGreaterThan(Date.now() - 60_000);
    });

    it('lists in lexicographic key order, whatever the write order', async () => {
      const keys = [
        'seg/00000000000000000100.log',
        'seg/00000000000000000000.log',
        'seg/00000000000000000099.log',
        'seg/00000000000000000100.idx',
        'seg/00000000000000000010.log',
        'seg/A',
        'seg/B',
        'seg/a',
        'seg/_',
      ];
      for (const k of keys) await store.put(k, bytes(0));
      expect((await store.list('seg/')).objects.map((o) => o.key)).toEqual([...keys].sort());
    });

    it('orders keys across levels by bytes: a < a-b < a.b < a/b < a0', async () => {
      const keys = ['x/a0', 'x/a/b', 'x/a.b', 'x/a', 'x/a-b', 'x/a/b/c', 'x/a/a'];
      for (const k of keys) await store.put(k, bytes(0));
      const expected = ['x/a', 'x/a-b', 'x/a.b', 'x/a/a', 'x/a/b', 'x/a/b/c', 'x/a0'];
      expect((await store.list('x/')).objects.map((o) => o.key)).toEqual(expected);
      expect((await listAll(store, 'x/', 2)).keys).toEqual(expected);
      expect((await store.list('x/a', { startAfter: 'x/a-b' })).objects.map((o) => o.key)).toEqual(expected.slice(2));
    });

    it('orders keys above U+FFFF by their UTF-8 bytes, as S3 does, not by UTF-16 code units', async () => {
      // JavaScript's < puts U+1F600 (a surrogate pair, 0xD83D 0xDE00) before U+E000..U+FFFD; in
      // UTF-8 (F0 9F 98 80) it comes after them (EE 80 80 .. EF BF BD), and S3 lists in that order.
      const keys = [
        'u/\u{1F600}',
        'u/\uFFFD',
        'u/\u{10000}x',
        'u/z',
        'u/\uE000',
        'u/\uFFFDa',
        'u/\u{1F600}/in',
        'u/\uFFFD/in',
      ];
      for (const k of keys) await store.put(k, bytes(0));
      const expected = [
        'u/z',
        'u/\uE000',
        'u/\uFFFD',
        'u/\uFFFD/in',
        'u/\uFFFDa',
        'u/\u{10000}x',
        'u/\u{1F600}',
        'u/\u{1F600}/in',
      ];
      expect((await store.list('u/')).objects.map((o) => o.key)).toEqual(expected);
      expect((await listAll(store, 'u/', 3)).keys).toEqual(expected);
      expect((await store.list('u/', { startAfter: 'u/\uFFFDa' })).objects.map((o) => o.key)).toEqual(
        expected.slice(5),
      );
      // A startAfter that is no key: U+FFFF sorts after every BMP key and before every astral one.
      expect((await store.list('u/', { startAfter: 'u/\uFFFF' })).objects.map((o) => o.key)).toEqual(expected.slice(5));
      expect((await store.list('u/', { startAfter: 'u/\u{1F600}/in' })).objects).toEqual([]);
      expect((await store.list('u/\u{1F600}')).objects.map((o) => o.key)).toEqual(expected.slice(6));
    });

    it('answers limit 0 with an empty last page, as S3 answers MaxKeys=0; rejects a negative or fractional limit', async () => {
      await store.put('z/1', bytes(1));
      await store.put('z/2', bytes(2));
      expect(await store.list('z/', { limit: 0 })).toEqual({ objects: [] });
      expect(await store.list('z/', { limit: 0, startAfter: 'z/1' })).toEqual({ objects: [] });
      expect(await store.list('', { limit: 0 })).toEqual({ objects: [] });
      await expect(store.list('z/', { limit: -1 })).rejects.toBeInstanceOf(RangeError);
      await expect(store.list('z/', { limit: 1.5 })).rejects.toBeInstanceOf(RangeError);
      expect((await store.list('z/', { limit: 1 })).objects.map((o) => o.key)).toEqual(['z/1']);
    });

    it('pages with startAfter and limit', async () => {
      const keys = Array.from({ length: 30 }, (_, i) => `p/${String(i).padStart(4, '0')}`);
      for (const k of [...keys].reverse()) await store.put(k, bytes(1));
      await store.put('q/after', bytes(1));

      const { pages, keys: listed } = await listAll(store, 'p/', 7);
      expect(pages.map((p) => p.length)).toEqual([7, 7, 7, 7, 2]);
      expect(listed).toEqual(keys);

      const exact = await store.list('p/', { limit: 30 });
      expect(exact.objects).toHaveLength(30);
      expect(exact.nextStartAfter).toBeUndefined();
      const { pages: tens } = await listAll(store, 'p/', 10);
      expect(tens.map((p) => p.length)).toEqual([10, 10, 10]);

      expect((await store.list('p/', { startAfter: 'p/0027' })).objects.map((o) => o.key)).toEqual([
        'p/0028',
        'p/0029',
      ]);
      // startAfter need not be an existing key, nor inside the prefix.
      expect((await store.list('p/', { startAfter: 'p/0027x', limit: 5 })).objects.map((o) => o.key)).toEqual([
        'p/0028',
        'p/0029',
      ]);
      expect((await store.list('p/', { startAfter: 'a', limit: 2 })).objects.map((o) => o.key)).toEqual([
        'p/0000',
        'p/0001',
      ]);
      expect((await store.list('p/', { startAfter: 'p/0029' })).objects).toEqual([]);
      expect((await store.list('p/', { startAfter: 'z' })).objects).toEqual([]);
      expect((await store.list('p/')).objects).toHaveLength(30); // default limit is 1000
    });

    it('keeps nested prefixes apart (data/t1/ is not data/t10/)', async () => {
      const keys = [
        'data/t1/0/00000000000000000000.log',
        'data/t1/0/00000000000000000500.log',
        'data/t1/1/00000000000000000000.log',
        'data/t1/10/00000000000000000000.log',
        'data/t10/0/00000000000000000000.log',
        'data/t2/0/00000000000000000000.log',
        'datum/0',
      ];
      for (const k of [...keys].reverse()) await store.put(k, bytes(1));
      const listKeys = async (prefix: string, page?: { startAfter?: string; limit?: number }) =>
        (await store.list(prefix, page)).objects.map((o) => o.key);

      expect(await listKeys('data/t1/')).toEqual(keys.slice(0, 4));
      expect(await listKeys('data/t1/1')).toEqual(keys.slice(2, 4));
      expect(await listKeys('data/t1/1/')).toEqual(keys.slice(2, 3));
      expect(await listKeys('data/t1')).toEqual(keys.slice(0, 5));
      expect(await listKeys('data/')).toEqual(keys.slice(0, 6));
      expect(await listKeys('data')).toEqual(keys.slice(0, 6));
      expect(await listKeys('dat')).toEqual(keys);
      expect(await listKeys('data/t1/0/000000000000000005')).toEqual([keys[1]]);
      expect(await listKeys('data/', { startAfter: keys[1] })).toEqual(keys.slice(2, 6));
      expect(await listKeys('data/', { startAfter: 'data/t1/0/zzz', limit: 2 })).toEqual(keys.slice(2, 4));
      expect(await listKeys('data/', { startAfter: 'data/t1/' })).toEqual(keys.slice(0, 6));
      expect((await listAll(store, '', 3)).keys).toEqual(keys);
    });

    it('deletes in a batch; missing keys are fine', async () => {
      const keys = Array.from({ length: 30 }, (_, i) => `d/${String(i).padStart(3, '0')}`);
      for (const k of keys) await store.put(k, bytes(1));
      await store.put('keep/me', bytes(2));

      await store.delete([]);
      await store.delete(['d/nothing', 'nowhere/at/all']);
      await store.delete(keys.slice(0, 20).concat('d/missing'));
      expect((await store.list('d/')).objects.map((o) => o.key)).toEqual(keys.slice(20));
      await expect(store.get(keys[0]!)).rejects.toBeInstanceOf(ObjectNotFoundError);
      expect(await store.head(keys[0]!)).toBeUndefined();

      await store.delete(keys); // half of them already gone
      expect((await store.list('d/')).objects).toEqual([]);
      expect(await store.get('keep/me')).toEqual(bytes(2));
    });

    it('can write a key again after deleting it', async () => {
      await store.put('again/k', bytes(1));
      await store.delete(['again/k']);
      await store.put('again/k', bytes(2));
      expect(await store.get('again/k')).toEqual(bytes(2));
    });

    it('handles concurrent puts and reads', async () => {
      const keys = Array.from({ length: 40 }, (_, i) => `c/${i % 4}/${String(i).padStart(3, '0')}`);
      await Promise.all(keys.map((k, i) => store.put(k, bytes(i))));
      const read = await Promise.all(keys.map((k) => store.get(k)));
      expect(read).toEqual(keys.map((_, i) => bytes(i)));
      expect((await store.list('c/')).objects.map((o) => o.key)).toEqual([...keys].sort());
    });
  });
}
