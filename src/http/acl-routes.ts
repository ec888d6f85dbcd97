import { Hono, type Context } from 'hono';
import * as z from 'zod';
import {
  type AclBinding,
  OPERATIONS,
  PATTERN_TYPES,
  PERMISSIONS,
  RESOURCE_TYPES,
  validateBinding,
  validateFilter,
} from '../authz/acl.js';
import { KafkaError } from '../wire/errors.js';
import type { AppEnv } from './app-env.js';
import { readJson } from './request.js';
import { authorize } from './security.js';

// The ACL model's value lists document the fields; the model checks them (validateBinding and
// validateFilter answer with Kafka's error names), so the schemas take any string.
const oneOf = (values: readonly string[], description?: string) =>
  z.string().meta({ enum: [...values], ...(description ? { description } : {}) });
const aclFields = {
  resource_type: oneOf(RESOURCE_TYPES),
  resource_name: z
    .string()
    .meta({ description: "A topic, group or transactional id ('*': every one), or kafka-cluster" }),
  pattern_type: oneOf(PATTERN_TYPES).meta({ default: 'LITERAL' }),
  principal: z.string().meta({ description: 'Type:name, e.g. User:alice; User:* is everyone' }),
  host: z.string().meta({ default: '*' }),
  operation: oneOf(OPERATIONS),
  permission: oneOf(PERMISSIONS),
};
export const createAclSchema = z.object({
  ...aclFields,
  pattern_type: aclFields.pattern_type.optional(),
  host: aclFields.host.optional(),
});
export const batchSchema = z.object({ data: z.array(createAclSchema).min(1) });
export const aclFilterSchema = z.object({
  resource_type: oneOf([...RESOURCE_TYPES, 'ANY']).optional(),
  resource_name: z.string().optional(),
  pattern_type: oneOf(
    [...PATTERN_TYPES, 'ANY', 'MATCH'],
    'MATCH: every pattern that applies to resource_name (literal, * and prefixes)',
  ).optional(),
  principal: z.string().optional(),
  host: z.string().optional(),
  operation: oneOf([...OPERATIONS, 'ANY']).optional(),
  permission: oneOf([...PERMISSIONS, 'ANY']).optional(),
});
export const aclSchema = z.object({
  kind: z.literal('KafkaAcl'),
  metadata: z.object({ self: z.string() }),
  cluster_id: z.string(),
  ...aclFields,
});

const toBinding = (b: z.infer<typeof createAclSchema>): AclBinding =>
  validateBinding({
    resourceType: b.resource_type,
    resourceName: b.resource_name,
    patternType: b.pattern_type,
    principal: b.principal,
    host: b.host,
    operation: b.operation,
    permission: b.permission,
  });

const filterOf = (c: Context<AppEnv>) => {
  const q = aclFilterSchema.parse(c.req.query());
  return validateFilter({
    resourceType: q.resource_type,
    resourceName: q.resource_name,
    patternType: q.pattern_type,
    principal: q.principal,
    host: q.host,
    operation: q.operation,
    permission: q.permission,
  });
};

/** Confluent v3's AclData: the ACL's own fields, its `self` the list filtered down to it. */
function aclData(c: Context<AppEnv>, b: AclBinding): z.input<typeof aclSchema> {
  const r = c.get('resources');
  // The ACL's fields are both its answer and the filter of its `self` link.
  const fields = {
    resource_type: b.resourceType,
    resource_name: b.resourceName,
    pattern_type: b.patternType,
    principal: b.principal,
    host: b.host,
    operation: b.operation,
    permission: b.permission,
  };
  return {
    kind: 'KafkaAcl',
    metadata: { self: `${r.base}/acls?${new URLSearchParams(fields)}` },
    cluster_id: r.clusterId,
    ...fields,
  };
}

/**
 * Kafka's DescribeAcls, CreateAcls and DeleteAcls on Confluent v3's paths and shapes. Listing needs
 * DESCRIBE on the cluster, changing ALTER, as in Kafka. Every change is audited, one line per ACL.
 */
export function aclRoutes(): Hono<AppEnv> {
  const app = new Hono<AppEnv>();

  const created = async (c: Context<AppEnv>, bindings: AclBinding[]) => {
    await c.get('services').security.acls.create(bindings);
    for (const acl of bindings)
      c.get('audit')('acl created', { audit: 'acl-created', principal: c.get('principal'), acl });
    return c.body(null, 201);
  };

  app.get('/acls', async (c) => {
    await authorize(c, 'DESCRIBE', 'CLUSTER');
    const acls = await c.get('services').security.acls.list(filterOf(c));
    const r = c.get('resources');
    return c.json(
      r.list(
        'KafkaAclList',
        `${r.base}/acls${new URL(c.req.url).search}`,
        acls.map((b) => aclData(c, b)),
      ),
    );
  });

  app.post('/acls', async (c) => {
    await authorize(c, 'ALTER', 'CLUSTER');
    return created(c, [toBinding(createAclSchema.parse(await readJson(c)))]);
  });

  // All or nothing: every ACL is checked before any is written.
  app.post('/acls:batch', async (c) => {
    await authorize(c, 'ALTER', 'CLUSTER');
    return created(c, batchSchema.parse(await readJson(c)).data.map(toBinding));
  });

  app.delete('/acls', async (c) => {
    await authorize(c, 'ALTER', 'CLUSTER');
    if (c.req.query('resource_type') === undefined) {
      throw new KafkaError('BAD_REQUEST', 'resource_type is required to delete ACLs (ANY matches every type)');
    }
    const deleted = await c.get('services').security.acls.delete(filterOf(c));
    for (const acl of deleted)
      c.get('audit')('acl deleted', { audit: 'acl-deleted', principal: c.get('principal'), acl });
    return c.json({ data: deleted.map((b) => aclData(c, b)) });
  });

  return app;
}
