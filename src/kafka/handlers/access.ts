/**
 * The listener's ACL checks: the connection's principal (its SASL user, or User:ANONYMOUS) and
 * host, asked of the same authorizer as the HTTP routes (src/authz), for the operation Kafka's
 * KafkaApis checks for each API. With authorization off everything is allowed. A denial is
 * audited as the HTTP layer does and answered with the resource type's *_AUTHORIZATION_FAILED,
 * per resource where Kafka answers per resource.
 */
import { CLUSTER_NAME, type Operation, type ResourceType } from '../../authz/acl.js';
import { KafkaError, type KafkaErrorName } from '../../wire/errors.js';
import type { RequestContext } from './context.js';

const DENIED: Record<ResourceType, KafkaErrorName> = {
  TOPIC: 'TOPIC_AUTHORIZATION_FAILED',
  GROUP: 'GROUP_AUTHORIZATION_FAILED',
  CLUSTER: 'CLUSTER_AUTHORIZATION_FAILED',
  TRANSACTIONAL_ID: 'TRANSACTIONAL_ID_AUTHORIZATION_FAILED',
};

/** A predicate over resource names: one read of the (cached) ACL set, then synchronous decisions. */
export async function allowedNames(
  ctx: RequestContext,
  operation: Operation,
  resourceType: ResourceType,
): Promise<(name: string) => boolean> {
  const sec = ctx.services.security;
  if (!sec.authorization) return () => true;
  const index = await sec.acls.index();
  const { principal, host } = ctx.connection;
  return (resourceName) => index.authorize({ principal, host, operation, resourceType, resourceName });
}

export async function allowed(
  ctx: RequestContext,
  operation: Operation,
  resourceType: ResourceType,
  resourceName = CLUSTER_NAME,
): Promise<boolean> {
  return (await allowedNames(ctx, operation, resourceType))(resourceName);
}

/** The error a denial answers, audited (one line per denied resource). */
export function denied(
  ctx: RequestContext,
  operation: Operation,
  resourceType: ResourceType,
  resourceName = CLUSTER_NAME,
): KafkaError {
  const { principal, host } = ctx.connection;
  ctx.logger.warn('authorization denied', {
    audit: 'denied',
    principal,
    host,
    operation,
    resourceType,
    resourceName,
    listener: 'kafka',
  });
  const what =
    resourceType === 'CLUSTER' ? 'the cluster' : `${resourceType.toLowerCase().replace('_', ' ')} ${resourceName}`;
  return new KafkaError(DENIED[resourceType], `Principal ${principal} is not authorized to ${operation} ${what}`);
}

/** Throws the denial unless the connection may do `operation` on the resource. */
export async function authorize(
  ctx: RequestContext,
  operation: Operation,
  resourceType: ResourceType,
  resourceName = CLUSTER_NAME,
): Promise<void> {
  if (!(await allowed(ctx, operation, resourceType, resourceName)))
    throw denied(ctx, operation, resourceType, resourceName);
}

/**
 * A check per resource name: the names denied map to their error, so a handler answers them so
 * and serves the rest (Kafka's filterByAuthorized). Each denied name is audited once.
 */
export async function deniedAmong(
  ctx: RequestContext,
  operation: Operation,
  resourceType: ResourceType,
  names: Iterable<string>,
): Promise<Map<string, KafkaError>> {
  const ok = await allowedNames(ctx, operation, resourceType);
  const out = new Map<string, KafkaError>();
  for (const name of names) if (!out.has(name) && !ok(name)) out.set(name, denied(ctx, operation, resourceType, name));
  return out;
}

/**
 * InitProducerId without a transactional id: IDEMPOTENT_WRITE on the cluster, or WRITE on at
 * least one topic (KIP-679).
 */
export async function authorizeIdempotentWrite(ctx: RequestContext): Promise<void> {
  if (await allowed(ctx, 'IDEMPOTENT_WRITE', 'CLUSTER')) return;
  const sec = ctx.services.security;
  const { principal, host } = ctx.connection;
  if ((await sec.acls.index()).authorizeAny(principal, host, 'WRITE', 'TOPIC')) return;
  throw denied(ctx, 'IDEMPOTENT_WRITE', 'CLUSTER');
}
