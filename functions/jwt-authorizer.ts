/**
 * The push WebSocket API's authorizer in JWT mode (API Gateway's WebSocket APIs have no JWT
 * authorizer, unlike the HTTP API). It checks what the HTTP API's JWT authorizer checks: a
 * `Bearer` token signed by a key of the issuer's JWKS (from its OpenID discovery document), with
 * that issuer, one of the audiences, and valid times. The connection's principal is the token's
 * PRINCIPAL_CLAIM (default `sub`), the claim the HTTP API's requests are named by; a token without
 * it is denied, as the HTTP API refuses it.
 */
import type { APIGatewayAuthorizerResult, APIGatewayRequestAuthorizerEvent } from 'aws-lambda';
import { createRemoteJWKSet, jwtVerify, type JWTVerifyGetKey } from 'jose';
import { connectPolicy } from './websocket-policy.js';

const issuer = process.env.JWT_ISSUER ?? '';
const audience = (process.env.JWT_AUDIENCE ?? '').split(',').filter(Boolean);
let keys: Promise<JWTVerifyGetKey> | undefined;

async function discoverKeys(): Promise<JWTVerifyGetKey> {
  const res = await fetch(`${issuer.replace(/\/+$/, '')}/.well-known/openid-configuration`, {
    signal: AbortSignal.timeout(3000),
  });
  if (!res.ok) throw new Error(`OpenID discovery at ${issuer} answered ${res.status}`);
  const { jwks_uri } = (await res.json()) as { jwks_uri?: string };
  if (!jwks_uri) throw new Error(`OpenID discovery at ${issuer} names no jwks_uri`);
  return createRemoteJWKSet(new URL(jwks_uri));
}

export const handler = async (event: APIGatewayRequestAuthorizerEvent): Promise<APIGatewayAuthorizerResult> => {
  const header = Object.entries(event.headers ?? {}).find(([k]) => k.toLowerCase() === 'authorization')?.[1] ?? '';
  const token = /^Bearer\s+(.+)$/i.exec(header)?.[1];
  if (!token) return connectPolicy(false, event.methodArn);
  try {
    keys ??= discoverKeys().catch((e: unknown) => {
      keys = undefined;
      throw e;
    });
    const { payload } = await jwtVerify(token, await keys, { issuer, audience });
    const principal = payload[process.env.PRINCIPAL_CLAIM || 'sub'];
    if (typeof principal !== 'string' || principal === '') return connectPolicy(false, event.methodArn);
    return connectPolicy(true, event.methodArn, principal);
  } catch {
    return connectPolicy(false, event.methodArn);
  }
};
