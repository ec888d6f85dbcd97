/**
 * The classic group protocol on the metadata store: two listeners (processes) serving one group,
 * a write whose answer is lost, session expiry, and the protocol's errors.
 */
import { describe, expect, it } from 'vitest';
import type { Clock } from '../../src/clock.js';
import { createServices } from '../../src/compose.js';
import { serverConfigFromEnv } from '../../src/config/server-config.js';
import { MemberIdRequired, type JoinRequest } from '../../src/groups/classic-coordinator.js';
import { MemoryMetadataStore } from '../../src/storage/memory-metadata-store.js';
import { MemoryObjectStore } from '../../src/storage/memory-object-store.js';
import { isKafkaError } from '../../src/wire/errors.js';
import { FaultyMetadataStore } from '../support/fault-injection.js';

function setup(initialRebalanceDelayMs = 0) {
  let now = 1_000_000;
  const clock: Clock = { now: () => now };
  const metadata = new FaultyMetadataStore(new MemoryMetadataStore());
  const storage = { metadata, stores: [new MemoryObjectStore('m')], close: () => {} };
  const config = serverConfigFromEnv({
    STORAGE_BACKEND: 'memory',
    GROUP_INITIAL_REBALANCE_DELAY_MS: String(initialRebalanceDelayMs),
  });
  // Two processes over one table: neither sees the other's in-memory wake-ups, only the items.
  const a = createServices(config, storage, clock).groups.classic;
  const b = createServices(config, storage, clock).groups.classic;
  return { a, b, metadata, advance: (ms: number) => void (now += ms) };
}

/** The join barrier is open once the joining member's write landed. */
async function preparing(c: ReturnType<typeof setup>['a']) {
  for (let i = 0; i < 200 && (await c.describe('g'))?.state !== 'PreparingRebalance'; i++)
    await new Promise((r) => setTimeout(r, 5));
}

const join = (memberId: string, extra: Partial<JoinRequest> = {}): JoinRequest => ({
  groupId: 'g',
  memberId,
  groupInstanceId: null,
  clientId: 'c',
  clientHost: '/127.0.0.1',
  sessionTimeoutMs: 6000,
  rebalanceTimeoutMs: 10_000,
  protocolType: 'consumer',
  protocols: [{ name: 'range', metadata: Buffer.from(memberId) }],
  requireKnownMemberId: false,
  ...extra,
});

type Classic = ReturnType<typeof setup>['a'];

/** A member id the group handed out (JoinGroup v4+: MEMBER_ID_REQUIRED), for a join to bring. */
async function handedOut(c: Classic, name: string, groupId = 'g'): Promise<string> {
  const e = await c
    .join({ ...join('', { clientId: name, requireKnownMemberId: true }), groupId })
    .catch((x: unknown) => x);
  if (!(e instanceof MemberIdRequired)) throw new Error(`expected MEMBER_ID_REQUIRED, got ${String(e)}`);
  return e.memberId;
}

describe('the classic group coordinator', () => {
  it("completes a rebalance whose members joined through two processes, and hands out the leader's assignment", async () => {
    const { a, b } = setup();
    const [m1, m2] = [await handedOut(a, 'm1'), await handedOut(b, 'm2')];
    const first = await a.join(join(m1));
    expect(first).toMatchObject({ generationId: 1, leaderId: m1, protocolName: 'range' });
    await a.sync('g', 1, m1, [{ memberId: m1, assignment: Buffer.from('all') }]);
    // m2 joins through b: the group rebalances; m1 learns it from its heartbeat and rejoins through a.
    const second = b.join(join(m2));
    await preparing(a);
    await expect(a.heartbeat('g', m1, 1)).rejects.toSatisfy((e) => isKafkaError(e, 'REBALANCE_IN_PROGRESS'));
    const rejoin = await a.join(join(m1));
    const joined2 = await second;
    expect(rejoin.generationId).toBe(2);
    expect(joined2.generationId).toBe(2);
    expect(rejoin.members.map((m) => m.memberId).sort()).toEqual([m1, m2].sort()); // m1 stays the leader
    expect(joined2.members).toEqual([]);
    const followerSync = b.sync('g', 2, m2, []);
    await a.sync('g', 2, m1, [
      { memberId: m1, assignment: Buffer.from('p0') },
      { memberId: m2, assignment: Buffer.from('p1') },
    ]);
    expect((await followerSync).assignment.toString()).toBe('p1');
    await expect(b.heartbeat('g', m2, 1)).rejects.toSatisfy((e) => isKafkaError(e, 'ILLEGAL_GENERATION'));
    await b.heartbeat('g', m2, 2);
    expect(await a.checkCommit('g', m2, 2)).toBe(2);
  });

  it('the first join of an Empty group waits group.initial.rebalance.delay.ms, longer for each new member', async () => {
    const { a, b, advance } = setup(3000);
    const [m1, m2] = [await handedOut(a, 'm1'), await handedOut(b, 'm2')];
    let answered = 0;
    const first = a.join(join(m1)).finally(() => answered++);
    await preparing(a);
    advance(1000);
    const second = b.join(join(m2)).finally(() => answered++);
    await new Promise((r) => setTimeout(r, 50));
    advance(2500); // 3.5 s after m1, 2.5 s after m2: every member is in, but m2's delay runs
    await new Promise((r) => setTimeout(r, 600)); // a few of the waiters' re-reads
    expect(answered).toBe(0);
    expect((await a.describe('g'))!.state).toBe('PreparingRebalance');
    advance(600);
    const [j1, j2] = await Promise.all([first, second]);
    // One generation with both: the first member did not take every partition alone.
    expect(j1.generationId).toBe(1);
    expect(j2.generationId).toBe(1);
    const leader = j1.leaderId === m1 ? j1 : j2;
    expect(leader.members.map((m) => m.memberId).sort()).toEqual([m1, m2].sort());
    // A rebalance of a group that is not Empty is not delayed: all rejoined, it completes at once.
    await a.sync('g', 1, leader.memberId, []);
    const m3 = await handedOut(a, 'm3');
    const third = a.join(join(m3));
    await preparing(a);
    const [r1, r2, j3] = await Promise.all([a.join(join(m1)), b.join(join(m2)), third]);
    expect([r1.generationId, r2.generationId, j3.generationId]).toEqual([2, 2, 2]);
  });

  it('a join whose write took effect but whose answer was lost is retried into the same single member', async () => {
    const { a, metadata } = setup();
    const m1 = await handedOut(a, 'm1');
    metadata.faults.fail('put', { when: 'after', match: (k) => k === 'group#g|classic' });
    await expect(a.join(join(m1))).rejects.toThrow(/injected/);
    const retried = await a.join(join(m1));
    expect(retried).toMatchObject({ generationId: 1, leaderId: m1 });
    expect(Object.keys((await a.describe('g'))!.members)).toEqual([m1]);
  });

  it('removes a member whose session expired, and rebalances the others', async () => {
    const { a, advance } = setup();
    const [m1, m2] = [await handedOut(a, 'm1'), await handedOut(a, 'm2')];
    await a.join(join(m1));
    const second = a.join(join(m2));
    await preparing(a);
    await expect(a.heartbeat('g', m1, 1)).rejects.toSatisfy((e) => isKafkaError(e, 'REBALANCE_IN_PROGRESS'));
    await a.join(join(m1));
    await second;
    await a.sync('g', 2, m1, []);
    advance(4000);
    await a.heartbeat('g', m1, 2);
    advance(4500); // m2 silent for 8.5 s: past its 6 s session and the 2 s its heartbeat may go unwritten
    await expect(a.heartbeat('g', m1, 2)).rejects.toSatisfy((e) => isKafkaError(e, 'REBALANCE_IN_PROGRESS'));
    expect(Object.keys((await a.describe('g'))!.members)).toEqual([m1]);
    await expect(a.heartbeat('g', m2, 2)).rejects.toSatisfy((e) => isKafkaError(e, 'UNKNOWN_MEMBER_ID'));
    // Its join with the old id is refused too: it must join again without one (and so learn that
    // its partitions were lost).
    await expect(a.join(join(m2))).rejects.toSatisfy((e) => isKafkaError(e, 'UNKNOWN_MEMBER_ID'));
  });

  it("answers the protocol's errors", async () => {
    const { a } = setup();
    await expect(a.join(join('', { requireKnownMemberId: true }))).rejects.toSatisfy((e) =>
      isKafkaError(e, 'MEMBER_ID_REQUIRED'),
    );
    await expect(a.join(join('m1', { sessionTimeoutMs: 10 }))).rejects.toSatisfy((e) =>
      isKafkaError(e, 'INVALID_SESSION_TIMEOUT'),
    );
    const [m1, m9] = [await handedOut(a, 'm1'), await handedOut(a, 'm9')];
    await a.join(join(m1));
    await expect(
      a.join(join(m9, { protocols: [{ name: 'roundrobin', metadata: Buffer.alloc(0) }] })),
    ).rejects.toSatisfy((e) => isKafkaError(e, 'INCONSISTENT_GROUP_PROTOCOL'));
    await expect(a.sync('g', 1, 'nobody', [])).rejects.toSatisfy((e) => isKafkaError(e, 'UNKNOWN_MEMBER_ID'));
    await expect(a.checkCommit('g', m1, 1)).rejects.toSatisfy((e) => isKafkaError(e, 'REBALANCE_IN_PROGRESS')); // awaiting the leader's sync
    await expect(a.checkCommit('g', '', -1)).rejects.toSatisfy((e) => isKafkaError(e, 'UNKNOWN_MEMBER_ID'));
    await expect(a.delete('g')).rejects.toSatisfy((e) => isKafkaError(e, 'NON_EMPTY_GROUP'));
    expect((await a.leave('g', [m1, 'ghost'])).get('ghost')?.errorName).toBe('UNKNOWN_MEMBER_ID');
    expect((await a.describe('g'))!.state).toBe('Empty');
    expect(await a.delete('g')).toBe(true);
    expect(await a.list()).toEqual([]);
  });

  it('takes a member id only from the group: a handed-out one once, within its session timeout', async () => {
    const { a, b, advance } = setup();
    const unknown = (e: unknown) => isKafkaError(e, 'UNKNOWN_MEMBER_ID');
    // An id nobody handed out, in a new group and in a live one (v0-3 joins too).
    await expect(a.join(join('made-up'))).rejects.toSatisfy(unknown);
    const m1 = await handedOut(a, 'm1');
    expect(await b.join(join(m1))).toMatchObject({ memberId: m1, leaderId: m1 }); // through the other process
    await expect(a.join(join('made-up'))).rejects.toSatisfy(unknown);
    // A handed-out id not used within its session timeout (6 s) is gone, and another group's is not this one's.
    const late = await handedOut(a, 'late');
    const elsewhere = await handedOut(a, 'x', 'other');
    advance(6001);
    await a.heartbeat('g', m1, 1).catch(() => {});
    await expect(a.join(join(late))).rejects.toSatisfy(unknown);
    await expect(a.join(join(elsewhere))).rejects.toSatisfy(unknown);
    // A member that left joins again only without its id.
    await a.leave('g', [m1]);
    await expect(a.join(join(m1))).rejects.toSatisfy(unknown);
    // A hand-out drops the ones whose time passed: the group item does not grow with them.
    const next = await handedOut(a, 'next');
    expect(Object.keys((await a.describe('g'))!.pendingMembers ?? {})).toEqual([next]);
  });
});

describe('static membership (KIP-345)', () => {
  const fenced = (e: unknown) => isKafkaError(e, 'FENCED_INSTANCE_ID');
  /** Two static members, i1 (the leader, p0) and i2 (p1), Stable at generation 2. */
  async function stableTwo(c: ReturnType<typeof setup>['a']) {
    const s1 = await c.join(join('', { groupInstanceId: 'i1', requireKnownMemberId: true }));
    expect(s1.memberId).not.toBe(''); // a static member is not asked to join again (MEMBER_ID_REQUIRED)
    await c.sync('g', 1, s1.memberId, [{ memberId: s1.memberId, assignment: Buffer.from('p0 p1') }], undefined, 'i1');
    const second = c.join(join('', { groupInstanceId: 'i2', requireKnownMemberId: true }));
    await preparing(c);
    await c.join(join(s1.memberId, { groupInstanceId: 'i1' }));
    const s2 = await second;
    const follower = c.sync('g', 2, s2.memberId, [], undefined, 'i2');
    await c.sync(
      'g',
      2,
      s1.memberId,
      [
        { memberId: s1.memberId, assignment: Buffer.from('p0') },
        { memberId: s2.memberId, assignment: Buffer.from('p1') },
      ],
      undefined,
      'i1',
    );
    expect((await follower).assignment.toString()).toBe('p1');
    return { s1, s2 };
  }

  it('a restarted member takes its old place with no rebalance; its old member id is fenced', async () => {
    const { a, b } = setup();
    const { s1, s2 } = await stableTwo(a);
    // i2 restarts (no LeaveGroup, as a static member does not send one) and joins through the other process.
    const restarted = await b.join(join('', { groupInstanceId: 'i2', requireKnownMemberId: true }));
    expect(restarted.memberId).not.toBe(s2.memberId);
    expect(restarted).toMatchObject({ generationId: 2, leaderId: s1.memberId, members: [] });
    expect((await b.sync('g', 2, restarted.memberId, [], undefined, 'i2')).assignment.toString()).toBe('p1');
    const g = (await a.describe('g'))!;
    expect(g).toMatchObject({ state: 'Stable', generationId: 2, leaderId: s1.memberId });
    expect(Object.keys(g.members).sort()).toEqual([s1.memberId, restarted.memberId].sort());
    await a.heartbeat('g', s1.memberId, 2, 'i1'); // the other member sees no rebalance
    await a.heartbeat('g', restarted.memberId, 2, 'i2');

    // The old instance, a zombie: fenced wherever it names its instance id, unknown where it does not.
    await expect(a.heartbeat('g', s2.memberId, 2, 'i2')).rejects.toSatisfy(fenced);
    await expect(a.sync('g', 2, s2.memberId, [], undefined, 'i2')).rejects.toSatisfy(fenced);
    await expect(a.checkCommit('g', s2.memberId, 2, 'i2')).rejects.toSatisfy(fenced);
    await expect(a.join(join(s2.memberId, { groupInstanceId: 'i2' }))).rejects.toSatisfy(fenced);
    await expect(a.heartbeat('g', s2.memberId, 2)).rejects.toSatisfy((e) => isKafkaError(e, 'UNKNOWN_MEMBER_ID'));
    expect((await a.describe('g'))!.generationId).toBe(2);
  });

  it('a restarted leader is answered as a follower, and the group keeps its generation', async () => {
    const { a } = setup();
    const { s1 } = await stableTwo(a);
    const restarted = await a.join(join('', { groupInstanceId: 'i1', requireKnownMemberId: true }));
    // The old leader id: the restarted member does not assign again in a Stable group.
    expect(restarted).toMatchObject({ generationId: 2, leaderId: s1.memberId, members: [] });
    expect((await a.sync('g', 2, restarted.memberId, [], undefined, 'i1')).assignment.toString()).toBe('p0');
    expect((await a.describe('g'))!).toMatchObject({ state: 'Stable', generationId: 2, leaderId: restarted.memberId });
  });

  it('a restart while the group awaits the assignment rebalances', async () => {
    const { a } = setup();
    const s1 = await a.join(join('', { groupInstanceId: 'i1', requireKnownMemberId: true }));
    expect((await a.describe('g'))!.state).toBe('CompletingRebalance');
    const restarted = await a.join(join('', { groupInstanceId: 'i1', requireKnownMemberId: true }));
    expect(restarted).toMatchObject({ generationId: 2, leaderId: restarted.memberId });
    expect(restarted.members.map((m) => [m.memberId, m.groupInstanceId])).toEqual([[restarted.memberId, 'i1']]);
    await expect(a.sync('g', 1, s1.memberId, [], undefined, 'i1')).rejects.toSatisfy(fenced);
  });

  it('LeaveGroup removes static members by instance id, and answers each member', async () => {
    const { a } = setup();
    const { s1, s2 } = await stableTwo(a);
    const results = await a.leaveMembers('g', [
      { memberId: 'zombie', groupInstanceId: 'i1' },
      { memberId: '', groupInstanceId: 'i2' },
      { memberId: '', groupInstanceId: 'nobody' },
      { memberId: s1.memberId, groupInstanceId: null },
    ]);
    expect(results.map((e) => e?.errorName)).toEqual(['FENCED_INSTANCE_ID', undefined, 'UNKNOWN_MEMBER_ID', undefined]);
    expect((await a.describe('g'))!.members).toEqual({});
    await expect(a.heartbeat('g', s2.memberId, 2, 'i2')).rejects.toSatisfy((e) => isKafkaError(e, 'UNKNOWN_MEMBER_ID'));
  });
});

describe('classic session expiry by the scheduler', () => {
  it('removes a member whose heartbeats stop when its session timer fires, with no request to the group', async () => {
    let now = 1_000_000;
    const clock: Clock = { now: () => now };
    const storage = { metadata: new MemoryMetadataStore(), stores: [new MemoryObjectStore('m')], close: () => {} };
    const services = createServices(
      serverConfigFromEnv({ STORAGE_BACKEND: 'memory', GROUP_INITIAL_REBALANCE_DELAY_MS: '0' }),
      storage,
      clock,
    );
    const { classic, coordinator } = services.groups;
    const m1 = await handedOut(classic, 'm1');
    await classic.join(join(m1));
    await classic.sync('g', 1, m1, [{ memberId: m1, assignment: Buffer.from('all') }]);
    const raw = async () =>
      (await storage.metadata.get<{ members: Record<string, unknown>; state: string }>('group#g', 'classic'))!.value;
    // Heartbeats for a minute, the scheduler ticking every 10 s: nobody expires.
    for (let i = 0; i < 20; i++) {
      now += 3000;
      await classic.heartbeat('g', m1, 1);
      if (i % 3 === 2) expect((await coordinator.expireSessions()).membersExpired).toBe(0);
    }
    // It stops. Nothing but the scheduler touches the group: it is removed within its session
    // (6 s) and the timer's slack (one session more), and the stored group is Empty.
    const last = now;
    let expired = 0;
    while (expired === 0 && now < last + 30_000) {
      now += 1000;
      expired = (await coordinator.expireSessions()).membersExpired;
    }
    expect(expired).toBe(1);
    expect(now - last).toBeGreaterThan(6000);
    expect(now - last).toBeLessThanOrEqual(6000 + 6000 + 1000);
    expect(await raw()).toMatchObject({ members: {}, state: 'Empty' });
  });
});

describe('classic heartbeats are written sparsely', () => {
  const setup = async () => {
    let now = 2_000_000;
    const clock: Clock = { now: () => now };
    const storage = { metadata: new MemoryMetadataStore(), stores: [new MemoryObjectStore('m')], close: () => {} };
    const services = createServices(
      serverConfigFromEnv({ STORAGE_BACKEND: 'memory', GROUP_INITIAL_REBALANCE_DELAY_MS: '0' }),
      storage,
      clock,
    );
    const { classic, coordinator } = services.groups;
    const m1 = await handedOut(classic, 'm1');
    await classic.join(join(m1)); // session 6 s: a heartbeat goes unwritten up to 2 s
    await classic.sync('g', 1, m1, [{ memberId: m1, assignment: Buffer.from('all') }]);
    const version = async () => (await storage.metadata.get('group#g', 'classic'))!.version;
    return { classic, coordinator, m1, version, advance: (ms: number) => (now += ms), at: () => now };
  };

  it('a live member is written once per third of its session, not on every heartbeat', async () => {
    const { classic, m1, version, advance } = await setup();
    const before = await version();
    for (let i = 0; i < 20; i++) {
      advance(300);
      await classic.heartbeat('g', m1, 1);
    }
    // 6 s of heartbeats every 300 ms: written once the stored one is 2 s old (at 2.1 and 4.2 s),
    // so two writes, not twenty.
    expect((await version()) - before).toBe(2);
  });

  it('never expires a member before its session has passed since its last heartbeat, written or not', async () => {
    const { classic, coordinator, m1, advance, at } = await setup();
    advance(1000);
    await classic.heartbeat('g', m1, 1); // unwritten: the stored one is 1 s old
    advance(900);
    await classic.heartbeat('g', m1, 1); // unwritten too: its last heartbeat is now
    const last = at();
    let expired = 0;
    while (expired === 0 && at() < last + 30_000) {
      advance(250);
      expired = (await coordinator.expireSessions()).membersExpired;
      if (at() - last <= 6000) expect(expired).toBe(0);
    }
    expect(expired).toBe(1);
    // At most a third of the session late, plus the timer's slack (one session) and a step.
    expect(at() - last).toBeLessThanOrEqual(6000 + 2000 + 6000 + 250);
  });
});
