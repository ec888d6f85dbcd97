/**
 * The Logger seam on Lambda: what the services say (here the log's ISR shrink when a follower's
 * store refuses a write) reaches stdout as one JSON line carrying the invocation's request id,
 * through the logger the entry hands the composition root.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createHttpHandler } from '../../functions/http-entry.js';
import { Scope, inScope, telemetryLogger, type Telemetry } from '../../functions/observability.js';
import { PRODUCE_SERVES } from '../../functions/produce-routes.js';
import { createStorage } from '../../src/compose.js';
import { invokeHttpFunction } from '../support/api-gateway.js';
import { FaultyObjectStore } from '../support/fault-injection.js';
import { testApp } from '../support/test-app.js';

const lines: string[] = [];
beforeAll(
  () =>
    void vi.spyOn(process.stdout, 'write').mockImplementation((chunk) => {
      lines.push(String(chunk));
      return true;
    }),
);
afterAll(() => vi.restoreAllMocks());

const parsed = () =>
  lines
    .flatMap((l) => l.split('\n'))
    .flatMap((l) => (l.startsWith('{') ? [JSON.parse(l) as Record<string, unknown>] : []));

describe('the Logger seam on Lambda', () => {
  it('writes a JSON line with the level, the message, its fields and the current request id', async () => {
    const written: string[] = [];
    const t: Telemetry = {
      namespace: 'n',
      service: 's',
      functionName: 'f',
      write: (line) => void written.push(line),
      now: () => 0,
    };
    const logger = telemetryLogger(t);
    await inScope(t, new Scope('req-1'), async () => logger.warn('isr shrink', { topic: 't', partition: 0 }));
    logger.info('outside an invocation');
    expect(written.map((l) => JSON.parse(l))).toEqual([
      expect.objectContaining({ level: 'warn', msg: 'isr shrink', topic: 't', partition: 0, requestId: 'req-1' }),
      expect.not.objectContaining({ requestId: expect.anything() }),
    ]);
    expect(JSON.parse(written[1]!)).toMatchObject({ level: 'info', msg: 'outside an invocation', function: 'f' });
  });

  it("the partition log's lines during an invocation carry that invocation's request id", async () => {
    const inner = createStorage({ kind: 'memory', replicaStores: 2 });
    const stores = inner.stores.map((s) => new FaultyObjectStore(s));
    const handler = createHttpHandler(
      'produce',
      { STORAGE_BACKEND: 'memory', CLUSTER_ID: 'local', REPLICA_STORES: '2' },
      PRODUCE_SERVES,
      undefined,
      { metadata: inner.metadata, stores, close: () => {} },
    );
    const invoke = (path: string, body: unknown) =>
      invokeHttpFunction(handler, 'POST', `/v3/clusters/local/${path}`, { body: JSON.stringify(body) });
    // Created as the admin function would (API Gateway sends no topic creation to produce).
    const admin = testApp({ storage: inner, env: { REPLICA_STORES: '2' } });
    expect((await admin.call('POST', 'topics', { topic_name: 'shrink', replication_factor: 2 })).status).toBe(201);
    stores[1]!.faults.down = true; // the follower's store refuses the copy: the leader shrinks the ISR
    lines.length = 0;
    const { result } = await invoke('topics/shrink/records:batch', {
      entries: [{ id: '1', partition_id: 0, value: { type: 'STRING', data: 'x' } }],
    });
    expect(result.statusCode, result.body).toBe(207);
    const requestId = result.headers?.['x-request-id'];
    expect(requestId).toMatch(/^r\d+$/);
    expect(parsed()).toContainEqual(
      expect.objectContaining({ level: 'warn', msg: 'isr shrink', topic: 'shrink', partition: 0, requestId }),
    );
  });
});
