/**
 * DescribeAcls (DESCRIBE on the cluster), CreateAcls and DeleteAcls (ALTER on the cluster) over the
 * ACL store the HTTP API's `/acls` routes use, with the same validation (src/authz/acl.ts): an ACL
 * created over Kafka is listed over HTTP and the reverse. Kafka's enum codes are translated to the
 * store's names here; a code the store has no name for (DELEGATION_TOKEN or USER resources, the
 * token operations) is answered INVALID_REQUEST for that ACL or filter.
 */
import { validateBinding, validateFilter, type AclBinding } from '../../authz/acl.js';
import { KafkaError } from '../../wire/errors.js';
import { allowed, denied } from './access.js';
import { errorCodeOf, errorMessageOf, type Handler, type RequestContext } from './context.js';

/** Kafka's codes (org.apache.kafka.common.resource.ResourceType, PatternType, acl.AclOperation, AclPermissionType). */
const RESOURCE_TYPE = { 1: 'ANY', 2: 'TOPIC', 3: 'GROUP', 4: 'CLUSTER', 5: 'TRANSACTIONAL_ID' } as const;
const PATTERN_TYPE = { 1: 'ANY', 2: 'MATCH', 3: 'LITERAL', 4: 'PREFIXED' } as const;
const OPERATION = {
  1: 'ANY',
  2: 'ALL',
  3: 'READ',
  4: 'WRITE',
  5: 'CREATE',
  6: 'DELETE',
  7: 'ALTER',
  8: 'DESCRIBE',
  9: 'CLUSTER_ACTION',
  10: 'DESCRIBE_CONFIGS',
  11: 'ALTER_CONFIGS',
  12: 'IDEMPOTENT_WRITE',
} as const;
const PERMISSION = { 1: 'ANY', 2: 'DENY', 3: 'ALLOW' } as const;

const nameOf = (table: Record<number, string>, code: number, field: string): string => {
  const name = table[code];
  if (name === undefined) throw new KafkaError('INVALID_REQUEST', `${field} ${code} is not supported here`);
  return name;
};
const codeOf = (table: Record<number, string>, name: string): number =>
  Number(Object.entries(table).find(([, n]) => n === name)![0]);

type Filter = {
  resourceTypeFilter: number;
  resourceNameFilter: string | null;
  patternTypeFilter: number;
  principalFilter: string | null;
  hostFilter: string | null;
  operation: number;
  permissionType: number;
};

const filterOf = (f: Filter) =>
  validateFilter({
    resourceType: nameOf(RESOURCE_TYPE, f.resourceTypeFilter, 'Resource type'),
    resourceName: f.resourceNameFilter ?? undefined,
    patternType: nameOf(PATTERN_TYPE, f.patternTypeFilter, 'Pattern type'),
    principal: f.principalFilter ?? undefined,
    host: f.hostFilter ?? undefined,
    operation: nameOf(OPERATION, f.operation, 'Operation'),
    permission: nameOf(PERMISSION, f.permissionType, 'Permission type'),
  });

const entryOf = (b: AclBinding) => ({
  principal: b.principal,
  host: b.host,
  operation: codeOf(OPERATION, b.operation),
  permissionType: codeOf(PERMISSION, b.permission),
});

const audit = (ctx: RequestContext, what: 'created' | 'deleted', acl: AclBinding) =>
  ctx.logger.info(`acl ${what}`, { audit: `acl-${what}`, principal: ctx.connection.principal, acl });

export const describeAcls: Handler = async (ctx, req) => {
  const answer = (e: unknown) => ({
    throttleTimeMs: 0,
    errorCode: errorCodeOf(ctx, e),
    errorMessage: errorMessageOf(e),
    resources: [],
  });
  if (!(await allowed(ctx, 'DESCRIBE', 'CLUSTER'))) return answer(denied(ctx, 'DESCRIBE', 'CLUSTER'));
  let acls: AclBinding[];
  try {
    acls = await ctx.services.security.acls.list(filterOf(req));
  } catch (e) {
    return answer(e);
  }
  // One resource per (type, name, pattern type), each with its ACLs.
  const resources = new Map<
    string,
    { resourceType: number; resourceName: string; patternType: number; acls: unknown[] }
  >();
  for (const b of acls) {
    const key = JSON.stringify([b.resourceType, b.resourceName, b.patternType]);
    let r = resources.get(key);
    if (!r) {
      r = {
        resourceType: codeOf(RESOURCE_TYPE, b.resourceType),
        resourceName: b.resourceName,
        patternType: codeOf(PATTERN_TYPE, b.patternType),
        acls: [],
      };
      resources.set(key, r);
    }
    r.acls.push(entryOf(b));
  }
  return { throttleTimeMs: 0, errorCode: 0, errorMessage: null, resources: [...resources.values()] };
};

export const createAcls: Handler = async (ctx, req) => {
  type Creation = Omit<Filter, 'resourceTypeFilter' | 'resourceNameFilter' | 'patternTypeFilter'> & {
    resourceType: number;
    resourceName: string;
    resourcePatternType: number;
    principal: string;
    host: string;
  };
  const creations = req.creations as Creation[];
  if (!(await allowed(ctx, 'ALTER', 'CLUSTER'))) {
    const e = denied(ctx, 'ALTER', 'CLUSTER');
    return { throttleTimeMs: 0, results: creations.map(() => ({ errorCode: e.code, errorMessage: e.message })) };
  }
  const checked = creations.map((c) => {
    try {
      return validateBinding({
        resourceType: nameOf(RESOURCE_TYPE, c.resourceType, 'Resource type'),
        resourceName: c.resourceName,
        patternType: nameOf(PATTERN_TYPE, c.resourcePatternType, 'Pattern type'),
        principal: c.principal,
        host: c.host,
        operation: nameOf(OPERATION, c.operation, 'Operation'),
        permission: nameOf(PERMISSION, c.permissionType, 'Permission type'),
      });
    } catch (e) {
      return e as KafkaError;
    }
  });
  const valid = checked.filter((c): c is AclBinding => !(c instanceof Error));
  let failure: unknown;
  try {
    await ctx.services.security.acls.create(valid);
    for (const b of valid) audit(ctx, 'created', b);
  } catch (e) {
    failure = e;
  }
  return {
    throttleTimeMs: 0,
    results: checked.map((c) => {
      const e = c instanceof Error ? c : failure;
      return e === undefined
        ? { errorCode: 0, errorMessage: null }
        : { errorCode: errorCodeOf(ctx, e), errorMessage: errorMessageOf(e) };
    }),
  };
};

export const deleteAcls: Handler = async (ctx, req) => {
  const filters = req.filters as Filter[];
  if (!(await allowed(ctx, 'ALTER', 'CLUSTER'))) {
    const e = denied(ctx, 'ALTER', 'CLUSTER');
    return {
      throttleTimeMs: 0,
      filterResults: filters.map(() => ({ errorCode: e.code, errorMessage: e.message, matchingAcls: [] })),
    };
  }
  const filterResults = [];
  // One filter after another, as Kafka applies them; an ACL two filters match is deleted by the first.
  for (const f of filters) {
    try {
      const deleted = await ctx.services.security.acls.delete(filterOf(f));
      for (const b of deleted) audit(ctx, 'deleted', b);
      filterResults.push({
        errorCode: 0,
        errorMessage: null,
        matchingAcls: deleted.map((b) => ({
          errorCode: 0,
          errorMessage: null,
          resourceType: codeOf(RESOURCE_TYPE, b.resourceType),
          resourceName: b.resourceName,
          patternType: codeOf(PATTERN_TYPE, b.patternType),
          ...entryOf(b),
        })),
      });
    } catch (e) {
      filterResults.push({ errorCode: errorCodeOf(ctx, e), errorMessage: errorMessageOf(e), matchingAcls: [] });
    }
  }
  return { throttleTimeMs: 0, filterResults };
};
