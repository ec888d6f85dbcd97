/**
 * Triggers' metrics as the scheduled function publishes them: a run that delivers two triggers
 * writes one EMF line of totals (dimension Service, as every function's) and one line per trigger
 * (dimensions Service and Trigger) with that trigger's invocations, errors and the highest offset
 * lag its commits left, the gauge the run knows after each commit (Lambda's OffsetLag).
 */
import { afterAll, expect, it } from 'vitest';
import { inScope, Scope, scopeMetrics, type Telemetry } from '../../functions/observability.js';
import { createServices, createStorage } from '../../src/compose.js';
import { serverConfigFromEnv } from '../../src/config/server-config.js';
import { createApp } from '../../src/http/app.js';
import { BASE } from '../support/test-app.js';
import { startSink } from '../triggers/webhook-sink.js';

const config = serverConfigFromEnv({ STORAGE_BACKEND: 'memory', GROUP_INITIAL_REBALANCE_DELAY_MS: '0' });
const storage = createStorage(config.backend);
// The functions that serve requests (no deliveries), and the scheduler's, which delivers, over one storage.
const serving = createServices(config, storage, undefined, {});
const scheduler = createServices(config, storage, undefined, { runTriggers: true, metrics: scopeMetrics });
const app = createApp(serving, { logError: () => {} });
afterAll(() => scheduler.triggers.runner.close());
const call = async (method: string, path: string, body?: unknown) => {
  const res = await app.request(`${BASE}/${path}`, {
    method,
    headers: { 'content-type': 'application/json' },
    ...(body !== undefined && { body: JSON.stringify(body) }),
  });
  return { status: res.status, body: await res.text() };
};

it('one EMF line of totals and one per trigger, with its offset lag', async () => {
  const ok = await startSink();
  const failing = await startSink();
  failing.answer = () => ({ status: 500 });
  try {
    expect((await call('POST', 'topics', { topic_name: 'orders', partitions_count: 1 })).status).toBe(201);
    for (const [name, sink] of [
      ['orders-ok', ok],
      ['orders-failing', failing],
    ] as const)
      expect(
        (
          await call('POST', 'triggers', {
            trigger_name: name,
            topic_name: 'orders',
            target: { type: 'WEBHOOK', url: sink.url, timeout_ms: 2000 },
            starting_position: 'TRIM_HORIZON',
            batch_size: 1,
            maximum_batching_window_ms: 0,
            maximum_retry_attempts: 0,
          })
        ).status,
      ).toBe(201);
    const produced = await call('POST', 'topics/orders/records:batch', {
      entries: [0, 1, 2].map((i) => ({ id: String(i), partition_id: 0, value: { type: 'JSON', data: { i } } })),
    });
    expect(produced.status).toBeLessThan(300);

    const lines: string[] = [];
    const t: Telemetry = {
      namespace: 'S3KafkaLog',
      service: 'log',
      functionName: 'scheduler',
      write: (line) => void lines.push(line),
      now: () => 0,
    };
    await inScope(t, new Scope('run-1'), () => scheduler.triggers.runner.deliverDue(Date.now() + 20_000));
    const emf = lines.map((l) => JSON.parse(l)).filter((l) => l._aws);
    const dimensions = (l: { _aws: { CloudWatchMetrics: { Dimensions: string[][] }[] } }) =>
      l._aws.CloudWatchMetrics[0]!.Dimensions;
    const totals = emf.filter((l) => dimensions(l)[0]!.length === 1);
    expect(totals).toHaveLength(1);
    // Each trigger: 3 invocations of one record; the failing one's all failed (and were dropped).
    expect(totals[0]).toMatchObject({ Service: 'log', TriggerInvocations: 6, TriggerErrors: 3, TriggerOffsetLag: 2 });
    const own = Object.fromEntries(emf.filter((l) => dimensions(l)[0]!.length === 2).map((l) => [l.Trigger, l]));
    expect(Object.keys(own).sort()).toEqual(['orders-failing', 'orders-ok']);
    expect(dimensions(own['orders-ok'])).toEqual([['Service', 'Trigger']]);
    expect(own['orders-ok']).toMatchObject({ Service: 'log', TriggerInvocations: 3, TriggerOffsetLag: 2 });
    expect(own['orders-ok'].TriggerErrors).toBeUndefined();
    expect(own['orders-failing']).toMatchObject({ TriggerInvocations: 3, TriggerErrors: 3, TriggerOffsetLag: 2 });
    expect(own['orders-ok']._aws.CloudWatchMetrics[0].Metrics).toContainEqual({
      Name: 'TriggerOffsetLag',
      Unit: 'Count',
    });
  } finally {
    await ok.close();
    await failing.close();
  }
});
