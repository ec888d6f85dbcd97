/**
 * Issue 35: a member releasing many partitions fences their offset items a few at a time, so the
 * group's partition key (which the offset items share) is not spent in one burst.
 */
import { describe, expect, it } from 'vitest';
import { FENCE_CONCURRENCY, fenceOffsets } from '../../src/groups/offset-fence.js';
import type { OffsetRecord } from '../../src/groups/offset-record.js';
import type { MetadataStore } from '../../src/storage/ports.js';
import { memoryBackend } from '../support/backends.js';

/** The store, with the most writes it had in flight at once. */
function counting(inner: MetadataStore) {
  let inFlight = 0;
  const seen = { max: 0 };
  const store = new Proxy(inner, {
    get(target, prop) {
      const value = Reflect.get(target, prop, target) as unknown;
      if (typeof value !== 'function') return value;
      const fn = (value as (...args: unknown[]) => unknown).bind(target);
      if (prop !== 'put') return fn;
      return async (...args: unknown[]) => {
        inFlight++;
        seen.max = Math.max(seen.max, inFlight);
        try {
          // Let every other caller run first, as a write that takes a round trip would.
          await new Promise((r) => setImmediate(r));
          return await fn(...args);
        } finally {
          inFlight--;
        }
      };
    },
  });
  return { store, seen };
}

describe('fencing a large release', () => {
  it(`raises every fence, at most ${FENCE_CONCURRENCY} writes at a time`, async () => {
    const { storage, stop } = await memoryBackend.start();
    try {
      const { store, seen } = counting(storage.metadata);
      const partitions = Array.from({ length: 50 }, (_, partition) => ({ topic: 't', partition }));
      await fenceOffsets(store, 'g', partitions, 7);
      expect(seen.max).toBe(FENCE_CONCURRENCY);
      const items = await storage.metadata.query<OffsetRecord>('group#g', { beginsWith: 'off#' });
      expect(items).toHaveLength(50);
      expect(items.every((i) => i.value.fence === 7 && i.value.offset === -1)).toBe(true);
      // A repeat (an ambiguous outcome retried) finds every fence raised and writes nothing.
      seen.max = 0;
      await fenceOffsets(store, 'g', partitions, 7);
      expect(seen.max).toBe(0);
    } finally {
      await stop();
    }
  });
});
