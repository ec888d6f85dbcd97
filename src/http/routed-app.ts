import { Hono } from 'hono';
import { noLogger, type Logger } from '../metrics.js';
import { ThrottledError } from '../quotas/throttle.js';
import { KafkaError } from '../wire/errors.js';
import type { AppEnv, AuditSink } from './app-env.js';
import type { AppServices } from '../services.js';
import { toErrorResponse } from './error-mapping.js';
import { allowedMethods } from './method-not-allowed.js';
import { MemoRouter } from './memo-router.js';
import { bodySizeLimit } from './request.js';
import { Resources } from './resources.js';
import { security } from './security.js';

export interface AppOptions {
  /** Where unexpected errors are reported (the caller only ever sees a generic 500). */
  logError?: (e: unknown, context: { method: string; path: string }) => void;
  /** Where denied requests and ACL changes are logged (default: a warning to `logger`). */
  audit?: AuditSink;
  /** Where the app's lines go (the host's Logger), unless logError or audit say otherwise; default: nowhere. */
  logger?: Logger;
  /** Told each request's principal (the Lambda entry puts it on the request's log lines). */
  onPrincipal?: (principal: string) => void;
}

/**
 * The routes an app serves. Each Lambda function builds its app from the route modules its API
 * Gateway routes reach (functions/*-routes.ts), so its bundle holds only those; the local server
 * and the admin function serve them all (app.ts).
 */
export interface AppRoutes {
  /** Sub-apps mounted at /v3/clusters/{clusterId}, behind security, in this order. */
  cluster: readonly (() => Hono<AppEnv>)[];
  /** Routes outside /v3 that need no principal (health, OpenAPI, the console), added first. */
  open?: (app: Hono<AppEnv>, services: AppServices) => void;
  /** Routes outside /v3 behind security (REST v2 consumer instances under /consumers), added last. */
  secured?: (app: Hono<AppEnv>, services: AppServices) => void;
}

const loggedError =
  (logger: Logger): NonNullable<AppOptions['logError']> =>
  (e, ctx) =>
    logger.error('unhandled error', { ...ctx, error: e instanceof Error ? e.stack : String(e) });
const loggedAudit =
  (logger: Logger): AuditSink =>
  (msg, fields) =>
    logger.warn(msg, fields);

/** The Hono app with the given routes: errors, 404s, security and the cluster check as every app has them. */
export function createRoutedApp(services: AppServices, options: AppOptions, routes: AppRoutes): Hono<AppEnv> {
  const logger = options.logger ?? noLogger;
  const logError = options.logError ?? loggedError(logger);
  const app = new Hono<AppEnv>({ router: new MemoRouter() });

  app.onError((e, c) => {
    const { status, body } = toErrorResponse(e);
    if (status >= 500 && !(e instanceof KafkaError)) logError(e, { method: c.req.method, path: c.req.path });
    if (e instanceof ThrottledError) {
      // Retry-After counts whole seconds; the header in milliseconds is Kafka's throttle_time_ms.
      c.header('Retry-After', String(Math.max(1, Math.ceil(e.throttleTimeMs / 1000))));
      c.header('x-throttle-time-ms', String(e.throttleTimeMs));
      return c.json({ ...body, throttle_time_ms: e.throttleTimeMs }, 429);
    }
    return c.json(body, status as 500);
  });
  const allowed = allowedMethods(app.routes);
  app.notFound((c) => {
    const methods = allowed(c.req.path);
    if (methods.length > 0) {
      c.header('Allow', methods.join(', '));
      return c.json(
        {
          error_code: 40501,
          message: `${c.req.method} is not allowed on ${c.req.path}; allowed: ${methods.join(', ')}`,
          error: 'METHOD_NOT_ALLOWED',
        },
        405,
      );
    }
    return c.json(
      { error_code: 40401, message: `No route for ${c.req.method} ${c.req.path}`, error: 'NOT_FOUND' },
      404,
    );
  });

  routes.open?.(app, services);

  const secured = security(services, {
    audit: options.audit ?? loggedAudit(logger),
    ...(options.onPrincipal ? { onPrincipal: options.onPrincipal } : {}),
  });
  app.use('/v3/*', secured);
  app.use('/consumers/*', secured);

  const v3 = new Hono<AppEnv>();
  v3.use('*', bodySizeLimit(services.limits.maxRequestBytes));
  v3.use('*', async (c, next) => {
    c.set('services', services);
    c.set('resources', new Resources(originOf(c.req.url), services.clusterId));
    await next();
    // Push notifications of this request's commits go out before the answer: a Lambda may be frozen after it.
    await services.push.notifier.settle();
  });
  v3.get('/', (c) => {
    const r = c.get('resources');
    return c.json(r.list('KafkaClusterList', `${r.origin}/v3/clusters`, [r.cluster()]));
  });
  const cluster = new Hono<AppEnv>();
  cluster.use('*', async (c, next) => {
    if (c.req.param('clusterId') !== services.clusterId) {
      throw new KafkaError(
        'NOT_FOUND',
        `Cluster ${c.req.param('clusterId')} not found; this endpoint serves ${services.clusterId}`,
      );
    }
    await next();
  });
  cluster.get('/', (c) => c.json(c.get('resources').cluster()));
  for (const mount of routes.cluster) cluster.route('/', mount());
  v3.route('/:clusterId', cluster);
  app.route('/v3/clusters', v3);
  routes.secured?.(app, services);
  return app;
}

/**
 * `new URL(url).origin` without parsing the URL again: a request's URL is a serialized URL
 * already (scheme and host in lower case, no default port), so its origin is what precedes the
 * path, unless it names a user (`http://user@host/`, which an absolute request target may carry).
 */
export function originOf(url: string): string {
  const start = url.indexOf('//') + 2;
  const end = url.indexOf('/', start);
  const origin = end < 0 ? url : url.slice(0, end);
  return start < 2 || origin.includes('@', start) || origin.includes('?', start) || origin.includes('#', start)
    ? new URL(url).origin
    : origin;
}
