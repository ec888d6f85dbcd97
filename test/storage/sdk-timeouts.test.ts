/**
 * The AWS adapters as the functions compose them (createStorage, with the request-serving
 * functions' SDK timeouts) behind a proxy that stalls a connection, as a socket kept across a
 * Lambda freeze does: the call gives up within its timeout and is tried again on a new connection,
 * instead of hanging until the function's own timeout (DynamoDB's default socket timeout is 300 s,
 * S3 has none).
 */
import { PutObjectCommand } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createStorage } from '../../src/compose.js';
import { SDK_TIMEOUTS } from '../../src/storage/sdk-timeouts.js';
import {
  startDynalite,
  startS3rver,
  TEST_CREDENTIALS,
  TEST_REGION,
  type DynaliteHandle,
  type S3rverHandle,
} from '../support/emulators.js';
import { startStallProxy, type Stall, type StallProxy } from '../support/stall-proxy.js';

let s3: S3rverHandle;
let ddb: DynaliteHandle;
const proxies: StallProxy[] = [];

beforeAll(async () => {
  [s3, ddb] = await Promise.all([startS3rver(), startDynalite()]);
  // createStorage's clients take their credentials from the environment, as on Lambda.
  vi.stubEnv('AWS_ACCESS_KEY_ID', TEST_CREDENTIALS.accessKeyId);
  vi.stubEnv('AWS_SECRET_ACCESS_KEY', TEST_CREDENTIALS.secretAccessKey);
  vi.stubEnv('AWS_SESSION_TOKEN', undefined);
  await ddb.client.config.region(); // dynalite's table is ready
  await s3.client.send(new PutObjectCommand({ Bucket: s3.bucket, Key: 'seg/1', Body: Buffer.alloc(64 * 1024, 7) }));
});
afterAll(async () => {
  vi.unstubAllEnvs();
  await Promise.all(proxies.map((p) => p.close()));
  await Promise.all([s3?.stop(), ddb?.stop()]);
});

/** A storage of fresh clients whose first connection to S3 or DynamoDB stalls as asked. */
async function stalledStorage(stalls: { s3?: Stall; dynamodb?: Stall }) {
  const [s3Proxy, ddbProxy] = await Promise.all([startStallProxy(s3.endpoint), startStallProxy(ddb.endpoint)]);
  proxies.push(s3Proxy, ddbProxy);
  if (stalls.s3) s3Proxy.stallNext(stalls.s3);
  if (stalls.dynamodb) ddbProxy.stallNext(stalls.dynamodb);
  const storage = createStorage({
    kind: 'aws',
    region: TEST_REGION,
    s3Endpoint: s3Proxy.endpoint,
    dynamoDbEndpoint: ddbProxy.endpoint,
    buckets: [s3.bucket],
    table: ddb.table,
  });
  return { storage, s3Proxy, ddbProxy };
}

async function timed<T>(f: () => Promise<T>): Promise<{ value: T; ms: number }> {
  const started = performance.now();
  const value = await f();
  return { value, ms: performance.now() - started };
}

const { dynamodb: DDB, s3: S3 } = SDK_TIMEOUTS.request;

describe.concurrent('SDK calls on a stalled socket fail fast and are retried', () => {
  it('DynamoDB: a request never answered times out and is retried', async () => {
    const { storage, ddbProxy } = await stalledStorage({ dynamodb: 'silent' });
    const { value, ms } = await timed(() => storage.metadata.put('sdk#silent', 'a', { n: 1 }));
    expect(value.value).toEqual({ n: 1 });
    expect(ms).toBeGreaterThanOrEqual(DDB.requestTimeoutMs - 50);
    expect(ms).toBeLessThan(DDB.requestTimeoutMs * 2);
    expect(ddbProxy.stats).toMatchObject({ stalled: 1, connections: 2 });
    storage.close();
  });

  it('DynamoDB: an answer whose body stops coming fails on the idle socket and is retried', async () => {
    const { storage, ddbProxy } = await stalledStorage({ dynamodb: 'body' });
    const { value, ms } = await timed(() => storage.metadata.query('sdk#none'));
    expect(value).toEqual([]);
    expect(ms).toBeGreaterThanOrEqual(DDB.socketTimeoutMs - 50);
    expect(ms).toBeLessThan(DDB.socketTimeoutMs * 2);
    expect(ddbProxy.stats).toMatchObject({ stalled: 1, connections: 2 });
    storage.close();
  });

  it('S3: a GET never answered times out and is retried', async () => {
    const { storage, s3Proxy } = await stalledStorage({ s3: 'silent' });
    const { value, ms } = await timed(() => storage.stores[0]!.get('seg/1'));
    expect(value.byteLength).toBe(64 * 1024);
    // Nothing comes at all: the idle socket gives up first (the request timeout bounds a trickle).
    const first = Math.min(S3.socketTimeoutMs, S3.requestTimeoutMs);
    expect(ms).toBeGreaterThanOrEqual(first - 50);
    expect(ms).toBeLessThan(first * 2);
    expect(s3Proxy.stats).toMatchObject({ stalled: 1, connections: 2 });
    storage.close();
  });

  it('S3: a GET whose body stalls after its headers is read again', async () => {
    const { storage, s3Proxy } = await stalledStorage({ s3: 'body' });
    const { value, ms } = await timed(() => storage.stores[0]!.get('seg/1', { start: 10, end: 1010 }));
    expect(value).toEqual(new Uint8Array(1000).fill(7));
    expect(ms).toBeGreaterThanOrEqual(S3.socketTimeoutMs - 50);
    expect(ms).toBeLessThan(S3.socketTimeoutMs * 2);
    expect(s3Proxy.stats).toMatchObject({ stalled: 1, connections: 2 });
    storage.close();
  });

  it('the scheduler waits longer for its large reads, within its minutes', () => {
    const { request, scheduler } = SDK_TIMEOUTS;
    expect(scheduler.s3.requestTimeoutMs).toBeGreaterThan(request.s3.requestTimeoutMs);
    // Every attempt timing out still ends within the function's timeout: 29 s (10 s for heartbeat and push), 5 min less 15 s.
    // The request timeout runs from the connection's start; 2 s is ample for the back-off between attempts.
    const worst = (t: typeof request.s3) => t.maxAttempts * t.requestTimeoutMs + 2_000;
    expect(worst(request.dynamodb)).toBeLessThan(10_000);
    expect(worst(request.s3)).toBeLessThan(29_000);
    expect(Math.max(worst(scheduler.s3), worst(scheduler.dynamodb))).toBeLessThan(285_000);
  });
});
