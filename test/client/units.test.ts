import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { regionFromHost } from '../../src/client/auth.js';
import { errorFromBody, KafkaClientError, KafkaConnectionError } from '../../src/client/errors.js';
import { DefaultPartitioner } from '../../src/client/partitioner.js';
import { backoffMs, retry } from '../../src/client/retry.js';
import { Transport } from '../../src/client/transport.js';
import { Partitioner as ServerPartitioner } from '../../src/log/partitioner.js';

describe('client building blocks', () => {
  it('partitions keyed records as the server does, and keyless ones stickily until batch.size', () => {
    const server = new ServerPartitioner().forRequest('t', 7);
    const client = new DefaultPartitioner(100, () => 0.5);
    for (let i = 0; i < 500; i++) {
      const key = Buffer.from(`key-${i}-${'x'.repeat(i % 9)}`);
      expect(client.partition('t', 7, key)).toBe(server(key));
    }
    const first = client.partition('t', 7, null);
    client.onAppend('t', first, 7, 60);
    expect(client.partition('t', 7, null)).toBe(first);
    client.onAppend('t', first, 7, 60); // 120 >= the sticky batch size: move on
    expect(client.partition('t', 7, null)).not.toBe(first);
  });

  it('moves keyless records through every partition once per round of switches, never twice in a row', () => {
    let draws = 0;
    // Any random source: the draw is among the partitions not yet visited in the round.
    const client = new DefaultPartitioner(100, () => [0.99, 0, 0.5, 0.3][draws++ % 4]!);
    const visited: number[] = [client.partition('t', 6, null)];
    for (let i = 0; i < 17; i++) {
      client.onAppend('t', visited.at(-1)!, 6, 100);
      visited.push(client.partition('t', 6, null));
    }
    expect(new Set(visited.slice(0, 6)).size).toBe(6);
    for (let i = 1; i < visited.length; i++) expect(visited[i]).not.toBe(visited[i - 1]);
    // Later rounds leave out the partition the last one ended on: each covers the other five.
    expect(new Set(visited.slice(6, 11)).size).toBe(5);
    expect(new Set(visited.slice(11, 16)).size).toBe(5);
  });

  it('backs off exponentially with jitter and retries only retriable errors', async () => {
    expect(backoffMs(0, 100, 1000, () => 0.5)).toBe(100);
    expect(backoffMs(3, 100, 1000, () => 0.5)).toBe(800);
    expect(backoffMs(10, 100, 1000, () => 1)).toBe(1000);
    expect(backoffMs(2, 100, 1000, () => 0)).toBe(320);
    let calls = 0;
    const ok = await retry(
      async () => {
        if (++calls < 3) throw new KafkaConnectionError('down');
        return 'up';
      },
      { retries: 5, initialBackoffMs: 1, maxBackoffMs: 2 },
    );
    expect([ok, calls]).toEqual(['up', 3]);
    calls = 0;
    const fatal = new KafkaClientError('INVALID_CONFIG', 'no');
    await expect(
      retry(
        async () => {
          calls++;
          throw fatal;
        },
        { retries: 5, initialBackoffMs: 1, maxBackoffMs: 2 },
      ),
    ).rejects.toBe(fatal);
    expect(calls).toBe(1);
  });

  it('maps error envelopes to typed errors with Kafka names and retriability', () => {
    expect(
      errorFromBody(404, { error_code: 40403, message: 'no such topic', error: 'UNKNOWN_TOPIC_OR_PARTITION' }),
    ).toMatchObject({
      type: 'UNKNOWN_TOPIC_OR_PARTITION',
      code: 3,
      retriable: true,
      status: 404,
      errorCode: 40403,
      message: 'no such topic',
    });
    expect(errorFromBody(409, { error: 'OUT_OF_ORDER_SEQUENCE_NUMBER', message: 'x' })).toMatchObject({
      code: 45,
      retriable: false,
    });
    expect(errorFromBody(403, { message: 'Forbidden' })).toMatchObject({
      type: 'CLUSTER_AUTHORIZATION_FAILED',
      retriable: false,
    });
    expect(errorFromBody(503, { message: 'Service Unavailable' })).toMatchObject({
      type: 'NETWORK_EXCEPTION',
      retriable: true,
    });
    expect(errorFromBody(429, undefined)).toMatchObject({ type: 'THROTTLING_QUOTA_EXCEEDED', retriable: true });
    expect(regionFromHost('abc123.execute-api.eu-west-1.amazonaws.com')).toBe('eu-west-1');
    expect(regionFromHost('xyz.lambda-url.us-east-2.on.aws')).toBe('us-east-2');
  });
});

describe('transport authentication', () => {
  const seen: { url: string; headers: Record<string, string | string[] | undefined> }[] = [];
  const server = createServer((req, res) => {
    seen.push({ url: req.url!, headers: req.headers });
    res.setHeader('content-type', 'application/json');
    if (req.url === '/v3/clusters') return res.end(JSON.stringify({ data: [{ cluster_id: 'c-1' }] }));
    res.end(JSON.stringify({ data: [] }));
  });
  let origin: string;
  beforeAll(async () => {
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));

  it('discovers the cluster id and sends a bearer token', async () => {
    const t = new Transport({
      url: origin,
      auth: { type: 'bearer', token: async () => 'secret-token' },
      clientId: 'tests',
    });
    await t.request('GET', '/topics');
    expect(await t.clusterId()).toBe('c-1');
    expect(seen.at(-1)).toMatchObject({
      url: '/v3/clusters/c-1/topics',
      headers: { authorization: 'Bearer secret-token', 'user-agent': 'tests' },
    });
  });

  it('signs requests with SigV4 (static credentials here; the AWS credential chain by default)', async () => {
    const t = new Transport({
      url: `${origin}/v3/clusters/c-1`,
      auth: {
        type: 'sigv4',
        region: 'eu-west-1',
        credentials: {
          accessKeyId: 'AKIDEXAMPLE',
          secretAccessKey: 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY',
          sessionToken: 'tok',
        },
      },
    });
    await t.request('POST', '/topics/x/records:batch', { body: { entries: [] }, query: { acks: 'all' } });
    const h = seen.at(-1)!.headers;
    expect(h.authorization).toMatch(
      /^AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE\/\d{8}\/eu-west-1\/execute-api\/aws4_request, SignedHeaders=[a-z0-9;-]*host[a-z0-9;-]*, Signature=[0-9a-f]{64}$/,
    );
    expect(h['x-amz-date']).toMatch(/^\d{8}T\d{6}Z$/);
    expect(h['x-amz-security-token']).toBe('tok');
    expect(h['x-amz-content-sha256'] ?? 'unsigned-or-hashed').toBeTruthy();
    // A binary body (a record batch) is signed too.
    await t.request('POST', '/topics/x/partitions/0/records', {
      bytes: new Uint8Array([0, 1, 2, 255]),
      contentType: 'application/vnd.kafka.record-batch.v2',
    });
    const b = seen.at(-1)!.headers;
    expect(b.authorization).toMatch(
      /^AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE\/\d{8}\/eu-west-1\/execute-api\/aws4_request, SignedHeaders=[a-z0-9;-]*content-type[a-z0-9;-]*, Signature=[0-9a-f]{64}$/,
    );
    expect(b['content-type']).toBe('application/vnd.kafka.record-batch.v2');
    // A repeated query parameter is sent, and signed, with every value.
    await t.request('GET', '/user-scram-credentials', { query: { user: ['alice', 'bob'] } });
    expect(seen.at(-1)!.url).toBe('/v3/clusters/c-1/user-scram-credentials?user=alice&user=bob');
    expect(seen.at(-1)!.headers.authorization).toMatch(/Signature=[0-9a-f]{64}$/);
  });

  it('reports a refused connection as a retriable KafkaConnectionError, a slow one as a timeout', async () => {
    const refused = await new Transport({ url: 'http://127.0.0.1:9/v3/clusters/x' })
      .request('GET', '/topics')
      .catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(KafkaConnectionError);
    expect(refused).toMatchObject({ type: 'NETWORK_EXCEPTION', retriable: true });
    const slow = createServer(() => {});
    await new Promise<void>((r) => slow.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(slow.address() as AddressInfo).port}/v3/clusters/x`;
    await expect(new Transport({ url, requestTimeoutMs: 100 }).request('GET', '/topics')).rejects.toMatchObject({
      type: 'REQUEST_TIMED_OUT',
      retriable: true,
    });
    slow.closeAllConnections();
    slow.close();
  });
});
