/** A transactional HTTP harness: the app over memory storage, a topic `out`, and JSON transactional produce. */
import { expect } from 'vitest';
import type { Storage } from '../../src/compose.js';
import { testApp } from '../support/test-app.js';

/** A clock the test moves. */
export const manualClock = (start = Date.now()) => {
  let t = start;
  return { now: () => t, advance: (ms: number) => (t += ms) };
};

export async function setup(
  options: {
    clock?: { now(): number };
    env?: Record<string, string>;
    topicConfigs?: Record<string, unknown>;
    storage?: Storage;
  } = {},
) {
  const t = testApp({
    ...(options.clock ? { clock: options.clock } : {}),
    ...(options.env ? { env: options.env } : {}),
    ...(options.storage ? { storage: options.storage } : {}),
  });
  expect(
    (await t.call('POST', 'topics', { topic_name: 'out', partitions_count: 2, ...options.topicConfigs })).status,
  ).toBe(201);
  const seq = new Map<string, number>();
  const init = async (id: string, timeoutMs = 60_000) => {
    const r = await t.call('POST', `transactions/${id}/init`, { transaction_timeout_ms: timeoutMs });
    expect(r.status).toBe(200);
    return { producer_id: r.body.producer_id as number, producer_epoch: r.body.producer_epoch as number };
  };
  /** A transactional JSON produce of `values` to one partition (sequences kept per producer, epoch and partition). */
  const produce = async (
    id: string,
    p: { producer_id: number; producer_epoch: number },
    partition: number,
    values: string[],
    keys?: string[],
  ) => {
    const key = `${p.producer_id}.${p.producer_epoch}.${partition}`;
    const base = seq.get(key) ?? 0;
    const r = await t.call('POST', 'topics/out/records:batch', {
      transactional_id: id,
      ...p,
      sequences: [{ partition_id: partition, base_sequence: base }],
      entries: values.map((v, i) => ({
        id: String(i),
        partition_id: partition,
        value: { type: 'STRING', data: v },
        ...(keys ? { key: { type: 'STRING', data: keys[i] } } : {}),
      })),
    });
    if (r.body.failures?.length === 0) seq.set(key, base + values.length);
    return r;
  };
  const fetchValues = async (partition: number, isolation: 'read_committed' | 'read_uncommitted', offset = 0) => {
    const r = await t.call(
      'GET',
      `topics/out/partitions/${partition}/records?offset=${offset}&format=string&isolation_level=${isolation}`,
    );
    expect(r.status).toBe(200);
    return { values: (r.body.records as { value: { data: string } }[]).map((x) => x.value.data), body: r.body };
  };
  return { ...t, init, produce, fetchValues };
}
