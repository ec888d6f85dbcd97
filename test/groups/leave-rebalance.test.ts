import { describe, expect, it } from 'vitest';
import {
  applyHeartbeat,
  DEFAULT_GROUP_LIMITS,
  groupState,
  newGroup,
  type GroupRecord,
} from '../../src/groups/group-state.js';
import { groupApp, keys } from './helpers.js';
import { GROUP_META_SK, groupPk } from '../../src/storage/key-layout.js';

/**
 * Regression for the randomized property's counterexample (seed -727650546): two members share topic
 * `a` (5 partitions), reach Stable, then one leaves. The leave bumped the group epoch but did not
 * recompute the target assignment, so the group read Stable while the leaver's partitions belonged to
 * nobody (and stayed so until the survivor's next heartbeat). KIP-848: any membership change produces
 * a new target assignment at the new group epoch, and the group is not Stable until every member
 * reached it.
 */
describe('a member leaving a Stable group', () => {
  const opts = { 'session.timeout.ms': 6_000, 'max.poll.interval.ms': 7_000 };

  async function stableOfTwo() {
    const g = groupApp();
    await g.createTopic('a', 5);
    await g.createTopic('b', 3);
    const ms = [await g.join('grp', ['a'], opts), await g.join('grp', ['a'], opts)].map((j) => ({
      id: j.member_id,
      epoch: j.member_epoch,
    }));
    const beat = async (m: { id: string; epoch: number }) => {
      const res = await g.heartbeat('grp', { member_id: m.id, member_epoch: m.epoch });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      m.epoch = res.body.member_epoch;
      return res.body as { assignment: { topic_name: string; partition_id: number }[]; state: string };
    };
    // The counterexample's heartbeats: the first member revokes, acknowledges, then the second takes the rest.
    for (const i of [0, 0, 1, 0, 0]) await beat(ms[i]!);
    expect((await g.describe('grp')).state).toBe('STABLE');
    return { g, ms, beat };
  }

  for (const leaver of [0, 1]) {
    it(`hands the leaver's partitions to the survivor (member ${leaver} of 2 leaves)`, async () => {
      const { g, ms, beat } = await stableOfTwo();
      const [gone, survivor] = leaver === 0 ? [ms[0]!, ms[1]!] : [ms[1]!, ms[0]!];
      expect((await g.call('DELETE', `consumer-groups/grp/consumers/${gone.id}`)).status).toBe(204);

      const d = await g.describe('grp');
      expect(d.members).toHaveLength(1);
      // Not Stable: the survivor's target is now all of `a`, which it does not hold yet.
      expect(d.state).not.toBe('STABLE');
      const assignments = await g.call('GET', `consumer-groups/grp/consumers/${survivor.id}/assignments`);
      expect(assignments.status).toBe(200);

      const answer = await beat(survivor);
      expect(keys(answer.assignment)).toEqual(['a-0', 'a-1', 'a-2', 'a-3', 'a-4']);
      const after = await g.describe('grp');
      expect(after.state).toBe('STABLE');
      expect(keys(after.members[0].assignment)).toEqual(['a-0', 'a-1', 'a-2', 'a-3', 'a-4']);

      // The rest of the counterexample: a member of `b` joins, the survivor keeps all of `a`.
      await g.join('grp', ['b'], opts);
      expect(keys((await beat(survivor)).assignment)).toEqual(['a-0', 'a-1', 'a-2', 'a-3', 'a-4']);
    });
  }

  it('recomputes the target in the pure state function too (applyHeartbeat with epoch -1)', () => {
    const g = newGroup('grp', 0);
    let n = 0;
    const ctx = { now: 0, limits: DEFAULT_GROUP_LIMITS, partitionCounts: { a: 4 }, newMemberId: () => `m${n++}` };
    const m0 = applyHeartbeat(g, { memberId: '', memberEpoch: 0, subscribedTopics: ['a'] }, ctx);
    const m1 = applyHeartbeat(g, { memberId: '', memberEpoch: 0, subscribedTopics: ['a'] }, ctx);
    applyHeartbeat(g, { memberId: m0, memberEpoch: 1 }, ctx); // revoke a-2, a-3
    applyHeartbeat(g, { memberId: m0, memberEpoch: 1 }, ctx); // acknowledged: epoch 2
    applyHeartbeat(g, { memberId: m1, memberEpoch: 2 }, ctx); // takes a-2, a-3
    expect(groupState(g)).toBe('Stable');

    applyHeartbeat(g, { memberId: m0, memberEpoch: -1 }, ctx);
    expect(g.assignmentEpoch).toBe(g.groupEpoch);
    expect(g.target[m1]).toEqual({ a: [0, 1, 2, 3] });
    expect(g.state).toBe('CompletingRebalance');
    applyHeartbeat(g, { memberId: m1, memberEpoch: 2 }, ctx);
    expect(g.members[m1]!.assigned).toEqual({ a: [0, 1, 2, 3] });
    expect(g.state).toBe('Stable');
  });

  it('settles an item stored with a target behind its group epoch (as the old leave wrote it) on the next read', async () => {
    const { g, ms } = await stableOfTwo();
    // The group as the old code stored it: format 1, the whole group in its item.
    const item = (await g.storage.metadata.get(groupPk('grp'), GROUP_META_SK))!;
    const stale: GroupRecord = structuredClone((await g.services.groups.coordinator.find('grp'))!.group);
    delete stale.members[ms[0]!.id];
    delete stale.target[ms[0]!.id];
    stale.groupEpoch++; // what removeMember did, without settle
    await g.storage.metadata.put(groupPk('grp'), GROUP_META_SK, stale, { ifVersion: item.version });

    const d = await g.describe('grp');
    expect(d.state).not.toBe('STABLE');
    const healed = (await g.services.groups.coordinator.find('grp'))!.group;
    expect(Object.keys(healed.members)).toEqual([ms[1]!.id]);
    expect(healed.assignmentEpoch).toBe(healed.groupEpoch);
    expect(healed.target[ms[1]!.id]).toEqual({ a: [0, 1, 2, 3, 4] });
  });
});
