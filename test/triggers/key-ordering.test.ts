/**
 * Ordering KEY: one partition's records delivered by several invocations at once, each key in
 * order. Checked while it runs, with a slow target that fails one call in four: no two invocations
 * in flight hold the same key, a key's record is never delivered before its earlier ones were, and
 * the committed offset never passes a record the target has not acknowledged (the lowest not
 * done), while the lanes overlap.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { KafkaEvent } from '../../src/triggers/kafka-event.js';
import { testApp } from '../support/test-app.js';
import { eventually, recordValue, startSink, type Sink } from './webhook-sink.js';

describe('ordering KEY', () => {
  let sink: Sink;
  let t: ReturnType<typeof testApp>;
  afterEach(async () => {
    await t.services.triggers.runner.close();
    await sink.close();
  });

  const keysOf = (e: KafkaEvent) =>
    Object.values(e.records).flatMap((rs) => rs.map((r) => Buffer.from(r.key!, 'base64').toString()));

  it('runs lanes at once, keeps each key in order, commits only below what is done', async () => {
    sink = await startSink();
    t = testApp({ runTriggers: true });
    expect((await t.call('POST', 'topics', { topic_name: 'kk', partitions_count: 1 })).status).toBe(201);
    const created = await t.call('POST', 'triggers', {
      trigger_name: 'kk-hook',
      topic_name: 'kk',
      target: { type: 'WEBHOOK', url: sink.url, timeout_ms: 5000 },
      ordering: 'KEY',
      key_lanes: 4,
      batch_size: 3,
      maximum_batching_window_ms: 0,
    });
    expect(created.status).toBe(201);

    const problems: string[] = [];
    const inFlight = new Map<string, number>();
    let concurrent = 0;
    let maxConcurrent = 0;
    sink.answer = (event, call) => {
      for (const k of keysOf(event)) {
        if (inFlight.has(k)) problems.push(`key ${k} in two invocations at once`);
        inFlight.set(k, call);
      }
      maxConcurrent = Math.max(maxConcurrent, ++concurrent);
      return { delayMs: 15, status: call % 4 === 1 ? 500 : 200 };
    };
    sink.answered = (event) => {
      concurrent--;
      for (const k of keysOf(event)) inFlight.delete(k);
    };
    // Committed (read first) never past a record not acknowledged.
    let watching = true;
    const watch = (async () => {
      while (watching) {
        const committed = (await t.call('GET', 'triggers/kk-hook')).body.partitions[0].committed_offset as number;
        const acked = new Set(sink.delivered.map((r) => r.offset));
        for (let o = 0; o < committed; o++)
          if (!acked.has(o)) {
            problems.push(`committed ${committed} with offset ${o} not acknowledged`);
            break;
          }
        await new Promise((r) => setTimeout(r, 10));
      }
    })();

    const N = 80;
    const produce = async (from: number, to: number) => {
      for (let i = from; i < to; i++)
        expect(
          (
            await t.call('POST', 'topics/kk/records', {
              partition_id: 0,
              key: { type: 'STRING', data: `k${i % 8}` },
              value: { type: 'STRING', data: String(i) },
            })
          ).status,
        ).toBe(200);
    };
    await t.services.triggers.admin.pause('kk-hook');
    await produce(0, 60);
    await t.services.triggers.admin.resume('kk-hook');
    await produce(60, N);
    await eventually(async () => (await t.call('GET', 'triggers/kk-hook')).body.lag === 0, 60_000);
    watching = false;
    await watch;

    expect(problems).toEqual([]);
    expect(maxConcurrent).toBeGreaterThan(1);
    // Every record acknowledged; per key, first deliveries in offset order.
    const firsts = new Map<string, number[]>();
    const seen = new Set<number>();
    for (const r of sink.delivered) {
      if (seen.has(r.offset)) continue;
      seen.add(r.offset);
      const k = Buffer.from(r.key!, 'base64').toString();
      firsts.set(k, [...(firsts.get(k) ?? []), Number(recordValue(r))]);
    }
    expect(seen.size).toBe(N);
    for (const [k, values] of firsts) expect(values, k).toEqual([...values].sort((a, b) => a - b));
    // Lanes really interleave keys: offsets arrive out of global order.
    const arrival = [...seen];
    expect(arrival).not.toEqual([...arrival].sort((a, b) => a - b));
  }, 90_000);
});
