/**
 * Triggers' metrics through the Metrics seam (src/metrics.ts): invocations, errors (failed
 * invocations), records filtered, records sent to the failure destination, and the offset lag a
 * delivery leaves behind its commit, counted by a delivery with a filter, a poison record retried
 * and given up on to a failure topic, and records after it delivered; each under the trigger's
 * own dimension too, and the local server's interval metrics per trigger.
 */
import { afterAll, expect, it } from 'vitest';
import { IntervalMetrics, type GaugeName, type Metrics, type MetricName } from '../../src/metrics.js';
import { createServices, createStorage } from '../../src/compose.js';
import { serverConfigFromEnv } from '../../src/config/server-config.js';
import { createApp } from '../../src/http/app.js';
import { BASE } from '../support/test-app.js';
import { eventually, recordValue, startSink } from './webhook-sink.js';

const counts = new Map<string, number>();
const gauges = new Map<string, number[]>();
/** What was reported with a trigger's dimension, by `{trigger}/{name}`. */
const own = new Map<string, number>();
const metrics: Metrics = {
  add: (name: MetricName, value: number, dimensions) => {
    counts.set(name, (counts.get(name) ?? 0) + value);
    if (dimensions) own.set(`${dimensions.Trigger}/${name}`, (own.get(`${dimensions.Trigger}/${name}`) ?? 0) + value);
  },
  gauge: (name: GaugeName, value: number, dimensions) => {
    gauges.set(name, [...(gauges.get(name) ?? []), value]);
    if (dimensions)
      own.set(`${dimensions.Trigger}/${name}`, Math.max(own.get(`${dimensions.Trigger}/${name}`) ?? 0, value));
  },
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
    // Every one of them under the trigger's own dimension as well.
    expect(Object.fromEntries(own)).toEqual({
      'm-hook/TriggerInvocations': 5,
      'm-hook/TriggerErrors': 3,
      'm-hook/TriggerRecordsFiltered': 1,
      'm-hook/TriggerRecordsToFailureDestination': 1,
      'm-hook/TriggerOffsetLag': Math.max(...lag),
    });
  } finally {
    await sink.close();
  }
});

it('ordering KEY counts filtered records and gauges the lag as PARTITION does', async () => {
  const sink = await startSink();
  try {
    expect((await call('POST', 'topics', { topic_name: 'k', partitions_count: 1 })).status).toBe(201);
    expect(
      (
        await call('POST', 'triggers', {
          trigger_name: 'k-hook',
          topic_name: 'k',
          target: { type: 'WEBHOOK', url: sink.url, timeout_ms: 2000 },
          starting_position: 'TRIM_HORIZON',
          batch_size: 1,
          maximum_batching_window_ms: 0,
          ordering: 'KEY',
          key_lanes: 2,
          filter_criteria: { filters: [{ pattern: '{"value":{"kind":["order"]}}' }] },
        })
      ).status,
    ).toBe(201);
    const values = [{ kind: 'order' }, { kind: 'other' }, { kind: 'order' }, { kind: 'other' }, { kind: 'order' }];
    const produced = await call('POST', 'topics/k/records:batch', {
      entries: values.map((v, i) => ({
        id: String(i),
        partition_id: 0,
        key: { type: 'STRING', data: `key-${i % 2}` },
        value: { type: 'JSON', data: v },
      })),
    });
    expect(produced.status).toBeLessThan(300);
    await eventually(
      async () => (await call('GET', 'triggers/k-hook')).body.partitions[0].committed_offset === 5,
      15_000,
    );
    await eventually(async () => own.get('k-hook/TriggerInvocations') === 3, 15_000);
    expect(own.get('k-hook/TriggerRecordsFiltered')).toBe(2);
    // The peak lag is under the trigger's own dimension; caught up, the last one reported is 0.
    expect(own.get('k-hook/TriggerOffsetLag')).toBeGreaterThan(0);
    expect(gauges.get('TriggerOffsetLag')?.at(-1)).toBe(0);
  } finally {
    await sink.close();
  }
});

it("the local server's interval metrics: totals, and each trigger's own values until drained", () => {
  const m = new IntervalMetrics();
  m.add('TriggerInvocations', 2, { Trigger: 'a' });
  m.add('TriggerInvocations', 1, { Trigger: 'b' });
  m.gauge('TriggerOffsetLag', 7, { Trigger: 'a' });
  m.gauge('TriggerOffsetLag', 3, { Trigger: 'a' });
  m.add('ProduceRecords', 4);
  expect(m.drain()).toEqual({ TriggerInvocations: 3, TriggerOffsetLag: 7, ProduceRecords: 4 });
  expect(Object.fromEntries(m.drainByTrigger())).toEqual({
    a: { TriggerInvocations: 2, TriggerOffsetLag: 7 },
    b: { TriggerInvocations: 1 },
  });
  // A trigger that reported nothing since publishes nothing: its lag is not carried over.
  expect(m.drainByTrigger().size).toBe(0);
  expect(m.drain()).toEqual({ TriggerOffsetLag: 3 });
});
