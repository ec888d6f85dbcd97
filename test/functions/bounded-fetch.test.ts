/**
 * Fetch answers on the Lambda path keep within Lambda's 6 MB response (the invocation result,
 * envelope included) whatever was stored, and a consumer that fetches from `next_offset` on reaches
 * the end: requests of many small records, producer-compressed gzip batches that inflate far past
 * the limit, and 4 MiB bodies. Everything goes through the fetch function's handler
 * (functions/http-entry.ts, hono's aws-lambda adapter) with the stack's limits.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createHttpHandler } from '../../functions/http-entry.js';
// One handler for every path (topics, records:fetch, consumers): the admin function's routes.
import { ALL_PARTS } from '../../src/compose.js';
import { ALL_ROUTES } from '../../src/http/app.js';
import { LAMBDA_PAYLOAD_LIMITS } from '../../infra/log-stack.js';
import { RECORD_BATCH_MEDIA_TYPE } from '../../src/wire/protocol.js';
import { invokeHttpFunction } from '../support/api-gateway.js';
import { decodeRecordBatches, encodeRecordBatch, type LogRecord } from '../../src/wire/record-batch.js';
import { decodeFetchResponse, FETCH_RESPONSE_MEDIA_TYPE } from '../../src/wire/fetch-response.js';

const LAMBDA_RESPONSE_LIMIT = 6_000_000;
const BATCH_TYPE = RECORD_BATCH_MEDIA_TYPE;

let handler: ReturnType<typeof createHttpHandler>;
beforeAll(() => {
  vi.spyOn(process.stdout, 'write').mockImplementation(() => true); // the functions' JSON log lines
  handler = createHttpHandler(
    'fetch',
    { STORAGE_BACKEND: 'memory', CLUSTER_ID: 'c', ...LAMBDA_PAYLOAD_LIMITS },
    { routes: ALL_ROUTES, parts: ALL_PARTS },
  );
});
afterAll(() => vi.restoreAllMocks());

const invoke = (
  method: string,
  path: string,
  options?: { query?: string; body?: Uint8Array | string; headers?: Record<string, string> },
) => invokeHttpFunction(handler, method, path.startsWith('/') ? path : `/v3/clusters/c/${path}`, options);

async function createTopic(name: string, configs: Record<string, string> = {}, partitions = 1) {
  const { result } = await invoke('POST', 'topics', {
    body: JSON.stringify({
      topic_name: name,
      partitions_count: partitions,
      configs: Object.entries(configs).map(([n, value]) => ({ name: n, value })),
    }),
  });
  expect(result.statusCode).toBe(201);
}

/** Batches of `perBatch` records (offsets relative to the request), end to end in one body. */
function requestBody(records: LogRecord[], perBatch: number, compression: 'none' | 'gzip' = 'none'): Uint8Array {
  const batches: Uint8Array[] = [];
  for (let i = 0; i < records.length; i += perBatch)
    batches.push(encodeRecordBatch(records.slice(i, i + perBatch), { baseOffset: i, compression }));
  return Buffer.concat(batches);
}

async function produce(topic: string, body: Uint8Array, partition = 0) {
  expect(body.byteLength).toBeLessThanOrEqual(4 * 1024 * 1024);
  const { result } = await invoke('POST', `topics/${topic}/partitions/${partition}/records`, { body });
  expect(result.statusCode, result.body).toBe(200);
  return JSON.parse(result.body) as { base_offset: number; last_offset: number };
}

/**
 * Reads the partition from 0 to its end as a consumer does (each fetch from the last one's next
 * offset), checking every answer's size and that each starts at the requested offset.
 */
async function consumeAll(topic: string, format: 'json' | 'batches', maxBytes: number, end: number) {
  let offset = 0;
  let fetches = 0;
  let largest = 0;
  const seen: number[] = [];
  while (offset < end) {
    const { result, invocationBytes } = await invoke('GET', `topics/${topic}/partitions/0/records`, {
      query: `offset=${offset}&max_bytes=${maxBytes}${format === 'json' ? '&format=binary' : ''}`,
      ...(format === 'batches' && { headers: { accept: BATCH_TYPE } }),
    });
    expect(result.statusCode, result.body.slice(0, 300)).toBe(200);
    expect(invocationBytes).toBeLessThanOrEqual(LAMBDA_RESPONSE_LIMIT);
    largest = Math.max(largest, invocationBytes);
    let next: number;
    let offsets: number[];
    if (format === 'json') {
      const body = JSON.parse(result.body) as { records: { offset: number }[]; next_offset: number };
      offsets = body.records.map((r) => r.offset);
      next = body.next_offset;
      expect(offsets[0]).toBe(offset); // JSON: at the record asked for
    } else {
      expect(result.isBase64Encoded).toBe(true);
      const batches = decodeRecordBatches(Buffer.from(result.body, 'base64'));
      // The first batch holds the offset asked for: none lies wholly below it.
      expect(batches[0]!.header.baseOffset).toBeLessThanOrEqual(offset);
      expect(batches[0]!.header.baseOffset + batches[0]!.header.lastOffsetDelta).toBeGreaterThanOrEqual(offset);
      offsets = batches.flatMap((b) => b.records.map((r) => r.offset)).filter((o) => o >= offset);
      next = Number(result.headers['kafka-next-offset']);
    }
    expect(next).toBeGreaterThan(offset); // progress
    seen.push(...offsets);
    offset = next;
    fetches++;
  }
  expect(seen).toEqual(Array.from({ length: end }, (_, i) => i));
  return { fetches, largest };
}

describe('fetch answers on the Lambda path stay within 6 MB, and a consumer gets through every stored request', () => {
  it('one request of 30,000 records of 100 bytes, fetched with max_bytes=1000: one stored batch per answer', async () => {
    await createTopic('small');
    const value = Buffer.alloc(100, 'x');
    const records = Array.from({ length: 30_000 }, (_, i) => ({
      key: null,
      value,
      headers: [],
      timestamp: Date.now() + i,
    }));
    const { last_offset } = await produce('small', requestBody(records, 7_500)); // 4 batches of ~830 KB
    expect(last_offset).toBe(29_999);
    const json = await consumeAll('small', 'json', 1000, 30_000);
    const batches = await consumeAll('small', 'batches', 1000, 30_000);
    expect(json.fetches).toBe(4); // max_bytes at batch granularity, at least one batch
    expect(batches.fetches).toBe(4);
    expect(batches.largest).toBeLessThan(1.5 * 1024 * 1024);
  });

  it('gzip batches that inflate to tens of MB of JSON: the JSON answer stops within the limit and the next fetch goes on inside the batch', async () => {
    await createTopic('zipped', { 'compression.type': 'gzip' });
    const value = Buffer.alloc(100, 'z');
    const records = Array.from({ length: 60_000 }, (_, i) => ({
      key: null,
      value,
      headers: [],
      timestamp: Date.now() + i,
    }));
    const body = requestBody(records, 30_000, 'gzip');
    expect(body.byteLength).toBeLessThan(400_000); // two batches, each inflating to 3.4 MB of records
    await produce('zipped', body);
    const json = await consumeAll('zipped', 'json', 1024 * 1024, 60_000);
    expect(json.fetches).toBeGreaterThan(2); // each batch is ~7.7 MB of JSON: cut at records
    expect(json.largest).toBeGreaterThan(LAMBDA_RESPONSE_LIMIT * 0.9);
    const batches = await consumeAll('zipped', 'batches', 1000, 60_000);
    expect(batches.fetches).toBe(2);
  });

  it('4 MiB request bodies: one 4 MiB batch answers base64 within the limit; a record of ~4 MiB answers as JSON too', async () => {
    await createTopic('large', { 'max.message.bytes': String(4 * 1024 * 1024) });
    const single = [{ key: null, value: Buffer.alloc(4 * 1024 * 1024 - 200, 1), headers: [], timestamp: Date.now() }];
    await produce('large', requestBody(single, 1));
    const many = Array.from({ length: 2 * 1024 }, (_, i) => ({
      key: null,
      value: Buffer.alloc(1000, i),
      headers: [],
      timestamp: Date.now(),
    }));
    await produce('large', requestBody(many, many.length)); // one batch of ~2 MiB of 1 KB records
    const end = 1 + many.length;
    const batches = await consumeAll('large', 'batches', 1024 * 1024, end);
    expect(batches.fetches).toBe(2);
    expect(batches.largest).toBeGreaterThan(5_500_000);
    const json = await consumeAll('large', 'json', 1024 * 1024, end);
    expect(json.fetches).toBe(2); // the ~4 MiB record alone (5.6 MB of JSON), then the 2 MiB batch
  });

  it.each(['binary', 'json'] as const)(
    'a multi-partition fetch (%s answer) over three partitions of 2.5 MB batches stays within the limit and reads all',
    async (answer) => {
      const topic = `spread-${answer}`;
      await createTopic(topic, { 'max.message.bytes': String(4 * 1024 * 1024) }, 3);
      const perPartition = 2500;
      for (const partition of [0, 1, 2]) {
        const records = Array.from({ length: perPartition }, (_, i) => ({
          key: null,
          value: Buffer.alloc(1000, partition * 10 + (i % 10)),
          headers: [],
          timestamp: Date.now(),
        }));
        await produce(topic, requestBody(records, 500), partition);
      }
      const offsets = [0, 0, 0];
      let fetches = 0;
      while (offsets.some((o) => o < perPartition)) {
        // The same app serves every function (API Gateway routes records:fetch to the admin one).
        const { result, invocationBytes } = await invoke('POST', 'records:fetch', {
          body: JSON.stringify({
            topics: [{ topic, partitions: offsets.map((fetch_offset, partition) => ({ partition, fetch_offset })) }],
          }),
          headers: answer === 'binary' ? { accept: FETCH_RESPONSE_MEDIA_TYPE } : {},
        });
        expect(result.statusCode, result.body.slice(0, 300)).toBe(200);
        expect(invocationBytes).toBeLessThanOrEqual(LAMBDA_RESPONSE_LIMIT);
        const partitions =
          answer === 'binary'
            ? decodeFetchResponse(Buffer.from(result.body, 'base64'))[0]!.partitions.map((p) => ({
                index: p.partitionIndex,
                next: p.nextOffset,
                bytes: p.records ?? new Uint8Array(0),
              }))
            : (
                JSON.parse(result.body) as {
                  responses: { partitions: { partition_index: number; next_offset: number; records: string }[] }[];
                }
              ).responses[0]!.partitions.map((p) => ({
                index: p.partition_index,
                next: p.next_offset,
                bytes: Buffer.from(p.records, 'base64'),
              }));
        expect(result.isBase64Encoded).toBe(answer === 'binary');
        let progressed = false;
        for (const p of partitions) {
          const got = decodeRecordBatches(p.bytes).flatMap((b) => b.records.map((r) => r.offset));
          if (got.length > 0) expect(got[0]).toBe(offsets[p.index]); // batches of 500 start at the offset asked for
          if (p.next > offsets[p.index]!) progressed = true;
          offsets[p.index] = p.next;
        }
        expect(progressed).toBe(true);
        fetches++;
      }
      // 7.5 MB in all: more than one answer can carry.
      expect(fetches).toBeGreaterThan(1);
    },
  );

  it('the REST v2 consumer instance poll stops at a record within the limit, and the next poll goes on from there', async () => {
    await createTopic('v2zip', { 'compression.type': 'gzip' });
    const value = Buffer.alloc(100, 'v');
    await produce(
      'v2zip',
      requestBody(
        Array.from({ length: 40_000 }, (_, i) => ({ key: null, value, headers: [], timestamp: Date.now() + i })),
        40_000,
        'gzip',
      ),
    );
    const v2 = { 'content-type': 'application/vnd.kafka.v2+json' };
    const created = await invoke('POST', '/consumers/g', {
      body: JSON.stringify({
        name: 'c1',
        format: 'binary',
        'auto.offset.reset': 'earliest',
        'auto.commit.enable': 'false',
      }),
      headers: v2,
    });
    expect(created.result.statusCode, created.result.body).toBe(200);
    expect(
      (
        await invoke('POST', '/consumers/g/instances/c1/subscription', {
          body: JSON.stringify({ topics: ['v2zip'] }),
          headers: v2,
        })
      ).result.statusCode,
    ).toBe(204);
    const seen: number[] = [];
    let polls = 0;
    while (seen.length < 40_000 && polls < 20) {
      const { result, invocationBytes } = await invoke('GET', '/consumers/g/instances/c1/records', {
        query: 'timeout=0',
        headers: { accept: 'application/vnd.kafka.binary.v2+json' },
      });
      expect(result.statusCode, result.body.slice(0, 300)).toBe(200);
      expect(invocationBytes).toBeLessThanOrEqual(LAMBDA_RESPONSE_LIMIT);
      seen.push(...(JSON.parse(result.body) as { offset: number }[]).map((r) => r.offset));
      polls++;
    }
    expect(polls).toBeGreaterThan(1); // one batch is ~11 MB of JSON
    expect(seen).toEqual(Array.from({ length: 40_000 }, (_, i) => i));
  });
});
