/**
 * A consumer's push connection waits only on the partitions it reads: a partition revoked in a
 * rebalance is disarmed, so the server stops posting its commits to this consumer. The consumers'
 * push connections go to a WebSocket server this test plays, which records each connection's
 * subscribe messages (each replaces what the connection waits on in a topic).
 */
import { describe, expect, it } from 'vitest';
import type { Consumer } from '../../src/client/index.js';
import { localServerWithPushGateway, type PushConnection } from '../support/push-gateway.js';
import { until } from '../support/until.js';

interface Subscribe {
  action: string;
  topic: string;
  partitions: { partition: number; offset: number }[];
}

describe('push arms across a rebalance', () => {
  const h = localServerWithPushGateway('client-push-revoke-', [{ topic: 'revoked', numPartitions: 2 }]);

  const member = async () => {
    const consumer = h.consumer({ groupId: 'revoking', autoOffsetReset: 'latest', heartbeatIntervalMs: 200 });
    await consumer.subscribe({ topics: ['revoked'] });
    await consumer.run({ eachMessage: async () => {} });
    return consumer;
  };
  /** What a connection waits on now: the partitions of its last subscribe to the topic. */
  const armedOn = (c: PushConnection | undefined) =>
    ((c?.messages ?? []) as unknown as Subscribe[])
      .filter((m) => m.action === 'subscribe' && m.topic === 'revoked')
      .at(-1)
      ?.partitions.map((p) => p.partition)
      .sort() ?? [];
  const assigned = (c: Consumer) =>
    c
      .assignment()
      .map((tp) => tp.partition)
      .sort();

  it('a partition revoked from a consumer is no longer armed on its connection', async () => {
    const first = await member();
    await until('both partitions armed on the first connection', () => armedOn(h.connections[0]).length === 2);
    expect(armedOn(h.connections[0])).toEqual([0, 1]);

    const second = await member();
    await until('one partition each', () => assigned(first).length === 1 && assigned(second).length === 1);
    const [mine] = assigned(first);
    // The first consumer's connection waits on its own partition only, once it is caught up there.
    await until(
      "the first connection armed on the first consumer's partition alone",
      () => JSON.stringify(armedOn(h.connections[0])) === JSON.stringify([mine]),
      10_000,
    );
    expect(assigned(first)).toEqual([mine]);
  });
});
