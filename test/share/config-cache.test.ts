/**
 * A share group's configs are kept by each process for SHARE_CONFIG_CACHE_MS instead of read on
 * every receive and acknowledgement: the process that changes them uses the change at once,
 * another process (another Lambda over the same store) once its copy is that old, and describing
 * them always reads the stored item. Two apps over one store stand for two processes.
 */
import { describe, expect, it } from 'vitest';
import { createStorage } from '../../src/compose.js';
import { SHARE_CONFIG_CACHE_MS } from '../../src/share/share-groups.js';
import { SHARE_GROUP_CONFIG_SK } from '../../src/storage/key-layout.js';
import { observeStorage } from '../../src/storage/observed-stores.js';
import { testApp } from '../support/test-app.js';
import { manualClock } from './support.js';

describe('share group configs kept per process', () => {
  it('are used at once where changed, elsewhere within the cache time, and described as stored', async () => {
    const clock = manualClock();
    const one = testApp({ clock });
    const other = testApp({ storage: one.storage, clock });
    const lock = async (app: ReturnType<typeof testApp>) =>
      (await app.services.share.config('cached')).recordLockDurationMs;
    expect(await lock(one)).toBe(30_000);
    expect(await lock(other)).toBe(30_000);

    const set = await one.call('PUT', 'share-groups/cached/configs/share.record.lock.duration.ms', { value: '15000' });
    expect(set.status).toBe(204);
    expect(await lock(one)).toBe(15_000);
    // The other process still uses what it read, but describes what is stored.
    expect(await lock(other)).toBe(30_000);
    const described = await other.call('GET', 'share-groups/cached/configs');
    expect(described.body.data).toContainEqual({
      name: 'share.record.lock.duration.ms',
      value: '15000',
      is_default: false,
    });
    clock.advance(SHARE_CONFIG_CACHE_MS);
    expect(await lock(other)).toBe(15_000);
    expect(await lock(one)).toBe(15_000);

    // A reset goes the same way.
    expect((await other.call('DELETE', 'share-groups/cached/configs/share.record.lock.duration.ms')).status).toBe(204);
    expect(await lock(other)).toBe(30_000);
    expect(await lock(one)).toBe(15_000);
    clock.advance(SHARE_CONFIG_CACHE_MS);
    expect(await lock(one)).toBe(30_000);
  });

  it('found too old by many requests at once, are read once for all of them', async () => {
    const clock = manualClock();
    let reads = 0;
    const storage = observeStorage(createStorage({ kind: 'memory', replicaStores: 1 }), (c) => {
      if (c.op === 'GetItem' && c.sk === SHARE_GROUP_CONFIG_SK) reads++;
    });
    const { services } = testApp({ storage, clock });
    const { share } = services;
    const all = () => Promise.all(Array.from({ length: 20 }, () => share.config('stampede')));
    expect((await all()).every((c) => c.recordLockDurationMs === 30_000)).toBe(true);
    expect(reads).toBe(1);
    clock.advance(SHARE_CONFIG_CACHE_MS);
    await all();
    expect(reads).toBe(2);
    // A change made meanwhile is not answered from a read begun before it.
    clock.advance(SHARE_CONFIG_CACHE_MS);
    const before = share.config('stampede');
    await share.alterConfigs('stampede', [{ name: 'share.delivery.count.limit', value: '3' }]);
    const after = await share.config('stampede');
    expect(after.deliveryCountLimit).toBe(3);
    await before;
  });
});
