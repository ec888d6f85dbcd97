import { Hono } from 'hono';
import * as z from 'zod';
import { KafkaError } from '../wire/errors.js';
import {
  type ClientQuota,
  QUOTA_KEYS,
  type QuotaEntity,
  type QuotaKey,
  validateQuotaValue,
} from '../quotas/client-quotas.js';
import type { AppEnv } from './app-env.js';
import { listMetadata } from './openapi-parts.js';
import { readJson } from './request.js';
import { authorize } from './security.js';

const ENTITY_TYPES = ['user', 'client-id'] as const;
const entitySchema = z
  .array(
    z.object({
      entity_type: z.enum(ENTITY_TYPES),
      entity_name: z.string().min(1).nullable().meta({ description: 'null: the default' }),
    }),
  )
  .min(1)
  .max(2);
// validateQuotaValue checks the key (INVALID_REQUEST with the known ones); QUOTA_KEYS documents it.
export const alterSchema = z.object({
  data: z
    .array(
      z.object({
        entity: entitySchema,
        ops: z
          .array(
            z.object({
              key: z.string().meta({ enum: [...QUOTA_KEYS] }),
              value: z.number().optional(),
              remove: z.boolean().optional(),
            }),
          )
          .min(1),
      }),
    )
    .min(1),
  validate_only: z.boolean().optional(),
});
export const quotaQuerySchema = z.object({
  user: z.string().meta({ description: '<default> for the default user; absent: any' }).optional(),
  client_id: z.string().meta({ description: '<default> for the default client id; absent: any' }).optional(),
});
export const quotaListSchema = z.object({
  kind: z.literal('KafkaClientQuotaList'),
  metadata: listMetadata,
  data: z.array(
    z.object({
      kind: z.literal('KafkaClientQuota'),
      entity: entitySchema,
      values: z.partialRecord(z.enum(QUOTA_KEYS), z.number()),
    }),
  ),
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
  kind: 'KafkaClientQuota' as const,
  entity: ENTITY_TYPES.filter((t) => q.entity[t] !== undefined).map((t) => ({
    entity_type: t,
    entity_name: q.entity[t] ?? null,
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
    const { user, client_id: client } = quotaQuerySchema.parse(c.req.query());
    const quotas = (await c.get('services').security.quotas.list()).filter(
      (q) => matches(user, q.entity.user) && matches(client, q.entity['client-id']),
    );
    const r = c.get('resources');
    return c.json(
      r.list(
        'KafkaClientQuotaList',
        `${r.base}/client-quotas${new URL(c.req.url).search}`,
        quotas.map(showQuota),
      ) satisfies z.input<typeof quotaListSchema>,
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
