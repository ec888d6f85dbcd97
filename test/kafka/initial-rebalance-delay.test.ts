/**
 * group.initial.rebalance.delay.ms through kafkajs: two consumers of a new group started half a
 * second apart share the first generation, as with Kafka's 3 s default, instead of the first taking
 * every partition until a rebalance moves some.
 */
import { Kafka, logLevel, type Consumer } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startKafkaServer, type TestKafkaServer } from './support/kafka-server.js';

process.env.KAFKAJS_NO_PARTITIONER_WARNING = '1';

const DELAY_MS = 3000;
let s: TestKafkaServer;
let kafka: Kafka;
beforeAll(async () => {
  s = await startKafkaServer({}, { GROUP_INITIAL_REBALANCE_DELAY_MS: String(DELAY_MS) });
  kafka = new Kafka({ brokers: [s.broker], clientId: 'initial-delay', logLevel: logLevel.NOTHING });
});
afterAll(async () => {
  await s?.close();
});

describe('group.initial.rebalance.delay.ms', () => {
  it('two consumers started within a second both get partitions in the first generation', async () => {
    await s.services.topics.create({ name: 'delayed', partitionCount: 4, replicationFactor: 1 });
    const firstAssignments: number[][] = [];
    const consumers: Consumer[] = [];
    const start = async () => {
      const c = kafka.consumer({ groupId: 'delayed-group', sessionTimeout: 10_000, heartbeatInterval: 500 });
      consumers.push(c);
      let joined = false;
      c.on(c.events.GROUP_JOIN, (e) => {
        if (joined) return;
        joined = true;
        firstAssignments.push(e.payload.memberAssignment.delayed ?? []);
      });
      await c.connect();
      await c.subscribe({ topic: 'delayed' });
      await c.run({ eachMessage: async () => {} });
    };
    try {
      const started = Date.now();
      // consumer.run resolves once the consumer joined: the second starts while the first waits.
      const first = start();
      await new Promise((r) => setTimeout(r, 500));
      await Promise.all([first, start()]);
      const end = Date.now() + 30_000;
      while (firstAssignments.length < 2 && Date.now() < end) await new Promise((r) => setTimeout(r, 50));
      expect(firstAssignments).toHaveLength(2);
      // The first join waited for the second consumer rather than completing alone.
      expect(Date.now() - started).toBeGreaterThanOrEqual(DELAY_MS);
      expect((await s.services.groups.classic.describe('delayed-group'))!.generationId).toBe(1);
      for (const a of firstAssignments) expect(a.length).toBeGreaterThan(0);
      expect(firstAssignments.flat().sort()).toEqual([0, 1, 2, 3]);
    } finally {
      await Promise.all(consumers.map((c) => c.disconnect()));
    }
  }, 60_000);
});
