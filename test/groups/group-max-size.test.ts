/**
 * group.consumer.max.size (KIP-848 groups) and group.max.size (classic groups): a new member of a
 * full group is refused with GROUP_MAX_SIZE_REACHED, over HTTP and over the Kafka listener; members
 * already in the group keep their place, and a place freed is taken again, also by a member whose
 * session ended (Kafka counts live members only) before the session timer fired.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createStorage } from '../../src/compose.js';
import { GroupCoordinator, SESSION_TIMER_KIND } from '../../src/groups/coordinator.js';
import * as m from '../../src/kafka/protocol/messages/index.js';
import { TopicRegistry } from '../../src/topics/topics.js';
import { ERRORS } from '../../src/wire/errors.js';
import { startKafkaServer, type TestKafkaServer } from '../kafka/support/kafka-server.js';
import { RawClient } from '../kafka/support/raw-client.js';
import { testApp } from '../support/test-app.js';
import { manualClock } from './helpers.js';

describe('group.consumer.max.size over HTTP', () => {
  const { call } = testApp({ env: { GROUP_CONSUMER_MAX_SIZE: '2' } });
  const join = (memberId = '') =>
    call('POST', 'consumer-groups/full/consumers:heartbeat', {
      member_id: memberId,
      member_epoch: 0,
      subscribed_topic_names: ['t'],
    });

  it('refuses the member past the limit with 409 GROUP_MAX_SIZE_REACHED; a freed place is taken again', async () => {
    await call('POST', 'topics', { topic_name: 't', partitions_count: 2 });
    const a = await join();
    const b = await join();
    expect([a.status, b.status]).toEqual([200, 200]);
    const c = await join();
    expect(c.status).toBe(409);
    expect(c.body).toMatchObject({ error: 'GROUP_MAX_SIZE_REACHED', error_code: 40915 });
    expect(c.body.message).toContain('group.consumer.max.size=2');

    // A member of the group rejoining (epoch 0 with its id) is not a new member.
    expect((await join(a.body.member_id)).status).toBe(200);
    const leave = await call('POST', 'consumer-groups/full/consumers:heartbeat', {
      member_id: b.body.member_id,
      member_epoch: -1,
    });
    expect(leave.status).toBe(200);
    expect((await join()).status).toBe(200);
  });

  it('reports both limits as broker configs', async () => {
    const configs = await call('GET', 'broker-configs');
    const value = (name: string) =>
      configs.body.data.find((c: { name: string; value: string }) => c.name === name)?.value;
    expect(value('group.consumer.max.size')).toBe('2');
    expect(value('group.max.size')).toBe('2147483647');
  });
});

describe('group.consumer.max.size counts live members', () => {
  it('a member whose session ended holds no place, though the session timer is not due yet', async () => {
    const clock = manualClock();
    const { metadata } = createStorage({ kind: 'memory', replicaStores: 1 });
    const topics = new TopicRegistry(metadata, clock, 1);
    await topics.create({ name: 't', partitionCount: 4, replicationFactor: 1 });
    const coordinator = new GroupCoordinator({ metadata, clock, topics, limits: { consumerMaxSize: 2 } });
    const join = () =>
      coordinator.heartbeat('g', { memberId: '', memberEpoch: 0, subscribedTopics: ['t'], sessionTimeoutMs: 10_000 });
    let a = await join();
    let b = await join();
    await expect(join()).rejects.toMatchObject({ errorName: 'GROUP_MAX_SIZE_REACHED' });
    // Both heart-beat for 15 s; the session timer fires then and finds nobody expired, so it is
    // re-armed a session later than the earliest deadline (one timer write per session, not per beat).
    for (let i = 0; i < 5; i++) {
      clock.advance(3_000);
      a = await coordinator.heartbeat('g', { memberId: a.memberId, memberEpoch: a.memberEpoch });
      b = await coordinator.heartbeat('g', { memberId: b.memberId, memberEpoch: b.memberEpoch });
    }
    let expired = 0;
    await coordinator.timerHandlers()[SESSION_TIMER_KIND]!(
      { kind: SESSION_TIMER_KIND, id: 'g', expiry: clock.now(), payload: { groupId: 'g' } },
      (_, n) => (expired += n),
    );
    expect(expired).toBe(0);
    // The second member goes silent; the first heart-beats on past the other's session (and the
    // span its last heartbeat may have gone unwritten), the timer not due yet.
    for (let i = 0; i < 5; i++) {
      clock.advance(3_000);
      a = await coordinator.heartbeat('g', { memberId: a.memberId, memberEpoch: a.memberEpoch });
    }
    const c = await join();
    expect(c.memberEpoch).toBeGreaterThan(0);
    await expect(join()).rejects.toMatchObject({ errorName: 'GROUP_MAX_SIZE_REACHED' });
  });
});

describe('the limits over the Kafka listener', () => {
  let s: TestKafkaServer;
  let c: RawClient;
  beforeAll(async () => {
    s = await startKafkaServer({}, { GROUP_CONSUMER_MAX_SIZE: '1', GROUP_MAX_SIZE: '1' });
    await s.services.topics.create({ name: 'limited', partitionCount: 2, replicationFactor: 1 });
    c = await RawClient.open(s.broker);
  });
  afterAll(async () => {
    c?.close();
    await s?.close();
  });

  it('ConsumerGroupHeartbeat: a second member of a group of group.consumer.max.size=1 is GROUP_MAX_SIZE_REACHED', async () => {
    const beat = async () =>
      (
        await c.request(m.ConsumerGroupHeartbeat, 0, {
          groupId: 'kip-full',
          memberId: '',
          memberEpoch: 0,
          instanceId: null,
          rackId: null,
          rebalanceTimeoutMs: 10_000,
          subscribedTopicNames: ['limited'],
          serverAssignor: null,
          topicPartitions: null,
        })
      ).body;
    expect((await beat()).errorCode).toBe(0);
    const refused = await beat();
    expect(refused.errorCode).toBe(ERRORS.GROUP_MAX_SIZE_REACHED.code);
    expect(refused.errorCode).toBe(81);
  });

  it('JoinGroup: a new member of a classic group of group.max.size=1 is GROUP_MAX_SIZE_REACHED; ids handed out count', async () => {
    const join = async (memberId: string) =>
      (
        await c.request(m.JoinGroup, 5, {
          groupId: 'classic-full',
          sessionTimeoutMs: 10_000,
          rebalanceTimeoutMs: 10_000,
          memberId,
          groupInstanceId: null,
          protocolType: 'consumer',
          protocols: [{ name: 'range', metadata: Buffer.from([0, 0, 0, 0, 0, 0]) }],
        })
      ).body;
    const first = await join('');
    expect(first.errorCode).toBe(ERRORS.MEMBER_ID_REQUIRED.code);
    // The id handed to the first member holds the one place until it joins with it.
    expect((await join('')).errorCode).toBe(ERRORS.GROUP_MAX_SIZE_REACHED.code);
    const joined = await join(first.memberId);
    expect(joined).toMatchObject({ errorCode: 0, memberId: first.memberId });
    expect((await join('')).errorCode).toBe(ERRORS.GROUP_MAX_SIZE_REACHED.code);
  });
});
