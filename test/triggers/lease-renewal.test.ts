/**
 * The delivery lease is written when it must be, not per invocation: a claim holds it for two
 * invocations' time and a renewal comes only once less than one is left, so delivering a backlog
 * batch after batch writes the lease a handful of times (claim, release), with one invocation in
 * flight per partition (PARTITION) or per lane (KEY).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createStorage } from '../../src/compose.js';
import type { MetadataStore } from '../../src/storage/ports.js';
import { testApp } from '../support/test-app.js';
import { eventually, startSink, type Sink } from './webhook-sink.js';

/** The store, counting the writes of items whose partition key starts with `prefix`. */
function countingPuts(metadata: MetadataStore, prefix: string) {
  const counted = { puts: 0 };
  const store = new Proxy(metadata, {
    get(target, name) {
      if (name === 'put')
        return (pk: string, ...rest: Parameters<MetadataStore['put']> extends [string, ...infer R] ? R : never) => {
          if (pk.startsWith(prefix)) counted.puts++;
          return target.put(pk, ...rest);
        };
      const v = Reflect.get(target, name);
      return typeof v === 'function' ? v.bind(target) : v;
    },
  });
  return { store, counted };
}

describe.each(['PARTITION', 'KEY'] as const)('the delivery lease with ordering %s', (ordering) => {
  let sink: Sink;
  let t: ReturnType<typeof testApp>;
  afterEach(async () => {
    await t.services.triggers.runner.close();
    await sink.close();
  });

  it('is written a few times for a backlog of many invocations, not once per invocation', async () => {
    const storage = createStorage({ kind: 'memory', replicaStores: 1 });
    const { store, counted } = countingPuts(storage.metadata, 'trigger#lr-hook');
    sink = await startSink();
    t = testApp({ storage: { ...storage, metadata: store }, runTriggers: true });
    expect((await t.call('POST', 'topics', { topic_name: 'lr', partitions_count: 1 })).status).toBe(201);
    expect(
      (
        await t.call('POST', 'triggers', {
          trigger_name: 'lr-hook',
          topic_name: 'lr',
          target: { type: 'WEBHOOK', url: sink.url, timeout_ms: 5000 },
          batch_size: 1,
          maximum_batching_window_ms: 0,
          ordering,
          key_lanes: 4,
        })
      ).status,
    ).toBe(201);
    await t.services.triggers.admin.pause('lr-hook');
    const N = 40;
    for (let i = 0; i < N; i++)
      expect(
        (
          await t.call('POST', 'topics/lr/records', {
            partition_id: 0,
            key: { type: 'STRING', data: `k${i % 8}` },
            value: { type: 'STRING', data: String(i) },
          })
        ).status,
      ).toBe(200);
    const before = counted.puts;
    await t.services.triggers.admin.resume('lr-hook');
    await eventually(async () => (await t.call('GET', 'triggers/lr-hook')).body.lag === 0, 30_000);
    await t.services.triggers.runner.idle();
    expect(new Set(sink.delivered.map((r) => r.offset)).size).toBe(N);
    expect(sink.events.length).toBeGreaterThanOrEqual(N);
    // A claim and a release; a commit's kick may add a release attempt and a claim of its own.
    expect(counted.puts - before).toBeLessThanOrEqual(4);
  });
});
