/**
 * The Lambda target's adapter against a peer that speaks Lambda's Invoke REST API on the wire
 * (POST /2015-03-31/functions/{name}/invocations, X-Amz-Function-Error on a function error): the
 * invocation recorded as Lambda receives it, the function's answer returned, FunctionError and
 * HTTP errors and timeouts reported as failures.
 */
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { lambdaInvoker } from '../../src/storage/lambda-invoker.js';
import { TEST_CREDENTIALS, TEST_REGION } from '../support/emulators.js';

interface Recorded {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
}

type Answer = { status: number; headers?: Record<string, string>; body: string; delayMs?: number };

describe('lambdaInvoker (Lambda Invoke, RequestResponse)', () => {
  let server: Server;
  let endpoint: string;
  const recorded: Recorded[] = [];
  let answer: Answer = { status: 200, body: '' };

  beforeAll(async () => {
    server = createServer((req, res) => {
      let body = '';
      req.on('data', (c) => (body += c));
      req.on('end', async () => {
        recorded.push({ method: req.method ?? '', path: req.url ?? '', headers: req.headers, body });
        const a = answer;
        if (a.delayMs) await new Promise((r) => setTimeout(r, a.delayMs));
        if (res.destroyed) return;
        res.writeHead(a.status, { 'content-type': 'application/json', ...a.headers }).end(a.body);
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });

  const invoker = () => lambdaInvoker({ region: TEST_REGION, endpoint, credentials: TEST_CREDENTIALS });
  const arn = `arn:aws:lambda:${TEST_REGION}:123456789012:function:orders-consumer`;
  const event = {
    eventSource: 'SelfManagedKafka',
    bootstrapServers: '127.0.0.1:9092',
    records: {
      'orders-0': [
        {
          topic: 'orders',
          partition: 0,
          offset: 15,
          timestamp: 1,
          timestampType: 'CREATE_TIME',
          value: 'eA==',
          headers: [],
        },
      ],
    },
  };

  it('invokes RequestResponse with the event as payload, signed, and returns the answer', async () => {
    recorded.length = 0;
    answer = { status: 200, headers: { 'x-amz-executed-version': '$LATEST' }, body: '{"batchItemFailures":[]}' };
    expect(await invoker()(arn, 5_000, Buffer.from(JSON.stringify(event)))).toEqual({
      ok: true,
      response: { batchItemFailures: [] },
      answer: { statusCode: 200, executedVersion: '$LATEST' },
    });
    expect(recorded).toHaveLength(1);
    const [call] = recorded;
    expect(call!.method).toBe('POST');
    expect(call!.path).toBe(`/2015-03-31/functions/${encodeURIComponent(arn)}/invocations`);
    expect(call!.headers['x-amz-invocation-type']).toBe('RequestResponse');
    expect(call!.headers.authorization).toMatch(
      new RegExp(
        `^AWS4-HMAC-SHA256 Credential=${TEST_CREDENTIALS.accessKeyId}/\\d{8}/${TEST_REGION}/lambda/aws4_request`,
      ),
    );
    expect(JSON.parse(call!.body)).toEqual(event);
  });

  it('an empty answer is a success without response', async () => {
    answer = { status: 200, body: '' };
    expect(await invoker()(arn, 5_000, Buffer.from(JSON.stringify(event)))).toEqual({
      ok: true,
      response: undefined,
      answer: { statusCode: 200 },
    });
  });

  it('X-Amz-Function-Error (Unhandled, Handled) is a function error though the status is 200, kept as answered', async () => {
    for (const kind of ['Unhandled', 'Handled']) {
      answer = {
        status: 200,
        headers: { 'x-amz-function-error': kind },
        body: '{"errorType":"Error","errorMessage":"boom"}',
      };
      const out = await invoker()(arn, 5_000, Buffer.from(JSON.stringify(event)));
      expect(out.ok).toBe(false);
      expect(!out.ok && out.error).toBe(`${kind}: {"errorType":"Error","errorMessage":"boom"}`);
      // What the on-failure record's responseContext carries.
      expect(out.answer).toEqual({ statusCode: 200, functionError: kind });
    }
  });

  it('a service error and a timeout are failures, and nothing is invoked twice behind the delivery', async () => {
    recorded.length = 0;
    answer = {
      status: 429,
      headers: { 'x-amzn-errortype': 'TooManyRequestsException' },
      body: '{"message":"Rate exceeded","Type":"User","Reason":"ReservedFunctionConcurrentInvocationLimitExceeded"}',
    };
    const throttled = await invoker()(arn, 5_000, Buffer.from(JSON.stringify(event)));
    expect(throttled.ok).toBe(false);
    expect(!throttled.ok && throttled.error).toMatch(/^TooManyRequestsException/);
    expect(recorded).toHaveLength(1);

    answer = { status: 200, body: '{}', delayMs: 1_000 };
    const slow = await invoker()(arn, 100, Buffer.from(JSON.stringify(event)));
    expect(slow.ok).toBe(false);
    expect(!slow.ok && slow.error).toMatch(/Abort/);
  });
});
