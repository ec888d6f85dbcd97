/**
 * Triggers' metrics through the Metrics seam (src/metrics.ts): invocations, errors (failed
 * invocations), records filtered, records sent to the failure destination, and the offset lag a
 * delivery leaves behind its commit, counted by a delivery with a filter, a poison record retried
 * and given up on to a failure topic, and records after it delivered.
 */
import { afterAll, expect, it } from 'vitest';
import type { GaugeName, Metrics, MetricName } from '../../src/metrics.js';
import { createServices, createStorage } from '../../src/compose.js';
import { serverConfigFromEnv } from '../../src/config/server-config.js';
import { createApp } from '../../src/http/app.js';
import { BASE } from '../support/test-app.js';
import { eventually, recordValue, startSink } from './webhook-sink.js';

const counts = new Map<string, number>();
const gauges = new Map<string, number[]>();
const metrics: Metrics = {
  add: (name: MetricName, value: number) => counts.set(name, (counts.get(name) ?? 0) + value),
  gauge: (name: GaugeName, value: number) => gauges.set(name, [...(gauges.get(name) ?? []), value]),
};
const config = serverConfigFromEnv({ STORAGE_BACKEND: 'memory', GROUP_INITIAL_REBALANCE_DELAY_MS: '0' });
const services = createServices(config, createStorage(config.backend), undefined, { runTriggers: true, metrics });
const app = createApp(services, { logError: () => {} });
afterAll(() => services.triggers.runner.close());
const call = async (method: string, path: string, body?: unknown) => {
  const res = await app.request(`${BASE}/${path}`, {
    method,
    headers: { 'content-type': 'application/json' },
    ...(body !== undefined && { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined };
};

it('counts invocations, errors, filtered records and records sent to the failure destination; gauges the lag', async () => {
  const sink = await startSink();
  try {
    // The poison record fails every invocation; the others succeed.
    sink.answer = (event) =>
      Object.values(event.records)
        .flat()
        .some((r) => recordValue(r)?.includes('poison'))
        ? { status: 500 }
        : {};
    for (const topic of ['m', 'm-failed'])
      expect((await call('POST', 'topics', { topic_name: topic, partitions_count: 1 })).status).toBe(201);
    expect(
      (
        await call('POST', 'triggers', {
          trigger_name: 'm-hook',
          topic_name: 'm',
          target: { type: 'WEBHOOK', url: sink.url, timeout_ms: 2000 },
          starting_position: 'TRIM_HORIZON',
          batch_size: 1,
          maximum_batching_window_ms: 0,
          maximum_retry_attempts: 2,
          on_failure_destination: 'kafka://m-failed',
          filter_criteria: { filters: [{ pattern: '{"value":{"kind":["order"]}}' }] },
        })
      ).status,
    ).toBe(201);
    const values = [
      { kind: 'order', n: 1 },
      { kind: 'other' },
      { kind: 'order', poison: true },
      { kind: 'order', n: 2 },
    ];
    const produced = await call('POST', 'topics/m/records:batch', {
      entries: values.map((v, i) => ({ id: String(i), partition_id: 0, value: { type: 'JSON', data: v } })),
    });
    expect(produced.status).toBeLessThan(300);
    await eventually(
      async () => (await call('GET', 'triggers/m-hook')).body.partitions[0].committed_offset === 4,
      15_000,
    );
    // Invoked: n=1 once, the poison record 3 times (the attempt and 2 retries), n=2 once.
    expect(counts.get('TriggerInvocations')).toBe(5);
    expect(counts.get('TriggerErrors')).toBe(3);
    expect(counts.get('TriggerRecordsFiltered')).toBe(1);
    expect(counts.get('TriggerRecordsToFailureDestination')).toBe(1);
    // The lag after each commit, down to 0 once caught up.
    const lag = gauges.get('TriggerOffsetLag') ?? [];
    expect(lag.length).toBeGreaterThan(0);
    expect(Math.max(...lag)).toBeGreaterThan(0);
    expect(lag[lag.length - 1]).toBe(0);
  } finally {
    await sink.close();
  }
});
