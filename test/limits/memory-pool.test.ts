import { describe, expect, it } from 'vitest';
import { MemoryPool } from '../../src/limits/memory-pool.js';

describe('MemoryPool', () => {
  it('lends what fits under the capacity, or under a lower ceiling, and reports use', () => {
    const seen: number[] = [];
    const pool = new MemoryPool(100, (used) => seen.push(used));
    expect(pool.tryAllocate(60)).toBe(true);
    expect(pool.tryAllocate(50)).toBe(false);
    expect(pool.tryAllocate(10, 50)).toBe(false); // a class of requests kept to the lower half
    expect(pool.tryAllocate(40)).toBe(true);
    pool.allocate(5); // the unpooled allowance: an overdraft the pool shows
    expect(pool.used).toBe(105);
    pool.release(105);
    expect(pool.used).toBe(0);
    expect(seen).toEqual([60, 100, 105, 0]);
  });

  it('wakes waiters in order after memory is given back, skipping those that still do not fit', async () => {
    const pool = new MemoryPool(100);
    pool.allocate(100);
    const order: string[] = [];
    pool.whenReleased(() => {
      const ok = pool.tryAllocate(80);
      if (ok) order.push('big');
      return ok;
    });
    pool.whenReleased(() => {
      const ok = pool.tryAllocate(20);
      if (ok) order.push('small');
      return ok;
    });
    pool.release(30);
    await Promise.resolve();
    expect(order).toEqual(['small']);
    pool.release(70);
    await Promise.resolve();
    expect(order).toEqual(['small', 'big']);
    expect(pool.used).toBe(100);
  });

  it('acquire waits for room, and gives up after its time or for a request that can never fit', async () => {
    const pool = new MemoryPool(10);
    expect(await pool.acquire(11, 1000)).toBe(false);
    pool.allocate(10);
    const late = pool.acquire(5, 20);
    expect(await late).toBe(false);
    const waiting = pool.acquire(5, 1000);
    pool.release(5);
    expect(await waiting).toBe(true);
    expect(pool.used).toBe(10);
  });
});
