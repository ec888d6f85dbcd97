import { Hono } from 'hono';
import { KafkaError } from '../wire/errors.js';
import type { AppEnv, AppServices } from './app-env.js';
import { clusterRoutes } from './cluster-routes.js';
import { consumerInstanceRoutes } from './consumer-instance-routes.js';
import { toErrorResponse } from './error-mapping.js';
import { groupRoutes } from './group-routes.js';
import { openApiDocument } from './openapi.js';
import { producerRoutes } from './producer-routes.js';
import { recordRoutes } from './record-routes.js';
import { bodySizeLimit } from './request.js';
import { Resources } from './resources.js';
import { topicRoutes } from './topic-routes.js';

export interface AppOptions {
  /** Where unexpected errors are reported (the caller only ever sees a generic 500). */
  logError?: (e: unknown, context: { method: string; path: string }) => void;
}

const defaultLogError: NonNullable<AppOptions['logError']> = (e, ctx) =>
  console.error(JSON.stringify({ level: 'error', msg: 'unhandled error', ...ctx, error: e instanceof Error ? e.stack : String(e) }));

/** The Hono app, the same behind Lambda and the local node server. */
export function createApp(services: AppServices, options: AppOptions = {}): Hono<AppEnv> {
  const logError = options.logError ?? defaultLogError;
  const app = new Hono<AppEnv>();

  app.onError((e, c) => {
    const { status, body } = toErrorResponse(e);
    if (status >= 500 && !(e instanceof KafkaError)) logError(e, { method: c.req.method, path: c.req.path });
    return c.json(body, status as 500);
  });
  app.notFound((c) => c.json({ error_code: 40401, message: `No route for ${c.req.method} ${c.req.path}`, error: 'NOT_FOUND' }, 404));

  app.get('/health', (c) => c.json({ status: 'ok' }));
  app.get('/openapi.json', (c) => c.json(openApiDocument));
  const { operationCounts } = services;
  if (operationCounts) app.get('/debug/counters', (c) => c.json(operationCounts()));

  const v3 = new Hono<AppEnv>();
  v3.use('*', bodySizeLimit(services.limits.maxRequestBytes));
  v3.use('*', async (c, next) => {
    c.set('services', services);
    c.set('resources', new Resources(new URL(c.req.url).origin, services.clusterId));
    await next();
  });
  v3.get('/', (c) => {
    const r = c.get('resources');
    return c.json(r.list('KafkaClusterList', `${r.origin}/v3/clusters`, [r.cluster()]));
  });
  const cluster = new Hono<AppEnv>();
  cluster.use('*', async (c, next) => {
    if (c.req.param('clusterId') !== services.clusterId) {
      throw new KafkaError('NOT_FOUND', `Cluster ${c.req.param('clusterId')} not found; this endpoint serves ${services.clusterId}`);
    }
    await next();
  });
  cluster.get('/', (c) => c.json(c.get('resources').cluster()));
  cluster.route('/', clusterRoutes());
  cluster.route('/', topicRoutes());
  cluster.route('/', recordRoutes());
  cluster.route('/', producerRoutes());
  cluster.route('/', groupRoutes());
  v3.route('/:clusterId', cluster);
  app.route('/v3/clusters', v3);
  app.route('/consumers', consumerInstanceRoutes(services));
  return app;
}
