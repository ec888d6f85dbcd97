/**
 * A group of Kafka's classic protocol (members joined through the Kafka listener) as the HTTP API
 * describes it: its members, state and assignment, read from the classic item and the consumer
 * protocol bytes; before, the view read the group's empty KIP-848 item and said Empty.
 */
import { describe, expect, it } from 'vitest';
import { groupApp } from '../groups/helpers.js';

/** Kafka's ConsumerProtocolSubscription v0: topics, no user data. */
function subscription(topics: string[]): Buffer {
  const parts = [Buffer.from([0, 0]), int32(topics.length), ...topics.map(str), int32(-1)];
  return Buffer.concat(parts);
}
/** Kafka's ConsumerProtocolAssignment v0: partitions by topic, no user data. */
function assignment(byTopic: Record<string, number[]>): Buffer {
  const parts = [Buffer.from([0, 0]), int32(Object.keys(byTopic).length)];
  for (const [t, ps] of Object.entries(byTopic)) parts.push(str(t), int32(ps.length), ...ps.map(int32));
  parts.push(int32(-1));
  return Buffer.concat(parts);
}
const int32 = (n: number) => {
  const b = Buffer.alloc(4);
  b.writeInt32BE(n);
  return b;
};
const str = (s: string) => {
  const b = Buffer.alloc(2);
  b.writeInt16BE(Buffer.byteLength(s));
  return Buffer.concat([b, Buffer.from(s)]);
};

describe('a classic group over HTTP', () => {
  it('is described with its members, state and assignment, not as Empty', async () => {
    const g = groupApp();
    await g.createTopic('orders', 2);
    const classic = g.services.groups.classic;
    const joined = await classic.join({
      groupId: 'kcat',
      memberId: '', // v0-3: the id is given at once
      groupInstanceId: null,
      clientId: 'rdkafka',
      clientHost: '/127.0.0.1',
      sessionTimeoutMs: 45_000,
      rebalanceTimeoutMs: 300_000,
      protocolType: 'consumer',
      protocols: [{ name: 'range', metadata: subscription(['orders']) }],
      requireKnownMemberId: false,
    });
    const m1 = joined.memberId;
    await classic.sync('kcat', joined.generationId, m1, [{ memberId: m1, assignment: assignment({ orders: [0, 1] }) }]);

    const d = await g.describe('kcat');
    expect(d).toMatchObject({
      consumer_group_id: 'kcat',
      state: 'STABLE',
      type: 'CLASSIC',
      is_simple: false,
      partition_assignor: 'range',
      members: [
        {
          consumer_id: m1,
          client_id: 'rdkafka',
          member_epoch: joined.generationId,
          subscribed_topic_names: ['orders'],
          assignment: [
            { topic_name: 'orders', partition_id: 0 },
            { topic_name: 'orders', partition_id: 1 },
          ],
        },
      ],
    });
    expect(
      d.partitions.map((p: { partition_id: number; consumer_id: string }) => [p.partition_id, p.consumer_id]),
    ).toEqual([
      [0, m1],
      [1, m1],
    ]);

    // The list shows it so too.
    const listed = (await g.call('GET', 'consumer-groups')).body.data;
    expect(listed.find((x: { consumer_group_id: string }) => x.consumer_group_id === 'kcat')).toMatchObject({
      state: 'STABLE',
      type: 'CLASSIC',
      partition_assignor: 'range',
    });

    // Once its member leaves, the group is Empty again.
    await classic.leave('kcat', [m1]);
    expect((await g.describe('kcat')).state).toBe('EMPTY');
  });
});
