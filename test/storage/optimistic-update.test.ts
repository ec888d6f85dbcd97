import { describe, expect, it } from 'vitest';
import { MemoryMetadataStore } from '../../src/storage/memory-metadata-store.js';
import { holdsWrite, optimisticUpdate, writeIfUnchanged } from '../../src/storage/optimistic-update.js';
import { isKafkaError } from '../../src/wire/errors.js';
import { FaultyMetadataStore } from '../support/fault-injection.js';

const giveUp = { errorName: 'COORDINATOR_NOT_AVAILABLE', message: 'contended' } as const;
const increment = (metadata: FaultyMetadataStore | MemoryMetadataStore, token: string) =>
  optimisticUpdate<{ n: number; by: string }, number>({
    metadata,
    pk: 'p',
    sk: 's',
    giveUp,
    decide: (item) => ({ write: { n: (item?.value.n ?? 0) + 1, by: token }, answer: (w) => w.value.n }),
    recognise: (found, attempted) => (holdsWrite(found, attempted) ? found.value.n : undefined),
  });

describe('optimisticUpdate', () => {
  it('retries a lost race on the item the failed condition carried, and every increment lands once', async () => {
    const metadata = new MemoryMetadataStore();
    const results = await Promise.all(Array.from({ length: 10 }, (_, i) => increment(metadata, `t${i}`)));
    expect(results.map((r) => r.result).sort((a, b) => a - b)).toEqual(Array.from({ length: 10 }, (_, i) => i + 1));
    expect((await metadata.get<{ n: number }>('p', 's'))!.value.n).toBe(10);
  });

  it('recognises its own write after an ambiguous outcome instead of applying it twice', async () => {
    const metadata = new FaultyMetadataStore(new MemoryMetadataStore());
    await increment(metadata, 'first');
    metadata.faults.fail('put', { when: 'retried' });
    const outcome = await increment(metadata, 'second');
    expect(outcome).toMatchObject({ result: 2, how: 'recognised', retries: 0 });
    expect((await metadata.get<{ n: number }>('p', 's'))!.value.n).toBe(2);
  });

  it('gives up after its attempts with the one typed error', async () => {
    const metadata = new MemoryMetadataStore();
    await metadata.put('p', 's', { n: 0 });
    let decisions = 0;
    const always = optimisticUpdate<{ n: number }, void>({
      metadata,
      pk: 'p',
      sk: 's',
      attempts: 3,
      backoff: { baseMs: 1, maxMs: 2 },
      giveUp,
      decide: async (item) => {
        decisions++;
        await metadata.put('p', 's', { n: -1 }); // someone else writes first, every time
        return { write: { n: item!.value.n + 1 }, answer: () => undefined };
      },
    });
    await expect(always).rejects.toSatisfy((e) => isKafkaError(e, 'COORDINATOR_NOT_AVAILABLE'));
    expect(decisions).toBe(3);
  });

  it('removes an item, and takes a repeat that finds it gone as done', async () => {
    const metadata = new FaultyMetadataStore(new MemoryMetadataStore());
    await metadata.put('p', 's', { n: 1 });
    metadata.faults.fail('delete', { when: 'retried' });
    const outcome = await optimisticUpdate<{ n: number }, string>({
      metadata,
      pk: 'p',
      sk: 's',
      giveUp,
      decide: (item) => (item ? { remove: true, answer: () => 'removed' } : { done: 'absent' }),
      recognise: (found) => (found === undefined ? 'removed' : undefined),
    });
    expect(outcome).toMatchObject({ result: 'removed', how: 'recognised' });
  });
});

describe('writeIfUnchanged (maintenance swaps: one conditional write, no retry)', () => {
  it('writes or removes the item at the version read; a changed item is left as it is', async () => {
    const metadata = new MemoryMetadataStore();
    const read = await metadata.put('p', 'a', { n: 1 });
    expect(await writeIfUnchanged(metadata, { pk: 'p', sk: 'a', item: read }, { write: { n: 2 } })).toBe(true);
    expect((await metadata.get('p', 'a'))!.value).toEqual({ n: 2 });
    // `read` is stale now: the write gives up, and nothing changes.
    expect(await writeIfUnchanged(metadata, { pk: 'p', sk: 'a', item: read }, { write: { n: 3 } })).toBe(false);
    expect(await writeIfUnchanged(metadata, { pk: 'p', sk: 'a', item: read }, { remove: true })).toBe(false);
    expect((await metadata.get('p', 'a'))!.value).toEqual({ n: 2 });
    expect(await writeIfUnchanged(metadata, { pk: 'p', sk: 'new', item: undefined }, { write: { n: 1 } })).toBe(true);
    // Known absent, but created meanwhile: left alone.
    expect(await writeIfUnchanged(metadata, { pk: 'p', sk: 'new', item: undefined }, { write: { n: 9 } })).toBe(false);
    expect((await metadata.get('p', 'new'))!.value).toEqual({ n: 1 });
  });

  it('takes a write or removal the store sent twice (its first answer lost) as applied, not as a conflict', async () => {
    const metadata = new FaultyMetadataStore(new MemoryMetadataStore());
    const a = await metadata.put<{ n: number; token?: string }>('p', 'a', { n: 1 });
    const b = await metadata.put('p', 'b', { n: 1 });
    metadata.faults.fail('put', { when: 'retried' });
    expect(await writeIfUnchanged(metadata, { pk: 'p', sk: 'a', item: a }, { write: { n: 2, token: 'x' } })).toBe(true);
    expect((await metadata.get('p', 'a'))!).toMatchObject({ version: a.version + 1, value: { n: 2, token: 'x' } });
    metadata.faults.fail('delete', { when: 'retried' });
    expect(await writeIfUnchanged(metadata, { pk: 'p', sk: 'b', item: b }, { remove: true })).toBe(true);
    expect(await metadata.get('p', 'b')).toBeUndefined();
    // Gone before, without a repeat: not this call's removal.
    expect(await writeIfUnchanged(metadata, { pk: 'p', sk: 'b', item: b }, { remove: true })).toBe(false);
  });
});
