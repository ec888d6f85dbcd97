/**
 * The push WebSocket API's $connect authorizers answer with an IAM policy (WebSocket APIs take no
 * simple answers): the API-key authorizer on its v1 event, and the JWT authorizer checking a token
 * against an issuer's JWKS found through OpenID discovery (served here by a local issuer).
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { APIGatewayAuthorizerResult, APIGatewayRequestAuthorizerEvent } from 'aws-lambda';
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const METHOD_ARN = 'arn:aws:execute-api:us-east-1:123456789012:ws123/push/$connect';
const connectEvent = (headers: Record<string, string>) =>
  ({ type: 'REQUEST', methodArn: METHOD_ARN, headers }) as unknown as APIGatewayRequestAuthorizerEvent;
const effect = (r: APIGatewayAuthorizerResult) =>
  (r.policyDocument.Statement[0] as { Effect: string; Resource: string }).Effect;

let issuerServer: Server;
let issuer: string;
let privateKey: CryptoKey;
let jwtHandler: (e: APIGatewayRequestAuthorizerEvent) => Promise<APIGatewayAuthorizerResult>;
let apiKeyHandler: (e: unknown) => Promise<unknown>;

beforeAll(async () => {
  const pair = await generateKeyPair('RS256');
  privateKey = pair.privateKey;
  const jwk = { ...(await exportJWK(pair.publicKey)), kid: 'k1', alg: 'RS256', use: 'sig' };
  issuerServer = createServer((req, res) => {
    res.setHeader('content-type', 'application/json');
    if (req.url === '/.well-known/openid-configuration')
      res.end(JSON.stringify({ issuer, jwks_uri: `${issuer}/jwks` }));
    else if (req.url === '/jwks') res.end(JSON.stringify({ keys: [jwk] }));
    else res.writeHead(404).end();
  });
  await new Promise<void>((r) => issuerServer.listen(0, '127.0.0.1', r));
  issuer = `http://127.0.0.1:${(issuerServer.address() as AddressInfo).port}`;
  process.env.JWT_ISSUER = issuer;
  process.env.JWT_AUDIENCE = 'log-clients,admins';
  process.env.API_KEY_SHA256 = 'a665a45920422f9d417e4867efdc4fb8a04a1f3fff1fa07e998e86f7f7a27ae3'; // sha256("123")
  jwtHandler = (await import('../../functions/jwt-authorizer.js')).handler;
  apiKeyHandler = (await import('../../functions/api-key-authorizer.js')).handler as (e: unknown) => Promise<unknown>;
});
afterAll(() => new Promise((r) => issuerServer.close(r)));

const token = (claims: { aud?: string; iss?: string; exp?: string }) =>
  new SignJWT({})
    .setProtectedHeader({ alg: 'RS256', kid: 'k1' })
    .setSubject('consumer-7')
    .setIssuer(claims.iss ?? issuer)
    .setAudience(claims.aud ?? 'log-clients')
    .setIssuedAt()
    .setExpirationTime(claims.exp ?? '5m')
    .sign(privateKey);

describe('push API authorizers', () => {
  it("JWT: allows $connect with a valid bearer token of the issuer and an audience, as the token's subject", async () => {
    const r = await jwtHandler(connectEvent({ Authorization: `Bearer ${await token({})}` }));
    expect(effect(r)).toBe('Allow');
    expect(r.principalId).toBe('consumer-7');
    expect(r.policyDocument.Statement[0]).toMatchObject({ Action: 'execute-api:Invoke', Resource: METHOD_ARN });
  });

  it('JWT: names the connection by PRINCIPAL_CLAIM, as the HTTP API names requests, and denies a token without it', async () => {
    const signed = (claims: Record<string, string>) =>
      new SignJWT(claims)
        .setProtectedHeader({ alg: 'RS256', kid: 'k1' })
        .setSubject('consumer-7')
        .setIssuer(issuer)
        .setAudience('log-clients')
        .setExpirationTime('5m')
        .sign(privateKey);
    process.env.PRINCIPAL_CLAIM = 'client_id';
    try {
      const named = await jwtHandler(connectEvent({ Authorization: `Bearer ${await signed({ client_id: 'svc-9' })}` }));
      expect(effect(named)).toBe('Allow');
      expect(named.principalId).toBe('svc-9');
      expect(effect(await jwtHandler(connectEvent({ Authorization: `Bearer ${await signed({})}` })))).toBe('Deny');
    } finally {
      delete process.env.PRINCIPAL_CLAIM;
    }
  });

  it('JWT: denies no token, another audience, another issuer, an expired token and a forged signature', async () => {
    const other = await generateKeyPair('RS256');
    const forged = await new SignJWT({})
      .setProtectedHeader({ alg: 'RS256', kid: 'k1' })
      .setIssuer(issuer)
      .setAudience('log-clients')
      .setExpirationTime('5m')
      .sign(other.privateKey);
    for (const headers of <Record<string, string>[]>[
      {},
      { Authorization: `Bearer ${await token({ aud: 'someone-else' })}` },
      { Authorization: `Bearer ${await token({ iss: 'https://elsewhere.example.com' })}` },
      { Authorization: `Bearer ${await token({ exp: '-1m' })}` },
      { Authorization: `Bearer ${forged}` },
    ]) {
      expect(effect(await jwtHandler(connectEvent(headers))), JSON.stringify(headers).slice(0, 40)).toBe('Deny');
    }
  });

  it('API key: the WebSocket $connect (v1 event) gets a policy, the HTTP API (v2 event) a simple answer', async () => {
    expect(effect((await apiKeyHandler(connectEvent({ 'x-api-key': '123' }))) as APIGatewayAuthorizerResult)).toBe(
      'Allow',
    );
    expect(effect((await apiKeyHandler(connectEvent({ 'x-api-key': 'nope' }))) as APIGatewayAuthorizerResult)).toBe(
      'Deny',
    );
    expect(
      await apiKeyHandler({ type: 'REQUEST', version: '2.0', routeArn: 'arn', headers: { 'x-api-key': '123' } }),
    ).toMatchObject({ isAuthorized: true });
  });
});
