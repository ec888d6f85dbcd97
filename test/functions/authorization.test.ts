/**
 * Principals and ACLs through the Lambda adapter (functions/http-entry.ts: hono/aws-lambda's
 * handler around the observed app) with API Gateway HTTP API v2 events whose request context an
 * IAM (SigV4), a JWT or the API key authorizer filled in. The memory backend stands in for
 * storage: this is about who asks, not where data goes (the bundle tests cover S3 and DynamoDB).
 */
import { createHash } from 'node:crypto';
import type { Context } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { acceptedKeyId, parseDigests } from '../../functions/api-key-authorizer.js';
import { createHttpHandler } from '../../functions/http-entry.js';
import { ALL_PARTS, createStorage } from '../../src/compose.js';
import { ALL_ROUTES } from '../../src/http/app.js';
import { StackRecording } from '../infra/iam/stack-recording.js';

const ADMIN_ROLE = 'arn:aws:iam::111122223333:role/Admin';
const BASE = '/v3/clusters/test';
// An IAM Identity Center role: its ARN has a path, the ARN of its sessions does not.
const SSO_ROLE = 'arn:aws:iam::111122223333:role/aws-reserved/sso.amazonaws.com/AWSReservedSSO_Admin_0123';

type Authorizer = Record<string, unknown> | undefined;
const iam = (userArn: string): Authorizer => ({
  iam: {
    userArn,
    accountId: '111122223333',
    accessKey: 'AKIA',
    callerId: 'x',
    principalOrgId: null,
    userId: 'x',
    cognitoIdentity: null,
  },
});
const jwt = (claims: Record<string, unknown>): Authorizer => ({ jwt: { claims, scopes: null } });
const apiKey = (apiKeyId: string): Authorizer => ({ lambda: { apiKeyId } });

let n = 0;
function event(method: string, path: string, authorizer: Authorizer, body?: unknown) {
  const [rawPath, rawQueryString = ''] = path.split('?');
  return {
    version: '2.0',
    routeKey: '$default',
    rawPath,
    rawQueryString,
    headers: { 'content-type': 'application/json', host: 'api.example.com' },
    requestContext: {
      accountId: '111122223333',
      apiId: 'api',
      domainName: 'api.example.com',
      domainPrefix: 'api',
      http: { method, path: rawPath, protocol: 'HTTP/1.1', sourceIp: '198.51.100.7', userAgent: 'test' },
      requestId: `api-${++n}`,
      routeKey: '$default',
      stage: '$default',
      time: '03/Dec/2026:12:00:00 +0000',
      timeEpoch: 1_796_000_000_000,
      ...(authorizer ? { authorizer } : {}),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
    isBase64Encoded: false,
  };
}

const lines: string[] = [];
let handler: (event: unknown, context: Context) => Promise<{ statusCode: number; body: string }>;

beforeAll(() => {
  vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
    lines.push(...String(chunk).split('\n').filter(Boolean));
    return true;
  });
  handler = createHttpHandler(
    'admin',
    {
      STORAGE_BACKEND: 'memory',
      CLUSTER_ID: 'test',
      AUTHORIZATION: 'true',
      SUPER_USERS: `User:${ADMIN_ROLE};User:${SSO_ROLE}`,
    },
    { routes: ALL_ROUTES, parts: ALL_PARTS },
    undefined,
    recording.storage('admin', createStorage({ kind: 'memory', replicaStores: 1 })),
  ) as never;
});

// The admin function serves every route: its calls here are checked against its role in the stack.
const recording = new StackRecording({});
afterAll(() => {
  expect(recording.callsOf('admin')).toBeGreaterThan(0);
  expect(recording.denied()).toEqual([]);
});
afterAll(() => vi.restoreAllMocks());

async function call(method: string, path: string, authorizer: Authorizer, body?: unknown) {
  const res = await handler(event(method, `${BASE}/${path}`, authorizer, body), {
    awsRequestId: `req-${n + 1}`,
  } as Context);
  return { status: res.statusCode, body: res.body ? JSON.parse(res.body) : undefined };
}

const logged = (msg: string) => lines.map((l) => JSON.parse(l) as Record<string, unknown>).filter((l) => l.msg === msg);

describe('principals and ACLs through the Lambda adapter', () => {
  it('an IAM caller in an assumed role is its role: a super user, named in the request log', async () => {
    const admin = iam('arn:aws:sts::111122223333:assumed-role/Admin/session-1');
    expect((await call('POST', 'topics', admin, { topic_name: 'orders' })).status).toBe(201);
    expect(logged('request').at(-1)).toMatchObject({ principal: `User:${ADMIN_ROLE}`, status: 201, method: 'POST' });
    const acl = {
      resource_type: 'TOPIC',
      resource_name: 'orders',
      pattern_type: 'LITERAL',
      principal: 'User:alice-sub',
      host: '*',
      operation: 'WRITE',
      permission: 'ALLOW',
    };
    expect((await call('POST', 'acls', admin, acl)).status).toBe(201);
    expect(logged('acl created').at(-1)).toMatchObject({
      level: 'warn',
      principal: `User:${ADMIN_ROLE}`,
      acl: { principal: 'User:alice-sub' },
      function: 'admin',
    });
  });

  it('a role with a path named as a super user (IAM Identity Center) may create the first ACL', async () => {
    const operator = iam('arn:aws:sts::111122223333:assumed-role/AWSReservedSSO_Admin_0123/ops@example.com');
    const acl = {
      resource_type: 'TOPIC',
      resource_name: 'sso-audit',
      pattern_type: 'LITERAL',
      principal: 'User:auditor',
      host: '*',
      operation: 'READ',
      permission: 'ALLOW',
    };
    expect((await call('POST', 'acls', operator, acl)).status).toBe(201);
    expect(logged('acl created').at(-1)).toMatchObject({
      principal: 'User:arn:aws:iam::111122223333:role/AWSReservedSSO_Admin_0123',
    });
  });

  it('a JWT caller is its sub claim: allowed what its ACLs allow, denied the rest with an audit line', async () => {
    const alice = jwt({ sub: 'alice-sub', iss: 'https://issuer.example.com' });
    const produced = await call('POST', 'topics/orders/records', alice, { value: { type: 'JSON', data: { n: 1 } } });
    expect(produced.status).toBe(200);
    const fetch = await call('GET', 'topics/orders/partitions/0/records?offset=0', alice);
    expect(fetch).toMatchObject({ status: 403, body: { error: 'TOPIC_AUTHORIZATION_FAILED', error_code: 40301 } });
    expect(logged('authorization denied').at(-1)).toMatchObject({
      principal: 'User:alice-sub',
      host: '198.51.100.7',
      operation: 'READ',
      resourceType: 'TOPIC',
      resourceName: 'orders',
      requestId: expect.any(String),
    });
    expect(logged('request').at(-1)).toMatchObject({ principal: 'User:alice-sub', status: 403 });
    // A listing shows alice only what she may DESCRIBE (WRITE implies it).
    expect((await call('GET', 'topics', alice)).body.data.map((t: { topic_name: string }) => t.topic_name)).toEqual([
      'orders',
    ]);
  });

  it('another IAM user and an API key holder hold no ACL: denied; no authorizer context is anonymous', async () => {
    expect((await call('GET', 'topics/orders', iam('arn:aws:iam::111122223333:user/bob'))).status).toBe(403);
    expect(logged('authorization denied').at(-1)).toMatchObject({
      principal: 'User:arn:aws:iam::111122223333:user/bob',
    });
    expect((await call('GET', 'topics/orders', apiKey('ci'))).status).toBe(403);
    expect(logged('authorization denied').at(-1)).toMatchObject({ principal: 'User:ci' });
    expect((await call('GET', 'topics', undefined)).body.data).toEqual([]);
    expect(logged('request').at(-1)).toMatchObject({ principal: 'User:ANONYMOUS' });
  });

  it('a forged principal header is ignored behind API Gateway', async () => {
    const res = await handler(
      {
        ...event('GET', `${BASE}/topics/orders`, jwt({ sub: 'mallory' })),
        headers: { host: 'api.example.com', authorization: 'Bearer admin', 'x-principal': `User:${ADMIN_ROLE}` },
      },
      { awsRequestId: 'forged' } as Context,
    );
    expect(res.statusCode).toBe(403);
  });
});

describe('the API key authorizer names the key', () => {
  it('id=digest entries name their key; a bare digest is named by its first 12 hex digits', () => {
    const digest = (k: string) => createHash('sha256').update(k).digest('hex');
    const keys = parseDigests(`ci=${digest('ci-key')}, ${digest('other-key').toUpperCase()},not-a-digest`);
    expect(keys.map((k) => k.id)).toEqual(['ci', `apikey-${digest('other-key').slice(0, 12)}`]);
    expect(acceptedKeyId('ci-key', keys)).toBe('ci');
    expect(acceptedKeyId('other-key', keys)).toBe(`apikey-${digest('other-key').slice(0, 12)}`);
    expect(acceptedKeyId('wrong', keys)).toBeUndefined();
    expect(acceptedKeyId(undefined, keys)).toBeUndefined();
  });
});
