/**
 * A consumer's push connection waits only on the partitions it reads: a partition revoked in a
 * rebalance is disarmed, so the server stops posting its commits to this consumer. The consumers'
 * push connections go to a WebSocket server this test plays, which records each connection's
 * subscribe messages (each replaces what the connection waits on in a topic).
 */
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocketServer, type WebSocket } from 'ws';
import { Kafka, type Consumer } from '../../src/client/index.js';
import { startServer, stopServer, tempDir, type LocalServer } from '../support/local-server.js';
import { until } from '../support/until.js';

interface Subscribe {
  action: string;
  topic: string;
  partitions: { partition: number; offset: number }[];
}

describe('push arms across a rebalance', () => {
  let dir: Awaited<ReturnType<typeof tempDir>>;
  let server: LocalServer;
  let gateway: WebSocketServer;
  /** Each connection's subscribe messages, in connection order. */
  const connections: { ws: WebSocket; subscribes: Subscribe[] }[] = [];
  const consumers: Consumer[] = [];

  beforeAll(async () => {
    dir = await tempDir('client-push-revoke-');
    server = await startServer(dir.path, 0, { SCHEDULER_INTERVAL_MS: '0' });
    gateway = new WebSocketServer({ port: 0, host: '127.0.0.1' });
    gateway.on('connection', (ws) => {
      const c = { ws, subscribes: [] as Subscribe[] };
      connections.push(c);
      ws.on('message', (data) => {
        const m = JSON.parse(String(data)) as Subscribe;
        if (m.action === 'subscribe') c.subscribes.push(m);
      });
    });
    await new Kafka({ url: server.origin }).admin().createTopics({ topics: [{ topic: 'revoked', numPartitions: 2 }] });
  }, 60_000);
  afterAll(async () => {
    await Promise.all(consumers.map((c) => c.close().catch(() => {})));
    gateway.close();
    await stopServer(server);
    await dir.remove();
  });

  const member = async () => {
    const consumer = new Kafka({
      url: server.origin,
      pushUrl: `ws://127.0.0.1:${(gateway.address() as AddressInfo).port}/push`,
    }).consumer({
      groupId: 'revoking',
      autoOffsetReset: 'latest',
      pushFallbackPollMs: 120_000,
      pushRecheckIntervalMs: 120_000,
      heartbeatIntervalMs: 200,
    });
    consumers.push(consumer);
    await consumer.subscribe({ topics: ['revoked'] });
    await consumer.run({ eachMessage: async () => {} });
    return consumer;
  };
  /** What a connection waits on now: the partitions of its last subscribe to the topic. */
  const armedOn = (c: { subscribes: Subscribe[] }) =>
    (c.subscribes.filter((m) => m.topic === 'revoked').at(-1)?.partitions ?? []).map((p) => p.partition).sort();
  const assigned = (c: Consumer) =>
    c
      .assignment()
      .map((tp) => tp.partition)
      .sort();

  it('a partition revoked from a consumer is no longer armed on its connection', async () => {
    const first = await member();
    await until(
      'both partitions armed on the first connection',
      () => armedOn(connections[0] ?? { subscribes: [] }).length === 2,
    );
    expect(armedOn(connections[0]!)).toEqual([0, 1]);

    const second = await member();
    await until('one partition each', () => assigned(first).length === 1 && assigned(second).length === 1);
    const [mine] = assigned(first);
    // The first consumer's connection waits on its own partition only, once it is caught up there.
    await until(
      "the first connection armed on the first consumer's partition alone",
      () => JSON.stringify(armedOn(connections[0]!)) === JSON.stringify([mine]),
      10_000,
    );
    expect(assigned(first)).toEqual([mine]);
  });
});
