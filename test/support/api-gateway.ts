/**
 * Just enough of API Gateway to drive the Lambda handlers in-process with the real client: an
 * HTTP API (a `fetch` implementation that turns each request into a payload 2.0 event for the
 * function infra/routes.ts routes it to) and a WebSocket API (a `ws` server whose `subscribe`
 * messages invoke the push function and whose route responses go back on the socket; `$connect`
 * and `ping` are mocks, as in the stack). Every invocation is reported with its wall time.
 */
import type { AddressInfo } from 'node:net';
import type {
  APIGatewayProxyEventV2,
  APIGatewayProxyStructuredResultV2,
  APIGatewayProxyWebsocketEventV2,
  Context,
} from 'aws-lambda';
import { WebSocketServer } from 'ws';
import { routeFor, type HttpFunctionName } from '../../infra/routes.js';
import { RECORD_BATCH_MEDIA_TYPE } from '../../src/wire/protocol.js';

export type HttpHandler = (
  event: APIGatewayProxyEventV2,
  context: Context,
) => Promise<APIGatewayProxyStructuredResultV2>;
export type PushHandler = (event: APIGatewayProxyWebsocketEventV2) => Promise<APIGatewayProxyStructuredResultV2>;

export interface Invocation {
  fn: HttpFunctionName | 'push' | 'heartbeat';
  routeKey: string;
  /** The request path (HTTP API invocations): what the catch-all route was asked for. */
  path?: string;
  ms: number;
  /** The process's CPU time during the invocation (unlike `ms`, not stretched by other processes on a loaded machine). */
  cpuMs: number;
}

const cpuMsSince = (start: NodeJS.CpuUsage) => {
  const u = process.cpuUsage(start);
  return (u.user + u.system) / 1000;
};

const context = (functionName: string): Context => ({
  awsRequestId: 'r',
  functionName,
  functionVersion: '$LATEST',
  invokedFunctionArn: `arn:aws:lambda:us-east-1:123456789012:function:${functionName}`,
  memoryLimitInMB: '1024',
  logGroupName: `/aws/lambda/${functionName}`,
  logStreamName: 's',
  callbackWaitsForEmptyEventLoop: true,
  getRemainingTimeInMillis: () => 29_000,
  done: () => {},
  fail: () => {},
  succeed: () => {},
});

export const HTTP_API_HOST = 'abc123.execute-api.us-east-1.amazonaws.com';
/** Lambda's limit on a synchronous invocation's event (its JSON, body included). */
export const LAMBDA_EVENT_BYTES = 6_291_456;
/** The heartbeat function's URL (a Lambda function URL: the same payload 2.0 event, route `$default`). */
export const HEARTBEAT_URL_HOST = 'hb456.lambda-url.us-east-1.on.aws';

/**
 * A fetch that API Gateway's HTTP API would answer by invoking these handlers; requests to
 * HEARTBEAT_URL_HOST go to `heartbeat` as its function URL would pass them (no API Gateway).
 */
export function httpApiFetch(
  handlers: Record<HttpFunctionName, HttpHandler>,
  onInvoke: (i: Invocation) => void,
  heartbeat?: HttpHandler,
): typeof globalThis.fetch {
  return async (input, init) => {
    const req = new Request(input, init);
    const url = new URL(req.url);
    const viaUrl = heartbeat !== undefined && url.host === HEARTBEAT_URL_HOST;
    const host = viaUrl ? HEARTBEAT_URL_HOST : HTTP_API_HOST;
    const route = viaUrl
      ? { method: 'ANY', path: '$default', target: 'heartbeat' as const }
      : routeFor(req.method, url.pathname)!;
    const routeKey = viaUrl ? '$default' : `${route.method} ${route.path}`;
    const body = req.body ? Buffer.from(await req.arrayBuffer()) : undefined;
    const headers = Object.fromEntries(req.headers);
    const textual = (headers['content-type'] ?? '').includes('json');
    const event: APIGatewayProxyEventV2 = {
      version: '2.0',
      routeKey,
      rawPath: url.pathname,
      rawQueryString: url.search.slice(1),
      headers: { ...headers, host, 'x-forwarded-proto': 'https' },
      ...(url.search && { queryStringParameters: Object.fromEntries(url.searchParams) }),
      requestContext: {
        accountId: '123456789012',
        apiId: viaUrl ? 'hb456' : 'abc123',
        domainName: host,
        domainPrefix: viaUrl ? 'hb456' : 'abc123',
        http: {
          method: req.method,
          path: url.pathname,
          protocol: 'HTTP/1.1',
          sourceIp: '203.0.113.7',
          userAgent: 'vitest',
        },
        requestId: 'a',
        routeKey,
        stage: '$default',
        time: '',
        timeEpoch: Date.now(),
      },
      ...(body && { body: textual ? body.toString() : body.toString('base64') }),
      isBase64Encoded: !!body && !textual,
    };
    // Lambda refuses an event over its invocation limit before the function runs; the HTTP API
    // (and a function URL) then answers a bare 500. Measured only where the body could reach it.
    if (
      (event.body?.length ?? 0) * 6 > LAMBDA_EVENT_BYTES &&
      Buffer.byteLength(JSON.stringify(event)) > LAMBDA_EVENT_BYTES
    )
      return Response.json({ message: 'Internal Server Error' }, { status: 500 });
    const started = performance.now();
    const cpu = process.cpuUsage();
    const handler = route.target === 'heartbeat' ? heartbeat! : handlers[route.target];
    const result = await handler(event, context(route.target));
    onInvoke({
      fn: route.target,
      routeKey,
      path: url.pathname,
      ms: performance.now() - started,
      cpuMs: cpuMsSince(cpu),
    });
    const bytes =
      result.body === undefined ? undefined : Buffer.from(result.body, result.isBase64Encoded ? 'base64' : 'utf8');
    return new Response(result.statusCode === 204 ? null : bytes, {
      status: result.statusCode ?? 200,
      headers: result.headers as Record<string, string>,
    });
  };
}

export interface WebSocketApi {
  url: string;
  /** Messages from clients, by route key. */
  messages: Map<string, number>;
  connects: number;
  close(): Promise<void>;
}

/** The push WebSocket API: `subscribe` invokes the push function, `$connect` and `ping` are mocks. */
export async function webSocketApi(push: PushHandler, onInvoke: (i: Invocation) => void): Promise<WebSocketApi> {
  const wss = new WebSocketServer({ host: '127.0.0.1', port: 0 });
  await new Promise((r) => wss.once('listening', r));
  const api: WebSocketApi = {
    url: `ws://127.0.0.1:${(wss.address() as AddressInfo).port}/push`,
    messages: new Map(),
    connects: 0,
    close: () =>
      new Promise((r) => {
        for (const c of wss.clients) c.terminate();
        wss.close(() => r());
      }),
  };
  let ids = 0;
  wss.on('connection', (ws) => {
    api.connects++;
    const connectionId = `conn-${++ids}`;
    ws.on('message', (data) => {
      const text = String(data);
      let action = '$default';
      try {
        action = (JSON.parse(text) as { action?: string }).action ?? '$default';
      } catch {}
      api.messages.set(action, (api.messages.get(action) ?? 0) + 1);
      if (action !== 'subscribe') return;
      const event = {
        requestContext: {
          routeKey: 'subscribe',
          connectionId,
          domainName: 'ws123.execute-api.us-east-1.amazonaws.com',
          stage: 'push',
          apiId: 'ws123',
          eventType: 'MESSAGE',
        },
        body: text,
        isBase64Encoded: false,
      } as unknown as APIGatewayProxyWebsocketEventV2;
      const started = performance.now();
      const cpu = process.cpuUsage();
      void push(event).then((res) => {
        onInvoke({ fn: 'push', routeKey: 'subscribe', ms: performance.now() - started, cpuMs: cpuMsSince(cpu) });
        if (res.body) ws.send(res.body);
      });
    });
  });
  return api;
}

/** A function's answer as the tests read it: always a structured result with a string body. */
export type HttpFunctionResult = APIGatewayProxyStructuredResultV2 & {
  body: string;
  statusCode: number;
  headers: Record<string, string>;
};

let invocations = 0;

/**
 * One payload 2.0 invocation of an HTTP function, as API Gateway's catch-all route makes it (a
 * binary body as RecordBatch bytes, base64-encoded), with the size of the serialised result Lambda
 * carries back (what its 6 MB response bound applies to).
 */
export async function invokeHttpFunction(
  handler: (event: never, context: Context) => Promise<unknown>,
  method: string,
  rawPath: string,
  options: { query?: string; body?: Uint8Array | string; headers?: Record<string, string> } = {},
): Promise<{ result: HttpFunctionResult; invocationBytes: number }> {
  const body = options.body;
  const binary = body instanceof Uint8Array;
  const requestId = `r${++invocations}`;
  const event = {
    version: '2.0',
    routeKey: '$default',
    rawPath,
    rawQueryString: options.query ?? '',
    headers: {
      host: 'abc.execute-api.us-east-1.amazonaws.com',
      'content-type': binary ? RECORD_BATCH_MEDIA_TYPE : 'application/json',
      ...options.headers,
    },
    requestContext: {
      http: { method, path: rawPath, protocol: 'HTTP/1.1', sourceIp: '203.0.113.7', userAgent: 'vitest' },
      requestId,
    },
    ...(body !== undefined && { body: binary ? Buffer.from(body).toString('base64') : body }),
    isBase64Encoded: binary,
  } as never;
  const result = (await handler(event, {
    awsRequestId: requestId,
    functionName: 'fetch',
  } as Context)) as HttpFunctionResult;
  return { result, invocationBytes: Buffer.byteLength(JSON.stringify(result)) };
}

export const REST_API_HOST = 'rest789.execute-api.us-east-1.amazonaws.com';

/** Whether a media type is one of a REST API's binaryMediaTypes (which may be `type/*` or `*\/*`). */
export function isBinaryMediaType(binaryMediaTypes: readonly string[], header: string | null | undefined): boolean {
  const type = (header ?? '').split(',')[0]!.split(';')[0]!.trim().toLowerCase();
  if (!type) return false;
  return binaryMediaTypes.some((b) => {
    const [bt, bs] = b.toLowerCase().split('/');
    const [t, s] = type.split('/');
    return (bt === '*' || bt === t) && (bs === '*' || bs === s);
  });
}

/**
 * A fetch that API Gateway's REST API (v1, Lambda proxy integration, payload 1.0) would answer
 * with these handlers, with the REST API's way with bodies: a request body whose Content-Type is
 * not one of `binaryMediaTypes` reaches the function as text (bytes that are not UTF-8 are
 * replaced, as API Gateway passes them), and a function's base64 answer is decoded to bytes only
 * when the request's Accept names a binary media type; otherwise the caller gets the base64 text.
 * `seen` gets each request's Content-Type and Accept and each answer's Content-Type.
 */
export function restApiFetch(
  handlers: Record<HttpFunctionName, (event: never, context: Context) => Promise<unknown>>,
  binaryMediaTypes: readonly string[],
  seen: (m: { contentType?: string; accept?: string; answered?: string }) => void = () => {},
): typeof globalThis.fetch {
  return async (input, init) => {
    const req = new Request(input, init);
    const url = new URL(req.url);
    const route = routeFor(req.method, url.pathname)!;
    const headers = Object.fromEntries(req.headers);
    const bytes = req.body ? Buffer.from(await req.arrayBuffer()) : undefined;
    const binaryBody = isBinaryMediaType(binaryMediaTypes, headers['content-type']);
    const event = {
      resource: route.path,
      path: url.pathname,
      httpMethod: req.method,
      headers: { ...headers, host: REST_API_HOST, 'x-forwarded-proto': 'https' },
      multiValueHeaders: Object.fromEntries(Object.entries(headers).map(([k, v]) => [k, [v]])),
      queryStringParameters: url.search ? Object.fromEntries(url.searchParams) : null,
      multiValueQueryStringParameters: url.search
        ? Object.fromEntries([...new Set(url.searchParams.keys())].map((k) => [k, url.searchParams.getAll(k)]))
        : null,
      pathParameters: null,
      stageVariables: null,
      requestContext: {
        accountId: '123456789012',
        apiId: 'rest789',
        httpMethod: req.method,
        path: `/local${url.pathname}`,
        stage: 'local',
        requestId: 'a',
        resourcePath: route.path,
        identity: { sourceIp: '203.0.113.7', userAgent: 'vitest' },
      },
      body: bytes ? (binaryBody ? bytes.toString('base64') : bytes.toString('utf8')) : null,
      isBase64Encoded: !!bytes && binaryBody,
    } as never;
    const result = (await handlers[route.target](event, context(route.target))) as {
      statusCode: number;
      headers?: Record<string, string>;
      multiValueHeaders?: Record<string, string[]>;
      body?: string;
      isBase64Encoded?: boolean;
    };
    const answerHeaders = new Headers(result.headers ?? {});
    for (const [k, vs] of Object.entries(result.multiValueHeaders ?? {}))
      for (const v of vs) answerHeaders.append(k, v);
    seen({
      ...(headers['content-type'] && { contentType: headers['content-type'] }),
      ...(headers.accept && { accept: headers.accept }),
      ...(answerHeaders.get('content-type') && { answered: answerHeaders.get('content-type')! }),
    });
    const decode = result.isBase64Encoded && isBinaryMediaType(binaryMediaTypes, headers.accept);
    const body = result.body === undefined ? undefined : Buffer.from(result.body, decode ? 'base64' : 'utf8');
    return new Response(result.statusCode === 204 ? null : body, { status: result.statusCode, headers: answerHeaders });
  };
}
