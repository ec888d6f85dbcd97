/**
 * Issue 35: a KIP-848 group's members in items of their own (group format 2). A large group keeps
 * every item small, a steady heartbeat reads only its member's item (the group item too when written),
 * and the writes over several items stay exact when an answer is lost or a writer dies between
 * its member items and the group item.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Storage } from '../../src/compose.js';
import { GroupCoordinator } from '../../src/groups/coordinator.js';
import { GroupItems, IN_FLIGHT_GRACE_MS, type MemberItem } from '../../src/groups/group-items.js';
import { holders } from '../../src/groups/group-state.js';
import { GROUP_META_SK, groupMemberSk } from '../../src/storage/key-layout.js';
import { createDynamoDbClient, DynamoDbMetadataStore } from '../../src/storage/dynamodb-metadata-store.js';
import { itemBytes, observeStorage, type StorageCall } from '../../src/storage/observed-stores.js';
import type { MetadataStore } from '../../src/storage/ports.js';
import { TopicRegistry } from '../../src/topics/topics.js';
import { awsBackend, memoryBackend, type TestBackend } from '../support/backends.js';
import { installAnswerDropper } from '../support/dynamodb-faults.js';
import { dynamoDbClientOptions, startDynalite, type DynaliteHandle } from '../support/emulators.js';
import { FaultyMetadataStore, InjectedFault } from '../support/fault-injection.js';
import { manualClock } from './helpers.js';

const SESSION = 45_000; // Kafka's default: heartbeats every 5 s, a third of the session unwritten
const PARTITIONS = 16;

async function coordinatorOver(metadata: MetadataStore, maxSize = 200) {
  const clock = manualClock();
  const topics = new TopicRegistry(metadata, clock, 1);
  await topics.create({ name: 't', partitionCount: PARTITIONS, replicationFactor: 1 });
  const coordinator = new GroupCoordinator({ metadata, clock, topics, limits: { consumerMaxSize: maxSize } });
  return { clock, coordinator };
}

type Member = { id: string; epoch: number };

/** Heartbeats every member until the group is Stable (each reconciles on its own heartbeats). */
async function settle(coordinator: GroupCoordinator, items: GroupItems, members: Member[]): Promise<void> {
  for (let round = 0; round < 10; round++) {
    for (const m of members)
      m.epoch = (await coordinator.heartbeat('g', { memberId: m.id, memberEpoch: m.epoch })).memberEpoch;
    if ((await items.stored('g'))!.state === 'Stable') return;
  }
  throw new Error('the group did not settle');
}

// Several hundred on the emulator (every join reads the whole group, so this takes a while).
const largeGroups: [TestBackend, number][] = [[awsBackend, 300]];

describe('a large group', () => {
  for (const [backend, size] of largeGroups) {
    it(`of ${size} members on ${backend.name}: every item under 40 KB; a steady heartbeat reads its own item (and the group item when written) and writes at most its own`, async () => {
      const started = await backend.start();
      try {
        let calls: StorageCall[] = [];
        const storage: Storage = observeStorage(started.storage, (c) => calls.push(c));
        const { clock, coordinator } = await coordinatorOver(storage.metadata, size);
        const items = new GroupItems(storage.metadata);
        const members: Member[] = [];
        for (let i = 0; i < size; i++) {
          const a = await coordinator.heartbeat('g', {
            memberId: '',
            memberEpoch: 0,
            subscribedTopics: ['t'],
            sessionTimeoutMs: SESSION,
          });
          members.push({ id: a.memberId, epoch: a.memberEpoch });
        }
        await settle(coordinator, items, members);
        const group = (await items.stored('g'))!;
        expect(Object.keys(group.members)).toHaveLength(size);
        const held = holders(group);
        expect(held.size).toBe(PARTITIONS);
        for (const owners of held.values()) expect(owners).toHaveLength(1);

        const stored = await storage.metadata.query('group#g');
        const largest = Math.max(...stored.map((i) => itemBytes(i.pk, i.sk, i.version, i.value)));
        expect(largest).toBeLessThan(40_000);
        const meta = stored.find((i) => i.sk === GROUP_META_SK)!;
        expect(itemBytes(meta.pk, meta.sk, meta.version, meta.value)).toBeLessThan(4_096); // one read unit

        // A third of the session later every heartbeat is written: its own member item only.
        // (A member whose target the last epochs left alone moves to the assignment epoch then.)
        clock.advance(SESSION / 3);
        calls = [];
        for (const m of members)
          m.epoch = (await coordinator.heartbeat('g', { memberId: m.id, memberEpoch: m.epoch })).memberEpoch;
        expect(new Set(members.map((m) => m.epoch)).size).toBe(1);
        const onGroup = calls.filter((c) => c.port === 'metadata' && c.pk === 'group#g');
        expect(onGroup.filter((c) => c.op === 'Query')).toHaveLength(0);
        expect(onGroup.filter((c) => c.op === 'GetItem')).toHaveLength(2 * size);
        const writes = onGroup.filter((c) => c.op === 'UpdateItem');
        expect(writes).toHaveLength(size);
        expect(writes.every((c) => c.op === 'UpdateItem' && c.sk.startsWith('mbr#'))).toBe(true);
        expect(Math.max(...onGroup.map((c) => ('itemBytes' in c ? c.itemBytes : 0)))).toBeLessThan(1_024);

        // Between written heartbeats: its own item read, nothing else.
        clock.advance(5_000);
        calls = [];
        for (const m of members) await coordinator.heartbeat('g', { memberId: m.id, memberEpoch: m.epoch });
        const between = calls.filter((c) => c.port === 'metadata');
        expect(between.map((c) => c.op)).toEqual(Array(size).fill('GetItem'));
        expect(between.every((c) => c.op === 'GetItem' && c.sk.startsWith('mbr#'))).toBe(true);
      } finally {
        await started.stop();
      }
    }, 300_000);
  }
});

describe('writes over member items with lost answers (dynalite, the SDK retries)', () => {
  let ddb: DynaliteHandle;
  beforeAll(async () => {
    ddb = await startDynalite();
  });
  afterAll(() => ddb.stop());

  it('a join, a written heartbeat and a leave whose member item answers are lost each act once', async () => {
    const client = createDynamoDbClient(dynamoDbClientOptions(ddb.endpoint));
    const dropper = installAnswerDropper(client);
    try {
      const metadata = new DynamoDbMetadataStore({ table: ddb.table, client });
      const { clock, coordinator } = await coordinatorOver(metadata);
      const memberWrite = (k: { pk: string; sk: string }) => k.pk === 'group#g' && k.sk.startsWith('mbr#');
      // The join's pending member item.
      dropper.drop({ command: 'UpdateItemCommand', match: memberWrite });
      const a = await coordinator.heartbeat('g', { memberId: '', memberEpoch: 0, subscribedTopics: ['t'] });
      expect(dropper.dropped).toBe(1);
      const b = await coordinator.heartbeat('g', { memberId: '', memberEpoch: 0, subscribedTopics: ['t'] });
      expect(Object.keys((await coordinator.get('g')).members).sort()).toEqual([a.memberId, b.memberId].sort());
      await settle(coordinator, new GroupItems(metadata), [
        { id: a.memberId, epoch: a.memberEpoch },
        { id: b.memberId, epoch: b.memberEpoch },
      ]);
      const epoch = (await coordinator.get('g')).members[b.memberId]!.memberEpoch;

      // A steady heartbeat written on the member item alone, its answer lost.
      clock.advance(SESSION / 3);
      dropper.drop({ command: 'UpdateItemCommand', match: memberWrite });
      const beat = await coordinator.heartbeat('g', { memberId: b.memberId, memberEpoch: epoch });
      expect(beat).toMatchObject({ memberId: b.memberId, memberEpoch: epoch });
      const item = await metadata.get<MemberItem>('group#g', groupMemberSk(b.memberId));
      expect(item!.value.m!.member.lastHeartbeat).toBe(clock.now());
      expect(dropper.dropped).toBe(2);

      // A leave: its pending removal and the delete that folds it, answers lost.
      dropper.drop({ command: 'UpdateItemCommand', match: memberWrite });
      dropper.drop({ command: 'DeleteItemCommand', match: memberWrite });
      await coordinator.leave('g', a.memberId);
      expect(Object.keys((await coordinator.get('g')).members)).toEqual([b.memberId]);
      expect(await metadata.get('group#g', groupMemberSk(a.memberId))).toBeUndefined();
      expect(dropper.dropped).toBe(4);
    } finally {
      client.destroy();
    }
  });
});

describe('a writer that dies between its member items and the group item', () => {
  it('leaves a change nobody sees, voided once it is old, and the group goes on', async () => {
    const { storage, stop } = await memoryBackend.start();
    try {
      const metadata = new FaultyMetadataStore(storage.metadata);
      const { clock, coordinator } = await coordinatorOver(metadata);
      const a = await coordinator.heartbeat('g', { memberId: '', memberEpoch: 0, subscribedTopics: ['t'] });
      // b's join writes its member item, then dies before the group item.
      metadata.faults.fail('put', { match: (k) => k === 'group#g|meta' });
      await expect(
        coordinator.heartbeat('g', { memberId: '', memberEpoch: 0, subscribedTopics: ['t'] }),
      ).rejects.toBeInstanceOf(InjectedFault);
      const orphan = (await storage.metadata.query<MemberItem>('group#g', { beginsWith: 'mbr#' })).filter(
        (i) => i.sk !== groupMemberSk(a.memberId),
      );
      expect(orphan).toHaveLength(1);
      expect(orphan[0]!.value.m).toBeUndefined(); // a pending creation only
      expect(Object.keys((await new GroupItems(storage.metadata).stored('g'))!.members)).toEqual([a.memberId]);

      // Past the grace, the next change voids it and goes on; the orphan item is cleared.
      clock.advance(IN_FLIGHT_GRACE_MS + 1);
      const c = await coordinator.heartbeat('g', { memberId: '', memberEpoch: 0, subscribedTopics: ['t'] });
      const members = Object.keys((await coordinator.get('g')).members).sort();
      expect(members).toEqual([a.memberId, c.memberId].sort());
      expect(await storage.metadata.get(orphan[0]!.pk, orphan[0]!.sk)).toBeUndefined();
    } finally {
      await stop();
    }
  });
});

describe('the feature level', () => {
  it('keeps a group in one item (format 1) below level 4, and splits it at its first write from level 4', async () => {
    const { storage, stop } = await memoryBackend.start();
    try {
      let level = 3;
      const clock = manualClock();
      const topics = new TopicRegistry(storage.metadata, clock, 1);
      await topics.create({ name: 't', partitionCount: PARTITIONS, replicationFactor: 1 });
      const coordinator = new GroupCoordinator({
        metadata: storage.metadata,
        clock,
        topics,
        featureLevel: () => level,
      });
      const a = await coordinator.heartbeat('g', { memberId: '', memberEpoch: 0, subscribedTopics: ['t'] });
      const b = await coordinator.heartbeat('g', { memberId: '', memberEpoch: 0, subscribedTopics: ['t'] });
      const one = (await storage.metadata.get<Record<string, unknown>>('group#g', GROUP_META_SK))!.value;
      expect(one.fv).toBeUndefined();
      expect(Object.keys(one.members as object).sort()).toEqual([a.memberId, b.memberId].sort());
      expect(await storage.metadata.query('group#g', { beginsWith: 'mbr#' })).toEqual([]);
      const before = (await coordinator.get('g')).members;

      level = 4;
      clock.advance(SESSION / 3); // a written heartbeat
      await coordinator.heartbeat('g', { memberId: a.memberId, memberEpoch: a.memberEpoch });
      const split = (await storage.metadata.get<Record<string, unknown>>('group#g', GROUP_META_SK))!.value;
      expect(split.fv).toBe(2);
      expect(split.members).toBeUndefined();
      const memberItems = await storage.metadata.query<MemberItem>('group#g', { beginsWith: 'mbr#' });
      expect(memberItems.map((i) => i.sk).sort()).toEqual(
        [groupMemberSk(a.memberId), groupMemberSk(b.memberId)].sort(),
      );
      const after = (await coordinator.get('g')).members;
      expect(after[b.memberId]).toEqual(before[b.memberId]);
      expect(after[a.memberId]!.lastHeartbeat).toBe(clock.now());
    } finally {
      await stop();
    }
  });
});
