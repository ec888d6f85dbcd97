/**
 * read_committed fetch answers on the Lambda path keep within Lambda's 6 MB with their aborted
 * transactions counted, and the per-partition fetch's Kafka-Aborted-Transactions header within API
 * Gateway's 10,240 bytes of headers. Many aborted transactions are made by transactional producers
 * (init, produce, abort, as test/transactions drives them); a read_committed consumer that fetches
 * from each answer's next offset reaches the end of every partition, sees exactly the committed
 * records, and every answer lists exactly the aborted transactions overlapping what it returns
 * (Kafka's aborted_transactions: marker at or after the fetch offset, first offset below the next).
 * Everything goes through the functions' handler (functions/http-entry.ts) as bounded-fetch.test.ts does.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createHttpHandler } from '../../functions/http-entry.js';
// One handler for every path (topics, transactions, records:fetch): the admin function's routes.
import { ALL_PARTS } from '../../src/compose.js';
import { ALL_ROUTES } from '../../src/http/app.js';
import { LAMBDA_PAYLOAD_LIMITS } from '../../infra/log-stack.js';
import { type HttpFunctionResult, invokeHttpFunction } from '../support/api-gateway.js';
import { decodeMarker } from '../../src/wire/control-batch.js';
import { decodeFetchResponse, FETCH_RESPONSE_MEDIA_TYPE } from '../../src/wire/fetch-response.js';
import { type AbortedRange, parseAbortedTransactions, RECORD_BATCH_MEDIA_TYPE } from '../../src/wire/protocol.js';
import {
  CONTROL_FLAG_MASK,
  decodeRecordBatches,
  encodeRecordBatch,
  TRANSACTIONAL_FLAG_MASK,
} from '../../src/wire/record-batch.js';

const LAMBDA_RESPONSE_LIMIT = 6_000_000;
/** API Gateway's "total combined size of request line and header values" (HTTP API) / "of all header values" (REST API). */
const API_GATEWAY_HEADER_LIMIT = 10_240;
const BATCH_TYPE = RECORD_BATCH_MEDIA_TYPE;
/** Hundreds of transactions take thousands of invocations: seconds on a shared machine. */
const SETUP_TIMEOUT = 120_000;
type Handler = ReturnType<typeof createHttpHandler>;

beforeAll(() => {
  vi.spyOn(process.stdout, 'write').mockImplementation(() => true); // the functions' JSON log lines
});
afterAll(() => vi.restoreAllMocks());

const lambda = (env: Record<string, string> = {}) =>
  createHttpHandler(
    'fetch',
    { STORAGE_BACKEND: 'memory', CLUSTER_ID: 'c', ...LAMBDA_PAYLOAD_LIMITS, ...env },
    { routes: ALL_ROUTES, parts: ALL_PARTS },
  );

const invoke = (
  handler: Handler,
  method: string,
  path: string,
  options?: { query?: string; body?: Uint8Array | string; headers?: Record<string, string> },
) => invokeHttpFunction(handler, method, `/v3/clusters/c/${path}`, options);

async function call(handler: Handler, method: string, path: string, body?: unknown) {
  const { result } = await invoke(handler, method, path, body === undefined ? {} : { body: JSON.stringify(body) });
  expect(result.statusCode, result.body.slice(0, 300)).toBeLessThan(300);
  return JSON.parse(result.body || '{}');
}

async function createTopic(handler: Handler, name: string, partitions: number, configs: Record<string, string> = {}) {
  await call(handler, 'POST', 'topics', {
    topic_name: name,
    partitions_count: partitions,
    configs: Object.entries(configs).map(([n, value]) => ({ name: n, value })),
  });
}

/**
 * `count` transactions of one transactional producer, one after the other, each writing one record
 * to every partition of `partitions`; every `commitEvery`-th commits, the others abort.
 */
async function transactions(
  handler: Handler,
  topic: string,
  partitions: number[],
  count: number,
  commitEvery = 0,
): Promise<void> {
  const id = `tx-${topic}`;
  const p = await call(handler, 'POST', `transactions/${id}/init`, { transaction_timeout_ms: 60_000 });
  const producer = { producer_id: p.producer_id as number, producer_epoch: p.producer_epoch as number };
  for (let t = 0; t < count; t++) {
    const r = await call(handler, 'POST', `topics/${topic}/records:batch`, {
      transactional_id: id,
      ...producer,
      sequences: partitions.map((partition_id) => ({ partition_id, base_sequence: t })),
      entries: partitions.map((partition_id) => ({
        id: String(partition_id),
        partition_id,
        value: { type: 'STRING', data: `t${t}` },
      })),
    });
    expect(r.failures).toEqual([]);
    const commit = commitEvery > 0 && t % commitEvery === commitEvery - 1;
    await call(handler, 'POST', `transactions/${id}/${commit ? 'commit' : 'abort'}`, producer);
  }
}

/** Plain (non-transactional) record batches of `perBatch` records of `size` bytes, `batches` of them. */
async function produceBatches(
  handler: Handler,
  topic: string,
  partition: number,
  batches: number,
  perBatch: number,
  size: number,
  compression: 'none' | 'gzip' = 'none',
) {
  const value = Buffer.alloc(size, 'v');
  const body = Buffer.concat(
    Array.from({ length: batches }, (_, b) =>
      encodeRecordBatch(
        Array.from({ length: perBatch }, (_, i) => ({ key: null, value, headers: [], timestamp: Date.now() + i })),
        { baseOffset: b * perBatch, compression },
      ),
    ),
  );
  const { result } = await invoke(handler, 'POST', `topics/${topic}/partitions/${partition}/records`, { body });
  expect(result.statusCode, result.body).toBe(200);
}

interface Partition {
  /** The high watermark (every transaction is ended, so the last stable offset too). */
  end: number;
  /** Offsets of the records a read_committed consumer must see, in order. */
  committed: number[];
  /** Every aborted transaction, as Kafka's aborted_transactions (last offset: the ABORT marker). */
  aborted: AbortedRange[];
}

/** What the partition holds, read whole read_uncommitted: the committed records and the aborted transactions. */
async function survey(handler: Handler, topic: string, partition: number): Promise<Partition> {
  const committed: number[] = [];
  const aborted: AbortedRange[] = [];
  const open = new Map<number, { first: number; offsets: number[] }>();
  let offset = 0;
  for (;;) {
    const { result } = await invoke(handler, 'GET', `topics/${topic}/partitions/${partition}/records`, {
      query: `offset=${offset}`,
      headers: { accept: BATCH_TYPE },
    });
    expect(result.statusCode).toBe(200);
    const next = Number(result.headers['kafka-next-offset']);
    if (next === offset) return { end: offset, committed, aborted };
    for (const batch of decodeRecordBatches(Buffer.from(result.body, 'base64'))) {
      const { attributes, producerId, baseOffset } = batch.header;
      const offsets = batch.records.map((r) => r.offset).filter((o) => o >= offset);
      if (attributes & CONTROL_FLAG_MASK) {
        const txn = open.get(producerId)!;
        open.delete(producerId);
        if (decodeMarker(batch).type === 'ABORT')
          aborted.push({ producerId, firstOffset: txn.first, lastOffset: baseOffset });
        else committed.push(...txn.offsets);
      } else if (attributes & TRANSACTIONAL_FLAG_MASK) {
        const txn = open.get(producerId) ?? { first: baseOffset, offsets: [] };
        txn.offsets.push(...offsets);
        open.set(producerId, txn);
      } else committed.push(...offsets);
    }
    offset = next;
  }
}

/** Kafka's aborted_transactions for a fetch of [from, next): the aborted transactions overlapping it. */
const overlapping = (all: AbortedRange[], from: number, next: number) =>
  next > from ? all.filter((a) => a.lastOffset >= from && a.firstOffset < next) : [];

/** What a read_committed consumer takes of stored batches: not markers, not the listed aborted transactions' batches. */
function committedOffsets(batches: Uint8Array, from: number, aborted: AbortedRange[]): number[] {
  const out: number[] = [];
  for (const batch of decodeRecordBatches(batches)) {
    const { attributes, producerId, baseOffset } = batch.header;
    if (attributes & CONTROL_FLAG_MASK) continue;
    if (
      attributes & TRANSACTIONAL_FLAG_MASK &&
      aborted.some((a) => a.producerId === producerId && baseOffset >= a.firstOffset && baseOffset <= a.lastOffset)
    )
      continue;
    out.push(...batch.records.map((r) => r.offset).filter((o) => o >= from));
  }
  return out;
}

type Answer = 'binary' | 'base64' | 'json-records';

/**
 * A read_committed consumer over `records:fetch`: fetches every partition from its next offset
 * until each reaches its end, checking every answer's size, its aborted lists and progress.
 */
async function consumeAll(handler: Handler, topic: string, partitions: Partition[], answer: Answer) {
  const offsets = partitions.map(() => 0);
  const seen: number[][] = partitions.map(() => []);
  let fetches = 0;
  let largest = 0;
  let listed = 0;
  while (offsets.some((o, i) => o < partitions[i]!.end)) {
    const { result, invocationBytes } = await invoke(handler, 'POST', 'records:fetch', {
      body: JSON.stringify({
        isolation_level: 'read_committed',
        ...(answer === 'json-records' && { format: 'binary' }),
        topics: [{ topic, partitions: offsets.map((fetch_offset, partition) => ({ partition, fetch_offset })) }],
      }),
      headers: answer === 'binary' ? { accept: FETCH_RESPONSE_MEDIA_TYPE } : {},
    });
    expect(result.statusCode, result.body.slice(0, 300)).toBe(200);
    expect(invocationBytes).toBeLessThanOrEqual(LAMBDA_RESPONSE_LIMIT);
    largest = Math.max(largest, invocationBytes);
    const answered = parseAnswer(result, answer);
    let progressed = false;
    for (const p of answered) {
      const from = offsets[p.index]!;
      expect(p.error).toBeNull();
      expect(p.aborted).toEqual(overlapping(partitions[p.index]!.aborted, from, p.next));
      listed += p.aborted.length;
      const got = p.records ?? committedOffsets(p.batches, from, p.aborted);
      expect(got.every((o) => o < p.next)).toBe(true);
      seen[p.index]!.push(...got);
      if (p.next > from) progressed = true;
      offsets[p.index] = p.next;
    }
    expect(progressed).toBe(true);
    fetches++;
  }
  partitions.forEach((p, i) => expect(seen[i]).toEqual(p.committed));
  return { fetches, largest, listed };
}

interface AnsweredPartition {
  index: number;
  error: string | null;
  next: number;
  aborted: AbortedRange[];
  batches: Uint8Array;
  /** A JSON record list's offsets (the server left the aborted records out). */
  records?: number[];
}

function parseAnswer(result: HttpFunctionResult, answer: Answer): AnsweredPartition[] {
  if (answer === 'binary') {
    expect(result.isBase64Encoded).toBe(true);
    return decodeFetchResponse(Buffer.from(result.body, 'base64'))[0]!.partitions.map((p) => ({
      index: p.partitionIndex,
      error: p.error,
      next: p.nextOffset,
      aborted: [...(p.abortedTransactions ?? [])],
      batches: p.records ?? new Uint8Array(0),
    }));
  }
  const body = JSON.parse(result.body) as {
    responses: {
      partitions: {
        partition_index: number;
        error?: string;
        next_offset: number;
        aborted_transactions: { producer_id: number; first_offset: number; last_offset: number }[];
        records: string | { offset: number }[];
      }[];
    }[];
  };
  return body.responses[0]!.partitions.map((p) => ({
    index: p.partition_index,
    error: p.error ?? null,
    next: p.next_offset,
    aborted: p.aborted_transactions.map((a) => ({
      producerId: a.producer_id,
      firstOffset: a.first_offset,
      lastOffset: a.last_offset,
    })),
    batches: typeof p.records === 'string' ? Buffer.from(p.records, 'base64') : new Uint8Array(0),
    ...(typeof p.records !== 'string' && { records: p.records.map((r) => r.offset) }),
  }));
}

describe('read_committed answers on the Lambda path count their aborted transactions', () => {
  it(
    'records:fetch as JSON records: 400 aborted transactions in one partition beside gzip batches inflating past the limit',
    async () => {
      const handler = lambda();
      await createTopic(handler, 'mixed', 2, { 'compression.type': 'gzip' });
      await transactions(handler, 'mixed', [0], 400, 50);
      await produceBatches(handler, 'mixed', 1, 2, 30_000, 100, 'gzip'); // each batch ~7.7 MB of JSON records
      const partitions = [await survey(handler, 'mixed', 0), await survey(handler, 'mixed', 1)];
      expect(partitions[0]!.aborted).toHaveLength(392);
      expect(partitions[0]!.committed).toHaveLength(8);
      const { fetches, largest, listed } = await consumeAll(handler, 'mixed', partitions, 'json-records');
      expect(fetches).toBeGreaterThan(2);
      expect(largest).toBeGreaterThan(LAMBDA_RESPONSE_LIMIT * 0.9);
      expect(listed).toBe(392); // each aborted transaction listed once: the answers follow on from each other
    },
    SETUP_TIMEOUT,
  );

  it.each(['binary', 'base64'] as const)(
    'records:fetch of stored batches (%s answer) over 8 partitions, each with 400 aborted transactions and 600 KB after them',
    async (answer) => {
      // A deployment that lets one fetch read more than one answer can carry (the server's default).
      const handler = lambda({ MAX_FETCH_BYTES: String(8 * 1024 * 1024) });
      const all = [0, 1, 2, 3, 4, 5, 6, 7];
      await createTopic(handler, 'wide', all.length, { 'max.message.bytes': String(4 * 1024 * 1024) });
      await transactions(handler, 'wide', all, 400, 100);
      for (const p of all) await produceBatches(handler, 'wide', p, 60, 10, 1000);
      const partitions = await Promise.all(all.map((p) => survey(handler, 'wide', p)));
      for (const p of partitions) expect(p.aborted).toHaveLength(396);
      const { fetches, largest, listed } = await consumeAll(handler, 'wide', partitions, answer);
      expect(fetches).toBeGreaterThan(1); // 5.3 MB of batches: more than one answer carries
      expect(largest).toBeGreaterThan(LAMBDA_RESPONSE_LIMIT * 0.95);
      expect(listed).toBe(396 * all.length);
    },
    SETUP_TIMEOUT,
  );

  it(
    'the per-partition record-batch fetch: Kafka-Aborted-Transactions keeps within API Gateway’s header bound over 1,100 aborted transactions',
    async () => {
      const handler = lambda();
      await createTopic(handler, 'long', 1);
      await transactions(handler, 'long', [0], 1_100, 50);
      const partition = await survey(handler, 'long', 0);
      expect(partition.aborted).toHaveLength(1_078);
      let offset = 0;
      let fetches = 0;
      const seen: number[] = [];
      let listed = 0;
      while (offset < partition.end) {
        const { result, invocationBytes } = await invoke(handler, 'GET', 'topics/long/partitions/0/records', {
          query: `offset=${offset}&isolation_level=read_committed`,
          headers: { accept: BATCH_TYPE },
        });
        expect(result.statusCode, result.body.slice(0, 300)).toBe(200);
        expect(invocationBytes).toBeLessThanOrEqual(LAMBDA_RESPONSE_LIMIT);
        const headerBytes = Object.entries(result.headers).reduce(
          (n, [k, v]) => n + k.length + String(v).length + 4,
          0,
        );
        expect(headerBytes).toBeLessThanOrEqual(API_GATEWAY_HEADER_LIMIT);
        const next = Number(result.headers['kafka-next-offset']);
        const aborted = parseAbortedTransactions(result.headers['kafka-aborted-transactions'] ?? null);
        expect(aborted).toEqual(overlapping(partition.aborted, offset, next));
        listed += aborted.length;
        const got = committedOffsets(Buffer.from(result.body, 'base64'), offset, aborted);
        expect(next).toBeGreaterThan(offset);
        seen.push(...got.filter((o) => o < next));
        offset = next;
        fetches++;
      }
      expect(seen).toEqual(partition.committed);
      expect(fetches).toBeGreaterThan(1); // 1 MiB of small batches fits one answer; their list does not fit the header
      expect(listed).toBe(1_078);
      // More aborted transactions than one fetch reads of the index (1000): a records:fetch answer
      // ends where the list read is known whole, and the next fetch goes on from there.
      for (const answer of ['binary', 'base64'] as const) {
        const many = await consumeAll(handler, 'long', [partition], answer);
        expect(many.listed).toBe(1_078);
        expect(many.fetches).toBeGreaterThan(1);
      }
      // The JSON record list, with the aborted records left out by the server, likewise.
      const shown: number[] = [];
      for (let at = 0; at < partition.end; ) {
        const { result } = await invoke(handler, 'GET', 'topics/long/partitions/0/records', {
          query: `offset=${at}&isolation_level=read_committed`,
        });
        const body = JSON.parse(result.body) as { records: { offset: number }[]; next_offset: number };
        expect(body.next_offset).toBeGreaterThan(at);
        shown.push(...body.records.map((r) => r.offset));
        at = body.next_offset;
      }
      expect(shown).toEqual(partition.committed);
    },
    SETUP_TIMEOUT,
  );
});
