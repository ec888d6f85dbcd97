/**
 * A local server for the log and, beside it, a WebSocket server the test plays API Gateway's push
 * API with: the consumers' push connections go to it, it keeps each connection's messages (their
 * subscribes), and the test sends the notifier's messages on a connection itself. Started before
 * the enclosing describe's tests, stopped after them with the consumers made through it.
 */
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll } from 'vitest';
import { type WebSocket, WebSocketServer } from 'ws';
import { type ConnectionConfig, type Consumer, type ConsumerConfig, Kafka } from '../../src/client/index.js';
import { type LocalServer, startServer, stopServer, tempDir } from './local-server.js';

export interface PushConnection {
  ws: WebSocket;
  /** Each message the consumer sent on it, parsed, in order. */
  messages: Record<string, unknown>[];
}

export function localServerWithPushGateway(
  dirPrefix: string,
  topics: { topic: string; numPartitions: number }[],
): {
  readonly server: LocalServer;
  /** The connections in the order they opened. */
  readonly connections: PushConnection[];
  /** A consumer whose push connection goes to the gateway; its fallback polls and re-checks are off (2 minutes). */
  consumer(config?: ConsumerConfig, connection?: Partial<ConnectionConfig>): Consumer;
} {
  let dir: Awaited<ReturnType<typeof tempDir>>;
  let server: LocalServer | undefined;
  let gateway: WebSocketServer;
  const connections: PushConnection[] = [];
  const consumers: Consumer[] = [];

  beforeAll(async () => {
    dir = await tempDir(dirPrefix);
    server = await startServer(dir.path, 0, { SCHEDULER_INTERVAL_MS: '0' });
    gateway = new WebSocketServer({ port: 0, host: '127.0.0.1' });
    gateway.on('connection', (ws) => {
      const c: PushConnection = { ws, messages: [] };
      connections.push(c);
      ws.on('message', (data) => c.messages.push(JSON.parse(String(data))));
    });
    await new Kafka({ url: server.origin }).admin().createTopics({ topics });
  }, 60_000);
  afterAll(async () => {
    await Promise.all(consumers.map((c) => c.close().catch(() => {})));
    gateway?.close();
    await stopServer(server);
    await dir?.remove();
  });

  return {
    get server() {
      if (!server) throw new Error('localServerWithPushGateway: read its server in a test');
      return server;
    },
    connections,
    consumer(config = {}, connection = {}) {
      const consumer = new Kafka({
        url: this.server.origin,
        pushUrl: `ws://127.0.0.1:${(gateway.address() as AddressInfo).port}/push`,
        ...connection,
      }).consumer({ pushFallbackPollMs: 120_000, pushRecheckIntervalMs: 120_000, ...config });
      consumers.push(consumer);
      return consumer;
    },
  };
}
