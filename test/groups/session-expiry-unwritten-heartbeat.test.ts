/**
 * Finding 6 of issue 12: a stalled member's partitions were handed over before its session timeout
 * had passed since its last heartbeat: heartbeats within half an interval of the stored one are not
 * written, and expiry read the stored time. Expiry must come after session.timeout.ms from the last
 * heartbeat that reached the coordinator, and within one heartbeat interval of that.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { GroupCoordinator } from '../../src/groups/coordinator.js';
import { TopicRegistry } from '../../src/topics/topics.js';
import type { Storage } from '../../src/compose.js';
import { allBackends } from '../support/backends.js';
import type { MemberItem } from '../../src/groups/group-items.js';
import { groupMemberSk } from '../../src/storage/key-layout.js';
import { manualClock } from './helpers.js';

const SESSION = 9_000; // heartbeat interval 3 s, so heartbeats within 3 s (a third of the session) are not written
const INTERVAL = 3_000;

describe.each(allBackends)('session expiry after an unwritten heartbeat on $name', (backend) => {
  let storage: Storage;
  let stop: () => Promise<void>;
  beforeEach(async () => {
    ({ storage, stop } = await backend.start());
  });
  afterEach(() => stop());

  it('expires a member no earlier than the session timeout after its last heartbeat, and within an interval after', async () => {
    const clock = manualClock();
    const topics = new TopicRegistry(storage.metadata, clock, 1);
    await topics.create({ name: 't', partitionCount: 1, replicationFactor: 1 });
    const coordinator = new GroupCoordinator({ metadata: storage.metadata, clock, topics });
    const a = await coordinator.heartbeat('g', {
      memberId: '',
      memberEpoch: 0,
      subscribedTopics: ['t'],
      sessionTimeoutMs: SESSION,
    });
    const stored = clock.now();
    clock.advance(1_400);
    await coordinator.heartbeat('g', { memberId: a.memberId, memberEpoch: a.memberEpoch });
    const last = clock.now();
    // The member's own item (group format 2): the second heartbeat was not written.
    const raw = await storage.metadata.get<MemberItem>('group#g', groupMemberSk(a.memberId));
    expect(raw!.value.m!.member.lastHeartbeat).toBe(stored);

    clock.advance(last + SESSION - 1 - clock.now());
    expect((await coordinator.expireSessions()).membersExpired).toBe(0);
    expect(Object.keys((await coordinator.get('g')).members)).toEqual([a.memberId]);

    clock.advance(last + SESSION + INTERVAL - clock.now());
    await coordinator.expireSessions();
    expect((await coordinator.get('g')).members).toEqual({});
  });
});
