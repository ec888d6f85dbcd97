import { describe, expect, it } from 'vitest';
import { GroupItems } from '../../src/groups/group-items.js';
import { SESSION_TIMER_KIND } from '../../src/groups/coordinator.js';
import { groupApp, keys, type Partition } from '../groups/helpers.js';
import { DurableTimers } from '../../src/timer/durable-timers.js';

type Member = { id: string; epoch: number; assignment: Partition[] };

/** Heartbeats every member in turn until the group is Stable (bounded). */
async function settle(g: ReturnType<typeof groupApp>, group: string, members: Member[]) {
  for (let round = 0; round < 10; round++) {
    for (const m of members) {
      const res = await g.heartbeat(group, { member_id: m.id, member_epoch: m.epoch });
      expect(res.status).toBe(200);
      m.epoch = res.body.member_epoch;
      m.assignment = res.body.assignment;
    }
    if ((await g.describe(group)).state === 'STABLE') return;
  }
  throw new Error('group did not stabilize');
}

async function joinAll(
  g: ReturnType<typeof groupApp>,
  group: string,
  n: number,
  topics: string[],
  extra: (i: number) => Record<string, unknown> = () => ({}),
) {
  const members: Member[] = [];
  for (let i = 0; i < n; i++) {
    const a = await g.join(group, topics, { client_id: `c${i}`, ...extra(i) });
    members.push({ id: a.member_id, epoch: a.member_epoch, assignment: a.assignment });
  }
  await settle(g, group, members);
  return members;
}

const all = (topic: string, n: number) => Array.from({ length: n }, (_, p) => `${topic}-${p}`);

function expectDisjointCover(members: Member[], expected: string[]) {
  const got = members.flatMap((m) => keys(m.assignment));
  expect(new Set(got).size).toBe(got.length);
  expect(got.sort()).toEqual([...expected].sort());
}

describe('consumer groups over HTTP', () => {
  it('three members join and get disjoint assignments covering the topic (the default, uniform: 4/3/3)', async () => {
    const g = groupApp();
    await g.createTopic('orders', 10);
    const members = await joinAll(g, 'g1', 3, ['orders']);
    expectDisjointCover(members, all('orders', 10));
    expect(members.map((m) => m.assignment.length).sort()).toEqual([3, 3, 4]);
    const d = await g.describe('g1');
    expect(d).toMatchObject({
      kind: 'KafkaConsumerGroup',
      consumer_group_id: 'g1',
      state: 'STABLE',
      is_simple: false,
      // Kafka's default server assignor (the first of group.consumer.assignors): uniform, our sticky.
      partition_assignor: 'sticky',
    });
    expect(d.members).toHaveLength(3);
    expect(d.partitions).toHaveLength(10);
    expect(d.group_epoch).toBe(d.assignment_epoch);
  });

  it('removes a member whose heartbeats stop once its session times out, with no other traffic (scheduler tick)', async () => {
    const g = groupApp();
    await g.createTopic('orders', 10);
    const members = await joinAll(g, 'g1', 3, ['orders'], (i) => ({ 'session.timeout.ms': i === 2 ? 10_000 : 60_000 }));
    const [a, b, c] = members as [Member, Member, Member];
    const owned = keys(c.assignment);
    expect(owned.length).toBeGreaterThan(0);

    // No request at all reaches the group: only the clock moves and the scheduler ticks. Expiry comes
    // a third of the session (10 s / 3 here) after the session timeout: a heartbeat that soon after
    // the stored one may have reached the coordinator unwritten.
    g.clock.advance(14_000);
    const raw = async () => (await new GroupItems(g.storage.metadata).stored('g1'))!;
    expect(Object.keys((await raw()).members)).toHaveLength(3);
    const timers = await new DurableTimers(g.storage.metadata).pending(g.clock.now(), g.clock.now(), [
      SESSION_TIMER_KIND,
    ]);
    expect(timers.some((t) => (t.payload as { groupId: string }).groupId === 'g1')).toBe(true);
    const report = await g.services.groups.coordinator.expireSessions();
    expect(report.membersExpired).toBe(1);
    const after = await raw();
    expect(Object.keys(after.members).sort()).toEqual([a.id, b.id].sort());
    expect(['PreparingRebalance', 'CompletingRebalance']).toContain(after.state); // range may move survivors' partitions too
    // The target already gives c's partitions to the survivors; they take them on their next heartbeat.
    const targets = Object.values(after.target).flatMap((t) =>
      Object.entries(t).flatMap(([topic, ps]) => ps.map((p) => `${topic}-${p}`)),
    );
    expect(targets.sort()).toEqual(all('orders', 10).sort());

    await settle(g, 'g1', [a, b]);
    expectDisjointCover([a, b], all('orders', 10));
    for (const k of owned) expect([...keys(a.assignment), ...keys(b.assignment)]).toContain(k);
    // The expired member is told so if it comes back.
    expect(await g.heartbeat('g1', { member_id: c.id, member_epoch: c.epoch })).toMatchObject({
      status: 404,
      body: { error: 'UNKNOWN_MEMBER_ID' },
    });
  });

  it('also expires lazily on any access, and re-arms the timer of a group still in use', async () => {
    const g = groupApp();
    await g.createTopic('t', 2);
    const [a, b] = await joinAll(g, 'g', 2, ['t'], (i) => ({ 'session.timeout.ms': i === 0 ? 6_000 : 30_000 }));
    g.clock.advance(8_000); // a's session (6 s) and its unwritten span (a third: 2 s)
    const d = await g.describe('g');
    expect(d.members.map((m: { consumer_id: string }) => m.consumer_id)).toEqual([b!.id]);
    expect(d.state).toBe('COMPLETING_REBALANCE');
    void a;
    // Heartbeats keep b alive across many session timeouts, with ticks in between.
    for (let i = 0; i < 10; i++) {
      g.clock.advance(10_000);
      await g.services.groups.coordinator.expireSessions();
      expect((await g.heartbeat('g', { member_id: b!.id, member_epoch: b!.epoch })).status).toBe(200);
      b!.epoch = (await g.describe('g')).members[0].member_epoch;
    }
    expect((await g.describe('g')).members).toHaveLength(1);
    // The session timeout (30 s) and its unwritten span (a third: 10 s); and since the timer was
    // re-armed while b was alive, up to one session timeout more for a group nobody accesses.
    g.clock.advance(40_000);
    expect((await new GroupItems(g.storage.metadata).stored('g'))!.members).toHaveProperty(b!.id);
    g.clock.advance(30_000);

    expect((await g.services.groups.coordinator.expireSessions()).membersExpired).toBe(1);
    expect(await g.describe('g')).toMatchObject({ state: 'EMPTY', members: [] });
  });

  it('moves a partition only after its previous owner released it (revoke, then assign)', async () => {
    const g = groupApp();
    await g.createTopic('t', 4);
    const a = await g.join('g', ['t']);
    expect(keys(a.assignment)).toEqual(all('t', 4));
    const b = await g.join('g', ['t']);
    // b's share is still held by a: b gets nothing yet, only a pending assignment.
    expect(b.assignment).toEqual([]);
    // Which half b gets depends on the (random) member ids' order: the range assignor sorts by id.
    const moving = keys(b.pending_assignment);
    expect(moving).toHaveLength(2);
    const staying = all('t', 4).filter((k) => !moving.includes(k));
    expect(b.state).toBe('PREPARING_REBALANCE');
    // a is told to give up t-2, t-3 (its epoch stays until it has).
    const a1 = (await g.heartbeat('g', { member_id: a.member_id, member_epoch: a.member_epoch })).body;
    expect(keys(a1.assignment)).toEqual(staying);
    expect(a1.member_epoch).toBe(a.member_epoch);
    const d = await g.describe('g');
    const movingId = Number(moving[1]!.split('-')[1]);
    expect(d.partitions.find((p: { partition_id: number }) => p.partition_id === movingId).consumer_id).toBe(
      a.member_id,
    );
    // Still held (revoking): b's heartbeat does not get them.
    expect((await g.heartbeat('g', { member_id: b.member_id, member_epoch: b.member_epoch })).body.assignment).toEqual(
      [],
    );
    // a acknowledges (explicitly, listing what it still owns) and moves to the new epoch.
    const a2 = (
      await g.heartbeat('g', { member_id: a.member_id, member_epoch: a1.member_epoch, owned_partitions: a1.assignment })
    ).body;
    expect(a2.member_epoch).toBe(b.member_epoch);
    const b2 = (await g.heartbeat('g', { member_id: b.member_id, member_epoch: b.member_epoch })).body;
    expect(keys(b2.assignment)).toEqual(moving);
    expect(b2.state).toBe('STABLE');
  });

  it('rejects stale generations, fenced epochs, unknown members and partitions a member does not own', async () => {
    const g = groupApp();
    await g.createTopic('t', 2);
    const a = await g.join('g', ['t']);
    const commit = (body: Record<string, unknown>) => g.call('POST', 'consumer-groups/g/offsets:commit', body);
    const offsets = (p: number, offset = 5) => [{ topic_name: 't', partition_id: p, offset, metadata: 'm' }];
    expect(await commit({ member_id: a.member_id, generation_id: a.member_epoch, offsets: offsets(0) })).toMatchObject({
      status: 200,
    });

    const b = await g.join('g', ['t']);
    const a1 = (await g.heartbeat('g', { member_id: a.member_id, member_epoch: a.member_epoch })).body; // revoke one partition
    const kept = a1.assignment[0].partition_id as number;
    const moved = 1 - kept;
    await g.heartbeat('g', { member_id: a.member_id, member_epoch: a1.member_epoch }); // ack, new epoch
    const now = (await g.describe('g')).members.find(
      (m: { consumer_id: string }) => m.consumer_id === a.member_id,
    ).member_epoch;
    expect(now).toBeGreaterThan(a.member_epoch);
    // The old generation is stale now.
    expect(
      await commit({ member_id: a.member_id, generation_id: a.member_epoch, offsets: offsets(kept) }),
    ).toMatchObject({
      status: 409,
      body: { error: 'ILLEGAL_GENERATION', error_code: 40901 },
    });
    expect((await commit({ member_id: a.member_id, generation_id: now, offsets: offsets(kept) })).status).toBe(200);
    // The moved partition belongs to b now: a may no longer commit it, and b may not commit a's.
    expect((await commit({ member_id: a.member_id, generation_id: now, offsets: offsets(moved) })).body.error).toBe(
      'ILLEGAL_GENERATION',
    );
    // b has not heartbeated since the partition was released: it is pending, so the rebalance is in progress.
    expect(
      (await commit({ member_id: b.member_id, generation_id: b.member_epoch, offsets: offsets(moved) })).body.error,
    ).toBe('REBALANCE_IN_PROGRESS');
    expect(
      (await commit({ member_id: b.member_id, generation_id: b.member_epoch, offsets: offsets(kept) })).body.error,
    ).toBe('ILLEGAL_GENERATION');
    expect(await commit({ member_id: 'nobody', generation_id: 1, offsets: offsets(0) })).toMatchObject({
      status: 404,
      body: { error: 'UNKNOWN_MEMBER_ID' },
    });
    // An administrator cannot commit for an active group.
    expect(await commit({ offsets: offsets(0) })).toMatchObject({ status: 409, body: { error: 'NON_EMPTY_GROUP' } });
    expect(
      await commit({
        member_id: a.member_id,
        generation_id: now,
        offsets: [{ topic_name: 't', partition_id: 9, offset: 1 }],
      }),
    ).toMatchObject({
      status: 404,
      body: { error: 'UNKNOWN_TOPIC_OR_PARTITION' },
    });

    // Heartbeat errors.
    expect(await g.heartbeat('g', { member_id: a.member_id, member_epoch: 99 })).toMatchObject({
      status: 409,
      body: { error: 'FENCED_MEMBER_EPOCH' },
    });
    expect(await g.heartbeat('g', { member_id: 'ghost', member_epoch: 3 })).toMatchObject({
      status: 404,
      body: { error: 'UNKNOWN_MEMBER_ID' },
    });
    expect(
      await g.heartbeat('g', { member_epoch: 0, subscribed_topic_names: ['t'], 'session.timeout.ms': 100 }),
    ).toMatchObject({
      status: 400,
      body: { error: 'INVALID_SESSION_TIMEOUT' },
    });
    expect(await g.heartbeat('g', { member_epoch: 0, subscribed_topic_names: ['t'], assignor: 'magic' })).toMatchObject(
      {
        status: 400,
        body: { error: 'UNSUPPORTED_ASSIGNOR' },
      },
    );
    expect(await g.heartbeat('other', { member_id: 'x', member_epoch: 2 })).toMatchObject({
      status: 404,
      body: { error: 'UNKNOWN_MEMBER_ID' },
    });
    expect(await g.call('GET', 'consumer-groups/nope')).toMatchObject({
      status: 404,
      body: { error: 'GROUP_ID_NOT_FOUND', error_code: 40406 },
    });
    // A fenced member rejoins with epoch 0 under its id and starts over.
    const re = await g.heartbeat('g', { member_id: a.member_id, member_epoch: 0, subscribed_topic_names: ['t'] });
    expect(re).toMatchObject({ status: 200, body: { member_id: a.member_id } });
  });

  it('leaves by DELETE or by member_epoch -1; deletes only an Empty group, with its offsets', async () => {
    const g = groupApp();
    await g.createTopic('t', 3);
    const a = await g.join('g', ['t']);
    const b = await g.join('g', ['t']);
    await g.call('POST', 'consumer-groups/g/offsets:commit', {
      member_id: a.member_id,
      generation_id: a.member_epoch,
      offsets: [{ topic_name: 't', partition_id: 0, offset: 1 }],
    });
    expect(await g.call('DELETE', 'consumer-groups/g')).toMatchObject({
      status: 409,
      body: { error: 'NON_EMPTY_GROUP' },
    });
    expect((await g.call('DELETE', `consumer-groups/g/consumers/${a.member_id}`)).status).toBe(204);
    expect(await g.heartbeat('g', { member_id: b.member_id, member_epoch: -1 })).toMatchObject({
      status: 200,
      body: { member_epoch: -1 },
    });
    expect((await g.describe('g')).state).toBe('EMPTY');
    expect(
      (await g.call('GET', 'consumer-groups')).body.data.map((x: { consumer_group_id: string }) => x.consumer_group_id),
    ).toEqual(['g']);
    expect((await g.call('DELETE', 'consumer-groups/g')).status).toBe(204);
    expect(await g.call('GET', 'consumer-groups/g')).toMatchObject({
      status: 404,
      body: { error: 'GROUP_ID_NOT_FOUND' },
    });
    expect((await g.call('GET', 'consumer-groups')).body.data).toEqual([]);
    expect(await g.storage.metadata.query('group#g')).toEqual([]);
    expect(await g.call('DELETE', 'consumer-groups/g')).toMatchObject({
      status: 404,
      body: { error: 'GROUP_ID_NOT_FOUND' },
    });
  });

  it('describes committed offset, HW and lag per partition; lists consumers, assignments, lags and the lag summary', async () => {
    const g = groupApp();
    await g.createTopic('t', 2);
    await g.produce('t', 0, 10);
    await g.produce('t', 1, 4);
    const a = await g.join('g', ['t'], { client_id: 'app-1' });
    await g.call('POST', 'consumer-groups/g/offsets:commit', {
      member_id: a.member_id,
      generation_id: a.member_epoch,
      offsets: [{ topic_name: 't', partition_id: 0, offset: 3, metadata: 'hello' }],
    });
    const d = await g.describe('g');
    expect(d.partitions).toEqual([
      {
        topic_name: 't',
        partition_id: 0,
        consumer_id: a.member_id,
        client_id: 'app-1',
        committed_offset: 3,
        log_start_offset: 0,
        log_end_offset: 10,
        lag: 7,
      },
      {
        topic_name: 't',
        partition_id: 1,
        consumer_id: a.member_id,
        client_id: 'app-1',
        committed_offset: null,
        log_start_offset: 0,
        log_end_offset: 4,
        lag: null,
      },
    ]);
    const consumers = (await g.call('GET', 'consumer-groups/g/consumers')).body;
    expect(consumers).toMatchObject({
      kind: 'KafkaConsumerList',
      data: [{ kind: 'KafkaConsumer', consumer_id: a.member_id, client_id: 'app-1', consumer_group_id: 'g' }],
    });
    expect((await g.call('GET', `consumer-groups/g/consumers/${a.member_id}`)).body.assignments.related).toMatch(
      /\/assignments$/,
    );
    const assignments = (await g.call('GET', `consumer-groups/g/consumers/${a.member_id}/assignments`)).body;
    expect(
      assignments.data.map((x: { topic_name: string; partition_id: number }) => `${x.topic_name}-${x.partition_id}`),
    ).toEqual(['t-0', 't-1']);
    expect(
      (await g.call('GET', `consumer-groups/g/consumers/${a.member_id}/assignments/t/partitions/1`)).body,
    ).toMatchObject({ kind: 'KafkaConsumerAssignment', partition_id: 1 });
    const lags = (await g.call('GET', 'consumer-groups/g/lags')).body;
    expect(lags).toMatchObject({
      kind: 'KafkaConsumerLagList',
      data: [
        {
          kind: 'KafkaConsumerLag',
          topic_name: 't',
          partition_id: 0,
          current_offset: 3,
          log_end_offset: 10,
          lag: 7,
          consumer_id: a.member_id,
          client_id: 'app-1',
        },
      ],
    });
    expect((await g.call('GET', 'consumer-groups/g/lags/t/partitions/0')).body.lag).toBe(7);
    expect((await g.call('GET', 'consumer-groups/g/lag-summary')).body).toMatchObject({
      kind: 'KafkaConsumerGroupLagSummary',
      max_lag_consumer_id: a.member_id,
      max_lag_client_id: 'app-1',
      max_lag_topic_name: 't',
      max_lag_partition_id: 0,
      max_lag: 7,
      total_lag: 7,
    });
    const offsets = (await g.call('GET', 'consumer-groups/g/offsets')).body;
    expect(offsets).toMatchObject({
      kind: 'KafkaConsumerGroupOffsetList',
      data: [
        {
          topic_name: 't',
          partition_id: 0,
          committed_offset: 3,
          offset_metadata: 'hello',
          generation_id: a.member_epoch,
        },
      ],
    });
    expect((await g.call('GET', 'consumer-groups')).body).toMatchObject({
      kind: 'KafkaConsumerGroupList',
      data: [{ consumer_group_id: 'g', state: 'STABLE' }],
    });
  });

  it('resolves start positions with auto.offset.reset earliest, latest and none', async () => {
    const g = groupApp();
    await g.createTopic('t', 2);
    await g.produce('t', 0, 5);
    await g.produce('t', 1, 5);
    const commit = (p: number, offset: number) =>
      g.call('POST', 'consumer-groups/g/offsets:commit', { offsets: [{ topic_name: 't', partition_id: p, offset }] });
    expect((await commit(0, 2)).status).toBe(200); // admin commit creates the (simple) group
    expect((await g.describe('g')).is_simple).toBe(true);
    const positions = async (reset: string) =>
      g.call('GET', `consumer-groups/g/offsets?topic_name=t&auto_offset_reset=${reset}`);
    expect(
      (await positions('earliest')).body.data.map((d: { position: number; position_source: string }) => [
        d.position,
        d.position_source,
      ]),
    ).toEqual([
      [2, 'COMMITTED'],
      [0, 'RESET'],
    ]);
    expect((await positions('latest')).body.data.map((d: { position: number }) => d.position)).toEqual([2, 5]);
    expect(await positions('none')).toMatchObject({ status: 416, body: { error: 'NO_OFFSET_FOR_PARTITION' } });
    expect(
      (await g.call('GET', 'consumer-groups/g/offsets?topic_name=t&partition_id=0&auto_offset_reset=none')).body.data[0]
        .position,
    ).toBe(2);
    // A committed offset beyond the log is not valid: reset applies, or none fails with OFFSET_OUT_OF_RANGE.
    await commit(1, 50);
    expect(
      (await g.call('GET', 'consumer-groups/g/offsets?topic_name=t&partition_id=1&auto_offset_reset=none')).body.error,
    ).toBe('OFFSET_OUT_OF_RANGE');
    expect(
      (await g.call('GET', 'consumer-groups/g/offsets?topic_name=t&partition_id=1&auto_offset_reset=earliest')).body
        .data[0],
    ).toMatchObject({
      committed_offset: 50,
      position: 0,
      position_source: 'RESET',
    });
  });

  it('uses the assignor the members ask for, and sticky keeps owners across a rebalance', async () => {
    const g = groupApp();
    await g.createTopic('t', 6);
    const members = await joinAll(g, 'rr', 2, ['t'], () => ({ assignor: 'roundrobin' }));
    expect((await g.describe('rr')).partition_assignor).toBe('roundrobin');
    expect(members.map((m) => keys(m.assignment))).toEqual(
      expect.arrayContaining([
        ['t-0', 't-2', 't-4'],
        ['t-1', 't-3', 't-5'],
      ]),
    );

    const sticky = await joinAll(g, 'st', 3, ['t'], () => ({ assignor: 'cooperative-sticky' }));
    expect((await g.describe('st')).partition_assignor).toBe('sticky');
    const before = new Map(sticky.map((m) => [m.id, keys(m.assignment)]));
    const joined = await g.join('st', ['t'], { assignor: 'sticky' });
    const four = [...sticky, { id: joined.member_id, epoch: joined.member_epoch, assignment: joined.assignment }];
    await settle(g, 'st', four);
    expectDisjointCover(four, all('t', 6));
    // Every old member kept at least one of its partitions: only the surplus moved.
    for (const m of sticky) expect(keys(m.assignment).every((k) => before.get(m.id)!.includes(k))).toBe(true);
  });

  it('documents the group paths in the OpenAPI document', async () => {
    const g = groupApp();
    const paths = Object.keys((await g.call('GET', '/openapi.json')).body.paths);
    for (const p of [
      '/v3/clusters/{cluster_id}/consumer-groups',
      '/v3/clusters/{cluster_id}/consumer-groups/{consumer_group_id}/consumers:heartbeat',
      '/v3/clusters/{cluster_id}/consumer-groups/{consumer_group_id}/offsets:reset',
      '/v3/clusters/{cluster_id}/consumer-groups/{consumer_group_id}/lag-summary',
      '/consumers/{group_name}/instances/{instance}/records',
    ]) {
      expect(paths).toContain(p);
    }
  });
});
