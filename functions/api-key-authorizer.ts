/**
 * Lambda authorizer for the API's opt-in API-key mode (HTTP APIs have no API keys of their own).
 * The caller sends `x-api-key`; the stack holds only SHA-256 digests of the accepted keys
 * (API_KEY_SHA256, comma-separated `id=hex` or bare hex), so no secret is stored in the template
 * or the environment, and several digests allow rotation without downtime. The key's id (the
 * digest's first 12 hex digits when none is given) goes to the app in the authorizer's context:
 * the request's principal is `User:<id>`.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type {
  APIGatewayAuthorizerResult,
  APIGatewayRequestAuthorizerEvent,
  APIGatewayRequestAuthorizerEventV2,
  APIGatewaySimpleAuthorizerResult,
  APIGatewaySimpleAuthorizerWithContextResult,
} from 'aws-lambda';
import { connectPolicy } from './websocket-policy.js';

export interface AcceptedKey {
  id: string;
  digest: Buffer;
}

export function parseDigests(value: string | undefined): AcceptedKey[] {
  return (value ?? '')
    .split(',')
    .map((entry) => /^(?:([A-Za-z0-9._@-]+)=)?([0-9a-fA-F]{64})$/.exec(entry.trim()))
    .filter((m): m is RegExpExecArray => m !== null)
    .map((m) => ({ id: m[1] ?? `apikey-${m[2]!.slice(0, 12).toLowerCase()}`, digest: Buffer.from(m[2]!, 'hex') }));
}

/** The id of the key whose digest matches, compared with every accepted digest in constant time. */
export function acceptedKeyId(key: string | undefined, keys: AcceptedKey[]): string | undefined {
  if (!key) return undefined;
  const digest = createHash('sha256').update(key, 'utf8').digest();
  let id: string | undefined;
  for (const k of keys) if (timingSafeEqual(digest, k.digest)) id ??= k.id;
  return id;
}

const keys = parseDigests(process.env.API_KEY_SHA256);

type Result = APIGatewaySimpleAuthorizerResult | APIGatewaySimpleAuthorizerWithContextResult<{ apiKeyId: string }>;

/** The HTTP API asks with a v2 event (simple answer); the push WebSocket API's $connect with a v1 event (IAM policy). */
export const handler = async (
  event: APIGatewayRequestAuthorizerEventV2 | APIGatewayRequestAuthorizerEvent,
): Promise<Result | APIGatewayAuthorizerResult> => {
  const headers = event.headers ?? {};
  const key = headers['x-api-key'] ?? Object.entries(headers).find(([k]) => k.toLowerCase() === 'x-api-key')?.[1];
  const apiKeyId = acceptedKeyId(key, keys);
  if ('methodArn' in event)
    return {
      ...connectPolicy(apiKeyId !== undefined, event.methodArn, apiKeyId ?? 'anonymous'),
      ...(apiKeyId !== undefined && { context: { apiKeyId } }),
    };
  return apiKeyId === undefined ? { isAuthorized: false } : { isAuthorized: true, context: { apiKeyId } };
};
