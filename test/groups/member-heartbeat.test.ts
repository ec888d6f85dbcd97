/**
 * Issue 35: a member's heartbeat reads its own item, not the group. A join writes the new member
 * and the members whose target changes; the heartbeats that reconcile the group afterwards read
 * their own item, the group item and the items of the members holding what they wait for, never
 * the whole group; a release is still one conditional group write, exact when its answer is lost
 * or its writer dies before it; concurrent joins and reconciling heartbeats keep every partition
 * with one holder; member items without the holders list (as a release before it wrote them)
 * still reconcile, through the whole group.
 */
import { describe, expect, it } from 'vitest';
import { GroupCoordinator } from '../../src/groups/coordinator.js';
import { GroupItems, IN_FLIGHT_GRACE_MS, type MemberItem } from '../../src/groups/group-items.js';
import { holders, type GroupRecord } from '../../src/groups/group-state.js';
import { groupMemberSk } from '../../src/storage/key-layout.js';
import { observeStorage, type StorageCall } from '../../src/storage/observed-stores.js';
import type { MetadataStore } from '../../src/storage/ports.js';
import { TopicRegistry } from '../../src/topics/topics.js';
import { memoryBackend } from '../support/backends.js';
import { FaultyMetadataStore, InjectedFault } from '../support/fault-injection.js';
import { manualClock } from './helpers.js';

const PARTITIONS = 40;

type Member = { id: string; epoch: number };

async function setup(metadata: MetadataStore) {
  const clock = manualClock();
  const topics = new TopicRegistry(metadata, clock, 1);
  await topics.create({ name: 't', partitionCount: PARTITIONS, replicationFactor: 1 });
  const coordinator = new GroupCoordinator({ metadata, clock, topics });
  const items = new GroupItems(metadata);
  const join = async () => {
    const a = await coordinator.heartbeat('g', {
      memberId: '',
      memberEpoch: 0,
      subscribedTopics: ['t'],
      assignor: 'sticky',
    });
    return { id: a.memberId, epoch: a.memberEpoch };
  };
  const beat = async (m: Member) => {
    m.epoch = (await coordinator.heartbeat('g', { memberId: m.id, memberEpoch: m.epoch })).memberEpoch;
  };
  const settle = async (members: Member[]) => {
    for (let round = 0; round < 10; round++) {
      for (const m of members) await beat(m);
      if ((await items.stored('g'))!.state === 'Stable') return;
    }
    throw new Error('the group did not settle');
  };
  return { clock, coordinator, items, join, beat, settle };
}

/** Every partition held by exactly one member (none by two, none unowned once Stable). */
function expectOneHolderEach(g: GroupRecord, all = true): void {
  const held = holders(g);
  for (const owners of held.values()) expect(owners).toHaveLength(1);
  if (all) expect(held.size).toBe(PARTITIONS);
}

const targets = (g: GroupRecord) =>
  Object.fromEntries(Object.entries(g.target).map(([k, v]) => [k, JSON.stringify(v)]));

describe("a member's heartbeat in a group of 30", () => {
  it('a join writes the new member and the changed targets; reconciling heartbeats read no query', async () => {
    const { storage, stop } = await memoryBackend.start();
    try {
      let calls: StorageCall[] = [];
      const observed = observeStorage(storage, (c) => calls.push(c));
      const { items, join, beat, settle } = await setup(observed.metadata);
      const members: Member[] = [];
      for (let i = 0; i < 30; i++) members.push(await join());
      await settle(members);
      const before = (await items.stored('g'))!;

      calls = [];
      members.push(await join());
      const after = (await items.stored('g'))!;
      const changed = Object.keys(after.target).filter((id) => targets(before)[id] !== targets(after)[id]);
      // The new member and the few the uniform (sticky) assignor takes a partition from.
      expect(changed.length).toBeLessThanOrEqual(1 + 2);
      const memberWrites = calls.filter((c) => c.op === 'UpdateItem' && c.pk === 'group#g' && c.sk.startsWith('mbr#'));
      expect(new Set(memberWrites.map((c) => ('sk' in c ? c.sk : ''))).size).toBe(changed.length);
      expect(memberWrites.length).toBeLessThanOrEqual(2 * changed.length); // pending, then folded

      // Reconciling: the losers revoke and release, the new member takes what they released.
      const stable = async () => {
        const seen = calls.length;
        const state = (await items.stored('g'))!.state;
        calls.splice(seen); // the test's own reads
        return state === 'Stable';
      };
      calls = [];
      let beats = 0;
      for (let round = 0; round < 5 && !(await stable()); round++) {
        for (const m of members) {
          await beat(m);
          beats++;
        }
      }
      const seen = calls.length;
      const group = (await items.stored('g'))!;
      calls.splice(seen);
      expect(group.state).toBe('Stable');
      expectOneHolderEach(group);
      const onGroup = calls.filter((c) => c.port === 'metadata' && c.pk === 'group#g');
      expect(onGroup.filter((c) => c.op === 'Query')).toEqual([]);
      // Its own item, and (not idle) the group item and a holder's: at most three reads a heartbeat.
      expect(onGroup.filter((c) => c.op === 'GetItem').length).toBeLessThanOrEqual(3 * beats);
      const writes = onGroup.filter((c) => c.op === 'UpdateItem' || c.op === 'DeleteItem');
      expect(writes.length).toBeLessThanOrEqual(3 * changed.length + 2);
    } finally {
      await stop();
    }
  });
});

describe('a release (the end of a revocation) under faults', () => {
  async function revoking(metadata: MetadataStore) {
    const s = await setup(metadata);
    const a = await s.join();
    await s.settle([a]);
    const b = await s.join(); // takes half of a's target: a revokes on its next heartbeat
    await s.beat(a);
    const g = (await s.items.stored('g'))!;
    expect(Object.keys(g.members[a.id]!.revoking).length).toBeGreaterThan(0);
    return { ...s, a, b };
  }

  it('whose group write applied with its answer lost is answered once, and b takes the partitions', async () => {
    const { storage, stop } = await memoryBackend.start();
    try {
      const metadata = new FaultyMetadataStore(storage.metadata);
      const { a, b, beat, items, settle } = await revoking(metadata);
      metadata.faults.fail('put', { when: 'retried', match: (k) => k === 'group#g|meta' });
      await beat(a); // acknowledges: releases
      expect(metadata.faults.injected).toBe(1);
      const g = (await items.stored('g'))!;
      expect(g.members[a.id]!.revoking).toEqual({});
      await settle([a, b]);
      expectOneHolderEach((await items.stored('g'))!);
    } finally {
      await stop();
    }
  });

  it('killed between its pending member item and the group write leaves nothing in force, voided past the grace', async () => {
    const { storage, stop } = await memoryBackend.start();
    try {
      const metadata = new FaultyMetadataStore(storage.metadata);
      const { a, b, beat, items, settle, clock } = await revoking(metadata);
      const revokingBefore = (await items.stored('g'))!.members[a.id]!.revoking;
      metadata.faults.fail('put', { match: (k) => k === 'group#g|meta' });
      await expect(beat(a)).rejects.toBeInstanceOf(InjectedFault);
      const item = await storage.metadata.get<MemberItem>('group#g', groupMemberSk(a.id));
      expect(item!.value.p).toBeDefined(); // the release, pending
      const g = (await items.stored('g'))!;
      expect(g.members[a.id]!.revoking).toEqual(revokingBefore); // not in force: a still holds them
      // b cannot take them meanwhile.
      await beat(b);
      expectOneHolderEach((await items.stored('g'))!, false);

      clock.advance(IN_FLIGHT_GRACE_MS + 1);
      await settle([a, b]);
      expectOneHolderEach((await items.stored('g'))!);
    } finally {
      await stop();
    }
  });
});

describe('concurrent joins while members reconcile', () => {
  it('keep every partition with at most one holder, and the group settles', async () => {
    const { storage, stop } = await memoryBackend.start();
    try {
      const { items, join, beat, settle } = await setup(storage.metadata);
      const members: Member[] = [];
      for (let i = 0; i < 6; i++) members.push(await join());
      await settle(members);
      for (let round = 0; round < 4; round++) {
        const joined = await Promise.all([
          join(),
          join(),
          ...members.map(async (m) => {
            await beat(m);
            return undefined;
          }),
        ]);
        for (const j of joined) if (j) members.push(j);
        expectOneHolderEach((await items.stored('g'))!, false);
      }
      await settle(members);
      expectOneHolderEach((await items.stored('g'))!);
    } finally {
      await stop();
    }
  });
});

describe('member items without a holders list (written by a release before it)', () => {
  it('reconcile through the whole group, which writes the list', async () => {
    const { storage, stop } = await memoryBackend.start();
    try {
      let calls: StorageCall[] = [];
      const observed = observeStorage(storage, (c) => calls.push(c));
      const { items, join, beat, settle } = await setup(observed.metadata);
      const a = await join();
      const b = await join(); // waits for partitions a holds: its item lists a
      const sk = groupMemberSk(b.id);
      const item = (await storage.metadata.get<MemberItem>('group#g', sk))!;
      expect(item.value.m?.holders ?? item.value.p?.v?.holders).toEqual([a.id]);
      const { holders: _h, ...entry } = item.value.m!;
      await storage.metadata.put<MemberItem>('group#g', sk, { m: entry });
      calls = [];
      await beat(b);
      // The whole group, once: a query of its member items, and one of its summary items (a
      // whole-group change keeps them exact).
      expect(calls.filter((c) => c.op === 'Query')).toHaveLength(2);
      await settle([a, b]);
      expectOneHolderEach((await items.stored('g'))!);
    } finally {
      await stop();
    }
  });
});
