/**
 * Triggers with a webhook target, in-process through the app on the three backends: created over
 * the v3 API, woken by commits, delivered in order per partition with Lambda's Kafka event, their
 * positions in their own consumer group; paused, resumed, deleted; a failing target retried.
 */
import { describe, expect, it } from 'vitest';
import { allBackends } from '../support/backends.js';
import { eventually, recordValue } from './webhook-sink.js';
import { webhookTriggers } from './webhook-triggers.js';

describe.each(allBackends)('triggers with a webhook on $name', (backend) => {
  const w = webhookTriggers(backend);
  const setup = (topic: string, partitions = 3, trigger: Record<string, unknown> = {}) =>
    w.setup(topic, partitions, trigger);

  const produce = async (topic: string, partition: number, value: string, key?: string) =>
    expect(
      (
        await w.t.call('POST', `topics/${topic}/records`, {
          partition_id: partition,
          ...(key && { key: { type: 'STRING', data: key } }),
          value: { type: 'STRING', data: value },
          headers: [{ name: 'h', value: Buffer.from('hv').toString('base64') }],
        })
      ).status,
    ).toBe(200);

  it('delivers each commit in order per partition with the Kafka event shape, and commits after success', async () => {
    const created = await setup('orders');
    expect(created).toMatchObject({
      kind: 'KafkaTrigger',
      trigger_name: 'orders-hook',
      group_id: 'trigger.orders-hook',
      state: 'ENABLED',
      batch_size: 100,
    });
    for (let i = 0; i < 12; i++) await produce('orders', i % 3, `v${i}`, `k${i}`);
    await eventually(() => w.sink.delivered.length >= 12);
    const event = w.sink.events[0]!;
    expect(event.eventSource).toBe('SelfManagedKafka');
    expect(typeof event.bootstrapServers).toBe('string');
    const [partKey, records] = Object.entries(event.records)[0]!;
    expect(partKey).toMatch(/^orders-[0-2]$/);
    expect(records[0]).toMatchObject({
      topic: 'orders',
      timestampType: 'CREATE_TIME',
      headers: [{ h: [...Buffer.from('hv')] }],
    });
    expect(Buffer.from(records[0]!.key!, 'base64').toString()).toMatch(/^k\d+$/);
    for (let p = 0; p < 3; p++) {
      const got = w.sink.delivered.filter((r) => r.partition === p);
      expect(got.map((r) => r.offset)).toEqual([0, 1, 2, 3]);
      expect(got.map(recordValue)).toEqual([0, 1, 2, 3].map((i) => `v${i * 3 + p}`));
    }
    // Positions: the trigger's describe and its consumer group's lag agree, 0 behind.
    await eventually(async () => (await w.t.call('GET', 'triggers/orders-hook')).body.lag === 0);
    const described = (await w.t.call('GET', 'triggers/orders-hook')).body;
    expect(described.partitions.map((p: { committed_offset: number }) => p.committed_offset)).toEqual([4, 4, 4]);
    const lags = (await w.t.call('GET', 'consumer-groups/trigger.orders-hook/lags')).body.data;
    expect(lags.map((l: { current_offset: number; lag: number }) => [l.current_offset, l.lag])).toEqual([
      [4, 0],
      [4, 0],
      [4, 0],
    ]);
    const listed = (await w.t.call('GET', 'triggers')).body.data.map((d: { trigger_name: string }) => d.trigger_name);
    expect(listed).toContain('orders-hook');
  });

  it('starts at LATEST by default and at TRIM_HORIZON when asked', async () => {
    await w.open();
    expect((await w.t.call('POST', 'topics', { topic_name: 'early', partitions_count: 1 })).status).toBe(201);
    await produce('early', 0, 'before');
    const mk = (name: string, starting_position?: string) =>
      w.t.call('POST', 'triggers', {
        trigger_name: name,
        topic_name: 'early',
        target: { type: 'WEBHOOK', url: w.sink.url },
        ...(starting_position && { starting_position }),
      });
    expect((await mk('early-latest')).status).toBe(201);
    expect((await mk('early-trim', 'TRIM_HORIZON')).status).toBe(201);
    await eventually(() => w.sink.delivered.length >= 1);
    await produce('early', 0, 'after');
    await eventually(() => w.sink.delivered.length >= 3);
    await w.t.services.triggers.runner.idle();
    expect(w.sink.delivered.map(recordValue).sort()).toEqual(['after', 'after', 'before']);
  });

  it('retries a failing target, holding the partition, and delivers nothing while paused', async () => {
    await setup('flaky', 1);
    w.sink.answer = (_, call) => (call < 2 ? { status: 500 } : {});
    await produce('flaky', 0, 'a');
    await produce('flaky', 0, 'b');
    await eventually(() => w.sink.delivered.length >= 2);
    expect(w.sink.events.length).toBeGreaterThanOrEqual(3);
    expect(w.sink.delivered.map(recordValue)).toEqual(['a', 'b']);
    const paused = await w.t.call('POST', 'triggers/flaky-hook/pause');
    expect(paused.body.state).toBe('PAUSED');
    const before = w.sink.events.length;
    await produce('flaky', 0, 'c');
    await new Promise((r) => setTimeout(r, 300));
    expect(w.sink.events.length).toBe(before);
    expect((await w.t.call('GET', 'triggers/flaky-hook')).body.lag).toBe(1);
    expect((await w.t.call('POST', 'triggers/flaky-hook/resume')).body.state).toBe('ENABLED');
    await eventually(() => w.sink.delivered.some((r) => recordValue(r) === 'c'));
    expect((await w.t.call('DELETE', 'triggers/flaky-hook')).status).toBe(204);
    expect((await w.t.call('GET', 'triggers/flaky-hook')).status).toBe(404);
    await produce('flaky', 0, 'd');
    await new Promise((r) => setTimeout(r, 200));
    expect(w.sink.delivered.some((r) => recordValue(r) === 'd')).toBe(false);
  });

  it('commits up to the lowest failed offset of a partial batch response and retries from there', async () => {
    await setup('partial', 1, { function_response_types: ['ReportBatchItemFailures'] });
    expect((await w.t.call('POST', 'triggers/partial-hook/pause')).status).toBe(200);
    for (let i = 0; i < 5; i++) await produce('partial', 0, `v${i}`);
    w.sink.answer = (_e, call) =>
      call === 0 ? { body: { batchItemFailures: [{ itemIdentifier: { partition: 'partial-0', offset: 2 } }] } } : {};
    expect((await w.t.call('POST', 'triggers/partial-hook/resume')).status).toBe(200);
    await eventually(() => w.sink.events.length >= 2);
    const offsets = w.sink.events.map((e) => e.records['partial-0']!.map((r) => r.offset));
    expect(offsets[0]).toEqual([0, 1, 2, 3, 4]);
    expect(offsets[1]).toEqual([2, 3, 4]);
    await eventually(async () => {
      const d = await w.t.call('GET', 'triggers/partial-hook');
      return d.body.partitions[0].committed_offset === 5;
    });
    expect(w.sink.events).toHaveLength(2);
  });

  it('commits filtered records without invoking and delivers the ones a pattern matches', async () => {
    await setup('filtered', 1, { filter_criteria: { filters: [{ pattern: '{"value":{"kind":["order"]}}' }] } });
    for (const kind of ['ping', 'order', 'ping']) await produce('filtered', 0, JSON.stringify({ kind }));
    await eventually(async () => {
      const d = await w.t.call('GET', 'triggers/filtered-hook');
      return d.body.partitions[0].committed_offset === 3;
    });
    expect(w.sink.delivered.map((r) => r.offset)).toEqual([1]);
  });

  it('stores the delivery knobs and shows their defaults', async () => {
    const plain = await setup('knobs', 1);
    expect(plain).toMatchObject({
      maximum_batching_window_ms: 500,
      maximum_retry_attempts: -1,
      maximum_record_age_seconds: -1,
      bisect_batch_on_function_error: false,
      function_response_types: [],
      ordering: 'PARTITION',
    });
    expect(plain.on_failure_destination).toBeUndefined();
    const knobs = {
      maximum_batching_window_ms: 0,
      maximum_retry_attempts: 2,
      maximum_record_age_seconds: 60,
      bisect_batch_on_function_error: true,
      function_response_types: ['ReportBatchItemFailures'],
      on_failure_destination: 'kafka://knobs-failed',
      filter_criteria: { filters: [{ pattern: '{"value":{"kind":["order"]}}' }] },
      ordering: 'KEY',
      key_lanes: 4,
    };
    // The failure topic must exist.
    expect((await w.t.call('POST', 'topics', { topic_name: 'knobs-failed', partitions_count: 1 })).status).toBe(201);
    const res = await w.t.call('POST', 'triggers', {
      trigger_name: 'knobs-all',
      topic_name: 'knobs',
      target: { type: 'WEBHOOK', url: w.sink.url },
      ...knobs,
    });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject(knobs);
    expect((await w.t.call('GET', 'triggers/knobs-all')).body).toMatchObject(knobs);
  });

  it('answers bad requests with a Kafka error name and stores nothing', async () => {
    await setup('bad', 1);
    const bad = async (body: Record<string, unknown>, status: number, error: string) => {
      const res = await w.t.call('POST', 'triggers', {
        trigger_name: 'x',
        topic_name: 'bad',
        target: { type: 'WEBHOOK', url: w.sink.url },
        ...body,
      });
      expect(res.status).toBe(status);
      expect(res.body.error ?? res.body.error_code).toBeDefined();
      expect(JSON.stringify(res.body)).toContain(error);
    };
    await bad({ batch_size: 0 }, 400, 'batch_size');
    await bad({ batch_size: 10_001 }, 400, 'batch_size');
    await bad({ target: { type: 'WEBHOOK', url: 'ftp://x' } }, 400, 'http or https');
    await bad({ topic_name: 'nope' }, 404, 'UNKNOWN_TOPIC_OR_PARTITION');
    await bad({ trigger_name: 'bad-hook' }, 400, 'DUPLICATE_RESOURCE');
    await bad({ starting_position: 'AT_TIMESTAMP' }, 400, 'starting_position_timestamp');
    await bad({ maximum_batching_window_ms: 300_001 }, 400, 'maximum_batching_window_ms');
    await bad({ maximum_retry_attempts: -2 }, 400, 'maximum_retry_attempts');
    await bad({ maximum_record_age_seconds: 59 }, 400, 'maximum_record_age_seconds');
    await bad({ on_failure_destination: 'arn:aws:sqs:x' }, 400, 'kafka://');
    await bad({ on_failure_destination: 'kafka://a b' }, 400, 'INVALID_TOPIC_EXCEPTION');
    await bad({ filter_criteria: { filters: [{ pattern: '{"value"' }] } }, 400, 'not JSON');
    await bad({ filter_criteria: { filters: Array(6).fill({ pattern: '{}' }) } }, 400, 'at most 5');
    await bad({ function_response_types: ['Nope'] }, 400, 'function_response_types');
    await bad({ ordering: 'KEY', key_lanes: 0 }, 400, 'key_lanes');
    expect((await w.t.call('GET', 'triggers/x')).status).toBe(404);
  });
});
