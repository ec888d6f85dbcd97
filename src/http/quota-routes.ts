import { Hono } from 'hono';
import * as z from 'zod';
import { KafkaError } from '../wire/errors.js';
import { validateQuotaValue, type ClientQuota, type QuotaEntity, type QuotaKey } from '../quotas/client-quotas.js';
import type { AppEnv } from './app-env.js';
import { readJson } from './request.js';
import { authorize } from './security.js';

const ENTITY_TYPES = ['user', 'client-id'] as const;
const entitySchema = z
  .array(z.object({ entity_type: z.enum(ENTITY_TYPES), entity_name: z.string().min(1).nullable() }))
  .min(1)
  .max(2);
const alterSchema = z.object({
  data: z
    .array(
      z.object({
        entity: entitySchema,
        ops: z
          .array(z.object({ key: z.string(), value: z.number().optional(), remove: z.boolean().optional() }))
          .min(1),
      }),
    )
    .min(1),
  validate_only: z.boolean().optional(),
});

function entityOf(parts: z.infer<typeof entitySchema>): QuotaEntity {
  const e: QuotaEntity = {};
  for (const p of parts) {
    if (p.entity_type in e) throw new KafkaError('INVALID_REQUEST', `The entity names ${p.entity_type} twice`);
    e[p.entity_type] = p.entity_name;
  }
  return e;
}

const showQuota = (q: ClientQuota) => ({
  kind: 'KafkaClientQuota',
  entity: ENTITY_TYPES.filter((t) => q.entity[t] !== undefined).map((t) => ({
    entity_type: t,
    entity_name: q.entity[t],
  })),
  values: q.values,
});

/** A filter component: absent matches any, `<default>` the default entity, else that name. */
const matches = (want: string | undefined, have: string | null | undefined) =>
  want === undefined || (want === '<default>' ? have === null : have === want);

/**
 * Extension (v3 has no client quotas): Kafka's DescribeClientQuotas (DESCRIBE_CONFIGS on the
 * cluster) and AlterClientQuotas (ALTER_CONFIGS on the cluster), kafka-configs.sh's
 * --entity-type users|clients.
 */
export function quotaRoutes(): Hono<AppEnv> {
  const app = new Hono<AppEnv>();

  app.get('/client-quotas', async (c) => {
    await authorize(c, 'DESCRIBE_CONFIGS', 'CLUSTER');
    const user = c.req.query('user');
    const client = c.req.query('client_id');
    const quotas = (await c.get('services').security.quotas.list()).filter(
      (q) => matches(user, q.entity.user) && matches(client, q.entity['client-id']),
    );
    const r = c.get('resources');
    return c.json(
      r.list('KafkaClientQuotaList', `${r.base}/client-quotas${new URL(c.req.url).search}`, quotas.map(showQuota)),
    );
  });

  app.post('/client-quotas:alter', async (c) => {
    await authorize(c, 'ALTER_CONFIGS', 'CLUSTER');
    const body = alterSchema.parse(await readJson(c));
    // Every entry is checked before any is applied.
    const changes = body.data.map((d) => {
      const set: Partial<Record<QuotaKey, number>> = {};
      const remove: QuotaKey[] = [];
      for (const op of d.ops) {
        if (op.remove) {
          validateQuotaValue(op.key, 1);
          remove.push(op.key as QuotaKey);
        } else set[op.key as QuotaKey] = validateQuotaValue(op.key, op.value);
      }
      return { entity: entityOf(d.entity), set, remove };
    });
    if (body.validate_only) return c.body(null, 204);
    const { quotas } = c.get('services').security;
    for (const ch of changes) {
      const after = await quotas.alter(ch.entity, ch.set, ch.remove);
      c.get('audit')('client quota altered', {
        audit: 'quota-altered',
        principal: c.get('principal'),
        entity: ch.entity,
        values: after?.values ?? {},
      });
    }
    return c.body(null, 204);
  });

  return app;
}
