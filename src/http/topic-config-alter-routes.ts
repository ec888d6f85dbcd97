/**
 * Confluent's batch alter of a topic's configs (`configs:alter`): the one topic route API Gateway
 * sends to the produce function (infra/routes.ts), apart from the other topic routes
 * (topic-routes.ts) so that the produce bundle holds none of them.
 */
import { Hono } from 'hono';
import * as z from 'zod';
import { KafkaError } from '../wire/errors.js';
import type { AppEnv } from './app-env.js';
import { readJson } from './request.js';
import { authorize } from './security.js';

export const alterConfigsSchema = z.object({
  data: z.array(
    z.object({
      name: z.string(),
      value: z.string().nullable().optional(),
      operation: z.enum(['SET', 'DELETE']).optional(),
    }),
  ),
  validate_only: z.boolean().optional(),
});

export function topicConfigAlterRoutes(): Hono<AppEnv> {
  const app = new Hono<AppEnv>();

  // `configs:alter` is one path segment: Hono sees "configs:alter" as a literal.
  app.post('/topics/:topic/configs:alter', async (c) => {
    await authorize(c, 'ALTER_CONFIGS', 'TOPIC', c.req.param('topic'));
    const body = alterConfigsSchema.parse(await readJson(c));
    const changes: Record<string, string | null> = {};
    for (const d of body.data) {
      if (d.operation === 'DELETE') changes[d.name] = null;
      else if (d.value === undefined || d.value === null)
        throw new KafkaError('INVALID_CONFIG', `A value is required to SET ${d.name}`);
      else changes[d.name] = d.value;
    }
    await c.get('services').topics.alterConfigs(c.req.param('topic'), changes, body.validate_only);
    return c.body(null, 204);
  });

  return app;
}
