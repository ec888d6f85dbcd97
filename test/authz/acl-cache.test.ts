/**
 * The ACL set is read once per `cacheMs` per process, not per request; a change made through
 * another process (another AclStore on the same table) takes effect within that bound, one made
 * through this process at once.
 */
import { describe, expect, it } from 'vitest';
import type { AclBinding } from '../../src/authz/acl.js';
import { AclStore } from '../../src/authz/acl-store.js';
import { createStorage } from '../../src/compose.js';
import { ACL_PK } from '../../src/storage/key-layout.js';

const settings = { superUsers: new Set<string>(), allowEveryoneIfNoAclFound: false };
const readAlice: AclBinding = {
  resourceType: 'TOPIC',
  resourceName: 'orders',
  patternType: 'LITERAL',
  principal: 'User:alice',
  host: '*',
  operation: 'READ',
  permission: 'ALLOW',
};
const ask = {
  principal: 'User:alice',
  host: '10.0.0.1',
  operation: 'READ',
  resourceType: 'TOPIC',
  resourceName: 'orders',
} as const;

function setup() {
  const { metadata } = createStorage({ kind: 'memory', replicaStores: 1 });
  const reads = { n: 0 };
  const query = metadata.query.bind(metadata);
  metadata.query = (pk, o) => {
    if (pk === ACL_PK) reads.n++;
    return query(pk, o);
  };
  let now = 1_000_000;
  const clock = { now: () => now };
  return {
    reads,
    advance: (ms: number) => (now += ms),
    here: new AclStore(metadata, clock, settings, 5000),
    elsewhere: new AclStore(metadata, clock, settings, 5000),
  };
}

describe('ACL cache', () => {
  it('1,000 authorizations within the bound read the ACL set once', async () => {
    const t = setup();
    for (let i = 0; i < 1000; i++) {
      expect((await t.here.index()).authorize(ask)).toBe(false);
      t.advance(4);
    }
    expect(t.reads.n).toBe(1);
  });

  it("another process's ACL change applies within the bound (5 s); this process's own at once", async () => {
    const t = setup();
    expect((await t.here.index()).authorize(ask)).toBe(false);
    await t.elsewhere.create([readAlice]);
    t.advance(4999);
    expect((await t.here.index()).authorize(ask)).toBe(false); // still the set read before the change
    t.advance(1);
    expect((await t.here.index()).authorize(ask)).toBe(true);
    await t.here.delete({ principal: 'User:alice' });
    expect((await t.here.index()).authorize(ask)).toBe(false);
  });
});
