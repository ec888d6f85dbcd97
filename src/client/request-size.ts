/**
 * How large a request body the server can take, checked before a request leaves (Kafka's
 * max.request.size, for every request). Behind API Gateway or a Lambda function URL the bound is
 * Lambda's, not the server's: the invocation event, body included, must fit in 6,291,456 bytes, and
 * a larger one is refused before the function runs, so the caller gets the gateway's generic 5xx
 * (HTTP API: 500; REST API: 502 INTEGRATION_FAILURE) instead of the server's 413 with a Kafka error.
 */
import { KafkaClientError } from './errors.js';

/** Lambda's limit on a synchronous invocation's event. */
const LAMBDA_EVENT_BYTES = 6_291_456;
/** What the event holds besides the body: headers (API Gateway allows 10 KiB), path, query, request context. */
const LAMBDA_EVENT_ENVELOPE_BYTES = 65_536;
/** The most a body may take in the event: binary bodies travel base64-encoded, text ones as a JSON string. */
const LAMBDA_EVENT_BODY_BYTES = LAMBDA_EVENT_BYTES - LAMBDA_EVENT_ENVELOPE_BYTES;

/** The largest binary body that fits a Lambda event once base64-encoded (4,669,440 bytes). */
export const LAMBDA_MAX_REQUEST_BYTES = Math.floor(LAMBDA_EVENT_BODY_BYTES / 4) * 3;

/** Hosts whose requests become Lambda invocations: API Gateway (REST, HTTP) and Lambda function URLs. */
const LAMBDA_HOSTS = [/\.execute-api\.[a-z0-9-]+\.amazonaws\.com(\.cn)?$/, /\.lambda-url\.[a-z0-9-]+\.on\.aws$/];

/** A configured bound, or Lambda's for an AWS-hosted URL (`lambda`), or none. */
export type RequestSizeLimit = { maxBytes: number; lambda: boolean } | undefined;

export function requestSizeLimit(url: URL, maxRequestBytes: number | undefined): RequestSizeLimit {
  if (maxRequestBytes !== undefined) {
    if (!Number.isSafeInteger(maxRequestBytes) || maxRequestBytes <= 0)
      throw new KafkaClientError(
        'INVALID_CONFIG',
        `maxRequestBytes must be a positive integer (got ${maxRequestBytes})`,
      );
    return { maxBytes: maxRequestBytes, lambda: false };
  }
  return LAMBDA_HOSTS.some((h) => h.test(url.hostname))
    ? { maxBytes: LAMBDA_MAX_REQUEST_BYTES, lambda: true }
    : undefined;
}

/**
 * Throws PAYLOAD_TOO_LARGE (what the server answers a body over its own limit) when `body` is over
 * the bound. Behind Lambda a text body is measured as the event carries it, a JSON string whose
 * quotes, backslashes and control characters are escaped; a binary one is bounded by its base64.
 */
export function checkRequestSize(
  limit: RequestSizeLimit,
  body: string | Uint8Array | readonly Uint8Array[] | undefined,
  what: string,
): void {
  if (!limit || body === undefined) return;
  const bytes =
    typeof body === 'string'
      ? Buffer.byteLength(body)
      : body instanceof Uint8Array
        ? body.byteLength
        : body.reduce((n, p) => n + p.byteLength, 0);
  let over = bytes > limit.maxBytes;
  // Escapes at most sextuple a character (\u0000), so only a body over a sixth of the room can overflow.
  if (!over && limit.lambda && typeof body === 'string' && bytes * 6 > LAMBDA_EVENT_BODY_BYTES)
    over = Buffer.byteLength(JSON.stringify(body)) - 2 > LAMBDA_EVENT_BODY_BYTES;
  if (over)
    throw new KafkaClientError(
      'PAYLOAD_TOO_LARGE',
      limit.lambda
        ? `${what}: the body (${bytes} bytes) would not fit in a Lambda invocation's 6,291,456 bytes (binary bodies base64-encoded: at most ${LAMBDA_MAX_REQUEST_BYTES} bytes)`
        : `${what}: the body (${bytes} bytes) is over maxRequestBytes (${limit.maxBytes})`,
      { retriable: false },
    );
}
