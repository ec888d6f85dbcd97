/**
 * Bodies between what a Lambda invocation carries (6,291,456 bytes of event, binary bodies
 * base64-encoded) and API Gateway's 10 MB never reach the function: the HTTP API answers a bare
 * 500. The real client against the Lambda handlers behind the emulated HTTP API keeps its requests
 * within the bound, so a user sees records written, or a Kafka error before anything is sent.
 */
import { handle } from 'hono/aws-lambda';
import { describe, expect, it } from 'vitest';
import { Kafka, LAMBDA_MAX_REQUEST_BYTES } from '../../src/client/index.js';
import { createServices, createStorage } from '../../src/compose.js';
import { serverConfigFromEnv } from '../../src/config/server-config.js';
import { createApp } from '../../src/http/app.js';
import { RECORD_BATCH_MEDIA_TYPE } from '../../src/wire/protocol.js';
import { HTTP_API_HOST, type HttpHandler, type Invocation, httpApiFetch } from '../support/api-gateway.js';

const config = serverConfigFromEnv({ STORAGE_BACKEND: 'memory', CLUSTER_ID: 'c' });
const services = createServices(config, createStorage(config.backend));
const lambda = handle(createApp(services, { logError: () => {} })) as unknown as HttpHandler;
const invocations: Invocation[] = [];
const apiFetch = httpApiFetch({ produce: lambda, fetch: lambda, admin: lambda }, (i) => invocations.push(i));
const URL_ = `https://${HTTP_API_HOST}`;
const kafka = (options: { maxRequestBytes?: number } = {}) =>
  new Kafka({ url: URL_, clusterId: 'c', fetch: apiFetch, pushUrl: false, ...options });

describe("requests over a Lambda invocation's bound behind the HTTP API", () => {
  it('a binary body just over the bound gets a bare 500 and never reaches the function; one just under reaches it', async () => {
    const post = (bytes: number) =>
      apiFetch(`${URL_}/v3/clusters/c/topics/none/partitions/0/records`, {
        method: 'POST',
        headers: { 'content-type': RECORD_BATCH_MEDIA_TYPE },
        body: Buffer.alloc(bytes),
      });
    const before = invocations.length;
    const over = await post(LAMBDA_MAX_REQUEST_BYTES + 50_000);
    expect(over.status).toBe(500);
    expect(await over.json()).toEqual({ message: 'Internal Server Error' });
    expect(invocations.length).toBe(before);
    // The function answers it, in its own words (a Kafka error name).
    const under = await post(LAMBDA_MAX_REQUEST_BYTES);
    expect((await under.json()) as { error?: string }).toHaveProperty('error');
    expect(invocations.length).toBe(before + 1);
  });

  it('a producer allowed 16 MiB requests writes 12 MB in requests the function receives', async () => {
    const client = kafka();
    await client.admin().createTopics({ topics: [{ topic: 'big', numPartitions: 12 }] });
    const producer = client.producer({ maxRequestSize: 16 * 1024 * 1024, lingerMs: 1000 });
    const sent = await Promise.all(
      Array.from({ length: 12 }, (_, p) =>
        producer.send({ topic: 'big', messages: [{ partition: p, value: Buffer.alloc(1_000_000, p) }] }),
      ),
    );
    await producer.close();
    expect(sent.map((m) => m[0]!.offset)).toEqual(Array(12).fill(0));
  });

  it('without the bound (maxRequestBytes raised past it) the same produce meets the bare 500', async () => {
    const client = kafka({ maxRequestBytes: 64 * 1024 * 1024 });
    await client.admin().createTopics({ topics: [{ topic: 'unbounded', numPartitions: 12 }] });
    const producer = client.producer({
      maxRequestSize: 16 * 1024 * 1024,
      lingerMs: 1000,
      retries: 0,
      requestTimeoutMs: 5000,
      deliveryTimeoutMs: 6000,
    });
    const sends = Array.from({ length: 12 }, (_, p) =>
      producer.send({ topic: 'unbounded', messages: [{ partition: p, value: Buffer.alloc(1_000_000, p) }] }),
    );
    await expect(Promise.all(sends)).rejects.toMatchObject({ type: 'UNKNOWN_SERVER_ERROR', status: 500 });
    await Promise.allSettled(sends);
    await producer.close();
  });
});
