/**
 * Issue 20: an idle member's heartbeats are its largest cost, and most of that is the durable
 * write. A heartbeat that only confirms liveness is written once the stored heartbeat time is a
 * third of the session timeout old, and reads no topic before then; expiry waits out the unwritten
 * span, so it is never early, and late by at most that span.
 */
import { beforeEach, describe, expect, it } from 'vitest';
import { GroupCoordinator } from '../../src/groups/coordinator.js';
import { createStorage, type Storage } from '../../src/compose.js';
import { observeStorage, type StorageCall } from '../../src/storage/observed-stores.js';
import { TopicRegistry } from '../../src/topics/topics.js';
import { topicSk } from '../../src/storage/key-layout.js';
import { manualClock } from './helpers.js';

const SESSION = 45_000; // Kafka's default; heartbeats every 5 s
const INTERVAL = 5_000;

describe('sparse heartbeat writes', () => {
  let calls: StorageCall[];
  let storage: Storage;
  let clock: ReturnType<typeof manualClock>;
  let topics: TopicRegistry;
  let coordinator: GroupCoordinator;
  beforeEach(async () => {
    calls = [];
    storage = observeStorage(createStorage({ kind: 'memory', replicaStores: 1 }), (c) => calls.push(c));
    clock = manualClock();
    topics = new TopicRegistry(storage.metadata, clock, 1);
    await topics.create({ name: 't', partitionCount: 2, replicationFactor: 1 });
    coordinator = new GroupCoordinator({ metadata: storage.metadata, clock, topics });
  });
  const groupWrites = () => calls.filter((c) => c.op === 'UpdateItem' && c.pk === 'group#g').length;
  const topicReads = () => calls.filter((c) => c.op === 'GetItem' && c.sk === topicSk('t')).length;

  it('writes an idle member once per third of its session and reads no topic between', async () => {
    const a = await coordinator.heartbeat('g', {
      memberId: '',
      memberEpoch: 0,
      subscribedTopics: ['t'],
      sessionTimeoutMs: SESSION,
    });
    calls = [];
    const beats: number[] = [];
    for (let i = 1; i <= 12; i++) {
      clock.advance(INTERVAL);
      const r = await coordinator.heartbeat('g', { memberId: a.memberId, memberEpoch: a.memberEpoch });
      expect(r.assignment).toEqual({ t: [0, 1] });
      beats.push(clock.now());
    }
    // 60 s of heartbeats: written at 15, 30, 45 and 60 s, the other eight answered from the read alone.
    expect(groupWrites()).toBe(4);
    expect(topicReads()).toBe(4);
  });

  it('expires a member no earlier than the session timeout after its last heartbeat, at most a third later', async () => {
    const a = await coordinator.heartbeat('g', {
      memberId: '',
      memberEpoch: 0,
      subscribedTopics: ['t'],
      sessionTimeoutMs: SESSION,
    });
    clock.advance(INTERVAL);
    await coordinator.heartbeat('g', { memberId: a.memberId, memberEpoch: a.memberEpoch }); // not written
    const last = clock.now();
    clock.advance(SESSION - 1);
    expect((await coordinator.expireSessions()).membersExpired).toBe(0);
    expect(Object.keys((await coordinator.get('g')).members)).toEqual([a.memberId]);
    clock.advance(last + SESSION + SESSION / 3 - clock.now());
    expect((await coordinator.get('g')).members).toEqual({});
  });

  it('a second member joining is seen by the first at its next heartbeat, written or not', async () => {
    const a = await coordinator.heartbeat('g', {
      memberId: '',
      memberEpoch: 0,
      subscribedTopics: ['t'],
      sessionTimeoutMs: SESSION,
    });
    clock.advance(INTERVAL);
    const b = await coordinator.heartbeat('g', {
      memberId: '',
      memberEpoch: 0,
      subscribedTopics: ['t'],
      sessionTimeoutMs: SESSION,
    });
    expect(b.assignment).toEqual({}); // its target partition is still held by a
    clock.advance(1000);
    const r = await coordinator.heartbeat('g', { memberId: a.memberId, memberEpoch: a.memberEpoch });
    expect(r.assignment.t).toHaveLength(1); // told to give one up at once: a change is always written
    const stored = (await coordinator.find('g'))!.group;
    const revoking = stored.members[a.memberId]!.revoking.t!;
    expect([...r.assignment.t!, ...revoking].sort()).toEqual([0, 1]);
  });

  it('a partition count change reaches the assignment by the next written heartbeat', async () => {
    const a = await coordinator.heartbeat('g', {
      memberId: '',
      memberEpoch: 0,
      subscribedTopics: ['t'],
      sessionTimeoutMs: SESSION,
    });
    await topics.addPartitions('t', 3);
    let epoch = a.memberEpoch;
    let assignment: Record<string, number[]> = {};
    for (let i = 1; i <= 3; i++) {
      clock.advance(INTERVAL);
      const r = await coordinator.heartbeat('g', { memberId: a.memberId, memberEpoch: epoch });
      epoch = r.memberEpoch;
      assignment = r.assignment;
      if (i < 3) expect(assignment).toEqual({ t: [0, 1] }); // unwritten heartbeats: the stored counts stand
    }
    expect(assignment).toEqual({ t: [0, 1, 2] });
  });
});

describe('the session timer of a live group', () => {
  it('fires about once per two session timeouts, not on every scheduler tick, and still sweeps a member that stops', async () => {
    const calls: StorageCall[] = [];
    const storage = observeStorage(createStorage({ kind: 'memory', replicaStores: 1 }), (c) => calls.push(c));
    const clock = manualClock();
    const topics = new TopicRegistry(storage.metadata, clock, 1);
    await topics.create({ name: 't', partitionCount: 2, replicationFactor: 1 });
    const coordinator = new GroupCoordinator({ metadata: storage.metadata, clock, topics });
    const a = await coordinator.heartbeat('g', {
      memberId: '',
      memberEpoch: 0,
      subscribedTopics: ['t'],
      sessionTimeoutMs: SESSION,
    });
    let fired = 0;
    // Ten minutes of heartbeats every 5 s, the scheduler ticking every minute.
    for (let t = 1; t <= 120; t++) {
      clock.advance(INTERVAL);
      await coordinator.heartbeat('g', { memberId: a.memberId, memberEpoch: a.memberEpoch });
      if (t % 12 === 0) {
        const r = await coordinator.expireSessions();
        expect(r.membersExpired).toBe(0);
        fired += r.timersFired;
      }
    }
    const timerPuts = calls.filter((c) => c.op === 'UpdateItem' && c.pk.startsWith('timer#')).length;
    expect(fired).toBeGreaterThan(0);
    expect(fired).toBeLessThanOrEqual(6); // at the deadline it would be all ten ticks
    expect(timerPuts).toBeLessThanOrEqual(fired + 1); // heartbeats do not re-arm it
    // The member stops: a tick sweeps it within the session, its unwritten span and one more session.
    const last = clock.now();
    let swept = false;
    while (!swept && clock.now() < last + SESSION + SESSION / 3 + SESSION + 60_000) {
      clock.advance(60_000);
      swept = (await coordinator.expireSessions()).membersExpired === 1;
    }
    expect(swept).toBe(true);
    expect((await coordinator.find('g'))!.group.members).toEqual({});
    expect(await storage.metadata.query('group#g', { beginsWith: 'mbr#' })).toEqual([]);
  });
});
