/**
 * Share groups over the Kafka protocol (KIP-932) with a bare connection: the message layouts
 * against bytes built by hand from Kafka's message definitions, ApiVersions, ShareGroupHeartbeat
 * membership, ShareFetch and ShareAcknowledge through share sessions (acquisition under a lock,
 * acknowledgement, release and redelivery, session epochs and the session limit), on the memory
 * backend. The rules of the share-partitions themselves are test/share's.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as m from '../../src/kafka/protocol/messages/index.js';
import { shareWatchKey } from '../../src/share/share-groups.js';
import { ShareMembers } from '../../src/share/share-members.js';
import { shareGroupPk, shareMemberSk } from '../../src/storage/key-layout.js';
import { ERRORS } from '../../src/wire/errors.js';
import { decodeRecordBatches } from '../../src/wire/record-batch.js';
import { startKafkaServer, type TestKafkaServer } from './support/kafka-server.js';
import { Bytes, decode, encode } from './support/compact-bytes.js';
import { RawClient } from './support/raw-client.js';

describe('share message layouts against the definitions', () => {
  const id = Buffer.alloc(16, 0xab);

  it('ShareGroupHeartbeat v1 request and response', () => {
    const bytes = new Bytes().str('g').str('m-1').int32(0).str(null).array(2).str('a').str('b').tags().done();
    const req = decode(m.ShareGroupHeartbeat.request, 1, bytes);
    expect(req).toMatchObject({
      groupId: 'g',
      memberId: 'm-1',
      memberEpoch: 0,
      rackId: null,
      subscribedTopicNames: ['a', 'b'],
    });
    expect(encode(m.ShareGroupHeartbeat.request, 1, req)).toEqual(bytes);
    const res = {
      throttleTimeMs: 0,
      errorCode: 0,
      errorMessage: null,
      memberId: 'm-1',
      memberEpoch: 3,
      heartbeatIntervalMs: 5000,
      assignment: { topicPartitions: [{ topicId: id, partitions: [0, 2] }] },
    };
    // Assignment is a nullable struct: a 1 byte says it is there.
    const expected = new Bytes()
      .int32(0)
      .int16(0)
      .str(null)
      .str('m-1')
      .int32(3)
      .int32(5000)
      .int8(1)
      .array(1)
      .raw(id)
      .array(2)
      .int32(0)
      .int32(2)
      .tags()
      .tags()
      .tags()
      .done();
    expect(encode(m.ShareGroupHeartbeat.response, 1, res)).toEqual(expected);
  });

  it('ShareFetch v1 and v2 requests: MaxRecords and BatchSize from v1, ShareAcquireMode from v2, no PartitionMaxBytes', () => {
    const body = (v: number) => {
      const b = new Bytes().str('g').str('m').int32(1).int32(500).int32(1).int32(1024).int32(100).int32(50);
      if (v >= 2) b.int8(1);
      return b
        .array(1)
        .raw(id)
        .array(1)
        .int32(3)
        .array(1)
        .int64(10)
        .int64(12)
        .array(1)
        .int8(1)
        .tags()
        .tags()
        .tags()
        .array(0)
        .tags()
        .done();
    };
    for (const v of [1, 2]) {
      const req = decode(m.ShareFetch.request, v, body(v));
      expect(req).toMatchObject({
        groupId: 'g',
        memberId: 'm',
        shareSessionEpoch: 1,
        maxWaitMs: 500,
        minBytes: 1,
        maxBytes: 1024,
        maxRecords: 100,
        batchSize: 50,
        shareAcquireMode: v >= 2 ? 1 : 0,
        topics: [
          {
            topicId: id,
            partitions: [
              {
                partitionIndex: 3,
                acknowledgementBatches: [{ firstOffset: 10, lastOffset: 12, acknowledgeTypes: [1] }],
              },
            ],
          },
        ],
        forgottenTopicsData: [],
      });
      expect(encode(m.ShareFetch.request, v, req)).toEqual(body(v));
    }
  });

  it('ShareFetch response: records, then the acquired ranges with their delivery counts', () => {
    const records = Buffer.from([1, 2, 3]);
    const res = {
      throttleTimeMs: 0,
      errorCode: 0,
      errorMessage: null,
      acquisitionLockTimeoutMs: 30_000,
      responses: [
        {
          topicId: id,
          partitions: [
            {
              partitionIndex: 1,
              errorCode: 0,
              errorMessage: null,
              acknowledgeErrorCode: 121,
              acknowledgeErrorMessage: null,
              currentLeader: { leaderId: -1, leaderEpoch: -1 },
              records,
              acquiredRecords: [{ firstOffset: 5, lastOffset: 7, deliveryCount: 2 }],
            },
          ],
        },
      ],
      nodeEndpoints: [],
    };
    const expected = new Bytes()
      .int32(0)
      .int16(0)
      .str(null)
      .int32(30_000)
      .array(1)
      .raw(id)
      .array(1)
      .int32(1)
      .int16(0)
      .str(null)
      .int16(121)
      .str(null)
      .int32(-1)
      .int32(-1)
      .tags()
      .uvarint(records.byteLength + 1)
      .raw(records)
      .array(1)
      .int64(5)
      .int64(7)
      .int16(2)
      .tags()
      .tags()
      .tags()
      .array(0)
      .tags()
      .done();
    for (const v of [1, 2]) expect(encode(m.ShareFetch.response, v, res)).toEqual(expected);
  });

  it('ShareAcknowledge: IsRenewAck in the v2 request, AcquisitionLockTimeoutMs in the v2 response', () => {
    const req = (v: number) => {
      const b = new Bytes().str('g').str('m').int32(-1);
      if (v >= 2) b.bool(true);
      return b.array(0).tags().done();
    };
    expect(decode(m.ShareAcknowledge.request, 2, req(2))).toMatchObject({ isRenewAck: true, shareSessionEpoch: -1 });
    expect(decode(m.ShareAcknowledge.request, 1, req(1))).toMatchObject({ isRenewAck: false });
    const res = {
      throttleTimeMs: 0,
      errorCode: 0,
      errorMessage: null,
      acquisitionLockTimeoutMs: 15_000,
      responses: [],
      nodeEndpoints: [],
    };
    const bytes = (v: number) => {
      const b = new Bytes().int32(0).int16(0).str(null);
      if (v >= 2) b.int32(15_000);
      return b.array(0).array(0).tags().done();
    };
    for (const v of [1, 2]) expect(encode(m.ShareAcknowledge.response, v, res)).toEqual(bytes(v));
  });

  it('ShareGroupDescribe v1: members with topic ids and names in their assignment', () => {
    const expected = new Bytes()
      .int32(0)
      .array(1)
      .int16(0)
      .str(null)
      .str('g')
      .str('Stable')
      .int32(2)
      .int32(2)
      .str('simple')
      .array(1)
      .str('m')
      .str(null)
      .int32(2)
      .str('c')
      .str('/h')
      .array(1)
      .str('t')
      .array(1)
      .raw(id)
      .str('t')
      .array(1)
      .int32(0)
      .tags()
      .tags()
      .tags()
      .int32(-2147483648)
      .tags()
      .tags()
      .done();
    const res = decode(m.ShareGroupDescribe.response, 1, expected);
    expect(res.groups[0].members[0].assignment.topicPartitions[0]).toMatchObject({ topicName: 't', partitions: [0] });
    expect(encode(m.ShareGroupDescribe.response, 1, res)).toEqual(expected);
  });
});

let s: TestKafkaServer;
let c: RawClient;
let qId: Buffer;
let wideId: Buffer;

const idOf = async (name: string) => Buffer.from((await s.services.topics.get(name)).id.replace(/-/g, ''), 'hex');

const produce = async (topic: string, partition: number, values: string[]) => {
  const t = await s.services.topics.get(topic);
  await s.services.log.append(t, [
    {
      partition,
      records: values.map((v) => ({ key: null, value: Buffer.from(v), headers: [], timestamp: Date.now() })),
    },
  ]);
};

beforeAll(async () => {
  s = await startKafkaServer();
  for (const [name, partitionCount] of [
    ['sq', 2],
    ['wide', 3],
    ['redo', 1],
    ['race', 4],
    ['poll', 1],
  ] as const)
    await s.services.topics.create({ name, partitionCount, replicationFactor: 1 });
  for (const g of ['fetch-g', 'redo-g', 'race-g', 'poll-g'])
    await s.services.share.alterConfigs(g, [{ name: 'share.auto.offset.reset', value: 'earliest' }]);
  qId = await idOf('sq');
  wideId = await idOf('wide');
  c = await RawClient.open(s.broker);
});
afterAll(async () => {
  c?.close();
  await s?.close();
});

describe('ApiVersions', () => {
  it('advertises the share RPCs from v1, as Kafka 4.1 and 4.2 do', async () => {
    const keys = (await c.request(m.ApiVersions, 3, { clientSoftwareName: 't', clientSoftwareVersion: '1' })).body
      .apiKeys as { apiKey: number; minVersion: number; maxVersion: number }[];
    const of = (k: number) => keys.find((a) => a.apiKey === k);
    expect(of(76)).toMatchObject({ minVersion: 1, maxVersion: 1 });
    expect(of(77)).toMatchObject({ minVersion: 1, maxVersion: 1 });
    expect(of(78)).toMatchObject({ minVersion: 1, maxVersion: 2 });
    expect(of(79)).toMatchObject({ minVersion: 1, maxVersion: 2 });
  });
});

const beat = async (body: Record<string, unknown>, groupId = 'beat-g') =>
  (
    await c.request(m.ShareGroupHeartbeat, 1, {
      groupId,
      memberId: '',
      memberEpoch: 0,
      rackId: null,
      subscribedTopicNames: null,
      ...body,
    })
  ).body;

const describeGroups = async (...groupIds: string[]) =>
  (await c.request(m.ShareGroupDescribe, 1, { groupIds, includeAuthorizedOperations: false })).body.groups;

describe('ShareGroupHeartbeat and ShareGroupDescribe', () => {
  it('joins with every partition of the subscribed topics, heartbeats, changes subscription and leaves', async () => {
    const member = randomUUID();
    const joined = await beat({ memberId: member, subscribedTopicNames: ['sq'] });
    expect(joined).toMatchObject({ errorCode: 0, memberId: member, memberEpoch: 1, heartbeatIntervalMs: 5000 });
    expect(joined.assignment.topicPartitions).toEqual([{ topicId: qId, partitions: [0, 1] }]);

    // A steady heartbeat reads the member and writes nothing.
    const before = await s.metadata.get(shareGroupPk('beat-g'), shareMemberSk(member));
    const steady = await beat({ memberId: member, memberEpoch: 1 });
    expect(steady).toMatchObject({ errorCode: 0, memberEpoch: 1 });
    expect(steady.assignment.topicPartitions).toEqual([{ topicId: qId, partitions: [0, 1] }]);
    expect((await s.metadata.get(shareGroupPk('beat-g'), shareMemberSk(member)))!.version).toBe(before!.version);

    // A new subscription is a new assignment, and a new epoch.
    const wider = await beat({ memberId: member, memberEpoch: 1, subscribedTopicNames: ['sq', 'wide'] });
    expect(wider.memberEpoch).toBe(2);
    expect(wider.assignment.topicPartitions).toEqual([
      { topicId: qId, partitions: [0, 1] },
      { topicId: wideId, partitions: [0, 1, 2] },
    ]);

    const [described] = await describeGroups('beat-g');
    expect(described).toMatchObject({ errorCode: 0, groupState: 'Stable', groupEpoch: 2, assignorName: 'simple' });
    expect(described.members).toEqual([
      expect.objectContaining({
        memberId: member,
        memberEpoch: 2,
        clientId: 'raw',
        subscribedTopicNames: ['sq', 'wide'],
        assignment: {
          topicPartitions: [
            { topicId: qId, topicName: 'sq', partitions: [0, 1] },
            { topicId: wideId, topicName: 'wide', partitions: [0, 1, 2] },
          ],
        },
      }),
    ]);

    // Offsets change only in an empty group: a member of the Kafka protocol makes it non-empty.
    await expect(s.services.share.deleteOffsets('beat-g', ['sq'])).rejects.toMatchObject({
      errorName: 'NON_EMPTY_GROUP',
    });

    const left = await beat({ memberId: member, memberEpoch: -1 });
    expect(left).toMatchObject({ errorCode: 0, memberEpoch: -1, assignment: null });
    expect((await describeGroups('beat-g'))[0]).toMatchObject({ errorCode: 0, groupState: 'Empty', members: [] });
    await expect(s.services.share.deleteOffsets('beat-g', ['sq'])).resolves.toEqual([undefined]);
    // After leaving, the member is unknown.
    expect((await beat({ memberId: member, memberEpoch: 2 })).errorCode).toBe(ERRORS.UNKNOWN_MEMBER_ID.code);
  });

  it("answers Kafka's errors: unknown member, fenced epoch, no member id, no subscription, unknown group", async () => {
    expect((await beat({ memberId: randomUUID(), memberEpoch: 4 })).errorCode).toBe(ERRORS.UNKNOWN_MEMBER_ID.code);
    const member = randomUUID();
    await beat({ memberId: member, subscribedTopicNames: ['sq'] });
    const fenced = await beat({ memberId: member, memberEpoch: 7 });
    expect(fenced).toMatchObject({ errorCode: ERRORS.FENCED_MEMBER_EPOCH.code, memberEpoch: -1 });
    expect((await beat({ memberId: '', subscribedTopicNames: ['sq'] })).errorCode).toBe(ERRORS.INVALID_REQUEST.code);
    expect((await beat({ memberId: randomUUID() })).errorCode).toBe(ERRORS.INVALID_REQUEST.code);
    const [missing, empty] = await describeGroups('never-used', '');
    expect(missing.errorCode).toBe(ERRORS.GROUP_ID_NOT_FOUND.code);
    expect(empty.errorCode).toBe(ERRORS.INVALID_GROUP_ID.code);
  });

  it('ListGroups v5 answers share groups with their type, and filters by type', async () => {
    const member = randomUUID();
    await beat({ memberId: member, subscribedTopicNames: ['sq'] }, 'listed-g');
    const list = async (typesFilter: string[]) =>
      (await c.request(m.ListGroups, 5, { statesFilter: [], typesFilter })).body.groups as Record<string, string>[];
    expect((await list(['share'])).find((g) => g.groupId === 'listed-g')).toEqual({
      groupId: 'listed-g',
      protocolType: 'share',
      groupState: 'Stable',
      groupType: 'share',
    });
    expect((await list(['Share'])).every((g) => g.groupType === 'share')).toBe(true);
    expect((await list(['classic'])).some((g) => g.groupId === 'listed-g')).toBe(false);
    await beat({ memberId: member, memberEpoch: -1 }, 'listed-g');
    const v4 = (await c.request(m.ListGroups, 4, { statesFilter: ['empty'] })).body.groups;
    expect(v4.find((g: { groupId: string }) => g.groupId === 'listed-g')).toEqual({
      groupId: 'listed-g',
      protocolType: 'share',
      groupState: 'Empty',
      groupType: '',
    });
  });

  it('refuses a join past group.share.max.size', async () => {
    const members = new ShareMembers({
      metadata: s.metadata,
      clock: s.services.clock,
      topics: s.services.topics,
      limits: { maxSize: 2 },
      register: async () => {},
    });
    const join = (memberId: string) =>
      members.heartbeat('small-g', {
        memberId,
        memberEpoch: 0,
        rackId: null,
        subscribedTopics: ['sq'],
        clientId: 'c',
        clientHost: 'h',
      });
    await join('a');
    await join('b');
    await expect(join('c')).rejects.toMatchObject({ errorName: 'GROUP_MAX_SIZE_REACHED' });
    // A member already in the group may join again.
    await expect(join('a')).resolves.toMatchObject({ memberEpoch: 1 });
  });
});

/** Resolves once a ShareFetch of the group waits in the fetch purgatory. */
async function waiting(group: string): Promise<void> {
  while (s.services.fetchPurgatory.watched(shareWatchKey(group)) === 0) await new Promise((r) => setTimeout(r, 5));
}

/** A share consumer's side of a connection: its member id and share session epoch. */
class Sharer {
  epoch = 0;
  constructor(
    readonly client: RawClient,
    readonly group: string,
    readonly member = randomUUID(),
  ) {}

  async fetch(
    topics: { topicId: Buffer; partitions: { partitionIndex: number; acknowledgementBatches?: unknown[] }[] }[],
    fields: Record<string, unknown> = {},
    version = 1,
  ) {
    const body = (
      await this.client.request(m.ShareFetch, version, {
        groupId: this.group,
        memberId: this.member,
        shareSessionEpoch: this.epoch,
        maxWaitMs: 0,
        minBytes: 1,
        maxBytes: 1 << 20,
        maxRecords: 100,
        batchSize: 100,
        shareAcquireMode: 0,
        topics: topics.map((t) => ({
          topicId: t.topicId,
          partitions: t.partitions.map((p) => ({ acknowledgementBatches: [], ...p })),
        })),
        forgottenTopicsData: [],
        ...fields,
      })
    ).body;
    if (body.errorCode === 0) this.epoch = this.epoch === -1 ? 0 : this.epoch + 1;
    return body;
  }

  async ack(
    topicId: Buffer,
    partitionIndex: number,
    batches: { firstOffset: number; lastOffset: number; acknowledgeTypes: number[] }[],
    fields: Record<string, unknown> = {},
    version = 1,
  ) {
    const body = (
      await this.client.request(m.ShareAcknowledge, version, {
        groupId: this.group,
        memberId: this.member,
        shareSessionEpoch: this.epoch,
        isRenewAck: false,
        topics: [{ topicId, partitions: [{ partitionIndex, acknowledgementBatches: batches }] }],
        ...fields,
      })
    ).body;
    if (body.errorCode === 0 && this.epoch !== -1) this.epoch += 1;
    return body;
  }
}

interface Got {
  partition: number;
  offset: number;
  value: string;
  deliveryCount: number;
}

/** The records a ShareFetch answered, each with the delivery count of the acquired range holding it. */
function recordsOf(body: Record<string, any>): Got[] {
  const out: Got[] = [];
  for (const t of body.responses)
    for (const p of t.partitions) {
      if (!p.records || p.records.byteLength === 0) continue;
      for (const batch of decodeRecordBatches(Buffer.from(p.records)))
        for (const r of batch.records) {
          const range = p.acquiredRecords.find(
            (a: { firstOffset: number; lastOffset: number }) => r.offset >= a.firstOffset && r.offset <= a.lastOffset,
          );
          expect(range, `offset ${r.offset} is in an acquired range`).toBeDefined();
          out.push({
            partition: p.partitionIndex,
            offset: r.offset,
            value: Buffer.from(r.value!).toString(),
            deliveryCount: range.deliveryCount,
          });
        }
    }
  return out.sort((a, b) => a.partition - b.partition || a.offset - b.offset);
}

const partitionOf = (body: Record<string, any>, partition: number) =>
  body.responses.flatMap((t: { partitions: any[] }) => t.partitions).find((p: any) => p.partitionIndex === partition);

describe('ShareFetch and ShareAcknowledge', () => {
  it('acquires records under a lock, acknowledges them, and redelivers released ones with delivery count 2', async () => {
    await produce('sq', 0, ['a0', 'a1', 'a2', 'a3', 'a4']);
    await produce('sq', 1, ['b0', 'b1', 'b2']);
    const a = new Sharer(c, 'fetch-g');
    const first = await a.fetch([{ topicId: qId, partitions: [{ partitionIndex: 0 }, { partitionIndex: 1 }] }]);
    expect(first).toMatchObject({ errorCode: 0, acquisitionLockTimeoutMs: 30_000 });
    expect(recordsOf(first).map((r) => [r.partition, r.offset, r.value, r.deliveryCount])).toEqual([
      [0, 0, 'a0', 1],
      [0, 1, 'a1', 1],
      [0, 2, 'a2', 1],
      [0, 3, 'a3', 1],
      [0, 4, 'a4', 1],
      [1, 0, 'b0', 1],
      [1, 1, 'b1', 1],
      [1, 2, 'b2', 1],
    ]);
    expect(partitionOf(first, 0).acquiredRecords).toEqual([{ firstOffset: 0, lastOffset: 4, deliveryCount: 1 }]);

    // Locked: neither this member's next fetch (its session names the partitions) nor another member's gets them.
    expect(recordsOf(await a.fetch([]))).toEqual([]);
    const b = new Sharer(await RawClient.open(s.broker), 'fetch-g');
    expect(
      recordsOf(await b.fetch([{ topicId: qId, partitions: [{ partitionIndex: 0 }, { partitionIndex: 1 }] }])),
    ).toEqual([]);

    // Accept partition 0; release partition 1 (one type per offset).
    expect(
      partitionOf(await a.ack(qId, 0, [{ firstOffset: 0, lastOffset: 4, acknowledgeTypes: [1] }]), 0),
    ).toMatchObject({ errorCode: 0 });
    expect(
      partitionOf(await a.ack(qId, 1, [{ firstOffset: 0, lastOffset: 2, acknowledgeTypes: [2, 2, 2] }]), 1).errorCode,
    ).toBe(0);
    // Accepted once: again is INVALID_RECORD_STATE, and so is b acknowledging what it does not hold.
    expect(
      partitionOf(await a.ack(qId, 0, [{ firstOffset: 0, lastOffset: 0, acknowledgeTypes: [1] }]), 0).errorCode,
    ).toBe(ERRORS.INVALID_RECORD_STATE.code);

    const again = await b.fetch([]);
    expect(recordsOf(again).map((r) => [r.partition, r.offset, r.deliveryCount])).toEqual([
      [1, 0, 2],
      [1, 1, 2],
      [1, 2, 2],
    ]);
    // Piggy-backed on the next fetch: b accepts them; the answer says how that went.
    const acked = await b.fetch([
      {
        topicId: qId,
        partitions: [
          { partitionIndex: 1, acknowledgementBatches: [{ firstOffset: 0, lastOffset: 2, acknowledgeTypes: [1] }] },
        ],
      },
    ]);
    expect(partitionOf(acked, 1)).toMatchObject({ acknowledgeErrorCode: 0 });
    expect(recordsOf(acked)).toEqual([]);
    const described = await s.services.share.describe('fetch-g');
    expect(described.map((p) => [p.partition, p.startOffset, p.lag])).toEqual([
      [0, 5, 0],
      [1, 3, 0],
    ]);
    b.client.close();
  });

  it('checks share session epochs, and closing a session releases what the member holds', async () => {
    await produce('redo', 0, ['r0', 'r1']);
    const a = new Sharer(c, 'redo-g');
    const topics = [{ topicId: await idOf('redo'), partitions: [{ partitionIndex: 0 }] }];
    // Acknowledgements can not open a session, nor can a ShareAcknowledge.
    const opening = await a.fetch([
      {
        ...topics[0]!,
        partitions: [
          { partitionIndex: 0, acknowledgementBatches: [{ firstOffset: 0, lastOffset: 0, acknowledgeTypes: [1] }] },
        ],
      },
    ]);
    expect(opening.errorCode).toBe(ERRORS.INVALID_REQUEST.code);
    expect((await a.ack(topics[0]!.topicId, 0, [])).errorCode).toBe(ERRORS.INVALID_SHARE_SESSION_EPOCH.code);
    // No session yet: SHARE_SESSION_NOT_FOUND.
    a.epoch = 3;
    expect((await a.fetch(topics)).errorCode).toBe(ERRORS.SHARE_SESSION_NOT_FOUND.code);
    a.epoch = 0;
    expect(recordsOf(await a.fetch(topics)).map((r) => r.offset)).toEqual([0, 1]);
    a.epoch = 5;
    expect((await a.fetch([])).errorCode).toBe(ERRORS.INVALID_SHARE_SESSION_EPOCH.code);
    a.epoch = 1;
    // Renew is v2's acknowledge type.
    const renewV1 = await a.ack(topics[0]!.topicId, 0, [{ firstOffset: 0, lastOffset: 0, acknowledgeTypes: [4] }]);
    expect(renewV1.errorCode).toBe(ERRORS.INVALID_REQUEST.code);
    const renewV2 = await a.ack(
      topics[0]!.topicId,
      0,
      [{ firstOffset: 0, lastOffset: 0, acknowledgeTypes: [4] }],
      {},
      2,
    );
    expect(renewV2).toMatchObject({ errorCode: 0, acquisitionLockTimeoutMs: 30_000 });
    expect(renewV2.responses[0].partitions[0].errorCode).toBe(0);

    // Closing (epoch -1) with an acceptance of offset 0: offset 1, still held, is released at once.
    a.epoch = -1;
    const closed = await a.ack(topics[0]!.topicId, 0, [{ firstOffset: 0, lastOffset: 0, acknowledgeTypes: [1] }]);
    expect(closed.errorCode).toBe(0);
    expect((await a.fetch([])).errorCode).toBe(ERRORS.SHARE_SESSION_NOT_FOUND.code);
    const b = new Sharer(c, 'redo-g');
    expect(recordsOf(await b.fetch(topics)).map((r) => [r.offset, r.deliveryCount])).toEqual([[1, 2]]);

    // A connection that closes ends its sessions, releasing their records.
    const other = await RawClient.open(s.broker);
    const d = new Sharer(other, 'redo-g');
    await produce('redo', 0, ['r2']);
    expect(recordsOf(await d.fetch(topics)).map((r) => r.offset)).toEqual([2]);
    other.close();
    let redelivered: Got[] = [];
    for (let i = 0; i < 50 && redelivered.length === 0; i++) {
      await new Promise((r) => setTimeout(r, 20));
      redelivered = recordsOf(await b.fetch([]));
    }
    expect(redelivered.map((r) => [r.offset, r.deliveryCount])).toEqual([[2, 2]]);
  });

  it('refuses a share session past the listener limit', async () => {
    const small = await startKafkaServer({ maxShareSessions: 2 });
    const client = await RawClient.open(small.broker);
    try {
      const codes = [];
      for (let i = 0; i < 3; i++) codes.push((await new Sharer(client, 'err-g').fetch([])).errorCode);
      expect(codes).toEqual([0, 0, ERRORS.SHARE_SESSION_LIMIT_REACHED.code]);
    } finally {
      client.close();
      await small.close();
    }
  });

  // Waiting in the fetch purgatory (on the group's key and its partitions'): a produce, or records
  // released by another member, answer the fetch with them long before its MaxWaitMs of 30 s, which
  // is past this test's own timeout.
  it('waits in the purgatory and answers as soon as a record is produced', { timeout: 20_000 }, async () => {
    const a = new Sharer(c, 'poll-g');
    const topics = [{ topicId: await idOf('poll'), partitions: [{ partitionIndex: 0 }] }];
    expect(recordsOf(await a.fetch(topics))).toEqual([]);
    const pending = a.fetch([], { maxWaitMs: 30_000 });
    await waiting('poll-g');
    await produce('poll', 0, ['late']);
    expect(recordsOf(await pending).map((r) => r.value)).toEqual(['late']);
  });

  it('answers a waiting fetch as soon as another member releases records', { timeout: 20_000 }, async () => {
    await s.services.share.alterConfigs('wake-g', [{ name: 'share.auto.offset.reset', value: 'earliest' }]);
    await produce('poll', 0, ['again']);
    const topics = [{ topicId: await idOf('poll'), partitions: [{ partitionIndex: 0 }] }];
    const holder = new Sharer(c, 'wake-g');
    const held = recordsOf(await holder.fetch(topics));
    expect(held.map((r) => r.value)).toEqual(['late', 'again']);
    const other = await RawClient.open(s.broker);
    try {
      const waiter = new Sharer(other, 'wake-g');
      expect(recordsOf(await waiter.fetch(topics))).toEqual([]);
      const pending = waiter.fetch([], { maxWaitMs: 30_000 });
      await waiting('wake-g');
      const offset = held[1]!.offset;
      expect(
        partitionOf(
          await holder.ack(topics[0]!.topicId, 0, [{ firstOffset: offset, lastOffset: offset, acknowledgeTypes: [2] }]),
          0,
        ).errorCode,
      ).toBe(0);
      expect(recordsOf(await pending).map((r) => [r.value, r.deliveryCount])).toEqual([['again', 2]]);
    } finally {
      other.close();
    }
  });
  it('never gives two members the same record while it is locked', async () => {
    const raceId = await idOf('race');
    for (let p = 0; p < 4; p++)
      await produce(
        'race',
        p,
        Array.from({ length: 30 }, (_, i) => `${p}-${i}`),
      );
    const sharers = await Promise.all(
      Array.from({ length: 6 }, async () => new Sharer(await RawClient.open(s.broker), 'race-g')),
    );
    const all = [0, 1, 2, 3].map((partitionIndex) => ({ partitionIndex }));
    const seen: string[] = [];
    for (let round = 0; round < 10; round++) {
      const answers = await Promise.all(
        sharers.map((sh) => sh.fetch(sh.epoch === 0 ? [{ topicId: raceId, partitions: all }] : [], { maxRecords: 7 })),
      );
      for (const body of answers) {
        expect(body.errorCode).toBe(0);
        seen.push(...recordsOf(body).map((r) => `${r.partition}:${r.offset}`));
      }
    }
    expect(new Set(seen).size).toBe(seen.length);
    expect(seen).toHaveLength(120);
    for (const sh of sharers) sh.client.close();
  });
});

describe('share.isolation.level=read_committed over ShareFetch', () => {
  const http = async (path: string, body: unknown) => {
    const res = await fetch(`${s.http}/${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    return { status: res.status, body: (await res.json().catch(() => undefined)) as Record<string, any> };
  };
  /** A transaction of `values` on txq-0, left open: end it with `end`. */
  const transaction = async (values: string[]) => {
    const p = (await http('transactions/share-tx/init', { transaction_timeout_ms: 60_000 })).body;
    const ids = { producer_id: p.producer_id, producer_epoch: p.producer_epoch };
    const sent = await http('topics/txq/records:batch', {
      transactional_id: 'share-tx',
      ...ids,
      sequences: [{ partition_id: 0, base_sequence: 0 }],
      entries: values.map((v, i) => ({ id: String(i), partition_id: 0, value: { type: 'STRING', data: v } })),
    });
    expect(sent.body.failures).toEqual([]);
    return {
      end: async (how: 'commit' | 'abort') =>
        expect((await http(`transactions/share-tx/${how}`, ids)).status).toBe(200),
    };
  };

  it('delivers an open transaction once it commits, never an aborted one, and moves SPSO past it', async () => {
    await s.services.topics.create({ name: 'txq', partitionCount: 1, replicationFactor: 1 });
    const txqId = await idOf('txq');
    await s.services.share.alterConfigs('rc-g', [{ name: 'share.auto.offset.reset', value: 'earliest' }]);
    await s.services.share.alterConfigs('rc-g', [{ name: 'share.isolation.level', value: 'read_committed' }]);
    const a = new Sharer(c, 'rc-g');
    const fetchAll = async (acks: { firstOffset: number; lastOffset: number; acknowledgeTypes: number[] }[] = []) =>
      recordsOf(await a.fetch([{ topicId: txqId, partitions: [{ partitionIndex: 0, acknowledgementBatches: acks }] }]));
    const accept = (got: Got[]) =>
      got.map((r) => ({ firstOffset: r.offset, lastOffset: r.offset, acknowledgeTypes: [1] }));

    await produce('txq', 0, ['a']);
    const open = await transaction(['b', 'c']);
    await produce('txq', 0, ['d']);
    const first = await fetchAll();
    expect(first.map((r) => [r.offset, r.value])).toEqual([[0, 'a']]);
    await open.end('commit');
    const second = await fetchAll(accept(first));
    expect(second.map((r) => [r.offset, r.value])).toEqual([
      [1, 'b'],
      [2, 'c'],
      [3, 'd'],
    ]);
    const aborted = await transaction(['e', 'f']);
    await aborted.end('abort');
    await produce('txq', 0, ['g']);
    const third = await fetchAll(accept(second));
    expect(third.map((r) => [r.offset, r.value, r.deliveryCount])).toEqual([[8, 'g', 1]]);
    await fetchAll(accept(third));
    const [view] = await s.services.share.describe('rc-g');
    expect(view).toMatchObject({ startOffset: 9, endOffset: 9, lag: 0 });
  });
});
