/**
 * Lambda authorizer for the API's opt-in API-key mode (HTTP APIs have no API keys of their own).
 * The caller sends `x-api-key`; the stack holds only SHA-256 digests of the accepted keys
 * (API_KEY_SHA256, comma-separated hex), so no secret is stored in the template or the
 * environment, and several digests allow rotation without downtime.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { APIGatewayAuthorizerResult, APIGatewayRequestAuthorizerEvent, APIGatewayRequestAuthorizerEventV2, APIGatewaySimpleAuthorizerResult } from 'aws-lambda';
import { connectPolicy } from './websocket-policy.js';

export function parseDigests(value: string | undefined): Buffer[] {
  return (value ?? '')
    .split(',')
    .map((d) => d.trim().toLowerCase())
    .filter((d) => /^[0-9a-f]{64}$/.test(d))
    .map((d) => Buffer.from(d, 'hex'));
}

/** Compares the key's digest with every accepted digest in constant time. */
export function isAcceptedKey(key: string | undefined, digests: Buffer[]): boolean {
  if (!key) return false;
  const digest = createHash('sha256').update(key, 'utf8').digest();
  let accepted = false;
  for (const d of digests) accepted = timingSafeEqual(digest, d) || accepted;
  return accepted;
}

const digests = parseDigests(process.env.API_KEY_SHA256);

/** The HTTP API asks with a v2 event (simple answer); the push WebSocket API's $connect with a v1 event (IAM policy). */
export const handler = async (
  event: APIGatewayRequestAuthorizerEventV2 | APIGatewayRequestAuthorizerEvent,
): Promise<APIGatewaySimpleAuthorizerResult | APIGatewayAuthorizerResult> => {
  const headers = event.headers ?? {};
  const key = headers['x-api-key'] ?? Object.entries(headers).find(([k]) => k.toLowerCase() === 'x-api-key')?.[1];
  const accepted = isAcceptedKey(key, digests);
  return 'methodArn' in event ? connectPolicy(accepted, event.methodArn) : { isAuthorized: accepted };
};
