/**
 * Triggers in the local server (`npm start`), killed with SIGKILL while a delivery is in flight and
 * started again on the same data: the new process re-arms the partitions the dead one left (once
 * its lease ran out), every record reaches the webhook at least once, in order per partition, and
 * the committed offsets are never ahead of what the webhook acknowledged; with ordering KEY, each
 * key in order and the committed offset never past a record not yet acknowledged.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { startServer, stopServer, tempDir, type LocalServer } from '../support/local-server.js';
import { ackedUpTo, eventually, orderProblems, startSink, type Sink } from './webhook-sink.js';

const B = '/v3/clusters/local';
const PARTITIONS = 3;
const ENV = { SCHEDULER_INTERVAL_MS: '0' };

describe('triggers in the local server, killed mid-delivery', () => {
  let server: LocalServer | undefined;
  let sink: Sink;
  let dir: Awaited<ReturnType<typeof tempDir>>;
  afterAll(async () => {
    await stopServer(server);
    await sink?.close();
    await dir?.remove();
  });

  const call = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${server!.origin}${B}/${path}`, {
      method,
      headers: { 'content-type': 'application/json' },
      ...(body !== undefined && { body: JSON.stringify(body) }),
    });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : undefined };
  };
  /**
   * A fresh data dir and sink (answering in 40 ms: slow enough that the kill lands while the webhook
   * holds a batch), a server on them, the topic and a trigger of batches of 2 to the sink.
   */
  async function start(topic: string, partitions: number, trigger: Record<string, unknown>) {
    await stopServer(server);
    await sink?.close();
    await dir?.remove();
    dir = await tempDir(`trigger-kill-${topic}-`);
    sink = await startSink();
    sink.answer = () => ({ delayMs: 40 });
    server = await startServer(dir.path, 0, ENV);
    expect((await call('POST', 'topics', { topic_name: topic, partitions_count: partitions })).status).toBe(201);
    const created = await call('POST', 'triggers', {
      topic_name: topic,
      batch_size: 2,
      target: { type: 'WEBHOOK', url: sink.url, timeout_ms: 1000 },
      ...trigger,
    });
    expect(created.status).toBe(201);
  }

  /** Once a few batches are delivered: a SIGKILL while the webhook holds one; the webhook quick from then on. */
  async function killMidDelivery() {
    await eventually(() => sink.events.length >= 4, 20_000);
    let arrived!: () => void;
    const held = new Promise<void>((r) => (arrived = r));
    sink.answer = () => {
      arrived();
      return { delayMs: 2000 };
    };
    await held;
    await stopServer(server, 'SIGKILL');
    sink.answer = () => ({ delayMs: 5 });
  }

  const produce = async (from: number, to: number) => {
    for (let i = from; i < to; i++)
      expect(
        (await call('POST', 'topics/k/records', { partition_id: i % PARTITIONS, value: { data: i } })).status,
      ).toBe(200);
  };

  it('delivers every record at least once, in order, after a SIGKILL', async () => {
    await start('k', PARTITIONS, { trigger_name: 'kh' });
    await produce(0, 60);
    await killMidDelivery();
    const beforeRestart = ackedUpTo(sink, PARTITIONS);
    expect(beforeRestart.reduce((a, b) => a + b, 0)).toBeLessThan(60);

    server = await startServer(dir.path, 0, ENV);
    // Committed offsets (read first) never past what the webhook acknowledged.
    const check = async () => {
      const described = await call('GET', 'triggers/kh');
      const acked = ackedUpTo(sink, PARTITIONS);
      for (const p of described.body.partitions)
        expect(p.committed_offset, `partition ${p.partition_id}`).toBeLessThanOrEqual(acked[p.partition_id]!);
      return described.body.lag as number;
    };
    await check();
    await produce(60, 90);
    await eventually(async () => (await check()) === 0, 40_000);
    expect(ackedUpTo(sink, PARTITIONS)).toEqual([30, 30, 30]);
    expect(orderProblems(sink.events)).toEqual([]);
    const lags = (await call('GET', 'consumer-groups/trigger.kh/lags')).body.data;
    expect(lags.map((l: { current_offset: number }) => l.current_offset)).toEqual([30, 30, 30]);
  }, 90_000);
  it('ordering KEY: every record at least once, each key in order, offsets never past an unacknowledged record', async () => {
    await start('kk', 1, {
      trigger_name: 'kkh',
      ordering: 'KEY',
      key_lanes: 4,
      maximum_batching_window_ms: 0,
    });
    const produceKeyed = async (from: number, to: number) => {
      for (let i = from; i < to; i++)
        expect(
          (
            await call('POST', 'topics/kk/records', {
              partition_id: 0,
              key: { type: 'STRING', data: `k${i % 6}` },
              value: { type: 'STRING', data: String(i) },
            })
          ).status,
        ).toBe(200);
    };
    await produceKeyed(0, 60);
    await killMidDelivery();
    server = await startServer(dir.path, 0, ENV);
    // The committed offset (read first) never past an offset the webhook has not acknowledged.
    const check = async () => {
      const described = await call('GET', 'triggers/kkh');
      const acked = new Set(sink.delivered.map((r) => r.offset));
      const committed = described.body.partitions[0].committed_offset as number;
      for (let o = 0; o < committed; o++) expect(acked.has(o), `committed ${committed}, offset ${o}`).toBe(true);
      return described.body.lag as number;
    };
    await check();
    await produceKeyed(60, 90);
    await eventually(async () => (await check()) === 0, 40_000);
    const firsts = new Map<string, number[]>();
    const seen = new Set<number>();
    for (const r of sink.delivered) {
      if (seen.has(r.offset)) continue;
      seen.add(r.offset);
      const k = Buffer.from(r.key!, 'base64').toString();
      firsts.set(k, [...(firsts.get(k) ?? []), r.offset]);
    }
    expect(seen.size).toBe(90);
    for (const [k, offsets] of firsts) expect(offsets, k).toEqual([...offsets].sort((a, b) => a - b));
  }, 90_000);
});
