/**
 * The HTTP side of authorization: a middleware that gives every request its principal and host
 * and applies client quotas, and the checks the routes make, each mapped to the operation Kafka's
 * authorizer checks for the same API (see docs/security.md for the table).
 */
import type { IncomingMessage } from 'node:http';
import type { Context, MiddlewareHandler } from 'hono';
import { CLUSTER_NAME, type Operation, type ResourceType } from '../authz/acl.js';
import {
  ANONYMOUS,
  bearerPrincipal,
  gatewayPrincipal,
  principalName,
  type GatewayRequestContext,
} from '../authz/principal.js';
import { KafkaError, type KafkaErrorName } from '../wire/errors.js';
import type { AppliedQuota, QuotaKey } from '../quotas/client-quotas.js';
import type { AppEnv, AuditSink } from './app-env.js';
import { requestHeader } from './incoming-header.js';
import type { AppServices } from '../services.js';

const DENIED: Record<ResourceType, KafkaErrorName> = {
  TOPIC: 'TOPIC_AUTHORIZATION_FAILED',
  GROUP: 'GROUP_AUTHORIZATION_FAILED',
  CLUSTER: 'CLUSTER_AUTHORIZATION_FAILED',
  TRANSACTIONAL_ID: 'TRANSACTIONAL_ID_AUTHORIZATION_FAILED',
};

/** Which byte-rate quota a request feeds, from its method and path (as API Gateway routes them). */
const PRODUCE_PATH =
  /^\/v3\/clusters\/[^/]+\/(topics\/[^/]+\/(records|records:batch|partitions\/[^/]+\/records)|records)$/;
/** The multi-partition fetch is a POST. */
const MULTI_FETCH_PATH = /^\/v3\/clusters\/[^/]+\/records:fetch$/;
const FETCH_PATH =
  /^\/v3\/clusters\/[^/]+\/topics\/[^/]+\/partitions\/[^/]+\/records$|^\/consumers\/[^/]+\/instances\/[^/]+\/records$/;

function byteQuotaOf(method: string, path: string): QuotaKey | undefined {
  if (method === 'POST' && PRODUCE_PATH.test(path)) return 'producer_byte_rate';
  if ((method === 'GET' && FETCH_PATH.test(path)) || (method === 'POST' && MULTI_FETCH_PATH.test(path)))
    return 'consumer_byte_rate';
  return undefined;
}

interface Bindings {
  requestContext?: GatewayRequestContext;
  incoming?: IncomingMessage;
}

export interface SecurityOptions {
  audit: AuditSink;
  /** Told each request's principal (the Lambda entry adds it to the request's log lines). */
  onPrincipal?: (principal: string) => void;
}

/** Principal and host for the request; client quotas (by principal and client id) checked before it and counted after. */
export function security(services: AppServices, options: SecurityOptions): MiddlewareHandler<AppEnv> {
  const { principals, quotas, buckets } = services.security;
  return async (c, next) => {
    const env = (c.env ?? {}) as Bindings;
    // An IPv4 peer of a dual-stack socket reads ::ffff:a.b.c.d; ACLs name it a.b.c.d, as Kafka does.
    const rc = env.requestContext;
    const peer = rc?.http?.sourceIp ?? rc?.identity?.sourceIp ?? env.incoming?.socket?.remoteAddress ?? '';
    const host = peer.startsWith('::ffff:') ? peer.replace(/^::ffff:(?=\d+\.\d+\.\d+\.\d+$)/, '') : peer;
    let principal: string;
    try {
      // Behind API Gateway only the authorizer's context counts: a header is the caller's to forge.
      principal = env.requestContext
        ? (gatewayPrincipal(env.requestContext, principals.claim) ?? ANONYMOUS)
        : bearerPrincipal(requestHeader(c, 'authorization'), principals.tokens);
    } catch (e) {
      options.audit('authentication failed', {
        audit: 'denied',
        host,
        method: c.req.method,
        path: c.req.path,
        error: (e as Error).message,
      });
      throw e;
    }
    c.set('services', services);
    c.set('principal', principal);
    c.set('host', host);
    c.set('audit', options.audit);
    options.onPrincipal?.(principal);

    const index = await quotas.index();
    if (index.empty) return next();
    const clientId = requestHeader(c, 'x-client-id') ?? requestHeader(c, 'user-agent') ?? '';
    const applied = index.resolve(principalName(principal), clientId);
    const byteKey = byteQuotaOf(c.req.method, c.req.path);
    const byteQuota = byteKey && applied[byteKey];
    const timeQuota = applied.request_percentage;
    if (byteQuota) buckets.check(byteKey, byteQuota);
    if (timeQuota) buckets.check('request_percentage', requestTime(timeQuota));
    const started = performance.now();
    await next();
    if (byteQuota)
      buckets.record(byteQuota, (byteKey === 'producer_byte_rate' ? c.get('bodyBytes') : c.get('responseBytes')) ?? 0);
    if (timeQuota) buckets.record(requestTime(timeQuota), performance.now() - started);
  };
}

/**
 * request_percentage is Kafka's share of one request handler thread's time; here, of one request
 * handler's time (a Lambda instance serves one request at a time): 100 is one whole handler, and
 * the bucket fills with that many milliseconds of handler time per second.
 */
const requestTime = (q: AppliedQuota): AppliedQuota => ({ rate: (q.rate / 100) * 1000, bucket: q.bucket });

/** Whether the caller may do `operation` on the resource; no audit line (listings filter with it). */
export async function allowed(
  c: Context<AppEnv>,
  operation: Operation,
  resourceType: ResourceType,
  resourceName = CLUSTER_NAME,
): Promise<boolean> {
  const sec = c.get('services').security;
  if (!sec.authorization) return true;
  const index = await sec.acls.index();
  return index.authorize({ principal: c.get('principal'), host: c.get('host'), operation, resourceType, resourceName });
}

/** A predicate over resource names for filtering a listing: one ACL read, then synchronous checks. */
export async function allowedNames(
  c: Context<AppEnv>,
  operation: Operation,
  resourceType: ResourceType,
): Promise<(name: string) => boolean> {
  const sec = c.get('services').security;
  if (!sec.authorization) return () => true;
  const index = await sec.acls.index();
  const [principal, host] = [c.get('principal'), c.get('host')];
  return (resourceName) => index.authorize({ principal, host, operation, resourceType, resourceName });
}

/** Throws Kafka's *_AUTHORIZATION_FAILED (403) unless the caller may do `operation`; a denial is audited. */
export async function authorize(
  c: Context<AppEnv>,
  operation: Operation,
  resourceType: ResourceType,
  resourceName = CLUSTER_NAME,
): Promise<void> {
  if (await allowed(c, operation, resourceType, resourceName)) return;
  throw denied(c, operation, resourceType, resourceName);
}

/** Each name in turn (a request naming several topics fails on the first it may not use). */
export async function authorizeAll(
  c: Context<AppEnv>,
  operation: Operation,
  resourceType: ResourceType,
  names: Iterable<string>,
): Promise<void> {
  const ok = await allowedNames(c, operation, resourceType);
  for (const name of new Set(names)) if (!ok(name)) throw denied(c, operation, resourceType, name);
}

/**
 * Kafka's InitProducerId without a transactional id: IDEMPOTENT_WRITE on the cluster, or WRITE on
 * at least one topic (KIP-679).
 */
export async function authorizeIdempotentWrite(c: Context<AppEnv>): Promise<void> {
  if (await allowed(c, 'IDEMPOTENT_WRITE', 'CLUSTER')) return;
  const sec = c.get('services').security;
  if ((await sec.acls.index()).authorizeAny(c.get('principal'), c.get('host'), 'WRITE', 'TOPIC')) return;
  throw denied(c, 'IDEMPOTENT_WRITE', 'CLUSTER', CLUSTER_NAME);
}

function denied(
  c: Context<AppEnv>,
  operation: Operation,
  resourceType: ResourceType,
  resourceName: string,
): KafkaError {
  const principal = c.get('principal');
  c.get('audit')('authorization denied', {
    audit: 'denied',
    principal,
    host: c.get('host'),
    operation,
    resourceType,
    resourceName,
    method: c.req.method,
    path: c.req.path,
  });
  const what =
    resourceType === 'CLUSTER' ? 'the cluster' : `${resourceType.toLowerCase().replace('_', ' ')} ${resourceName}`;
  return new KafkaError(DENIED[resourceType], `Principal ${principal} is not authorized to ${operation} ${what}`);
}
