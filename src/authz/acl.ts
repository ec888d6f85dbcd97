/**
 * Kafka's ACL model (org.apache.kafka.common.acl and .resource): an ACL binds a resource pattern
 * (type, name, LITERAL or PREFIXED) to an entry (principal, host, operation, ALLOW or DENY). A
 * filter has the same fields with ANY (and MATCH for the pattern type) as wildcards.
 */
import { KafkaError } from '../wire/errors.js';
import { samePrincipal } from './principal.js';

export const RESOURCE_TYPES = ['TOPIC', 'GROUP', 'CLUSTER', 'TRANSACTIONAL_ID'] as const;
export type ResourceType = (typeof RESOURCE_TYPES)[number];

export const PATTERN_TYPES = ['LITERAL', 'PREFIXED'] as const;
export type PatternType = (typeof PATTERN_TYPES)[number];

/** Kafka's AclOperation values that apply to the resource types above (ANY is for filters only). */
export const OPERATIONS = [
  'ALL',
  'READ',
  'WRITE',
  'CREATE',
  'DELETE',
  'ALTER',
  'DESCRIBE',
  'CLUSTER_ACTION',
  'DESCRIBE_CONFIGS',
  'ALTER_CONFIGS',
  'IDEMPOTENT_WRITE',
] as const;
export type Operation = (typeof OPERATIONS)[number];

export const PERMISSIONS = ['ALLOW', 'DENY'] as const;
export type Permission = (typeof PERMISSIONS)[number];

/** The one cluster resource's name, as Kafka writes it. */
export const CLUSTER_NAME = 'kafka-cluster';
/** The literal resource name that matches every resource of its type. */
export const WILDCARD_RESOURCE = '*';
/** The principal that matches every principal (`User:*`). */
export const WILDCARD_PRINCIPAL = 'User:*';
export const WILDCARD_HOST = '*';

export interface AclBinding {
  resourceType: ResourceType;
  resourceName: string;
  patternType: PatternType;
  principal: string;
  host: string;
  operation: Operation;
  permission: Permission;
}

/** An ACL filter: undefined fields (and ANY) match anything; MATCH matches the patterns that apply to a name. */
export interface AclFilter {
  resourceType?: ResourceType | 'ANY';
  resourceName?: string;
  patternType?: PatternType | 'ANY' | 'MATCH';
  principal?: string;
  host?: string;
  operation?: Operation | 'ANY';
  permission?: Permission | 'ANY';
}

const oneOf = <T extends string>(
  values: readonly T[],
  raw: unknown,
  field: string,
  extra: readonly string[] = [],
): T => {
  const v = typeof raw === 'string' ? raw.toUpperCase() : raw;
  if (typeof v === 'string' && (values.includes(v as T) || extra.includes(v))) return v as T;
  throw new KafkaError(
    'INVALID_REQUEST',
    `${field} must be one of ${[...values, ...extra].join(', ')} (got ${JSON.stringify(raw)})`,
  );
};

/** A principal as Kafka writes it: `Type:name`, e.g. `User:alice`. */
function validatePrincipal(raw: unknown): string {
  if (typeof raw !== 'string' || !/^[A-Za-z][A-Za-z0-9_-]*:.+$/.test(raw)) {
    throw new KafkaError('INVALID_REQUEST', `A principal is Type:name, e.g. User:alice (got ${JSON.stringify(raw)})`);
  }
  return raw;
}

/** Checks and normalises an ACL to create (Kafka's CreateAcls validation). */
export function validateBinding(raw: {
  resourceType: unknown;
  resourceName: unknown;
  patternType?: unknown;
  principal: unknown;
  host?: unknown;
  operation: unknown;
  permission: unknown;
}): AclBinding {
  const resourceType = oneOf(RESOURCE_TYPES, raw.resourceType, 'resource_type');
  const patternType = oneOf(PATTERN_TYPES, raw.patternType ?? 'LITERAL', 'pattern_type');
  if (typeof raw.resourceName !== 'string' || raw.resourceName === '')
    throw new KafkaError('INVALID_REQUEST', 'resource_name is required');
  const resourceName = raw.resourceName;
  if (resourceType === 'CLUSTER' && resourceName !== CLUSTER_NAME) {
    throw new KafkaError(
      'INVALID_REQUEST',
      `The cluster resource is named ${CLUSTER_NAME} (got ${JSON.stringify(resourceName)})`,
    );
  }
  if (patternType === 'PREFIXED' && resourceName === WILDCARD_RESOURCE) {
    throw new KafkaError('INVALID_REQUEST', "A PREFIXED pattern cannot be '*'; use LITERAL '*' for every resource");
  }
  const host = raw.host === undefined || raw.host === null || raw.host === '' ? WILDCARD_HOST : raw.host;
  if (typeof host !== 'string') throw new KafkaError('INVALID_REQUEST', 'host must be a string');
  return {
    resourceType,
    resourceName,
    patternType,
    principal: validatePrincipal(raw.principal),
    host,
    operation: oneOf(OPERATIONS, raw.operation, 'operation'),
    permission: oneOf(PERMISSIONS, raw.permission, 'permission'),
  };
}

/** Checks a filter's enumerations (names and principals are free text). */
export function validateFilter(raw: Record<keyof AclFilter, unknown>): AclFilter {
  const f: AclFilter = {};
  const present = (v: unknown): v is string => typeof v === 'string' && v !== '';
  if (present(raw.resourceType)) f.resourceType = oneOf(RESOURCE_TYPES, raw.resourceType, 'resource_type', ['ANY']);
  if (present(raw.patternType)) f.patternType = oneOf(PATTERN_TYPES, raw.patternType, 'pattern_type', ['ANY', 'MATCH']);
  if (present(raw.operation)) f.operation = oneOf(OPERATIONS, raw.operation, 'operation', ['ANY']);
  if (present(raw.permission)) f.permission = oneOf(PERMISSIONS, raw.permission, 'permission', ['ANY']);
  if (present(raw.resourceName)) f.resourceName = raw.resourceName;
  if (present(raw.principal)) f.principal = raw.principal;
  if (present(raw.host)) f.host = raw.host;
  return f;
}

/** Whether a pattern applies to a resource name (what MATCH filters and the authorizer use). */
export function patternMatches(patternType: PatternType, patternName: string, name: string): boolean {
  if (patternType === 'PREFIXED') return name.startsWith(patternName);
  return patternName === WILDCARD_RESOURCE || patternName === name;
}

/** Kafka's AclBindingFilter.matches. */
export function filterMatches(f: AclFilter, b: AclBinding): boolean {
  if (f.resourceType !== undefined && f.resourceType !== 'ANY' && f.resourceType !== b.resourceType) return false;
  if (f.operation !== undefined && f.operation !== 'ANY' && f.operation !== b.operation) return false;
  if (f.permission !== undefined && f.permission !== 'ANY' && f.permission !== b.permission) return false;
  if (f.principal !== undefined && !samePrincipal(f.principal, b.principal)) return false;
  if (f.host !== undefined && f.host !== b.host) return false;
  const pt = f.patternType ?? 'ANY';
  if (pt === 'MATCH')
    return f.resourceName === undefined || patternMatches(b.patternType, b.resourceName, f.resourceName);
  if (pt !== 'ANY' && pt !== b.patternType) return false;
  return f.resourceName === undefined || f.resourceName === b.resourceName;
}

/** One stable key per distinct ACL: creating the same ACL twice stores it once, as Kafka does. */
export function bindingKey(b: AclBinding): string {
  return [b.resourceType, b.patternType, b.resourceName, b.principal, b.host, b.operation, b.permission]
    .map(encodeURIComponent)
    .join('|');
}
