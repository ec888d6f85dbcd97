/**
 * The credential provider the Lambda bundles have in place of the SDK's default chain
 * (src/storage/lambda-credentials.ts): the environment's credentials as the Lambda runtime sets
 * them, else the container endpoint's (SnapStart), else a clear error; and an SDK client built as
 * the bundles build it signs with them.
 */
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { defaultProvider } from '../../src/storage/lambda-credentials.js';

const VARS = [
  'AWS_ACCESS_KEY_ID',
  'AWS_SECRET_ACCESS_KEY',
  'AWS_SESSION_TOKEN',
  'AWS_CREDENTIAL_EXPIRATION',
  'AWS_CONTAINER_CREDENTIALS_FULL_URI',
  'AWS_CONTAINER_CREDENTIALS_RELATIVE_URI',
  'AWS_CONTAINER_AUTHORIZATION_TOKEN',
  'AWS_PROFILE',
] as const;
let saved: Record<string, string | undefined>;
let server: Server | undefined;

beforeEach(() => {
  saved = Object.fromEntries(VARS.map((v) => [v, process.env[v]]));
  for (const v of VARS) delete process.env[v];
});
afterEach(async () => {
  for (const v of VARS) {
    if (saved[v] === undefined) delete process.env[v];
    else process.env[v] = saved[v];
  }
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  server = undefined;
});

/** A container credentials endpoint on loopback, as Lambda SnapStart and ECS run one. */
async function containerEndpoint(seen: IncomingHttpHeaders[]): Promise<string> {
  server = createServer((req, res) => {
    seen.push(req.headers);
    res.setHeader('content-type', 'application/json');
    res.end(
      JSON.stringify({
        AccessKeyId: 'AKIDCONTAINER',
        SecretAccessKey: 'container-secret',
        Token: 'container-token',
        Expiration: new Date(Date.now() + 3_600_000).toISOString(),
      }),
    );
  });
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server!.address() as AddressInfo).port}/credentials`;
}

describe('the Lambda bundles’ credential provider', () => {
  it('takes the credentials the Lambda runtime puts in the environment, session token included', async () => {
    Object.assign(process.env, {
      AWS_ACCESS_KEY_ID: 'AKIDENV',
      AWS_SECRET_ACCESS_KEY: 'env-secret',
      AWS_SESSION_TOKEN: 'env-token',
    });
    const credentials = await defaultProvider()();
    expect(credentials).toMatchObject({
      accessKeyId: 'AKIDENV',
      secretAccessKey: 'env-secret',
      sessionToken: 'env-token',
    });
  });

  it('without them, asks the container credentials endpoint with its authorization token', async () => {
    const seen: IncomingHttpHeaders[] = [];
    process.env.AWS_CONTAINER_CREDENTIALS_FULL_URI = await containerEndpoint(seen);
    process.env.AWS_CONTAINER_AUTHORIZATION_TOKEN = 'snapstart-token';
    const credentials = await defaultProvider()();
    expect(credentials).toMatchObject({
      accessKeyId: 'AKIDCONTAINER',
      secretAccessKey: 'container-secret',
      sessionToken: 'container-token',
    });
    expect(credentials.expiration?.getTime()).toBeGreaterThan(Date.now());
    expect(seen.map((h) => h.authorization)).toEqual(['snapstart-token']);
  });

  it('with neither, fails saying where it looked (no profile, SSO or instance metadata tried)', async () => {
    process.env.AWS_PROFILE = 'someone';
    await expect(defaultProvider()()).rejects.toThrow(/environment .* or from a container credentials endpoint/);
  });
});
