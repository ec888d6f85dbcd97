/**
 * Issue 35: a join into a large KIP-848 group reads the group item and its summary items (group
 * format 3, src/groups/group-summary.ts), not every member item, and stays exact when its group
 * write's answer is lost or its writer dies between the steps.
 */
import { describe, expect, it } from 'vitest';
import type { Storage } from '../../src/compose.js';
import { GroupCoordinator } from '../../src/groups/coordinator.js';
import { GroupItems, IN_FLIGHT_GRACE_MS } from '../../src/groups/group-items.js';
import { holders, type GroupRecord } from '../../src/groups/group-state.js';
import { loadSummary, SUMMARY_SHARDS, summaryOf, type SummaryItem } from '../../src/groups/group-summary.js';
import { assignmentKeys } from '../../src/groups/assignment.js';
import { GROUP_META_SK } from '../../src/storage/key-layout.js';
import { itemBytes, observeStorage, type StorageCall } from '../../src/storage/observed-stores.js';
import type { MetadataStore } from '../../src/storage/ports.js';
import { TopicRegistry } from '../../src/topics/topics.js';
import { memoryBackend } from '../support/backends.js';
import { FaultyMetadataStore, InjectedFault } from '../support/fault-injection.js';
import { manualClock } from './helpers.js';

const SESSION = 45_000;

async function coordinatorOver(metadata: MetadataStore, partitions: number, maxSize = 1_000) {
  const clock = manualClock();
  const topics = new TopicRegistry(metadata, clock, 1);
  await topics.create({ name: 't', partitionCount: partitions, replicationFactor: 1 });
  const coordinator = new GroupCoordinator({ metadata, clock, topics, limits: { consumerMaxSize: maxSize } });
  return { clock, coordinator };
}

type Member = { id: string; epoch: number };

const join = (coordinator: GroupCoordinator) =>
  coordinator.heartbeat('g', { memberId: '', memberEpoch: 0, subscribedTopics: ['t'], sessionTimeoutMs: SESSION });

async function settle(coordinator: GroupCoordinator, items: GroupItems, members: Member[]): Promise<GroupRecord> {
  for (let round = 0; round < 12; round++) {
    for (const m of members)
      m.epoch = (await coordinator.heartbeat('g', { memberId: m.id, memberEpoch: m.epoch })).memberEpoch;
    const g = (await items.stored('g'))!;
    if (g.state === 'Stable') return g;
  }
  throw new Error('the group did not settle');
}

/** Every partition held once, and the summary a superset of who holds what, with each member's target. */
async function expectConsistent(metadata: MetadataStore, g: GroupRecord): Promise<void> {
  for (const owners of holders(g).values()) expect(owners).toHaveLength(1);
  const meta = (await metadata.get<Record<string, unknown>>('group#g', GROUP_META_SK))!;
  const summary = await loadSummary(metadata, 'g', meta.value as { sc?: string[] }, meta.version);
  expect([...summary.entries.keys()].sort()).toEqual(Object.keys(g.members).sort());
  for (const [id, exact] of summaryOf(g)) {
    const e = summary.entries.get(id)!;
    expect(e.t).toEqual(exact.t);
    const superset = new Set([...assignmentKeys(e.t), ...assignmentKeys(e.x ?? {})]);
    for (const k of assignmentKeys(exact.x ?? {})) expect(superset.has(k)).toBe(true);
  }
}

describe('a join into a group of several hundred members', () => {
  it('of 300 on memory reads the group item, the summary and the one or two members it takes from, not the group', async () => {
    const { storage, stop } = await memoryBackend.start();
    try {
      let calls: StorageCall[] = [];
      const observed: Storage = observeStorage(storage, (c) => calls.push(c));
      const { clock, coordinator } = await coordinatorOver(observed.metadata, 600);
      const items = new GroupItems(observed.metadata);
      const members: Member[] = [];
      for (let i = 0; i < 300; i++) {
        const a = await join(coordinator);
        members.push({ id: a.memberId, epoch: a.memberEpoch });
      }
      await settle(coordinator, items, members);
      clock.advance(1_000);

      calls = [];
      const a = await join(coordinator);
      const onGroup = calls.filter((c) => c.port === 'metadata' && c.pk === 'group#g');
      const queries = onGroup.filter((c) => c.op === 'Query');
      // One query, of the summary's shards (the member items would be 300).
      expect(queries).toHaveLength(1);
      expect(queries[0]!.op === 'Query' && queries[0]!.items).toBeLessThanOrEqual(SUMMARY_SHARDS);
      const memberReads = onGroup.filter((c) => c.op === 'GetItem' && c.sk.startsWith('mbr#'));
      expect(memberReads.length).toBeLessThanOrEqual(3); // the joiner's own, and who gives it partitions
      const read = onGroup.reduce((n, c) => n + (c.op === 'Query' || c.op === 'GetItem' ? c.itemBytes : 0), 0);
      expect(read).toBeLessThan(40_000); // the 300 member items alone are more
      const memberWrites = onGroup.filter((c) => c.op === 'UpdateItem' && c.sk.startsWith('mbr#'));
      expect(memberWrites.length).toBeLessThanOrEqual(6); // pending and fold, of the joiner and the two it takes from
      expect(a.assignment).toEqual({}); // what it gets is held by others until they release it
      expect(Object.keys(a.pending).length).toBeGreaterThan(0);

      members.push({ id: a.memberId, epoch: a.memberEpoch });
      const g = await settle(coordinator, items, members);
      expect(Object.keys(g.members)).toHaveLength(301);
      expect(holders(g).size).toBe(600);
      const counts = Object.values(g.members).map((m) => assignmentKeys(m.assigned).size);
      expect(Math.max(...counts) - Math.min(...counts)).toBeLessThanOrEqual(1);
      await expectConsistent(observed.metadata, g);
      const stored = await observed.metadata.query('group#g');
      expect(Math.max(...stored.map((i) => itemBytes(i.pk, i.sk, i.version, i.value)))).toBeLessThan(40_000);
    } finally {
      await stop();
    }
  }, 300_000);
});

describe('a join over the summary, with faults', () => {
  async function group(metadata: MetadataStore, size: number) {
    const { clock, coordinator } = await coordinatorOver(metadata, 16);
    const items = new GroupItems(metadata);
    const members: Member[] = [];
    for (let i = 0; i < size; i++) {
      const a = await join(coordinator);
      members.push({ id: a.memberId, epoch: a.memberEpoch });
    }
    await settle(coordinator, items, members);
    return { clock, coordinator, items, members };
  }

  it('whose group write applied with its answer lost joins one member', async () => {
    const { storage, stop } = await memoryBackend.start();
    try {
      const metadata = new FaultyMetadataStore(storage.metadata);
      const { coordinator, items, members } = await group(metadata, 4);
      metadata.faults.fail('put', { when: 'retried', match: (k) => k === 'group#g|meta' });
      const a = await join(coordinator);
      const g = (await items.stored('g'))!;
      expect(Object.keys(g.members).sort()).toEqual([...members.map((m) => m.id), a.memberId].sort());
      members.push({ id: a.memberId, epoch: a.memberEpoch });
      await expectConsistent(storage.metadata, await settle(coordinator, items, members));
    } finally {
      await stop();
    }
  });

  it('killed between its pending writes and the group write leaves nothing in force, voided past the grace', async () => {
    const { storage, stop } = await memoryBackend.start();
    try {
      const metadata = new FaultyMetadataStore(storage.metadata);
      const { clock, coordinator, items, members } = await group(metadata, 4);
      metadata.faults.fail('put', { match: (k) => k === 'group#g|meta' });
      await expect(join(coordinator)).rejects.toBeInstanceOf(InjectedFault);
      // Its pending shard is there, and nobody sees it.
      const shards = await storage.metadata.query<SummaryItem>('group#g', { beginsWith: 'sum#' });
      expect(shards.some((s) => s.value.p !== undefined)).toBe(true);
      expect(Object.keys((await items.stored('g'))!.members).sort()).toEqual(members.map((m) => m.id).sort());

      clock.advance(IN_FLIGHT_GRACE_MS + 1);
      const b = await join(coordinator);
      members.push({ id: b.memberId, epoch: b.memberEpoch });
      const g = await settle(coordinator, items, members);
      expect(Object.keys(g.members).sort()).toEqual(members.map((m) => m.id).sort());
      await expectConsistent(storage.metadata, g);
    } finally {
      await stop();
    }
  });

  it('killed after the group write, before its fold, is in force and folded by the next join', async () => {
    const { storage, stop } = await memoryBackend.start();
    try {
      const metadata = new FaultyMetadataStore(storage.metadata);
      const { coordinator, items, members } = await group(metadata, 4);
      metadata.faults.fail('put', { when: 'after', match: (k) => k === 'group#g|meta' });
      // The group write took effect and its answer failed: the caller sees an error, the join is in
      // force, and its pending writes are left unfolded.
      await expect(join(coordinator)).rejects.toBeInstanceOf(InjectedFault);
      const after = (await items.stored('g'))!;
      expect(Object.keys(after.members)).toHaveLength(5);
      const joined = Object.keys(after.members).find((id) => !members.some((m) => m.id === id))!;
      const shards = await storage.metadata.query<SummaryItem>('group#g', { beginsWith: 'sum#' });
      expect(shards.some((s) => s.value.p !== undefined)).toBe(true);

      const b = await join(coordinator);
      const pending = (await storage.metadata.query<SummaryItem>('group#g', { beginsWith: 'sum#' })).filter(
        (s) => s.value.p !== undefined,
      );
      expect(pending).toEqual([]);
      members.push({ id: joined, epoch: after.members[joined]!.memberEpoch }, { id: b.memberId, epoch: b.memberEpoch });
      const g = await settle(coordinator, items, members);
      expect(Object.keys(g.members)).toHaveLength(6);
      await expectConsistent(storage.metadata, g);
    } finally {
      await stop();
    }
  });
});

describe('the feature level', () => {
  it('keeps a group without summary items (format 2) below level 7, and gives it them at its first change from level 7', async () => {
    const { storage, stop } = await memoryBackend.start();
    try {
      let level = 6;
      const clock = manualClock();
      const topics = new TopicRegistry(storage.metadata, clock, 1);
      await topics.create({ name: 't', partitionCount: 8, replicationFactor: 1 });
      const coordinator = new GroupCoordinator({
        metadata: storage.metadata,
        clock,
        topics,
        featureLevel: () => level,
      });
      const items = new GroupItems(storage.metadata);
      const members: Member[] = [];
      for (let i = 0; i < 3; i++) {
        const a = await join(coordinator);
        members.push({ id: a.memberId, epoch: a.memberEpoch });
      }
      await settle(coordinator, items, members);
      const fv = async () => (await storage.metadata.get<{ fv: number }>('group#g', GROUP_META_SK))!.value.fv;
      expect(await fv()).toBe(2);
      expect(await storage.metadata.query('group#g', { beginsWith: 'sum#' })).toEqual([]);

      level = 7;
      // The first change at level 7 reads the whole group (it has no summary yet) and writes the summary.
      let calls: StorageCall[] = [];
      const observed = observeStorage(storage, (c) => calls.push(c));
      const over = new GroupCoordinator({ metadata: observed.metadata, clock, topics, featureLevel: () => level });
      const a = await join(over);
      members.push({ id: a.memberId, epoch: a.memberEpoch });
      expect(await fv()).toBe(3);
      expect(calls.filter((c) => c.op === 'Query' && c.items >= 3)).not.toEqual([]); // the member items
      await expectConsistent(storage.metadata, (await items.stored('g'))!);

      // The next join reads the summary: one query, of the shards.
      calls = [];
      const b = await join(over);
      members.push({ id: b.memberId, epoch: b.memberEpoch });
      expect(calls.filter((c) => c.op === 'Query')).toHaveLength(1);
      await expectConsistent(storage.metadata, await settle(over, items, members));
    } finally {
      await stop();
    }
  });
});

describe('a join that moves most targets (range)', () => {
  it('reads the whole group with one query instead of each member item', async () => {
    const { storage, stop } = await memoryBackend.start();
    try {
      let calls: StorageCall[] = [];
      const observed = observeStorage(storage, (c) => calls.push(c));
      const { coordinator } = await coordinatorOver(observed.metadata, 100);
      const items = new GroupItems(observed.metadata);
      // Member ids of the clients' own (KIP-1082), so the joiner sorts first and every range moves.
      const rangeJoin = (memberId: string) =>
        coordinator.heartbeat('g', { memberId, memberEpoch: 0, subscribedTopics: ['t'], assignor: 'range' });
      const members: Member[] = [];
      for (let i = 0; i < 40; i++) {
        const a = await rangeJoin(`m${String(i).padStart(2, '0')}`);
        members.push({ id: a.memberId, epoch: a.memberEpoch });
      }
      await settle(coordinator, items, members);
      calls = [];
      const a = await rangeJoin('a');
      const memberReads = calls.filter((c) => c.op === 'GetItem' && c.sk.startsWith('mbr#'));
      expect(memberReads.length).toBeLessThanOrEqual(17);
      expect(calls.filter((c) => c.op === 'Query' && c.items > 32)).toHaveLength(1); // the member items
      members.push({ id: a.memberId, epoch: a.memberEpoch });
      await expectConsistent(storage.metadata, await settle(coordinator, items, members));
    } finally {
      await stop();
    }
  });
});
