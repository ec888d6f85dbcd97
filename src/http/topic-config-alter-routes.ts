/**
 * Confluent's batch alter of a topic's configs (`configs:alter`): the one topic route API Gateway
 * sends to the produce function (infra/routes.ts), apart from the other topic routes
 * (topic-routes.ts) so that the produce bundle holds none of them.
 */
import { Hono } from 'hono';
import type { AppEnv } from './app-env.js';
import { alterConfigsSchema, configChanges } from './config-alter-body.js';
import { readJson } from './request.js';
import { authorize } from './security.js';

export function topicConfigAlterRoutes(): Hono<AppEnv> {
  const app = new Hono<AppEnv>();

  // `configs:alter` is one path segment: Hono sees "configs:alter" as a literal.
  app.post('/topics/:topic/configs:alter', async (c) => {
    await authorize(c, 'ALTER_CONFIGS', 'TOPIC', c.req.param('topic'));
    const body = alterConfigsSchema.parse(await readJson(c));
    const changes = Object.fromEntries(configChanges(body).map((d) => [d.name, d.value]));
    await c.get('services').topics.alterConfigs(c.req.param('topic'), changes, body.validate_only);
    return c.body(null, 204);
  });

  return app;
}
