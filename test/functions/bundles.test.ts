/**
 * The Lambda bundles exactly as `cdk synth` builds them (local esbuild, into a temporary cloud
 * assembly outside the repo, so nothing resolves from node_modules), imported natively and
 * invoked with API Gateway v2 events and a scheduled event, end to end against s3rver and
 * dynalite through the real S3 and DynamoDB adapters.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { createHash } from 'node:crypto';
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2, Context } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { build, type Metafile } from 'esbuild';
import { esbuildOptions } from '../../infra/bundling.js';
import type { LogFunctionName } from '../../infra/log-functions.js';
import { routeFor } from '../../infra/routes.js';
import { ZSTD_ENGINE } from '../../src/wire/compression/index.js';
import { decodeRecordBatches, encodeRecordBatch } from '../../src/wire/record-batch.js';
import {
  startDynalite,
  startS3rver,
  TEST_CREDENTIALS,
  type DynaliteHandle,
  type S3rverHandle,
} from '../support/emulators.js';
import { synthStack, type Synthesized } from '../infra/synth.js';

type Handler = (event: unknown, context: Context) => Promise<any>;
type BundleName = LogFunctionName | 'authorizer';

const API_KEY = 'test-key-0123456789';
const CLUSTER = 'test';
const BASE = `/v3/clusters/${CLUSTER}`;

let synth: Synthesized;
let s3: S3rverHandle;
let ddb: DynaliteHandle;
const handlers = {} as Record<BundleName, Handler>;
const bundleBytes = {} as Record<BundleName, number>;
const bundleText = {} as Record<BundleName, string>;
const savedEnv = { ...process.env };
const timings: Record<string, number> = {};
/** What infra/bundling.ts builds for each function, and esbuild's account of which files went in. */
const rebuilt = {} as Record<BundleName, { text: string; inputs: Metafile['outputs'][string]['inputs'] }>;
const rebuildDir = mkdtempSync(join(tmpdir(), 'bundles-rebuild-'));
let lines: string[] = [];

/**
 * Node's own import(), not the test runner's (which would transform the bundle first): a data: URL
 * module is evaluated by Node itself, so the import() inside it is native, as in Lambda.
 */
const NATIVE_IMPORT = `data:text/javascript,${encodeURIComponent('export default (url) => import(url);')}`;
async function nativeImport(url: string): Promise<{ handler: Handler }> {
  const { default: load } = (await import(/* @vite-ignore */ NATIVE_IMPORT)) as {
    default: (u: string) => Promise<{ handler: Handler }>;
  };
  return load(url);
}

beforeAll(async () => {
  let t = performance.now();
  synth = synthStack(
    { authMode: 'apiKey', apiKeySha256: createHash('sha256').update(API_KEY).digest('hex') },
    { cfnValidation: false },
  );
  timings.synthWithBundlingMs = performance.now() - t;
  [s3, ddb] = await Promise.all([startS3rver(), startDynalite()]);
  Object.assign(process.env, {
    STORAGE_BACKEND: 'aws',
    BUCKETS: s3.bucket,
    TABLE_NAME: ddb.table,
    CLUSTER_ID: CLUSTER,
    AWS_REGION: 'us-east-1',
    AWS_ENDPOINT_URL_S3: s3.endpoint,
    AWS_ENDPOINT_URL_DYNAMODB: ddb.endpoint,
    AWS_ACCESS_KEY_ID: TEST_CREDENTIALS.accessKeyId,
    AWS_SECRET_ACCESS_KEY: TEST_CREDENTIALS.secretAccessKey,
    SERVICE_NAME: 'S3KafkaLog-test',
    METRICS_NAMESPACE: 'S3KafkaLog',
  });
  // The authorizer's environment as the template gives it (it holds the key's digest, not the key).
  const authorizerId = synth.stack.getLogicalId(synth.stack.functions.authorizer!.node.defaultChild as any);
  process.env.API_KEY_SHA256 =
    synth.template.toJSON().Resources[authorizerId].Properties.Environment.Variables.API_KEY_SHA256;
  vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
    lines.push(...String(chunk).split('\n').filter(Boolean));
    return true;
  });
  t = performance.now();
  const functions = { ...synth.stack.functions.byName, authorizer: synth.stack.functions.authorizer! };
  for (const [name, fn] of Object.entries(functions) as [BundleName, (typeof functions)[BundleName]][]) {
    const resource = synth.template.toJSON().Resources[synth.stack.getLogicalId(fn.node.defaultChild as any)];
    const hash = (resource.Properties.Code.S3Key as string).replace(/\.zip$/, '');
    const file = join(synth.outdir, `asset.${hash}`, 'index.mjs');
    bundleText[name] = readFileSync(file, 'utf8');
    bundleBytes[name] = Buffer.byteLength(bundleText[name]);
    handlers[name] = (await nativeImport(pathToFileURL(file).href)).handler;
  }
  timings.importBundlesMs = performance.now() - t;
  for (const name of Object.keys(functions) as BundleName[]) {
    const options = esbuildOptions(name === 'authorizer' ? 'apiKeyAuthorizer' : name, join(rebuildDir, name));
    const { metafile } = await build({ ...options, metafile: true });
    const output = Object.values(metafile.outputs).find((o) => o.entryPoint)!;
    rebuilt[name] = { text: readFileSync(options.outfile, 'utf8'), inputs: output.inputs };
  }
}, 180_000);

afterAll(async () => {
  vi.restoreAllMocks();
  process.env = savedEnv;
  await Promise.all([s3?.stop(), ddb?.stop()]);
  synth?.cleanup();
  rmSync(rebuildDir, { recursive: true, force: true });
  console.log(
    'bundle test timings',
    Object.fromEntries(Object.entries(timings).map(([k, v]) => [k, Math.round(v)])),
    'bundle bytes',
    bundleBytes,
  );
});

let invocation = 0;
function lambdaContext(functionName: string): Context {
  invocation++;
  return {
    awsRequestId: `lambda-request-${invocation}`,
    functionName,
    functionVersion: '$LATEST',
    invokedFunctionArn: `arn:aws:lambda:us-east-1:123456789012:function:${functionName}`,
    memoryLimitInMB: '1024',
    logGroupName: `/aws/lambda/${functionName}`,
    logStreamName: 'stream',
    callbackWaitsForEmptyEventLoop: true,
    getRemainingTimeInMillis: () => 29_000,
    done: () => {},
    fail: () => {},
    succeed: () => {},
  };
}

/** An HTTP API payload 2.0 event, as API Gateway sends it for this route. */
function apiEvent(
  method: string,
  path: string,
  options: { query?: string; body?: unknown; headers?: Record<string, string> } = {},
): APIGatewayProxyEventV2 {
  const route = routeFor(method, path)!;
  const routeKey = `${route.method} ${route.path}`;
  const query = options.query ?? '';
  return {
    version: '2.0',
    routeKey,
    rawPath: path,
    rawQueryString: query,
    headers: {
      host: 'abc123.execute-api.us-east-1.amazonaws.com',
      'x-forwarded-proto': 'https',
      'content-type': 'application/json',
      ...options.headers,
    },
    ...(query && { queryStringParameters: Object.fromEntries(new URLSearchParams(query)) }),
    requestContext: {
      accountId: '123456789012',
      apiId: 'abc123',
      domainName: 'abc123.execute-api.us-east-1.amazonaws.com',
      domainPrefix: 'abc123',
      http: { method, path, protocol: 'HTTP/1.1', sourceIp: '203.0.113.7', userAgent: 'vitest' },
      requestId: `api-request-${invocation + 1}`,
      routeKey,
      stage: '$default',
      time: '02/Dec/2025:10:00:00 +0000',
      timeEpoch: 1_764_669_600_000,
    },
    ...(options.body !== undefined && { body: JSON.stringify(options.body) }),
    isBase64Encoded: false,
  };
}

/** Invokes the function API Gateway would route the request to. */
async function invoke(method: string, path: string, options: Parameters<typeof apiEvent>[2] = {}) {
  const target = routeFor(method, path)!.target;
  lines = [];
  const context = lambdaContext(target);
  const started = performance.now();
  const result = (await handlers[target](
    apiEvent(method, path, options),
    context,
  )) as APIGatewayProxyStructuredResultV2;
  timings[`${target} ${method}`] = performance.now() - started;
  const logs = lines.map((l) => JSON.parse(l) as Record<string, any>);
  return {
    target,
    requestId: context.awsRequestId,
    status: result.statusCode,
    headers: result.headers ?? {},
    body: result.body
      ? JSON.parse(result.isBase64Encoded ? Buffer.from(result.body, 'base64').toString() : result.body)
      : undefined,
    logs,
    emf: logs.find((l) => l._aws),
  };
}

describe('bundles', () => {
  it('are self-contained ESM bundles of modest size', () => {
    for (const [name, bytes] of Object.entries(bundleBytes)) expect(bytes, name).toBeLessThan(3 * 1024 * 1024);
    for (const name of ['produce', 'fetch', 'admin', 'scheduler', 'authorizer'] as const)
      expect(typeof handlers[name]).toBe('function');
  });

  it('are what infra/bundling.ts builds (so the bench and the tests below measure the deployed code)', () => {
    for (const name of Object.keys(bundleText) as BundleName[])
      expect(rebuilt[name].text === bundleText[name], name).toBe(true);
  });

  /** The files of the repository (node_modules aside) whose code is in a bundle. */
  const sources = (name: BundleName) =>
    Object.entries(rebuilt[name].inputs)
      .filter(([file, input]) => input.bytesInOutput > 0 && !file.startsWith('node_modules/'))
      .map(([file]) => file);
  const routeModules = (name: BundleName) => sources(name).filter((f) => /^src\/http\/[a-z-]+-routes\.ts$/.test(f));

  it('hold only the route modules of the routes API Gateway sends them (infra/routes.ts)', () => {
    expect(routeModules('produce').sort()).toEqual([
      'src/http/produce-request-routes.ts',
      'src/http/record-routes.ts',
      'src/http/topic-config-alter-routes.ts',
    ]);
    expect(routeModules('fetch')).toEqual(['src/http/record-fetch-routes.ts']);
    expect(routeModules('heartbeat')).toEqual(['src/http/group-routes.ts']);
    for (const name of ['push', 'scheduler', 'authorizer'] as const) expect(routeModules(name), name).toEqual([]);
    // The default route's function serves them all.
    expect(routeModules('admin')).toEqual(
      expect.arrayContaining([
        'src/http/acl-routes.ts',
        'src/http/consumer-instance-routes.ts',
        'src/http/fetch-request-routes.ts',
        'src/http/group-routes.ts',
        'src/http/transaction-routes.ts',
      ]),
    );
  });

  it('leave the web console and the OpenAPI document to the admin function', () => {
    // The document's modules, and the record routes' answer schemas it is built from (record-answers.ts).
    const adminOnly = (f: string) =>
      f.startsWith('src/console/') || /^src\/http\/([a-z-]*openapi|record-answers)\.ts$/.test(f);
    for (const name of ['produce', 'fetch', 'heartbeat', 'push', 'scheduler', 'authorizer'] as const)
      expect(sources(name).filter(adminOnly), name).toEqual([]);
    expect(sources('admin')).toEqual(
      expect.arrayContaining(['src/console/assets.generated.ts', 'src/http/openapi.ts']),
    );
  });

  it("leave ws (the local server's push socket) out of every function: the push function answers through API Gateway", () => {
    for (const name of ['produce', 'fetch', 'admin', 'push', 'heartbeat', 'scheduler', 'authorizer'] as const) {
      const files = Object.entries(rebuilt[name].inputs)
        .filter(([, input]) => input.bytesInOutput > 0)
        .map(([file]) => file);
      expect(
        files.filter((f) => f.startsWith('node_modules/ws/') || f === 'src/http/push-socket.ts'),
        name,
      ).toEqual([]);
    }
  });

  it('leave the consumer group services out of produce and fetch (src/compose.ts ServiceParts)', () => {
    const groupCode = (name: BundleName) =>
      sources(name).filter((f) =>
        ['src/groups/coordinator.ts', 'src/groups/classic-coordinator.ts', 'src/groups/consumer-instances.ts'].includes(
          f,
        ),
      );
    for (const name of ['produce', 'fetch'] as const) expect(groupCode(name), name).toEqual([]);
    for (const name of ['admin', 'heartbeat', 'scheduler'] as const) expect(groupCode(name), name).toHaveLength(3);
  });

  it('leave share groups and triggers out of produce and fetch (src/compose.ts ServiceParts)', () => {
    const partsCode = (name: BundleName) =>
      sources(name).filter((f) => ['src/share/share-partition.ts', 'src/triggers/trigger-runner.ts'].includes(f));
    for (const name of ['produce', 'fetch'] as const) expect(partsCode(name), name).toEqual([]);
    expect(partsCode('admin')).toHaveLength(2);
  });

  it('leave the transaction coordinator out of fetch, which neither produces nor ends a transaction', () => {
    const coordinator = 'src/transactions/transaction-coordinator.ts';
    expect(sources('fetch')).not.toContain(coordinator);
    for (const name of ['produce', 'admin', 'scheduler'] as const) expect(sources(name), name).toContain(coordinator);
  });

  it("hold the Lambda client in the scheduler's bundle only, the one function that delivers triggers", () => {
    const lambdaClient = (name: BundleName) =>
      Object.entries(rebuilt[name].inputs)
        .filter(([file, input]) => input.bytesInOutput > 0 && file.includes('@aws-sdk/client-lambda/'))
        .map(([file]) => file);
    for (const name of ['produce', 'fetch', 'admin', 'push', 'heartbeat'] as const)
      expect(lambdaClient(name), name).toEqual([]);
    expect(lambdaClient('scheduler').length).toBeGreaterThan(0);
  });

  it("take credentials from the environment or the container endpoint only: no profile, SSO or STS clients (the SDK's default chain is aliased)", () => {
    for (const name of ['produce', 'fetch', 'admin', 'push', 'heartbeat', 'scheduler'] as const) {
      const files = Object.entries(rebuilt[name].inputs)
        .filter(([, input]) => input.bytesInOutput > 0)
        .map(([file]) => file);
      expect(files, name).toContain('src/storage/lambda-credentials.ts');
      expect(
        files.filter((f) =>
          /@aws-sdk\/(credential-provider-(node|ini|sso|login|process|web-identity)|nested-clients|token-providers)\//.test(
            f,
          ),
        ),
        name,
      ).toEqual([]);
    }
  });

  it('leave the produce code out of fetch: its routes, body schemas and admission', () => {
    const produceOnly = [
      'src/http/record-routes.ts',
      'src/http/record-encoding.ts',
      'src/http/produce-request-routes.ts',
      'src/http/acks.ts',
      'src/transactions/produce-admission.ts',
      'src/log/produced-batches.ts',
    ];
    expect(sources('fetch').filter((f) => produceOnly.includes(f))).toEqual([]);
    expect(sources('produce')).toEqual(expect.arrayContaining(produceOnly));
  });

  it('leave zod out of push, which parses no request with it (errors recognise zod by shape)', () => {
    const zod = Object.entries(rebuilt.push.inputs).filter(
      ([file, input]) => file.startsWith('node_modules/zod/') && input.bytesInOutput > 0,
    );
    expect(zod).toEqual([]);
  });

  it("hold zod's schemas but not its translations (zod is imported by namespace, so esbuild drops what is unused)", () => {
    for (const name of ['produce', 'fetch', 'admin', 'heartbeat'] as const) {
      const zod = Object.entries(rebuilt[name].inputs).filter(
        ([file, input]) => file.startsWith('node_modules/zod/') && input.bytesInOutput > 0,
      );
      expect(zod.length, name).toBeGreaterThan(0);
      expect(
        zod.map(([file]) => file).filter((f) => f.includes('/locales/') && !f.endsWith('/en.js')),
        name,
      ).toEqual([]);
    }
  });

  it('leave the embedded backend out: the SQLite adapter is a dynamic import, never bundled', () => {
    for (const name of ['produce', 'fetch', 'admin', 'scheduler'] as const) {
      const text = bundleText[name];
      // src/compose.ts imports the adapter only for the local backend; the bundle keeps that import as is.
      expect(text, name).toMatch(/import\(["']\.\/storage\/sqlite-metadata-store\.js["']\)/);
      // So does the local object store for its pack index.
      expect(text, name).toMatch(/import\(["']\.\/sqlite-pack-index\.js["']\)/);
      // Neither adapter (their table definitions) nor better-sqlite3 (its native binding's name) is inside.
      expect(text, name).not.toContain('CREATE TABLE IF NOT EXISTS items');
      expect(text, name).not.toContain('CREATE TABLE IF NOT EXISTS packs');
      expect(text, name).not.toMatch(/better[-_]sqlite3/);
    }
  });
});

describe('admin, produce and fetch bundles, end to end on s3rver and dynalite', () => {
  it('admin creates a topic', async () => {
    const res = await invoke('POST', `${BASE}/topics`, { body: { topic_name: 'events', partitions_count: 1 } });
    expect(res).toMatchObject({ target: 'admin', status: 201, body: { topic_name: 'events', partitions_count: 1 } });
    expect(res.headers['x-request-id']).toBe(res.requestId);
    const access = res.logs.find((l) => l.msg === 'request')!;
    expect(access).toMatchObject({
      level: 'info',
      function: 'admin',
      requestId: res.requestId,
      apiRequestId: expect.stringMatching(/^api-request-/),
      method: 'POST',
      path: `${BASE}/topics`,
      status: 201,
    });
    // The topic, the environment's process registration at its first invocation (docs/deploy.md),
    // and, the cluster being new, its feature level at the newest (docs/formats.md).
    expect(res.emf).toMatchObject({ DynamoDbWriteRequests: 3, requestId: res.requestId });
  });

  it('produce appends a batch: one object PUT, offsets back, produce metrics as EMF', async () => {
    const entries = ['a', 'b', 'c'].map((v, i) => ({ id: String(i), value: { type: 'STRING', data: v.repeat(100) } }));
    const res = await invoke('POST', `${BASE}/topics/events/records:batch`, { body: { entries } });
    expect(res.target).toBe('produce');
    expect(res.status).toBe(207);
    expect(res.body.failures).toEqual([]);
    expect(res.body.successes.map((s: { offset: number }) => s.offset)).toEqual([0, 1, 2]);
    expect(res.emf).toMatchObject({
      _aws: { CloudWatchMetrics: [{ Namespace: 'S3KafkaLog', Dimensions: [['Service']] }] },
      Service: 'S3KafkaLog-test',
      function: 'produce',
      requestId: res.requestId,
      ProduceRecords: 3,
      ProduceBytes: expect.any(Number),
      S3WriteRequests: 1,
    });
    expect(res.emf!.ProduceBytes).toBeGreaterThan(300);
    const metricNames = res.emf!._aws.CloudWatchMetrics[0].Metrics.map((m: { Name: string }) => m.Name);
    expect(metricNames).toEqual(
      expect.arrayContaining([
        'ProduceRecords',
        'ProduceBytes',
        'S3WriteRequests',
        'DynamoDbReadRequests',
        'DynamoDbWriteRequests',
      ]),
    );
  });

  it('fetch reads the records back from S3 through the index', async () => {
    const res = await invoke('GET', `${BASE}/topics/events/partitions/0/records`, { query: 'offset=0&format=string' });
    expect(res.target).toBe('fetch');
    expect(res.status).toBe(200);
    expect(res.body.records.map((r: { offset: number; value: unknown }) => [r.offset, r.value])).toEqual([
      [0, { type: 'STRING', data: 'a'.repeat(100) }],
      [1, { type: 'STRING', data: 'b'.repeat(100) }],
      [2, { type: 'STRING', data: 'c'.repeat(100) }],
    ]);
    expect(res.body).toMatchObject({ next_offset: 3, high_watermark: 3 });
    expect(res.emf).toMatchObject({ function: 'fetch', FetchRecords: 3, S3ReadRequests: 1 });
  });

  it('produce also takes a single record', async () => {
    const res = await invoke('POST', `${BASE}/topics/events/records`, {
      body: { value: { type: 'JSON', data: { n: 4 } } },
    });
    expect(res).toMatchObject({ target: 'produce', status: 200, body: { offset: 3 } });
    expect(res.emf).toMatchObject({ ProduceRecords: 1 });
  });

  it('record batches cross API Gateway as base64 both ways: produce takes one, fetch answers the stored bytes', async () => {
    const batch = encodeRecordBatch([
      { key: Buffer.from('k'), value: Buffer.from([0, 255, 1]), headers: [], timestamp: 1_700_000_000_000 },
    ]);
    const path = `${BASE}/topics/events/partitions/0/records`;
    const produced = apiEvent('POST', path, { headers: { 'content-type': 'application/vnd.kafka.record-batch.v2' } });
    const emf = () => lines.map((l) => JSON.parse(l) as Record<string, any>).find((l) => l._aws);
    lines = [];
    const produceResult = (await handlers.produce(
      { ...produced, body: Buffer.from(batch).toString('base64'), isBase64Encoded: true },
      lambdaContext('produce'),
    )) as APIGatewayProxyStructuredResultV2;
    expect(produceResult.statusCode).toBe(200);
    expect(JSON.parse(produceResult.body!)).toMatchObject({
      kind: 'KafkaProduceResult',
      base_offset: 4,
      last_offset: 4,
    });
    // The record-batch produce publishes its records and bytes, as the JSON produce does.
    expect(emf()).toMatchObject({ function: 'produce', ProduceRecords: 1, ProduceBytes: batch.byteLength });

    lines = [];
    const fetched = (await handlers.fetch(
      apiEvent('GET', path, { query: 'offset=4', headers: { accept: 'application/vnd.kafka.record-batch.v2' } }),
      lambdaContext('fetch'),
    )) as APIGatewayProxyStructuredResultV2;
    expect(fetched).toMatchObject({
      statusCode: 200,
      isBase64Encoded: true,
      headers: { 'kafka-next-offset': '5', 'kafka-high-watermark': '5' },
    });
    const [back] = decodeRecordBatches(Buffer.from(fetched.body!, 'base64'));
    expect(back!.records.map((r) => [r.offset, Buffer.from(r.key!).toString(), [...r.value!]])).toEqual([
      [4, 'k', [0, 255, 1]],
    ]);
    // So does the binary fetch: the records and bytes it answered with.
    expect(emf()).toMatchObject({
      function: 'fetch',
      FetchRecords: 1,
      FetchBytes: Buffer.from(fetched.body!, 'base64').byteLength,
    });
  });

  it('every codec in the bundles: produce checks and stores compressed batches, fetch answers them as JSON', async () => {
    await invoke('POST', `${BASE}/topics`, { body: { topic_name: 'codecs', partitions_count: 1 } });
    const path = `${BASE}/topics/codecs/partitions/0/records`;
    // zstd is node:zlib's on Lambda's Node 24; a bundle run on older Node (this test's, on Node 20)
    // has no zstd and says so (src/wire/compression/zstd.ts).
    const hasZstd = ZSTD_ENGINE === 'node:zlib';
    let offset = 0;
    for (const codec of ['gzip', 'snappy', 'lz4', 'zstd'] as const) {
      const value = `${codec} `.repeat(200);
      const batch = encodeRecordBatch(
        [{ key: Buffer.from(codec), value: Buffer.from(value), headers: [], timestamp: 1_700_000_000_000 }],
        { compression: codec },
      );
      const event = apiEvent('POST', path, { headers: { 'content-type': 'application/vnd.kafka.record-batch.v2' } });
      const produced = (await handlers.produce(
        { ...event, body: Buffer.from(batch).toString('base64'), isBase64Encoded: true },
        lambdaContext('produce'),
      )) as APIGatewayProxyStructuredResultV2;
      if (codec === 'zstd' && !hasZstd) {
        expect(produced.statusCode).toBe(400);
        expect(JSON.parse(produced.body!)).toMatchObject({ error: 'UNSUPPORTED_COMPRESSION_TYPE' });
        continue;
      }
      expect(produced.statusCode, codec).toBe(200);
      const fetched = await invoke('GET', path, { query: `offset=${offset}&format=string` });
      expect(
        fetched.body.records.map((r: { key: { data: string }; value: { data: string } }) => [r.key.data, r.value.data]),
      ).toEqual([[codec, value]]);
      offset++;
    }
  });

  it('behind a REST API (payload 1.0, the local stage), produce takes a base64 batch and fetch answers one', async () => {
    expect((await invoke('POST', `${BASE}/topics`, { body: { topic_name: 'rest', partitions_count: 1 } })).status).toBe(
      201,
    );
    const path = `${BASE}/topics/rest/partitions/0/records`;
    const v1 = (method: string, headers: Record<string, string>, extra: Record<string, unknown> = {}) => ({
      version: '1.0',
      resource: routeFor(method, path)!.path,
      path,
      httpMethod: method,
      headers: { host: 'abc123.execute-api.us-east-1.amazonaws.com', 'x-forwarded-proto': 'https', ...headers },
      multiValueHeaders: {},
      queryStringParameters: null,
      multiValueQueryStringParameters: null,
      pathParameters: null,
      stageVariables: null,
      requestContext: {
        accountId: '123456789012',
        apiId: 'abc123',
        httpMethod: method,
        path: `/local${path}`,
        stage: 'local',
        requestId: 'rest-request',
        resourcePath: routeFor(method, path)!.path,
        identity: { sourceIp: '203.0.113.7' },
      },
      body: null,
      isBase64Encoded: false,
      ...extra,
    });
    const batch = encodeRecordBatch([
      { key: null, value: Buffer.from('via-rest'), headers: [], timestamp: 1_700_000_000_000 },
    ]);
    const produced = (await handlers.produce(
      v1(
        'POST',
        { 'content-type': 'application/vnd.kafka.record-batch.v2' },
        { body: Buffer.from(batch).toString('base64'), isBase64Encoded: true },
      ) as never,
      lambdaContext('produce'),
    )) as APIGatewayProxyStructuredResultV2;
    expect(produced.statusCode).toBe(200);
    const offset = JSON.parse(produced.body!).base_offset as number;
    const fetched = (await handlers.fetch(
      v1(
        'GET',
        { accept: 'application/vnd.kafka.record-batch.v2' },
        { queryStringParameters: { offset: String(offset) } },
      ) as never,
      lambdaContext('fetch'),
    )) as APIGatewayProxyStructuredResultV2;
    expect(fetched).toMatchObject({ statusCode: 200, isBase64Encoded: true });
    const [back] = decodeRecordBatches(Buffer.from(fetched.body!, 'base64'));
    expect(back!.records.map((r) => [r.offset, Buffer.from(r.value!).toString()])).toEqual([[offset, 'via-rest']]);
  });

  it("admin answers health, list offsets, and the app's own 404 and error envelope", async () => {
    expect(await invoke('GET', '/health')).toMatchObject({ target: 'admin', status: 200, body: { status: 'ok' } });
    expect(
      await invoke('GET', `${BASE}/topics/events/partitions/0/offset`, { query: 'offset_type=latest' }),
    ).toMatchObject({
      status: 200,
      body: { offset: 5 },
    });
    expect(await invoke('GET', `${BASE}/topics/missing`)).toMatchObject({ status: 404, body: { error_code: 40403 } });
    expect(await invoke('GET', '/nothing/here')).toMatchObject({ status: 404, body: { error: 'NOT_FOUND' } });
  });
});

describe('admin bundle serves the web console', () => {
  it('answers the page and its script from the bundle itself, with their types', async () => {
    expect(routeFor('GET', '/console/')!.target).toBe('admin');
    const get = async (path: string) =>
      (await handlers.admin(
        apiEvent('GET', path, { headers: { accept: 'text/html' } }),
        lambdaContext('admin'),
      )) as APIGatewayProxyStructuredResultV2;
    const text = (r: APIGatewayProxyStructuredResultV2) =>
      r.isBase64Encoded ? Buffer.from(r.body!, 'base64').toString() : r.body!;
    const page = await get('/console/');
    expect(page).toMatchObject({ statusCode: 200, headers: { 'content-type': 'text/html; charset=utf-8' } });
    const script = /src="\.\/(assets\/[^"]+\.js)"/.exec(text(page))![1]!;
    const js = await get(`/console/${script}`);
    expect(js).toMatchObject({ statusCode: 200, headers: { 'content-type': 'text/javascript; charset=utf-8' } });
    expect(text(js)).toContain('v3/clusters');
    expect((await get('/console')).statusCode).toBe(308);
  });
});

describe('scheduler bundle', () => {
  it('publishes SchedulerIncompleteRuns when a run stops at its deadline with units left', async () => {
    lines = [];
    // 15 s left is the function's safety margin: the deadline is now, so no maintenance unit is started.
    const context = { ...lambdaContext('scheduler'), getRemainingTimeInMillis: () => 15_000 };
    const report = await handlers.scheduler({ time: '2025-12-02T09:59:00Z' }, context);
    expect(report).toMatchObject({ incomplete: 1 });
    const emf = lines.map((l) => JSON.parse(l)).find((l) => l._aws);
    expect(emf).toMatchObject({ function: 'scheduler', SchedulerIncompleteRuns: 1 });
  });

  it('runs one pass on a scheduled event and logs it with the request id', async () => {
    lines = [];
    const context = lambdaContext('scheduler');
    const event = {
      version: '0',
      id: 'e1',
      'detail-type': 'Scheduled Event',
      source: 'aws.events',
      time: '2025-12-02T10:00:00Z',
      detail: {},
    };
    const report = await handlers.scheduler(event, context);
    expect(report).toEqual(expect.any(Object));
    const logs = lines.map((l) => JSON.parse(l));
    expect(logs).toContainEqual(
      expect.objectContaining({
        function: 'scheduler',
        msg: 'scheduler run',
        requestId: context.awsRequestId,
        scheduledAt: event.time,
      }),
    );
  });
});

describe('API-key authorizer bundle', () => {
  const authorize = (key?: string) =>
    handlers.authorizer(
      {
        type: 'REQUEST',
        version: '2.0',
        routeKey: 'GET /health',
        rawPath: '/health',
        headers: key ? { 'x-api-key': key } : {},
      },
      lambdaContext('authorizer'),
    );
  it('accepts the key whose digest the stack holds, and nothing else', async () => {
    expect(await authorize(API_KEY)).toEqual({
      isAuthorized: true,
      context: { apiKeyId: `apikey-${createHash('sha256').update(API_KEY).digest('hex').slice(0, 12)}` },
    });
    expect(await authorize(`${API_KEY}x`)).toEqual({ isAuthorized: false });
    expect(await authorize()).toEqual({ isAuthorized: false });
  });
});
