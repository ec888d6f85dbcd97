import { Hono } from 'hono';
import * as z from 'zod';
import { RELEASE } from '../wire/release.js';
import type { FeatureLevelStatus } from '../storage/feature-level.js';
import type { AppEnv } from './app-env.js';
import { readJson } from './request.js';
import { authorize } from './security.js';

export const raiseSchema = z.object({ feature_level: z.number().int() });

const date = z.string().meta({ format: 'date-time' });
const level = z.int().min(1);

/** A KafkaFeatureLevel: what both routes answer. */
export const featureLevelSchema = z.object({
  kind: z.literal('KafkaFeatureLevel'),
  cluster_id: z.string(),
  release: z.string().meta({ description: 'The release of the code that answered' }),
  feature_level: level,
  supported_feature_level: level,
  finalizable_feature_level: level,
  raised_at: date.optional(),
  raised_by: z.string().optional(),
  processes: z.array(
    z.object({ role: z.string(), release: z.string(), supported_feature_level: z.int(), last_seen: date }),
  ),
});

function show(clusterId: string, s: FeatureLevelStatus): z.input<typeof featureLevelSchema> {
  return {
    kind: 'KafkaFeatureLevel',
    cluster_id: clusterId,
    release: RELEASE,
    feature_level: s.level,
    supported_feature_level: s.supported,
    finalizable_feature_level: s.finalizable,
    ...(s.raisedAt !== undefined ? { raised_at: new Date(s.raisedAt).toISOString() } : {}),
    ...(s.raisedBy !== undefined ? { raised_by: s.raisedBy } : {}),
    processes: s.processes.map((p) => ({
      role: p.role,
      release: p.release,
      supported_feature_level: p.supportedLevel,
      last_seen: new Date(p.seenAt).toISOString(),
    })),
  };
}

/**
 * Extension (Kafka's DescribeFeatures / UpdateFeatures for metadata.version): the cluster's
 * feature level, what this code and the running processes support, and the explicit raise
 * (src/storage/feature-level.ts, docs/deploy.md "Upgrading and rolling back").
 */
export function featureRoutes(): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  app.get('/features', async (c) => {
    await authorize(c, 'DESCRIBE', 'CLUSTER');
    const { features, clock, clusterId } = c.get('services');
    return c.json(show(clusterId, await features.status(clock.now())));
  });
  app.post('/features:raise', async (c) => {
    await authorize(c, 'ALTER', 'CLUSTER');
    const body = raiseSchema.parse(await readJson(c));
    const { features, clock, clusterId } = c.get('services');
    const status = await features.raise(body.feature_level, clock.now(), c.get('principal'));
    c.get('audit')('feature level raised', {
      audit: 'feature-level',
      principal: c.get('principal'),
      level: status.level,
    });
    return c.json(show(clusterId, status));
  });
  return app;
}
