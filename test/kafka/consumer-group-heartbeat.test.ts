/**
 * KIP-848 over the listener: ConsumerGroupHeartbeat on the coordinator the HTTP API's consumers
 * use (no Kafka client on this machine speaks it: librdkafka 2.0 and kafkajs predate it, so a bare
 * connection does), with topics named by the ids Metadata v10+ answers.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as m from '../../src/kafka/protocol/messages/index.js';
import { ERRORS } from '../../src/wire/errors.js';
import { startKafkaServer, type TestKafkaServer } from './support/kafka-server.js';
import { RawClient } from './support/raw-client.js';

let s: TestKafkaServer;
let c: RawClient;
let topicId: Buffer;
beforeAll(async () => {
  s = await startKafkaServer();
  await s.services.topics.create({ name: 'kip', partitionCount: 4, replicationFactor: 1 });
  c = await RawClient.open(s.broker);
});
afterAll(async () => {
  c?.close();
  await s?.close();
});

const beat = async (body: Record<string, unknown>, client = c, groupId = 'kip-group') =>
  (
    await client.request(m.ConsumerGroupHeartbeat, 0, {
      groupId,
      instanceId: null,
      rackId: null,
      rebalanceTimeoutMs: 10_000,
      subscribedTopicNames: null,
      serverAssignor: null,
      topicPartitions: null,
      ...body,
    })
  ).body;

const partitionsOf = (answer: Record<string, any>): number[] =>
  (answer.assignment?.topicPartitions ?? []).flatMap((tp: { topicId: Buffer; partitions: number[] }) => {
    expect(Buffer.from(tp.topicId).equals(topicId)).toBe(true);
    return tp.partitions;
  });

describe('Metadata with topic ids', () => {
  it('answers each topic id from v10, and finds a topic by its id', async () => {
    const byName = (await c.request(m.Metadata, 12, { topics: [{ name: 'kip' }] })).body.topics[0];
    expect(byName.errorCode).toBe(0);
    topicId = Buffer.from(byName.topicId);
    expect(topicId.toString('hex').replace(/^(.{8})(.{4})(.{4})(.{4})(.{12})$/, '$1-$2-$3-$4-$5')).toBe(
      (await s.services.topics.get('kip')).id,
    );
    const byId = (await c.request(m.Metadata, 12, { topics: [{ topicId, name: null }] })).body.topics[0];
    expect(byId).toMatchObject({ errorCode: 0, name: 'kip' });
    expect(byId.partitions).toHaveLength(4);
    const unknown = (await c.request(m.Metadata, 12, { topics: [{ topicId: Buffer.alloc(16, 7), name: null }] })).body;
    expect(unknown.topics[0]).toMatchObject({ errorCode: ERRORS.UNKNOWN_TOPIC_ID.code, name: null });
  });
});

describe('ConsumerGroupHeartbeat', () => {
  it('two members join, the server splits the partitions between them, and one leaves', async () => {
    const a0 = await beat({ memberId: '', memberEpoch: 0, subscribedTopicNames: ['kip'], serverAssignor: 'range' });
    expect(a0.errorCode).toBe(0);
    expect(partitionsOf(a0).sort()).toEqual([0, 1, 2, 3]);
    const b0 = await beat({ memberId: '', memberEpoch: 0, subscribedTopicNames: ['kip'] });
    expect(b0.errorCode).toBe(0);

    // Heartbeats until the target is reached: the first member releases what the second gets.
    let a = a0;
    let b = b0;
    for (let i = 0; i < 20; i++) {
      a = await beat({
        memberId: a0.memberId,
        memberEpoch: a.memberEpoch,
        topicPartitions: [{ topicId, partitions: partitionsOf(a) }],
      });
      b = await beat({
        memberId: b0.memberId,
        memberEpoch: b.memberEpoch,
        topicPartitions: [{ topicId, partitions: partitionsOf(b) }],
      });
      if (partitionsOf(a).length === 2 && partitionsOf(b).length === 2) break;
    }
    expect([...partitionsOf(a), ...partitionsOf(b)].sort()).toEqual([0, 1, 2, 3]);
    expect(partitionsOf(a)).toHaveLength(2);

    const snap = await s.services.groups.coordinator.find('kip-group');
    expect(Object.keys(snap!.group.members).sort()).toEqual([a0.memberId, b0.memberId].sort());

    const left = await beat({ memberId: b0.memberId, memberEpoch: -1 });
    expect(left).toMatchObject({ errorCode: 0, memberEpoch: -1, assignment: null });
    expect(Object.keys((await s.services.groups.coordinator.find('kip-group'))!.group.members)).toEqual([a0.memberId]);
  });

  it('answers a stale member epoch FENCED_MEMBER_EPOCH and an unknown assignor UNSUPPORTED_ASSIGNOR', async () => {
    const j = await beat({ memberId: '', memberEpoch: 0, subscribedTopicNames: ['kip'] });
    const stale = await beat({ memberId: j.memberId, memberEpoch: j.memberEpoch + 5 });
    expect(stale.errorCode).toBe(ERRORS.FENCED_MEMBER_EPOCH.code);
    const bad = await beat({ memberId: '', memberEpoch: 0, subscribedTopicNames: ['kip'], serverAssignor: 'nope' });
    expect(bad.errorCode).toBe(ERRORS.UNSUPPORTED_ASSIGNOR.code);
  });
});

describe('OffsetCommit v9 and OffsetFetch v8-v9 (KIP-848 member epochs)', () => {
  const join = async (groupId: string) => {
    const a = await beat({ groupId, memberId: '', memberEpoch: 0, subscribedTopicNames: ['kip'] });
    expect(a.errorCode).toBe(0);
    expect(partitionsOf(a).sort()).toEqual([0, 1, 2, 3]);
    return a as { memberId: string; memberEpoch: number };
  };
  const commit = async (version: number, body: Record<string, unknown>, offset = 5) =>
    (
      await c.request(m.OffsetCommit, version, {
        groupInstanceId: null,
        topics: [{ name: 'kip', partitions: [{ partitionIndex: 0, committedOffset: offset, committedMetadata: 'm' }] }],
        ...body,
      })
    ).body.topics[0].partitions[0].errorCode as number;
  const fetchGroups = async (groups: Record<string, unknown>[], version = 9) =>
    (
      await c.request(m.OffsetFetch, version, {
        groups: groups.map((g) => ({ memberId: null, memberEpoch: -1, topics: null, ...g })),
        requireStable: false,
      })
    ).body.groups as { groupId: string; errorCode: number; topics: { name: string; partitions: any[] }[] }[];

  it('a member commits with its member id and epoch, and fetches its offsets naming itself', async () => {
    const a = await join('kip-commit');
    expect(
      await commit(9, { groupId: 'kip-commit', memberId: a.memberId, generationIdOrMemberEpoch: a.memberEpoch }),
    ).toBe(0);
    const [g] = await fetchGroups([
      {
        groupId: 'kip-commit',
        memberId: a.memberId,
        memberEpoch: a.memberEpoch,
        topics: [{ name: 'kip', partitionIndexes: [0, 1] }],
      },
    ]);
    expect(g).toMatchObject({ groupId: 'kip-commit', errorCode: 0 });
    expect(g!.topics[0]!.partitions).toEqual([
      { partitionIndex: 0, committedOffset: 5, committedLeaderEpoch: -1, metadata: 'm', errorCode: 0 },
      { partitionIndex: 1, committedOffset: -1, committedLeaderEpoch: -1, metadata: '', errorCode: 0 },
    ]);
    // The same offsets the HTTP API reads.
    const committed = await s.services.groups.offsets.committed('kip-commit');
    expect(committed.map((o) => [o.partition, o.offset, o.generation])).toEqual([[0, 5, a.memberEpoch]]);
  });

  it('answers a stale epoch STALE_MEMBER_EPOCH, an unknown member UNKNOWN_MEMBER_ID, an old version UNSUPPORTED_VERSION', async () => {
    const a = await join('kip-stale');
    const as = (epoch: number, memberId = a.memberId) => ({
      groupId: 'kip-stale',
      memberId,
      generationIdOrMemberEpoch: epoch,
    });
    expect(await commit(9, as(a.memberEpoch + 1))).toBe(ERRORS.STALE_MEMBER_EPOCH.code);
    expect(await commit(9, as(a.memberEpoch - 1))).toBe(ERRORS.STALE_MEMBER_EPOCH.code);
    expect(await commit(9, as(a.memberEpoch, 'ghost'))).toBe(ERRORS.UNKNOWN_MEMBER_ID.code);
    // Kafka: a member of the consumer protocol commits with v9 or later.
    expect(await commit(8, as(a.memberEpoch))).toBe(ERRORS.UNSUPPORTED_VERSION.code);
    // A commit without a member, to a group with members.
    expect(await commit(9, as(-1, ''))).toBe(ERRORS.UNKNOWN_MEMBER_ID.code);
    // Nothing of those landed.
    expect(await s.services.groups.offsets.committed('kip-stale')).toEqual([]);

    const fetched = await fetchGroups([
      { groupId: 'kip-stale', memberId: a.memberId, memberEpoch: a.memberEpoch + 1 },
      { groupId: 'kip-stale', memberId: 'ghost', memberEpoch: 1 },
      { groupId: 'kip-stale', memberId: a.memberId, memberEpoch: a.memberEpoch },
      { groupId: 'kip-stale' }, // no member named: an admin's fetch
    ]);
    expect(fetched.map((g) => g.errorCode)).toEqual([
      ERRORS.STALE_MEMBER_EPOCH.code,
      ERRORS.UNKNOWN_MEMBER_ID.code,
      0,
      0,
    ]);
    expect(fetched[0]!.topics).toEqual([]);

    // The member leaves: its id is unknown from then on.
    await beat({ groupId: 'kip-stale', memberId: a.memberId, memberEpoch: -1 });
    expect(await commit(9, as(a.memberEpoch))).toBe(ERRORS.UNKNOWN_MEMBER_ID.code);
  });

  it("v8 fetches several groups' offsets in one request; a classic simple commit with v9 still works", async () => {
    for (const [groupId, offset] of [
      ['kip-batch-a', 3],
      ['kip-batch-b', 7],
    ] as const)
      expect(await commit(9, { groupId, memberId: '', generationIdOrMemberEpoch: -1 }, offset)).toBe(0);
    const groups = await fetchGroups(
      [
        { groupId: 'kip-batch-a' },
        { groupId: 'kip-batch-b', topics: [{ name: 'kip', partitionIndexes: [0] }] },
        { groupId: 'kip-none' },
      ],
      8,
    );
    expect(
      groups.map((g) => [
        g.groupId,
        g.errorCode,
        g.topics.map((t) => [t.name, t.partitions.map((p) => p.committedOffset)]),
      ]),
    ).toEqual([
      ['kip-batch-a', 0, [['kip', [3]]]],
      ['kip-batch-b', 0, [['kip', [7]]]],
      ['kip-none', 0, []],
    ]);
  });

  it('ApiVersions offers OffsetCommit 0-9 and OffsetFetch 0-9', async () => {
    const keys = (await c.request(m.ApiVersions, 3, { clientSoftwareName: 't', clientSoftwareVersion: '1' })).body
      .apiKeys as { apiKey: number; minVersion: number; maxVersion: number }[];
    expect(keys.find((k) => k.apiKey === 8)).toMatchObject({ minVersion: 0, maxVersion: 9 });
    expect(keys.find((k) => k.apiKey === 9)).toMatchObject({ minVersion: 0, maxVersion: 9 });
  });
});

describe('ConsumerGroupHeartbeat storage reads', () => {
  it('a member heartbeating with what it owns reads no listing of all topics (the topic cache answers)', async () => {
    const counted = await startKafkaServer({}, { BENCH_COUNTERS: '1' });
    const raw = await RawClient.open(counted.broker);
    try {
      await counted.services.topics.create({ name: 'kip-cheap', partitionCount: 2, replicationFactor: 1 });
      const id = Buffer.from(
        (await raw.request(m.Metadata, 12, { topics: [{ name: 'kip-cheap' }] })).body.topics[0].topicId,
      );
      const heartbeat = (body: Record<string, unknown>) => beat(body, raw, 'kip-cheap-group');
      const joined = await heartbeat({ memberId: 'm-cheap', memberEpoch: 0, subscribedTopicNames: ['kip-cheap'] });
      expect(joined.errorCode).toBe(0);
      let epoch = joined.memberEpoch as number;
      const queries = () => counted.services.operationCounts!().metadata.query;
      const before = queries();
      for (let i = 0; i < 5; i++) {
        const a = await heartbeat({
          memberId: 'm-cheap',
          memberEpoch: epoch,
          topicPartitions: [{ topicId: id, partitions: [0, 1] }],
        });
        expect(a.errorCode).toBe(0);
        expect(a.assignment.topicPartitions.map((tp: { topicId: Buffer }) => Buffer.from(tp.topicId))).toEqual([id]);
        epoch = a.memberEpoch;
      }
      expect(queries() - before).toBe(0); // a listing per heartbeat was five
    } finally {
      raw.close();
      await counted.close();
    }
  });
});
