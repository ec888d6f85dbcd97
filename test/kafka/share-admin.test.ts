/**
 * The share groups' admin RPCs over the Kafka protocol: DescribeShareGroupOffsets (90),
 * AlterShareGroupOffsets (91), DeleteShareGroupOffsets (92). Their layouts against bytes built by
 * hand from Kafka's message definitions, ApiVersions, then the RPCs with a bare connection on the
 * memory backend (state made by HTTP-style receivers and a Kafka share member), and their ACLs.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { validateBinding } from '../../src/authz/acl.js';
import * as m from '../../src/kafka/protocol/messages/index.js';
import { ERRORS } from '../../src/wire/errors.js';
import { startKafkaServer, type TestKafkaServer } from './support/kafka-server.js';
import { Writer } from '../../src/kafka/protocol/codec.js';
import { Bytes, decode, encode } from './support/compact-bytes.js';
import { RawClient } from './support/raw-client.js';

const code = (name: keyof typeof ERRORS) => ERRORS[name].code;

describe('admin message layouts against the definitions', () => {
  const id = Buffer.alloc(16, 0xcd);

  it('DescribeShareGroupOffsets: Topics nullable in the request, Lag from v1 in the response', () => {
    const all = new Bytes().array(1).str('g').array(null).tags().tags().done();
    for (const v of [0, 1]) {
      expect(decode(m.DescribeShareGroupOffsets.request, v, all)).toEqual({
        groups: [{ groupId: 'g', topics: null }],
      });
      expect(encode(m.DescribeShareGroupOffsets.request, v, { groups: [{ groupId: 'g', topics: null }] })).toEqual(all);
    }
    const named = new Bytes().array(1).str('g').array(1).str('t').array(2).int32(0).int32(3).tags().tags().tags();
    expect(decode(m.DescribeShareGroupOffsets.request, 1, named.done()).groups[0].topics).toEqual([
      { topicName: 't', partitions: [0, 3] },
    ]);
    const res = {
      throttleTimeMs: 0,
      groups: [
        {
          groupId: 'g',
          topics: [
            {
              topicName: 't',
              topicId: id,
              partitions: [
                { partitionIndex: 2, startOffset: 40, leaderEpoch: 7, lag: 12, errorCode: 0, errorMessage: null },
              ],
            },
          ],
          errorCode: 0,
          errorMessage: null,
        },
      ],
    };
    const bytes = (v: number) => {
      const b = new Bytes().int32(0).array(1).str('g').array(1).str('t').raw(id).array(1).int32(2).int64(40).int32(7);
      if (v >= 1) b.int64(12);
      return b.int16(0).str(null).tags().tags().int16(0).str(null).tags().tags().done();
    };
    for (const v of [0, 1]) expect(encode(m.DescribeShareGroupOffsets.response, v, res)).toEqual(bytes(v));
    // Absent in v0, Lag reads as Kafka's default: -1.
    expect(decode(m.DescribeShareGroupOffsets.response, 0, bytes(0)).groups[0].topics[0].partitions[0].lag).toBe(-1);
  });

  it('AlterShareGroupOffsets v0: top-level error, then per topic and partition', () => {
    const req = new Bytes().str('g').array(1).str('t').array(1).int32(1).int64(99).tags().tags().tags().done();
    expect(decode(m.AlterShareGroupOffsets.request, 0, req)).toEqual({
      groupId: 'g',
      topics: [{ topicName: 't', partitions: [{ partitionIndex: 1, startOffset: 99 }] }],
    });
    const res = {
      throttleTimeMs: 0,
      errorCode: 0,
      errorMessage: null,
      responses: [
        { topicName: 't', topicId: id, partitions: [{ partitionIndex: 1, errorCode: 3, errorMessage: 'no' }] },
      ],
    };
    const bytes = new Bytes()
      .int32(0)
      .int16(0)
      .str(null)
      .array(1)
      .str('t')
      .raw(id)
      .array(1)
      .int32(1)
      .int16(3)
      .str('no')
      .tags()
      .tags()
      .tags()
      .done();
    expect(encode(m.AlterShareGroupOffsets.response, 0, res)).toEqual(bytes);
  });

  it('DeleteShareGroupOffsets v0: topics by name, answered per topic (no partitions)', () => {
    const req = new Bytes().str('g').array(2).str('a').tags().str('b').tags().tags().done();
    expect(decode(m.DeleteShareGroupOffsets.request, 0, req)).toEqual({
      groupId: 'g',
      topics: [{ topicName: 'a' }, { topicName: 'b' }],
    });
    const res = {
      throttleTimeMs: 0,
      errorCode: 68,
      errorMessage: 'busy',
      responses: [{ topicName: 'a', topicId: id, errorCode: 0, errorMessage: null }],
    };
    const bytes = new Bytes()
      .int32(0)
      .int16(68)
      .str('busy')
      .array(1)
      .str('a')
      .raw(id)
      .int16(0)
      .str(null)
      .tags()
      .tags()
      .done();
    expect(encode(m.DeleteShareGroupOffsets.response, 0, res)).toEqual(bytes);
  });
});

let s: TestKafkaServer;
let c: RawClient;

const idOf = async (name: string) => Buffer.from((await s.services.topics.get(name)).id.replace(/-/g, ''), 'hex');

const produce = async (topic: string, partition: number, n: number) => {
  const t = await s.services.topics.get(topic);
  await s.services.log.append(t, [
    {
      partition,
      records: Array.from({ length: n }, (_, i) => ({
        key: null,
        value: Buffer.from(`v${i}`),
        headers: [],
        timestamp: Date.now(),
      })),
    },
  ]);
};

beforeAll(async () => {
  s = await startKafkaServer();
  await s.services.topics.create({ name: 'jobs', partitionCount: 2, replicationFactor: 1 });
  await s.services.topics.create({ name: 'other', partitionCount: 1, replicationFactor: 1 });
  c = await RawClient.open(s.broker);
});
afterAll(async () => {
  c?.close();
  await s?.close();
});

const describeOffsets = async (version: number, groupId: string, topics: unknown) =>
  (await c.request(m.DescribeShareGroupOffsets, version, { groups: [{ groupId, topics }] })).body.groups[0];
const alter = async (groupId: string, topics: unknown) =>
  (await c.request(m.AlterShareGroupOffsets, 0, { groupId, topics })).body;
const del = async (groupId: string, ...names: string[]) =>
  (await c.request(m.DeleteShareGroupOffsets, 0, { groupId, topics: names.map((topicName) => ({ topicName })) })).body;

describe('ApiVersions', () => {
  it('advertises 90 at v0-1 (4.2 added Lag) and 91, 92 at v0', async () => {
    const keys = (await c.request(m.ApiVersions, 3, { clientSoftwareName: 't', clientSoftwareVersion: '1' })).body
      .apiKeys as { apiKey: number; minVersion: number; maxVersion: number }[];
    const of = (k: number) => keys.find((a) => a.apiKey === k);
    expect(of(90)).toMatchObject({ minVersion: 0, maxVersion: 1 });
    expect(of(91)).toMatchObject({ minVersion: 0, maxVersion: 0 });
    expect(of(92)).toMatchObject({ minVersion: 0, maxVersion: 0 });
  });
});

describe('DescribeShareGroupOffsets, AlterShareGroupOffsets and DeleteShareGroupOffsets', () => {
  it('describes, refuses changes while records are locked, alters and deletes once the group is empty', async () => {
    const share = s.services.share;
    const group = 'admin-g';
    await share.alterConfigs(group, [{ name: 'share.auto.offset.reset', value: 'earliest' }]);
    await produce('jobs', 0, 5);
    await produce('jobs', 1, 3);
    const got = await share.acquire(group, ['jobs'], 'worker', 100);
    expect(got).toHaveLength(8);
    const p0 = got.filter((r) => r.partition === 0).sort((a, b) => a.record.offset - b.record.offset);
    // Accept the first two of partition 0: its SPSO moves to 2.
    await share.acknowledge(
      group,
      'worker',
      p0.slice(0, 2).map((r) => ({ topic: 'jobs', partition: 0, offset: r.record.offset, type: 'accept' as const })),
    );
    const jobsId = await idOf('jobs');

    // The raw request, byte for byte as the definition says (v1, all topics: null).
    const body = new Bytes().array(1).str(group).array(null).tags().tags().done();
    const header = new Writer();
    header.int16(90);
    header.int16(1);
    header.int32(4242);
    header.int16(3);
    const headerBytes = Buffer.concat([header.toBuffer(), Buffer.from('raw'), Buffer.from([0])]);
    const size = Buffer.alloc(4);
    size.writeInt32BE(headerBytes.byteLength + body.byteLength);
    c.write(Buffer.concat([size, headerBytes, body]));
    const frame = (await c.readFrame())!;
    expect(frame.readInt32BE(0)).toBe(4242);
    const answer = decode(m.DescribeShareGroupOffsets.response, 1, frame.subarray(5));
    const g = answer.groups[0];
    expect(g).toMatchObject({ groupId: group, errorCode: 0 });
    expect(g.topics).toHaveLength(1);
    expect(g.topics[0].topicName).toBe('jobs');
    expect(Buffer.from(g.topics[0].topicId)).toEqual(jobsId);
    const parts = [...g.topics[0].partitions].sort((a: any, b: any) => a.partitionIndex - b.partitionIndex);
    // Lag: the records from SPSO to the high watermark not yet acknowledged (KIP-1226).
    expect(parts).toEqual([
      expect.objectContaining({ partitionIndex: 0, startOffset: 2, lag: 3, errorCode: 0 }),
      expect.objectContaining({ partitionIndex: 1, startOffset: 0, lag: 3, errorCode: 0 }),
    ]);

    // Named partitions: one without state and a topic that does not exist are -1, without error.
    const named = await describeOffsets(0, group, [
      { topicName: 'other', partitions: [0] },
      { topicName: 'nope', partitions: [4] },
    ]);
    expect(named.errorCode).toBe(0);
    expect(named.topics).toEqual([
      expect.objectContaining({ topicName: 'other', partitions: [expect.objectContaining({ startOffset: -1 })] }),
      expect.objectContaining({
        topicName: 'nope',
        topicId: Buffer.alloc(16),
        partitions: [expect.objectContaining({ partitionIndex: 4, startOffset: -1, errorCode: 0 })],
      }),
    ]);
    // A group never used has no state: nothing to describe, and no error (Kafka's answer).
    expect(await describeOffsets(1, 'never-used', null)).toMatchObject({ errorCode: 0, topics: [] });

    // Records under an unexpired lock make the group non-empty: the whole request is refused.
    const refused = await alter(group, [{ topicName: 'jobs', partitions: [{ partitionIndex: 1, startOffset: 3 }] }]);
    expect(refused).toMatchObject({ errorCode: code('NON_EMPTY_GROUP'), responses: [] });
    expect(await del(group, 'jobs')).toMatchObject({ errorCode: code('NON_EMPTY_GROUP'), responses: [] });
    expect((await describeOffsets(1, group, [{ topicName: 'jobs', partitions: [1] }])).topics[0].partitions[0]).toEqual(
      expect.objectContaining({ startOffset: 0 }),
    );

    // Released, the group is empty.
    await share.acknowledge(
      group,
      'worker',
      got
        .filter((r) => !(r.partition === 0 && r.record.offset < 2))
        .map((r) => ({ topic: 'jobs', partition: r.partition, offset: r.record.offset, type: 'release' as const })),
    );
    const altered = await alter(group, [
      {
        topicName: 'jobs',
        partitions: [
          { partitionIndex: 1, startOffset: 2 },
          { partitionIndex: 5, startOffset: 0 },
        ],
      },
      { topicName: 'nope', partitions: [{ partitionIndex: 0, startOffset: 0 }] },
    ]);
    expect(altered).toMatchObject({ errorCode: 0 });
    expect(altered.responses).toEqual([
      {
        topicName: 'jobs',
        topicId: jobsId,
        partitions: [
          { partitionIndex: 1, errorCode: 0, errorMessage: null },
          expect.objectContaining({ partitionIndex: 5, errorCode: code('UNKNOWN_TOPIC_OR_PARTITION') }),
        ],
      },
      {
        topicName: 'nope',
        topicId: Buffer.alloc(16),
        partitions: [expect.objectContaining({ partitionIndex: 0, errorCode: code('UNKNOWN_TOPIC_OR_PARTITION') })],
      },
    ]);
    const after = await describeOffsets(1, group, [{ topicName: 'jobs', partitions: [1] }]);
    expect(after.topics[0].partitions[0]).toEqual(expect.objectContaining({ startOffset: 2, lag: 1 }));
    // The receivers see it: only offset 2 of partition 1 is delivered from there.
    const again = await share.acquire(group, ['jobs'], 'worker-2', 100);
    expect(again.filter((r) => r.partition === 1).map((r) => r.record.offset)).toEqual([2]);
    await share.acknowledge(
      group,
      'worker-2',
      again.map((r) => ({ topic: 'jobs', partition: r.partition, offset: r.record.offset, type: 'release' as const })),
    );

    // Delete: per topic; a topic without state, or that does not exist, is UNKNOWN_TOPIC_OR_PARTITION.
    const deleted = await del(group, 'jobs', 'other', 'nope');
    expect(deleted).toMatchObject({ errorCode: 0 });
    expect(deleted.responses).toEqual([
      { topicName: 'jobs', topicId: jobsId, errorCode: 0, errorMessage: null },
      expect.objectContaining({ topicName: 'other', errorCode: code('UNKNOWN_TOPIC_OR_PARTITION') }),
      expect.objectContaining({ topicName: 'nope', errorCode: code('UNKNOWN_TOPIC_OR_PARTITION') }),
    ]);
    expect(await describeOffsets(1, group, null)).toMatchObject({ errorCode: 0, topics: [] });
  });

  it('GROUP_ID_NOT_FOUND for a group never used; NON_EMPTY_GROUP while a Kafka share member is in it', async () => {
    const alterNone = await alter('ghost', [
      { topicName: 'jobs', partitions: [{ partitionIndex: 0, startOffset: 0 }] },
    ]);
    expect(alterNone).toMatchObject({ errorCode: code('GROUP_ID_NOT_FOUND'), responses: [] });
    expect(await del('ghost', 'jobs')).toMatchObject({ errorCode: code('GROUP_ID_NOT_FOUND'), responses: [] });
    expect(await alter('', [])).toMatchObject({ errorCode: code('INVALID_GROUP_ID') });

    const member = randomUUID();
    const joined = await c.request(m.ShareGroupHeartbeat, 1, {
      groupId: 'member-g',
      memberId: member,
      memberEpoch: 0,
      rackId: null,
      subscribedTopicNames: ['jobs'],
    });
    expect(joined.body.errorCode).toBe(0);
    expect(await alter('member-g', [])).toMatchObject({ errorCode: code('NON_EMPTY_GROUP') });
    expect(await del('member-g', 'jobs')).toMatchObject({ errorCode: code('NON_EMPTY_GROUP') });
    await c.request(m.ShareGroupHeartbeat, 1, {
      groupId: 'member-g',
      memberId: member,
      memberEpoch: -1,
      rackId: null,
      subscribedTopicNames: null,
    });
    const ok = await alter('member-g', [{ topicName: 'jobs', partitions: [{ partitionIndex: 0, startOffset: 1 }] }]);
    expect(ok).toMatchObject({ errorCode: 0, responses: [{ partitions: [{ errorCode: 0 }] }] });
    expect((await describeOffsets(0, 'member-g', null)).topics).toEqual([
      expect.objectContaining({ topicName: 'jobs', partitions: [expect.objectContaining({ startOffset: 1 })] }),
    ]);
  });
});

describe('ACLs', () => {
  let secure: TestKafkaServer;
  const USERS = { alice: 'alice-secret', bob: 'bob-secret' };
  beforeAll(async () => {
    const dir = mkdtempSync(join(tmpdir(), 'share-admin-'));
    const file = join(dir, 'auth.json');
    writeFileSync(
      file,
      JSON.stringify({ authorization: true, 'super.users': 'User:admin', 'sasl.plain.users': USERS }),
    );
    secure = await startKafkaServer({}, { AUTH_CONFIG: file });
    for (const name of ['paid', 'secret'])
      await secure.services.topics.create({ name, partitionCount: 1, replicationFactor: 1 });
    const allow = (principal: string, resourceType: string, resourceName: string, operation: string) =>
      validateBinding({ principal, resourceType, resourceName, operation, permission: 'ALLOW' });
    await secure.services.security.acls.create([
      allow('User:alice', 'GROUP', 'q', 'READ'),
      allow('User:alice', 'GROUP', 'q', 'DESCRIBE'),
      allow('User:alice', 'TOPIC', 'paid', 'READ'),
      allow('User:alice', 'TOPIC', 'paid', 'DESCRIBE'),
    ]);
    await secure.services.share.alterConfigs('q', [{ name: 'share.auto.offset.reset', value: 'earliest' }]);
    for (const t of ['paid', 'secret'])
      await secure.services.share.alterOffsets('q', [{ topic: t, partition: 0, offset: 0 }]);
  });
  afterAll(async () => {
    await secure?.close();
  });

  async function rawAs(user: keyof typeof USERS) {
    const conn = await RawClient.open(secure.broker);
    await conn.request(m.SaslHandshake, 1, { mechanism: 'PLAIN' });
    const auth = await conn.request(m.SaslAuthenticate, 2, {
      authBytes: Buffer.from(`\u0000${user}\u0000${USERS[user]}`),
    });
    expect(auth.body.errorCode).toBe(0);
    return conn;
  }

  it('READ on the group and topics alters, DESCRIBE describes, DELETE on the group deletes', async () => {
    const alice = await rawAs('alice');
    const bob = await rawAs('bob');
    try {
      const altered = (
        await alice.request(m.AlterShareGroupOffsets, 0, {
          groupId: 'q',
          topics: ['paid', 'secret'].map((topicName) => ({
            topicName,
            partitions: [{ partitionIndex: 0, startOffset: 0 }],
          })),
        })
      ).body;
      expect(altered.errorCode).toBe(0);
      expect(altered.responses.map((t: any) => [t.topicName, t.partitions[0].errorCode])).toEqual([
        ['paid', 0],
        ['secret', code('TOPIC_AUTHORIZATION_FAILED')],
      ]);
      // Named topics it may not DESCRIBE are refused; all topics leaves them out.
      const named = (
        await alice.request(m.DescribeShareGroupOffsets, 1, {
          groups: [{ groupId: 'q', topics: [{ topicName: 'secret', partitions: [0] }] }],
        })
      ).body.groups[0];
      expect(named.topics[0].partitions[0]).toMatchObject({
        errorCode: code('TOPIC_AUTHORIZATION_FAILED'),
        startOffset: -1,
      });
      const all = (await alice.request(m.DescribeShareGroupOffsets, 1, { groups: [{ groupId: 'q', topics: null }] }))
        .body.groups[0];
      expect(all.topics.map((t: any) => t.topicName)).toEqual(['paid']);
      // DELETE on the group is not READ.
      const deleted = (await alice.request(m.DeleteShareGroupOffsets, 0, { groupId: 'q', topics: [] })).body;
      expect(deleted).toMatchObject({ errorCode: code('GROUP_AUTHORIZATION_FAILED'), responses: [] });

      const bobDescribe = (
        await bob.request(m.DescribeShareGroupOffsets, 0, { groups: [{ groupId: 'q', topics: null }] })
      ).body.groups[0];
      expect(bobDescribe).toMatchObject({ errorCode: code('GROUP_AUTHORIZATION_FAILED'), topics: [] });
      const bobAlter = (await bob.request(m.AlterShareGroupOffsets, 0, { groupId: 'q', topics: [] })).body;
      expect(bobAlter.errorCode).toBe(code('GROUP_AUTHORIZATION_FAILED'));
    } finally {
      alice.close();
      bob.close();
    }
  });
});

describe('share groups in ListGroups and DescribeGroups', () => {
  const listed = async () =>
    (
      (await c.request(m.ListGroups, 5, { statesFilter: [], typesFilter: ['share'] })).body.groups as {
        groupId: string;
        groupState: string;
        protocolType: string;
        groupType: string;
      }[]
    ).find((g) => g.groupId === 'listed-g');
  const shareState = async () =>
    (await c.request(m.ShareGroupDescribe, 1, { groupIds: ['listed-g'], includeAuthorizedOperations: false })).body
      .groups[0].groupState;

  it('one state everywhere: Stable while a receiver holds records under a lock, Empty after', async () => {
    const share = s.services.share;
    await share.alterConfigs('listed-g', [{ name: 'share.auto.offset.reset', value: 'earliest' }]);
    await produce('other', 0, 2);
    const held = await share.acquire('listed-g', ['other'], 'w', 10);
    expect(held.length).toBeGreaterThan(0);
    expect(await listed()).toEqual({
      groupId: 'listed-g',
      groupState: 'Stable',
      protocolType: 'share',
      groupType: 'share',
    });
    expect(await shareState()).toBe('Stable');
    expect(await alter('listed-g', [])).toMatchObject({ errorCode: code('NON_EMPTY_GROUP') });
    await share.acknowledge(
      'listed-g',
      'w',
      held.map((r) => ({ topic: 'other', partition: 0, offset: r.record.offset, type: 'release' as const })),
    );
    expect((await listed())?.groupState).toBe('Empty');
    expect(await shareState()).toBe('Empty');
  });

  it('DescribeGroups: a share group is not a classic group (v6: GROUP_ID_NOT_FOUND), as Kafka answers', async () => {
    const v6 = (
      await c.request(m.DescribeGroups, 6, { groups: ['listed-g', 'no-such-g'], includeAuthorizedOperations: false })
    ).body.groups;
    expect(v6).toEqual([
      expect.objectContaining({
        groupId: 'listed-g',
        errorCode: code('GROUP_ID_NOT_FOUND'),
        errorMessage: 'Group listed-g is not a classic group.',
        groupState: 'Dead',
        members: [],
      }),
      expect.objectContaining({
        groupId: 'no-such-g',
        errorCode: code('GROUP_ID_NOT_FOUND'),
        errorMessage: 'Group no-such-g not found.',
        groupState: 'Dead',
      }),
    ]);
    // Before v6 a group that is not there is Dead without an error.
    const v5 = (await c.request(m.DescribeGroups, 5, { groups: ['listed-g'], includeAuthorizedOperations: false })).body
      .groups;
    expect(v5).toEqual([
      expect.objectContaining({ groupId: 'listed-g', errorCode: 0, groupState: 'Dead', protocolType: '' }),
    ]);
  });
});

describe('DeleteGroups of share groups (Admin.deleteShareGroups)', () => {
  const deleteGroups = async (...groupsNames: string[]) =>
    (
      (await c.request(m.DeleteGroups, 2, { groupsNames })).body.results as { groupId: string; errorCode: number }[]
    ).map((r) => [r.groupId, r.errorCode]);
  const shareGroupsListed = async () =>
    (
      (await c.request(m.ListGroups, 5, { statesFilter: [], typesFilter: ['share'] })).body.groups as {
        groupId: string;
      }[]
    ).map((g) => g.groupId);

  it('GROUP_ID_NOT_FOUND, NON_EMPTY_GROUP while locked or with a member, then the state goes with the group', async () => {
    const share = s.services.share;
    await share.alterConfigs('del-g', [{ name: 'share.auto.offset.reset', value: 'earliest' }]);
    await produce('other', 0, 3);
    const held = await share.acquire('del-g', ['other'], 'w', 100);
    expect(held.length).toBeGreaterThan(0);
    expect(await deleteGroups('del-g', 'del-ghost')).toEqual([
      ['del-g', code('NON_EMPTY_GROUP')],
      ['del-ghost', code('GROUP_ID_NOT_FOUND')],
    ]);
    await share.acknowledge(
      'del-g',
      'w',
      held.map((r) => ({ topic: 'other', partition: 0, offset: r.record.offset, type: 'accept' as const })),
    );
    const spso = (await describeOffsets(0, 'del-g', null)).topics[0].partitions[0].startOffset;
    expect(spso).toBeGreaterThan(0);

    // A Kafka share member makes it non-empty too.
    const member = randomUUID();
    const hb = (memberEpoch: number, subscribedTopicNames: string[] | null) =>
      c.request(m.ShareGroupHeartbeat, 1, {
        groupId: 'del-g',
        memberId: member,
        memberEpoch,
        rackId: null,
        subscribedTopicNames,
      });
    expect((await hb(0, ['other'])).body.errorCode).toBe(0);
    expect(await deleteGroups('del-g')).toEqual([['del-g', code('NON_EMPTY_GROUP')]]);
    await hb(-1, null);

    expect(await deleteGroups('del-g')).toEqual([['del-g', 0]]);
    expect(await shareGroupsListed()).not.toContain('del-g');
    expect(await describeOffsets(0, 'del-g', null)).toMatchObject({ errorCode: 0, topics: [] });
    expect(await deleteGroups('del-g')).toEqual([['del-g', code('GROUP_ID_NOT_FOUND')]]);
    // Used again: from share.auto.offset.reset (earliest, its configs stayed), each a first delivery.
    const again = await share.acquire('del-g', ['other'], 'w2', 100);
    expect(again.map((r) => r.record.offset)).toContain(0);
    expect(again.every((r) => r.deliveries === 1)).toBe(true);
    expect(await shareGroupsListed()).toContain('del-g');
  });
});

describe('group configs (resource type 32), as kafka-configs.sh --entity-type groups sends them', () => {
  const GROUP = 32;
  const describeGroup = async (name: string, keys: string[] | null = null) =>
    (
      await c.request(m.DescribeConfigs, 2, {
        resources: [{ resourceType: GROUP, resourceName: name, configurationKeys: keys }],
        includeSynonyms: false,
      })
    ).body.results[0];
  const alterGroup = async (name: string, configs: unknown[], validateOnly = false) =>
    (
      await c.request(m.IncrementalAlterConfigs, 1, {
        resources: [{ resourceType: GROUP, resourceName: name, configs }],
        validateOnly,
      })
    ).body.responses[0];
  const entry = async (name: string, key: string) =>
    (await describeGroup(name, [key])).configs.find((x: { name: string }) => x.name === key);

  it('describes every share group config at its default for a group never used', async () => {
    const r = await describeGroup('cfg-new');
    expect(r.errorCode).toBe(0);
    const names = r.configs.map((x: { name: string }) => x.name);
    expect(names).toEqual(expect.arrayContaining(['share.auto.offset.reset', 'share.isolation.level']));
    expect(await entry('cfg-new', 'share.isolation.level')).toMatchObject({
      value: 'read_uncommitted',
      configSource: 5,
    });
  });

  it('sets and deletes an override, which the share group then uses', async () => {
    const set = await alterGroup('cfg-g', [
      { name: 'share.auto.offset.reset', configOperation: 0, value: 'earliest' },
      { name: 'share.isolation.level', configOperation: 0, value: 'read_committed' },
    ]);
    expect(set.errorCode).toBe(0);
    expect(await entry('cfg-g', 'share.isolation.level')).toMatchObject({ value: 'read_committed', configSource: 8 });
    expect((await s.services.share.config('cfg-g')).autoOffsetReset).toBe('earliest');

    const del = await alterGroup('cfg-g', [{ name: 'share.isolation.level', configOperation: 1, value: null }]);
    expect(del.errorCode).toBe(0);
    expect(await entry('cfg-g', 'share.isolation.level')).toMatchObject({
      value: 'read_uncommitted',
      configSource: 5,
    });
    expect((await s.services.share.config('cfg-g')).isolationLevel).toBe('read_uncommitted');
  });

  it('refuses a bad change whole, and stores nothing when validateOnly', async () => {
    const bad = await alterGroup('cfg-bad', [
      { name: 'share.delivery.count.limit', configOperation: 0, value: '7' },
      { name: 'share.record.lock.duration.ms', configOperation: 0, value: '1000' },
    ]);
    expect(bad.errorCode).toBe(code('INVALID_CONFIG'));
    expect(await entry('cfg-bad', 'share.delivery.count.limit')).toMatchObject({ value: '5', configSource: 5 });

    const unknown = await alterGroup('cfg-bad', [{ name: 'no.such.config', configOperation: 0, value: '1' }]);
    expect(unknown.errorCode).toBe(code('INVALID_CONFIG'));
    const append = await alterGroup('cfg-bad', [
      { name: 'share.auto.offset.reset', configOperation: 2, value: 'earliest' },
    ]);
    expect(append.errorCode).toBe(code('INVALID_CONFIG'));

    const dry = await alterGroup(
      'cfg-bad',
      [{ name: 'share.delivery.count.limit', configOperation: 0, value: '7' }],
      true,
    );
    expect(dry.errorCode).toBe(0);
    expect(await entry('cfg-bad', 'share.delivery.count.limit')).toMatchObject({ value: '5', configSource: 5 });
  });

  it("refuses a resource's malformed changes or a resource named twice, and applies the rest", async () => {
    const TOPIC = 2;
    const set = (name: string, value: string | null) => ({ name, configOperation: 0, value });
    const alter = async (resources: unknown[]) =>
      (await c.request(m.IncrementalAlterConfigs, 1, { resources, validateOnly: false })).body.responses.map(
        (r: { resourceName: string; errorCode: number; errorMessage: string | null }) => [
          r.resourceName,
          r.errorCode,
          r.errorMessage,
        ],
      );
    const retention = async () => (await s.services.topics.get('other')).configs['retention.ms'];
    const before = await retention();
    expect(
      await alter([
        {
          resourceType: TOPIC,
          resourceName: 'other',
          configs: [set('retention.ms', '1000'), set('retention.ms', '2000')],
        },
        { resourceType: GROUP, resourceName: 'cfg-shape', configs: [set('share.auto.offset.reset', null)] },
        { resourceType: GROUP, resourceName: 'cfg-ok', configs: [set('share.auto.offset.reset', 'earliest')] },
      ]),
    ).toEqual([
      ['other', code('INVALID_REQUEST'), 'Error due to duplicate config keys'],
      ['cfg-shape', code('INVALID_REQUEST'), 'Null value not supported for : share.auto.offset.reset'],
      ['cfg-ok', 0, null],
    ]);
    expect(await retention()).toBe(before);
    expect((await s.services.share.config('cfg-ok')).autoOffsetReset).toBe('earliest');

    const twice = {
      resourceType: GROUP,
      resourceName: 'cfg-twice',
      configs: [set('share.auto.offset.reset', 'earliest')],
    };
    expect(await alter([twice, twice])).toEqual([
      ['cfg-twice', code('INVALID_REQUEST'), 'Each resource must appear at most once.'],
      ['cfg-twice', code('INVALID_REQUEST'), 'Each resource must appear at most once.'],
    ]);
    expect((await s.services.share.config('cfg-twice')).autoOffsetReset).toBe('latest');
  });

  it('keeps legacy AlterConfigs to topics', async () => {
    const r = (
      await c.request(m.AlterConfigs, 1, {
        resources: [{ resourceType: GROUP, resourceName: 'cfg-g', configs: [] }],
        validateOnly: false,
      })
    ).body.responses[0];
    expect(r.errorCode).toBe(code('INVALID_REQUEST'));
  });
});
