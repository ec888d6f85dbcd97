/**
 * On Lambda nothing runs once the handler has returned: the execution environment is frozen, and
 * work left running then (acks=0 appends, acks=1 follower copies) happens minutes later or never.
 * Each test drives the produce function's handler (functions/http-entry.ts) over stores with a
 * little latency, "freezes" the environment the moment the handler returns (every store call
 * from then on fails, as if it never ran), and reads the partition through another process.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { createHttpHandler } from '../../functions/http-entry.js';
import { PRODUCE_SERVES } from '../../functions/produce-routes.js';
import { createStorage, type Storage } from '../../src/compose.js';
import { invokeHttpFunction } from '../support/api-gateway.js';
import { FaultyMetadataStore, FaultyObjectStore } from '../support/fault-injection.js';
import { testApp } from '../support/test-app.js';
import { StackRecording } from '../infra/iam/stack-recording.js';

const ENV = { STORAGE_BACKEND: 'memory', CLUSTER_ID: 'local', REPLICA_STORES: '2' };

// The calls the produce function makes here, checked against its role in a stack with two S3 Standard stores.
const recording = new StackRecording({ replicaStores: 2 });

beforeAll(() => void vi.spyOn(process.stdout, 'write').mockImplementation(() => true));
afterAll(() => {
  vi.restoreAllMocks();
  expect(recording.callsOf('produce')).toBeGreaterThan(0);
  expect(recording.denied()).toEqual([]);
});

let inner: Storage;
let stores: FaultyObjectStore[];
let metadata: FaultyMetadataStore;
let handler: ReturnType<typeof createHttpHandler>;

beforeEach(() => {
  inner = createStorage({ kind: 'memory', replicaStores: 2 });
  stores = inner.stores.map((s) => new FaultyObjectStore(s));
  metadata = new FaultyMetadataStore(inner.metadata, { putAll: inner.metadata.putAll !== undefined });
  // A few milliseconds a call, as a network store takes: work that outlives the answer is still running when it returns.
  for (const f of [metadata.faults, ...stores.map((s) => s.faults)]) f.delayMs = 3;
  handler = createHttpHandler(
    'produce',
    ENV,
    PRODUCE_SERVES,
    undefined,
    recording.storage('produce', { metadata, stores, close: () => {} }),
  );
});

/** From now on the environment is frozen for good: no store call of this process takes effect. */
function freeze(): void {
  for (const f of [metadata.faults, ...stores.map((s) => s.faults)]) f.down = true;
}

const invoke = (method: string, path: string, body?: unknown) =>
  invokeHttpFunction(handler, method, `/v3/clusters/local/${path}`, {
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });

/** Another process (a later invocation, a consumer) reading the partition from the stores. */
const elsewhere = () => testApp({ storage: inner, env: ENV });

const entries = (n: number) =>
  Array.from({ length: n }, (_, i) => ({ id: String(i), partition_id: 0, value: { type: 'STRING', data: `v${i}` } }));

describe('the Lambda entry leaves nothing running after its answer', () => {
  it('acks=1: the follower copy is made (and the HW moved) before the handler returns', async () => {
    // Created as the admin function would (API Gateway sends no topic creation to produce).
    expect((await elsewhere().call('POST', 'topics', { topic_name: 'one', replication_factor: 2 })).status).toBe(201);
    const { result } = await invoke('POST', 'topics/one/records:batch?acks=1', { entries: entries(3) });
    freeze();
    expect(result.statusCode, result.body).toBe(207);
    expect(JSON.parse(result.body).successes).toHaveLength(3);
    await new Promise((r) => setTimeout(r, 50)); // whatever was still running fails now
    const partition = (await elsewhere().call('GET', 'topics/one/partitions/0')).body;
    expect(partition).toMatchObject({ log_end_offset: 3, high_watermark: 3, isr: [0, 1] });
    // The follower's store holds the copy.
    expect((await inner.stores[1]!.list('')).objects.length).toBeGreaterThan(0);
  });

  it("the push subscriptions' read begun with an append is over before the handler returns, though the append failed", async () => {
    expect((await elsewhere().call('POST', 'topics', { topic_name: 'failing' })).status).toBe(201);
    const held = metadata.faults.gate('query', (pk) => pk.startsWith('push#'));
    for (const s of stores) s.faults.down = true; // the append fails at its object write: no commit, no round
    const order: string[] = [];
    void held.reached.then(async () => {
      await vi.waitFor(() => expect(stores[0]!.faults.injected).toBeGreaterThan(0), { interval: 20 });
      order.push('read released');
      held.release();
    });
    const { result } = await invoke('POST', 'topics/failing/records:batch', { entries: entries(1) });
    order.push('answered');
    expect(JSON.parse(result.body).failures).toHaveLength(1);
    expect(order).toEqual(['read released', 'answered']);
  });

  it('acks=0: the append is done before the handler returns, though the answer promises nothing', async () => {
    expect((await elsewhere().call('POST', 'topics', { topic_name: 'zero' })).status).toBe(201);
    const { result } = await invoke('POST', 'topics/zero/records:batch?acks=0', { entries: entries(2) });
    freeze();
    expect(JSON.parse(result.body).successes.map((s: { offset: number }) => s.offset)).toEqual([-1, -1]);
    await new Promise((r) => setTimeout(r, 50));
    const records = (await elsewhere().call('GET', 'topics/zero/partitions/0/records?offset=0')).body.records;
    expect(records.map((r: { offset: number }) => r.offset)).toEqual([0, 1]);
  });
});
