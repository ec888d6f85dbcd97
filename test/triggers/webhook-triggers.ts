/**
 * Webhook triggers in-process on one backend, for a suite run on each (call it in the describe):
 * the backend's storage for the suite, and per test a sink and an app delivering triggers over it,
 * both closed after the test.
 */
import { afterAll, afterEach, beforeAll, expect } from 'vitest';
import type { Storage } from '../../src/compose.js';
import type { TestBackend } from '../support/backends.js';
import { testApp } from '../support/test-app.js';
import { startSink, type Sink } from './webhook-sink.js';

export function webhookTriggers(backend: TestBackend) {
  let started: { storage: Storage; stop(): Promise<void> } | undefined;
  let opened: { sink: Sink; t: ReturnType<typeof testApp> } | undefined;
  beforeAll(async () => {
    started = await backend.start();
  });
  afterAll(() => started?.stop());
  afterEach(async () => {
    await opened?.t.services.triggers.runner.close();
    await opened?.sink.close();
    opened = undefined;
  });
  const current = () => {
    if (!opened) throw new Error('webhookTriggers: open() first, in a test');
    return opened;
  };
  return {
    get sink() {
      return current().sink;
    },
    get t() {
      return current().t;
    },
    /** This test's sink and app. */
    async open() {
      opened = { sink: await startSink(), t: testApp({ storage: started!.storage, runTriggers: true }) };
    },
    /** `open`, then the topic and a trigger `{topic}-hook` on it to the sink: the trigger as answered. */
    async setup(topic: string, partitions: number, trigger: Record<string, unknown> = {}, timeoutMs = 2000) {
      await this.open();
      const { t, sink } = current();
      expect((await t.call('POST', 'topics', { topic_name: topic, partitions_count: partitions })).status).toBe(201);
      const created = await t.call('POST', 'triggers', {
        trigger_name: `${topic}-hook`,
        topic_name: topic,
        target: { type: 'WEBHOOK', url: sink.url, timeout_ms: timeoutMs },
        ...trigger,
      });
      expect(created.status).toBe(201);
      return created.body;
    },
  };
}
