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

const beat = async (body: Record<string, unknown>) =>
  (
    await c.request(m.ConsumerGroupHeartbeat, 0, {
      groupId: 'kip-group',
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
