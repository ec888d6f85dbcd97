import { performance } from 'node:perf_hooks';
import { beforeEach, describe, expect, it } from 'vitest';
import { createServices, createStorage } from '../../src/compose.js';
import { serverConfigFromEnv } from '../../src/config/server-config.js';
import { createApp } from '../../src/http/app.js';
import { BASE, testApp } from '../support/test-app.js';

/** The fetch answer, as much of it as these tests read. */
interface RecordList {
  records: { offset: number; value: { data: string } }[];
  next_offset: number;
  high_watermark: number;
}

const produce = (call: ReturnType<typeof testApp>['call'], topic: string, value: string) =>
  call('POST', `topics/${topic}/records`, { partition_id: 0, value: { type: 'STRING', data: value } });

describe('long-poll fetch (min_bytes / max_wait_ms)', () => {
  let t: ReturnType<typeof testApp>;
  beforeEach(async () => {
    t = testApp({ env: { MAX_FETCH_WAIT_MS: '3000' } });
    await t.call('POST', 'topics', { topic_name: 'lp', partitions_count: 1 });
  });

  const fetch = (query: string, init: RequestInit = {}) =>
    Promise.resolve(t.app.request(`${BASE}/topics/lp/partitions/0/records?format=string&${query}`, init)).then(
      async (r) => ({ status: r.status, body: r.status === 200 ? ((await r.json()) as RecordList) : undefined }),
    );

  it('returns as soon as a produce arrives; reports the wake-up latency', async () => {
    // Wake-up latency: from the append's commit (the log's append listeners run) to the fetch's answer.
    let committedAt = 0;
    t.services.log.onAppend(() => (committedAt = performance.now()));
    const latencies: number[] = [];
    for (let i = 0; i < 20; i++) {
      const started = performance.now();
      const pending = fetch(`offset=${i}&min_bytes=1&max_wait_ms=2500`);
      await new Promise((r) => setTimeout(r, 5));
      expect(t.services.fetchPurgatory.watched('lp/0')).toBe(1);
      await produce(t.call, 'lp', `v${i}`);
      const res = await pending;
      const answered = performance.now();
      expect(res.status).toBe(200);
      expect(res.body!.records.map((r) => r.value.data)).toEqual([`v${i}`]);
      expect(answered - started).toBeLessThan(2000);
      latencies.push(answered - committedAt);
    }
    latencies.sort((a, b) => a - b);
    const p50 = latencies[10]!;
    const max = latencies.at(-1)!;
    console.log(
      JSON.stringify({
        msg: 'long-poll wake-up latency, commit to answer (ms)',
        p50: +p50.toFixed(2),
        max: +max.toFixed(2),
      }),
    );
    expect(max).toBeLessThan(200);
    expect(t.services.fetchPurgatory.delayed).toBe(0);
  });

  it('returns empty once max_wait_ms passes, and at once without max_wait_ms', async () => {
    let started = performance.now();
    const res = await fetch('offset=0&min_bytes=1&max_wait_ms=200');
    const waited = performance.now() - started;
    expect(res).toMatchObject({ status: 200, body: { records: [], next_offset: 0, high_watermark: 0 } });
    expect(waited).toBeGreaterThanOrEqual(190);
    expect(waited).toBeLessThan(1500);
    started = performance.now();
    expect((await fetch('offset=0&min_bytes=1')).body!.records).toEqual([]);
    expect(performance.now() - started).toBeLessThan(150);
    // max_wait_ms is bounded by MAX_FETCH_WAIT_MS.
    const bounded = testApp({ env: { MAX_FETCH_WAIT_MS: '100' } });
    await bounded.call('POST', 'topics', { topic_name: 'b', partitions_count: 1 });
    started = performance.now();
    expect(
      (await bounded.call('GET', 'topics/b/partitions/0/records?offset=0&min_bytes=1&max_wait_ms=60000')).body.records,
    ).toEqual([]);
    expect(performance.now() - started).toBeLessThan(1000);
  });

  it('waits for min_bytes, not for the first byte', async () => {
    const pending = fetch('offset=0&min_bytes=400&max_wait_ms=2500');
    await produce(t.call, 'lp', 'small');
    await new Promise((r) => setTimeout(r, 30));
    expect(t.services.fetchPurgatory.watched('lp/0')).toBe(1); // one small record is not enough
    await produce(t.call, 'lp', 'x'.repeat(500));
    const res = await pending;
    expect(res.body!.records.map((r) => r.offset)).toEqual([0, 1]);
  });

  it('stops waiting when the client disconnects', async () => {
    const abort = new AbortController();
    const pending = fetch('offset=0&min_bytes=1&max_wait_ms=2500', { signal: abort.signal });
    await new Promise((r) => setTimeout(r, 20));
    expect(t.services.fetchPurgatory.delayed).toBe(1);
    const started = performance.now();
    abort.abort();
    await pending.catch(() => undefined);
    expect(performance.now() - started).toBeLessThan(200);
    await new Promise((r) => setTimeout(r, 10));
    expect(t.services.fetchPurgatory.delayed).toBe(0);
    expect(t.services.fetchPurgatory.watched('lp/0')).toBe(0);
  });

  it('is woken across processes by the bounded back-off re-check', async () => {
    // Two apps over one storage, as two Lambdas: the producer's appends notify nobody in the other.
    const config = serverConfigFromEnv({ STORAGE_BACKEND: 'memory' });
    const storage = createStorage(config.backend);
    const reader = createApp(createServices(config, storage), { logError: () => {} });
    const writer = createApp(createServices(config, storage), { logError: () => {} });
    const json = { 'content-type': 'application/json' };
    await writer.request(`${BASE}/topics`, {
      method: 'POST',
      headers: json,
      body: JSON.stringify({ topic_name: 'x', partitions_count: 1 }),
    });
    const started = performance.now();
    const pending = Promise.resolve(
      reader.request(`${BASE}/topics/x/partitions/0/records?min_bytes=1&max_wait_ms=2500&format=string`),
    ).then((r) => r.json() as Promise<RecordList>);
    await new Promise((r) => setTimeout(r, 100));
    await writer.request(`${BASE}/topics/x/records`, {
      method: 'POST',
      headers: json,
      body: JSON.stringify({ value: { type: 'STRING', data: 'remote' } }),
    });
    const acked = performance.now();
    const body = await pending;
    expect(body.records.map((r) => r.value.data)).toEqual(['remote']);
    const latency = performance.now() - acked;
    console.log(
      JSON.stringify({
        msg: 'long-poll wake-up latency across processes (ms)',
        latency: +latency.toFixed(1),
        totalWait: +(performance.now() - started).toFixed(1),
      }),
    );
    expect(latency).toBeLessThan(1500); // the re-check back-off is 50 ms doubling to 1 s
  });
});

describe('DeleteRecords over HTTP', () => {
  it('advances the low watermark; fetching below it is OFFSET_OUT_OF_RANGE; bad offsets are refused', async () => {
    const { call } = testApp();
    await call('POST', 'topics', { topic_name: 'd', partitions_count: 1 });
    for (let i = 0; i < 5; i++) await produce(call, 'd', `v${i}`);
    expect(await call('POST', 'topics/d/partitions/0/records:delete', { before_offset: 3 })).toMatchObject({
      status: 200,
      body: { kind: 'KafkaDeleteRecordsResult', topic_name: 'd', partition_id: 0, low_watermark: 3 },
    });
    expect(await call('GET', 'topics/d/partitions/0/records?offset=2')).toMatchObject({
      status: 416,
      body: { error: 'OFFSET_OUT_OF_RANGE' },
    });
    expect((await call('GET', 'topics/d/partitions/0/records?offset=3')).body).toMatchObject({
      log_start_offset: 3,
      next_offset: 5,
    });
    expect((await call('GET', 'topics/d/partitions/0/offset?offset_type=earliest')).body).toMatchObject({ offset: 3 });
    // Never backwards; never past the high watermark; -1 means the high watermark.
    expect((await call('POST', 'topics/d/partitions/0/records:delete', { before_offset: 1 })).body.low_watermark).toBe(
      3,
    );
    expect(await call('POST', 'topics/d/partitions/0/records:delete', { before_offset: 6 })).toMatchObject({
      status: 416,
      body: { error: 'OFFSET_OUT_OF_RANGE' },
    });
    expect((await call('POST', 'topics/d/partitions/0/records:delete', { before_offset: -1 })).body.low_watermark).toBe(
      5,
    );
    expect(await call('POST', 'topics/d/partitions/0/records:delete', { before_offset: 'x' })).toMatchObject({
      status: 400,
    });
    expect(await call('POST', 'topics/d/partitions/9/records:delete', { before_offset: 0 })).toMatchObject({
      status: 404,
    });
    expect(await call('POST', 'topics/nope/partitions/0/records:delete', { before_offset: 0 })).toMatchObject({
      status: 404,
    });
  });
});
