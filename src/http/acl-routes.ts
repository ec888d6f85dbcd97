import { Hono, type Context } from 'hono';
import * as z from 'zod';
import { validateBinding, validateFilter, type AclBinding } from '../authz/acl.js';
import { KafkaError } from '../wire/errors.js';
import type { AppEnv } from './app-env.js';
import { readJson } from './request.js';
import { authorize } from './security.js';

const createAclSchema = z.object({
  resource_type: z.string(),
  resource_name: z.string(),
  pattern_type: z.string().optional(),
  principal: z.string(),
  host: z.string().optional(),
  operation: z.string(),
  permission: z.string(),
});
const batchSchema = z.object({ data: z.array(createAclSchema).min(1) });

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

const filterOf = (c: Context<AppEnv>) =>
  validateFilter({
    resourceType: c.req.query('resource_type'),
    resourceName: c.req.query('resource_name'),
    patternType: c.req.query('pattern_type'),
    principal: c.req.query('principal'),
    host: c.req.query('host'),
    operation: c.req.query('operation'),
    permission: c.req.query('permission'),
  });

/** Confluent v3's AclData: the ACL's own fields, its `self` the list filtered down to it. */
function aclData(c: Context<AppEnv>, b: AclBinding) {
  const r = c.get('resources');
  const q = new URLSearchParams({
    resource_type: b.resourceType,
    resource_name: b.resourceName,
    pattern_type: b.patternType,
    principal: b.principal,
    host: b.host,
    operation: b.operation,
    permission: b.permission,
  });
  return {
    kind: 'KafkaAcl',
    metadata: { self: `${r.base}/acls?${q}` },
    cluster_id: r.clusterId,
    resource_type: b.resourceType,
    resource_name: b.resourceName,
    pattern_type: b.patternType,
    principal: b.principal,
    host: b.host,
    operation: b.operation,
    permission: b.permission,
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
