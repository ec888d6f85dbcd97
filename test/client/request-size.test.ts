import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Kafka, LAMBDA_MAX_REQUEST_BYTES } from '../../src/client/index.js';
import { isProduce, proxy } from './support/flaky-proxy.js';
import { startServer, stopServer, tempDir, type LocalServer } from '../support/local-server.js';

/** A deployed API's URL; its requests reach the local server through the logging proxy. */
const API_URL = 'https://a1b2c3d4e5.execute-api.eu-west-1.amazonaws.com/prod';

describe('request bodies the server behind the URL could not take are refused before they are sent', () => {
  let dir: Awaited<ReturnType<typeof tempDir>>;
  let server: LocalServer | undefined;
  let logged: Awaited<ReturnType<typeof proxy>>;
  let viaApiGateway: Kafka;

  beforeAll(async () => {
    dir = await tempDir('client-request-size-');
    server = await startServer(dir.path);
    logged = await proxy(server.origin);
    viaApiGateway = new Kafka({
      url: API_URL,
      pushUrl: false,
      fetch: (url, init) => globalThis.fetch(String(url).replace(API_URL, logged.origin), init),
    });
  });
  afterAll(async () => {
    await logged?.close();
    await stopServer(server);
    await dir.remove();
  });

  const producedBodies = (from: number) => logged.log.slice(from).filter((e) => isProduce(e));

  it('behind API Gateway a record too large for a Lambda invocation fails MESSAGE_TOO_LARGE and is never sent', async () => {
    await viaApiGateway.admin().createTopics({ topics: [{ topic: 'huge-record', numPartitions: 1 }] });
    const producer = viaApiGateway.producer({ maxRequestSize: 16 * 1024 * 1024 });
    const from = logged.log.length;
    await expect(
      producer.send({ topic: 'huge-record', messages: [{ value: Buffer.alloc(LAMBDA_MAX_REQUEST_BYTES) }] }),
    ).rejects.toMatchObject({ type: 'MESSAGE_TOO_LARGE', retriable: false });
    await producer.close();
    expect(producedBodies(from)).toEqual([]);
  });

  it('behind API Gateway a producer allowed 16 MiB requests splits them to what Lambda takes, and every record lands', async () => {
    await viaApiGateway.admin().createTopics({ topics: [{ topic: 'big-requests', numPartitions: 12 }] });
    const producer = viaApiGateway.producer({ maxRequestSize: 16 * 1024 * 1024, lingerMs: 1000 });
    const from = logged.log.length;
    const value = (p: number) => Buffer.alloc(1_000_000, p);
    await Promise.all(
      Array.from({ length: 12 }, (_, p) =>
        producer.send({ topic: 'big-requests', messages: [{ partition: p, value: value(p) }] }),
      ),
    );
    await producer.close();
    const sizes = producedBodies(from).map((e) => e.body.length);
    // 12 MB of records: at least three requests, none over what fits a Lambda event as base64.
    expect(sizes.length).toBeGreaterThanOrEqual(3);
    expect(Math.max(...sizes)).toBeLessThanOrEqual(LAMBDA_MAX_REQUEST_BYTES);
    const d = await viaApiGateway.admin().describeTopic('big-requests');
    expect(d.partitions.map((p) => p.highWatermark)).toEqual(Array(12).fill(1));
  });

  it('behind API Gateway any other oversized request fails PAYLOAD_TOO_LARGE without being sent', async () => {
    const from = logged.log.length;
    await expect(
      viaApiGateway.admin().createTopics({
        topics: [
          {
            topic: 'oversized-config',
            configEntries: [{ name: 'cleanup.policy', value: 'x'.repeat(LAMBDA_MAX_REQUEST_BYTES) }],
          },
        ],
      }),
    ).rejects.toMatchObject({ type: 'PAYLOAD_TOO_LARGE', retriable: false });
    expect(logged.log.slice(from).filter((e) => e.method === 'POST')).toEqual([]);
  });

  it('a JSON body is measured as Lambda carries it: escaped quotes count twice', async () => {
    // Under the bound in bytes, over it once every quote is escaped in the event.
    const quotes = '"'.repeat(Math.floor(LAMBDA_MAX_REQUEST_BYTES / 2.5));
    const from = logged.log.length;
    await expect(
      viaApiGateway.admin().createTopics({
        topics: [{ topic: 'quoted-config', configEntries: [{ name: 'cleanup.policy', value: quotes }] }],
      }),
    ).rejects.toMatchObject({ type: 'PAYLOAD_TOO_LARGE' });
    expect(logged.log.slice(from).filter((e) => e.method === 'POST')).toEqual([]);
  });

  it('a configured maxRequestBytes splits a batch larger than it (batchSize above it), and every record lands', async () => {
    const kafka = new Kafka({ url: logged.origin, pushUrl: false, maxRequestBytes: 300_000 });
    await kafka.admin().createTopics({ topics: [{ topic: 'split-batches', numPartitions: 1 }] });
    const producer = kafka.producer({ batchSize: 1_000_000, lingerMs: 1000 });
    const from = logged.log.length;
    const sends = Array.from({ length: 16 }, (_, i) =>
      producer.send({ topic: 'split-batches', messages: [{ value: Buffer.alloc(50_000, i) }] }),
    );
    const offsets = (await Promise.all(sends)).map((m) => m[0]!.offset);
    await producer.close();
    expect(offsets).toEqual(Array.from({ length: 16 }, (_, i) => i));
    const sizes = producedBodies(from).map((e) => e.body.length);
    expect(sizes.length).toBeGreaterThanOrEqual(4);
    expect(Math.max(...sizes)).toBeLessThanOrEqual(300_000);
  });
});
