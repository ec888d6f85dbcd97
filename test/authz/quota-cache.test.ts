/**
 * Client quotas are read once per `cacheMs` per process, not per request; a change made through
 * another process applies within that bound, one made through this process at once.
 */
import { describe, expect, it } from 'vitest';
import { createStorage } from '../../src/compose.js';
import { QuotaStore } from '../../src/quotas/client-quotas.js';
import { QUOTA_PK } from '../../src/storage/key-layout.js';

function setup() {
  const { metadata } = createStorage({ kind: 'memory', replicaStores: 1 });
  const reads = { n: 0 };
  const query = metadata.query.bind(metadata);
  metadata.query = (pk, o) => {
    if (pk === QUOTA_PK) reads.n++;
    return query(pk, o);
  };
  let now = 1_000_000;
  const clock = { now: () => now };
  return {
    reads,
    advance: (ms: number) => (now += ms),
    here: new QuotaStore(metadata, clock, 5000),
    elsewhere: new QuotaStore(metadata, clock, 5000),
  };
}

const rate = async (s: QuotaStore) => (await s.index()).resolve('alice', 'app').producer_byte_rate?.rate;

describe('client quota cache', () => {
  it('1,000 requests within the bound read the quotas once', async () => {
    const t = setup();
    for (let i = 0; i < 1000; i++) {
      expect(await rate(t.here)).toBeUndefined();
      t.advance(4);
    }
    expect(t.reads.n).toBe(1);
  });

  it("another process's quota change applies within the bound (5 s); this process's own at once", async () => {
    const t = setup();
    expect(await rate(t.here)).toBeUndefined();
    await t.elsewhere.alter({ user: 'alice' }, { producer_byte_rate: 1024 }, []);
    t.advance(4999);
    expect(await rate(t.here)).toBeUndefined();
    t.advance(1);
    expect(await rate(t.here)).toBe(1024);
    await t.here.alter({ user: 'alice' }, { producer_byte_rate: 2048 }, []);
    expect(await rate(t.here)).toBe(2048);
  });
});
