import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ConditionFailedError, type MetadataStore, type MetaItem, type QueryOptions } from '../../src/storage/ports.js';

export interface MetadataStoreFixture {
  store: MetadataStore;
  teardown: () => Promise<void>;
}

/** The error a promise rejects with, asserted to be a ConditionFailedError. */
async function conditionFailure(p: Promise<unknown>): Promise<ConditionFailedError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ConditionFailedError);
  return err as ConditionFailedError;
}

const pad = (n: number) => String(n).padStart(5, '0');

/**
 * The behaviour every MetadataStore adapter must share. `setup` runs before each case and must
 * return an empty store.
 */
export function metadataStoreContract(name: string, setup: () => Promise<MetadataStoreFixture>): void {
  describe(`MetadataStore contract: ${name}`, () => {
    let store: MetadataStore;
    let teardown: (() => Promise<void>) | undefined;

    beforeEach(async () => {
      ({ store, teardown } = await setup());
    });
    afterEach(async () => {
      await teardown?.();
      teardown = undefined;
    });

    it('a change stamp, where the adapter has one, moves with every write or delete under its key, and only then', async () => {
      if (!store.changeStamp) return; // optional: DynamoDB has none, and callers then read every time
      const at = (pk: string) => store.changeStamp!(pk);
      const before = at('p');
      await store.get('p', 's');
      await store.query('p');
      expect(at('p')).toBe(before);
      await store.put('p', 's', 1);
      const put = at('p');
      expect(put).not.toBe(before);
      await store.put('p', 's', 2, { ifVersion: 1 });
      const updated = at('p');
      expect(updated).not.toBe(put);
      await store.delete('p', 's', { ifVersion: 2 });
      expect(at('p')).not.toBe(updated);
      const other = at('q');
      await store.put('q', 's', 1);
      expect(at('q')).not.toBe(other);
    });

    it('queries a prefix ending in U+10FFFF (no upper bound exists: the prefix is checked per key)', async () => {
      const prefix = 'a\u{10ffff}';
      for (const sk of [`${prefix}x`, prefix, 'a', 'b', `a\uffff`]) await store.put('p', sk, sk);
      expect((await store.query('p', { beginsWith: prefix })).map((i) => i.sk)).toEqual([prefix, `${prefix}x`]);
      expect((await store.query('p', { beginsWith: prefix, reverse: true, limit: 1 })).map((i) => i.sk)).toEqual([
        `${prefix}x`,
      ]);
    });

    it('putAll, where the adapter has it, writes every item when the condition holds and none when it fails', async () => {
      if (!store.putAll) return; // optional: DynamoDB has none, and callers then write the items one by one
      await store.put('p', 's', 1);
      const written = await store.putAll('p', 's', 2, { ifVersion: 1 }, [
        { sk: 'a', value: 'x' },
        { sk: 'b', value: { y: 1 } },
      ]);
      expect(written).toEqual({ pk: 'p', sk: 's', version: 2, value: 2 });
      expect((await store.query('p')).map((i) => [i.sk, i.value])).toEqual([
        ['a', 'x'],
        ['b', { y: 1 }],
        ['s', 2],
      ]);
      const failed = await conditionFailure(store.putAll('p', 's', 3, { ifVersion: 1 }, [{ sk: 'c', value: 1 }]));
      expect(failed.current).toMatchObject({ version: 2, value: 2 });
      expect(await store.get('p', 'c')).toBeUndefined();
      await conditionFailure(store.putAll('p', 's', 3, { ifAbsent: true }, [{ sk: 'c', value: 1 }]));
      expect(await store.get('p', 'c')).toBeUndefined();
      expect(await store.putAll('p', 'new', 1, { ifAbsent: true }, [{ sk: 'b', value: 'again' }])).toMatchObject({
        version: 1,
      });
      expect(await store.get('p', 'b')).toMatchObject({ version: 2, value: 'again' });
    });

    it('gets undefined for a missing item', async () => {
      expect(await store.get('p', 's')).toBeUndefined();
      await store.put('p', 'other', 1);
      expect(await store.get('p', 's')).toBeUndefined();
      expect(await store.get('other', 's')).toBeUndefined();
    });

    it('puts unconditionally: version 1, then 2', async () => {
      expect(await store.put('p', 's', { n: 1 })).toEqual({ pk: 'p', sk: 's', version: 1, value: { n: 1 } });
      expect(await store.put('p', 's', { n: 2 })).toEqual({ pk: 'p', sk: 's', version: 2, value: { n: 2 } });
      expect(await store.get('p', 's')).toEqual({ pk: 'p', sk: 's', version: 2, value: { n: 2 } });
    });

    it('puts ifAbsent: succeeds on a missing item, fails on an existing one with the item', async () => {
      expect(await store.put('p', 's', 'first', { ifAbsent: true })).toEqual({
        pk: 'p',
        sk: 's',
        version: 1,
        value: 'first',
      });
      const stored = await store.get('p', 's');
      const err = await conditionFailure(store.put('p', 's', 'second', { ifAbsent: true }));
      expect(err).toMatchObject({ pk: 'p', sk: 's' });
      expect(err.current).toEqual(stored);
      expect(err.current).toEqual({ pk: 'p', sk: 's', version: 1, value: 'first' });
      expect(await store.get('p', 's')).toEqual(stored);
    });

    it('puts ifVersion: succeeds at the version, fails otherwise with the item', async () => {
      await store.put('p', 's', 'v1');
      expect(await store.put('p', 's', 'v2', { ifVersion: 1 })).toEqual({ pk: 'p', sk: 's', version: 2, value: 'v2' });

      const stale = await conditionFailure(store.put('p', 's', 'lost', { ifVersion: 1 }));
      expect(stale.current).toEqual({ pk: 'p', sk: 's', version: 2, value: 'v2' });
      const ahead = await conditionFailure(store.put('p', 's', 'lost', { ifVersion: 3 }));
      expect(ahead.current).toEqual({ pk: 'p', sk: 's', version: 2, value: 'v2' });

      const missing = await conditionFailure(store.put('p', 'missing', 'x', { ifVersion: 1 }));
      expect(missing).toMatchObject({ pk: 'p', sk: 'missing', current: undefined });
      expect(await store.get('p', 'missing')).toBeUndefined();
      expect(await store.get('p', 's')).toEqual({ pk: 'p', sk: 's', version: 2, value: 'v2' });
    });

    it('deletes: unconditionally (missing is fine) and ifVersion', async () => {
      await store.delete('p', 'never-existed');
      await store.put('p', 'a', 1);
      await store.delete('p', 'a');
      expect(await store.get('p', 'a')).toBeUndefined();

      await store.put('p', 'b', 1);
      await store.put('p', 'b', 2);
      const wrong = await conditionFailure(store.delete('p', 'b', { ifVersion: 1 }));
      expect(wrong).toMatchObject({ pk: 'p', sk: 'b' });
      expect(wrong.current).toEqual({ pk: 'p', sk: 'b', version: 2, value: 2 });
      expect(await store.get('p', 'b')).toEqual({ pk: 'p', sk: 'b', version: 2, value: 2 });
      await store.delete('p', 'b', { ifVersion: 2 });
      expect(await store.get('p', 'b')).toBeUndefined();

      const gone = await conditionFailure(store.delete('p', 'b', { ifVersion: 2 }));
      expect(gone.current).toBeUndefined();
    });

    it('starts a re-created item at version 1', async () => {
      await store.put('p', 's', 'a');
      await store.put('p', 's', 'b');
      await store.delete('p', 's');
      expect(await store.put('p', 's', 'c', { ifAbsent: true })).toMatchObject({ version: 1, value: 'c' });
    });

    it('round-trips values as JSON', async () => {
      const values: unknown[] = [
        { nested: { deeper: { list: [1, 'two', { three: 3 }, [4]], empty: {}, none: null } }, flag: true },
        [1, -2, 3.5, 0, Number.MAX_SAFE_INTEGER, -1e-7, 1e21],
        'plain',
        'unicode: żółć 日本語 emoji 🚀 combining é and "quotes" \\ backslash \n newline \u0000 nul',
        '',
        42,
        -0.125,
        true,
        false,
        null,
        [],
        {},
        { 'key with spaces': 1, ключ: 2, '': 3 },
      ];
      for (const [i, value] of values.entries()) {
        const sk = `v${pad(i)}`;
        const written = await store.put('json', sk, value);
        expect(written.value).toEqual(value);
        expect((await store.get('json', sk))?.value).toEqual(value);
      }
      expect((await store.query('json')).map((i) => i.value)).toEqual(values);
    });

    it('does not share state with callers', async () => {
      const value = { list: [1, 2] };
      const written = await store.put('p', 's', value);
      value.list.push(3);
      (written.value as { list: number[] }).list.push(4);
      // The answer is an ordinary item: one value however often it is looked at, seen by a spread.
      expect({ ...written }).toEqual({ pk: 'p', sk: 's', version: 1, value: { list: [1, 2, 4] } });
      const read = await store.get<{ list: number[] }>('p', 's');
      expect(read?.value).toEqual({ list: [1, 2] });
      read!.value.list.push(5);
      expect((await store.get('p', 's'))?.value).toEqual({ list: [1, 2] });
    });

    it('keeps partitions apart, including ones sharing a prefix', async () => {
      await store.put('topic/a', 's', 1);
      await store.put('topic/ab', 's', 2);
      await store.put('topic', 's', 3);
      expect((await store.query('topic/a')).map((i) => i.value)).toEqual([1]);
      expect((await store.query('topic')).map((i) => i.value)).toEqual([3]);
      expect(await store.query('topic/')).toEqual([]);
    });

    describe('query', () => {
      const sks = Array.from({ length: 20 }, (_, i) => `off#${pad(i * 10)}`); // off#00000 .. off#00190
      const keysOf = (items: MetaItem[]) => items.map((i) => i.sk);
      const q = async (o?: QueryOptions) => keysOf(await store.query('log', o));

      beforeEach(async () => {
        // Written out of order, beside neighbouring keys and partitions that must never show up.
        for (const sk of [...sks].sort(() => Math.random() - 0.5)) await store.put('log', sk, { sk });
        await store.put('log', 'meta', 'other kind');
        await store.put('log', 'off', 'prefix without the separator');
        await store.put('log2', 'off#00000', 'other partition');
        await store.put('lo', 'off#00000', 'other partition');
      });

      it('returns a partition in sort-key order, with full items', async () => {
        expect(await q()).toEqual(['meta', 'off', ...sks]);
        const [first] = await store.query('log', { limit: 1 });
        expect(first).toEqual({ pk: 'log', sk: 'meta', version: 1, value: 'other kind' });
        expect(await store.query('nothing-here')).toEqual([]);
      });

      it('applies each bound on its own', async () => {
        expect(await q({ gte: 'off#00150' })).toEqual(sks.slice(15));
        expect(await q({ gt: 'off#00150' })).toEqual(sks.slice(16));
        expect(await q({ gt: 'off#00155' })).toEqual(sks.slice(16));
        expect(await q({ lte: 'off#00030' })).toEqual(['meta', 'off', ...sks.slice(0, 4)]);
        expect(await q({ lt: 'off#00030' })).toEqual(['meta', 'off', ...sks.slice(0, 3)]);
        expect(await q({ lt: 'meta' })).toEqual([]);
        expect(await q({ gt: 'off#00190' })).toEqual([]);
      });

      it('combines bounds', async () => {
        expect(await q({ gte: 'off#00050', lt: 'off#00080' })).toEqual(sks.slice(5, 8));
        expect(await q({ gt: 'off#00050', lte: 'off#00080' })).toEqual(sks.slice(6, 9));
        expect(await q({ gt: 'off#00050', lt: 'off#00080' })).toEqual(sks.slice(6, 8));
        expect(await q({ gte: 'off#00050', lte: 'off#00050' })).toEqual(sks.slice(5, 6));
        expect(await q({ gt: 'off#00050', lt: 'off#00060' })).toEqual([]);
        expect(await q({ gt: 'off#00050', lte: 'off#00050' })).toEqual([]);
        expect(await q({ gte: 'off#00090', lt: 'off#00010' })).toEqual([]);
        // Redundant bounds: the tightest wins.
        expect(await q({ gte: 'off#00020', gt: 'off#00040', lte: 'off#00100', lt: 'off#00070' })).toEqual(
          sks.slice(5, 7),
        );
        expect(await q({ gte: 'off#00040', gt: 'off#00040', lte: 'off#00070', lt: 'off#00070' })).toEqual(
          sks.slice(5, 7),
        );
      });

      it('selects by beginsWith, alone and with bounds', async () => {
        expect(await q({ beginsWith: 'off#' })).toEqual(sks);
        expect(await q({ beginsWith: 'off#001' })).toEqual(sks.slice(10, 20));
        expect(await q({ beginsWith: 'off' })).toEqual(['off', ...sks]);
        expect(await q({ beginsWith: 'm' })).toEqual(['meta']);
        expect(await q({ beginsWith: 'zzz' })).toEqual([]);
        expect(await q({ beginsWith: '' })).toEqual(['meta', 'off', ...sks]);
        expect(await q({ beginsWith: 'off#', gte: 'off#00170' })).toEqual(sks.slice(17));
        expect(await q({ beginsWith: 'off#', lt: 'off#00020' })).toEqual(sks.slice(0, 2));
        expect(await q({ beginsWith: 'off#001', gt: 'off#00120', lte: 'off#00150' })).toEqual(sks.slice(13, 16));
        expect(await q({ beginsWith: 'off#001', lt: 'off#00100' })).toEqual([]);
        expect(await q({ beginsWith: 'off#', gte: 'a', lte: 'z' })).toEqual(sks);
      });

      it('limits and reverses', async () => {
        expect(await q({ beginsWith: 'off#', limit: 3 })).toEqual(sks.slice(0, 3));
        expect(await q({ beginsWith: 'off#', reverse: true })).toEqual([...sks].reverse());
        expect(await q({ beginsWith: 'off#', reverse: true, limit: 2 })).toEqual([sks[19], sks[18]]);
        expect(await q({ lte: 'off#00055', reverse: true, limit: 1 })).toEqual([sks[5]]);
        expect(await q({ gt: 'off#00050', lt: 'off#00080', reverse: true })).toEqual([sks[7], sks[6]]);
        expect(await q({ reverse: true })).toEqual([...sks].reverse().concat('off', 'meta'));
        expect(await q({ limit: 100 })).toHaveLength(22);
        expect(await q({ gt: 'off#00050', lt: 'off#00080', limit: 1 })).toEqual([sks[6]]);
      });

      it('orders zero-padded keys numerically and other keys by code point', async () => {
        const mixed = ['B', 'a', 'a#', 'a#1', 'a-', 'a/', 'aa', 'Z', '_', '~', '0', '9', '10'];
        for (const sk of mixed) await store.put('mixed', sk, 0);
        expect(keysOf(await store.query('mixed'))).toEqual([...mixed].sort());
        expect(keysOf(await store.query('mixed', { beginsWith: 'a' }))).toEqual(['a', 'a#', 'a#1', 'a-', 'a/', 'aa']);
        expect(keysOf(await store.query('mixed', { beginsWith: 'a#' }))).toEqual(['a#', 'a#1']);
      });
    });

    it('serialises 20 concurrent read-modify-write incrementers (ifVersion with retry)', async () => {
      await store.put('counter', 'c', { count: 0 }, { ifAbsent: true });
      const perWorker = 1; // dynalite manages ~150 requests a second; more makes this test slow, not stronger
      let conflicts = 0;
      const increment = async () => {
        let current = await store.get<{ count: number }>('counter', 'c');
        for (let attempt = 0; attempt < 1000; attempt++) {
          try {
            await store.put('counter', 'c', { count: current!.value.count + 1 }, { ifVersion: current!.version });
            return;
          } catch (err) {
            if (!(err instanceof ConditionFailedError)) throw err;
            conflicts++;
            current = err.current as MetaItem<{ count: number }>; // retry without a re-read
            // Exponential back-off with full jitter, as any real retry loop has: without it,
            // engines that serialise requests (dynalite) spend a round of 20 failed writes per success.
            await new Promise((r) => setTimeout(r, Math.random() * Math.min(2 ** attempt, 20)));
          }
        }
        throw new Error('no progress after 1000 attempts');
      };
      await Promise.all(
        Array.from({ length: 20 }, async () => {
          for (let i = 0; i < perWorker; i++) await increment();
        }),
      );
      const final = await store.get<{ count: number }>('counter', 'c');
      expect(final?.value.count).toBe(20 * perWorker);
      expect(final?.version).toBe(1 + 20 * perWorker);
      expect(conflicts).toBeGreaterThanOrEqual(0); // engines that serialise requests see none
    });

    it('pages internally past 1 MB of items (DynamoDB returns at most 1 MB per Query)', async () => {
      const padding = 'x'.repeat(8 * 1024);
      const count = 150; // ~1.2 MB
      const sks = Array.from({ length: count }, (_, i) => `big#${pad(i)}`);
      for (let i = 0; i < count; i += 25) {
        await Promise.all(sks.slice(i, i + 25).map((sk) => store.put('paged', sk, { sk, padding })));
      }
      const all = await store.query<{ sk: string; padding: string }>('paged');
      expect(all.map((i) => i.sk)).toEqual(sks);
      expect(all.every((i) => i.value.padding.length === padding.length && i.value.sk === i.sk)).toBe(true);
      expect((await store.query('paged', { limit: 140 })).map((i) => i.sk)).toEqual(sks.slice(0, 140));
      expect((await store.query('paged', { reverse: true, limit: 130 })).map((i) => i.sk)).toEqual(
        [...sks].reverse().slice(0, 130),
      );
      expect((await store.query('paged', { gt: sks[5], lt: sks[145] })).map((i) => i.sk)).toEqual(sks.slice(6, 145));
    });
  });
}
