/**
 * The composition shared by the HTTP functions (produce, fetch, admin): configuration from the
 * environment, the storage adapters it names (instrumented for metrics), the Hono app, the
 * observability middleware around it, and hono/aws-lambda's adapter. Called once per cold start.
 *
 * Each function serves the routes API Gateway sends it (infra/routes.ts), so each can be sized and
 * permitted for its own traffic, and each builds its app from those route modules only
 * (functions/*-routes.ts; admin: all of them), so its bundle holds nothing the others need.
 */
import { Hono, type Env } from 'hono';
import { handle } from 'hono/aws-lambda';
import { systemClock } from '../src/clock.js';
import {
  composeServices,
  createStorage,
  settleBackgroundWork,
  type ServiceParts,
  type Storage,
} from '../src/compose.js';
import { functionConfigFromEnv } from '../src/config/server-config.js';
import type { AppRoutes } from '../src/http/app.js';
import { createRoutedApp } from '../src/http/routed-app.js';
import { instrumentStorage } from './instrumented-storage.js';
import {
  currentScope,
  log,
  observe,
  scopeMetrics,
  telemetryFromEnv,
  telemetryLogger,
  type Telemetry,
} from './observability.js';

/**
 * Wraps an app in the observability middleware without changing its routes, errors or 404s.
 * `only`: the one method and path this function serves (a function URL reaches the function with
 * any path; API Gateway's routes do that choosing for the others); any other request is NOT_FOUND.
 */
export function observedApp<E extends Env>(app: Hono<E>, t: Telemetry, only?: { method: string; path: RegExp }): Hono {
  const outer = new Hono();
  outer.use('*', observe(t));
  outer.all('*', (c) => {
    if (only && (c.req.method !== only.method || !only.path.test(c.req.path)))
      return c.json(
        { error_code: 40401, message: `No route for ${c.req.method} ${c.req.path} here`, error: 'NOT_FOUND' },
        404,
      );
    return app.fetch(c.req.raw, c.env as E['Bindings']);
  });
  return outer;
}

/** The group heartbeat route, which the heartbeat function serves alone (behind its function URL). */
export const HEARTBEAT_ROUTE = {
  method: 'POST',
  path: /^\/v3\/clusters\/[^/]+\/consumer-groups\/[^/]+\/consumers:heartbeat$/,
};

/**
 * What a function serves: its routes, and the services they use (`parts`: src/compose.ts; what
 * it does not pass stays out of its bundle).
 */
export interface FunctionServes {
  routes: AppRoutes;
  parts: ServiceParts;
}

/** `serves`: the function's routes and services; `storage`: the environment's (instrumented for metrics) unless given. */
export function createHttpHandler(
  functionName: string,
  env: Record<string, string | undefined>,
  serves: FunctionServes,
  only?: { method: string; path: RegExp },
  storage?: Storage,
) {
  const telemetry = telemetryFromEnv(env, functionName);
  const config = functionConfigFromEnv(env);
  const services = composeServices(
    config,
    storage ?? instrumentStorage(createStorage(config.backend)),
    systemClock,
    { metrics: scopeMetrics, logger: telemetryLogger(telemetry) },
    serves.parts,
  );
  const app = createRoutedApp(
    services,
    {
      logError: (e, context) =>
        log(telemetry, 'error', 'unhandled error', { ...context, error: e instanceof Error ? e.stack : String(e) }),
      audit: (msg, fields) => log(telemetry, 'warn', msg, fields),
      // On the scope, the principal rides on every log line of the request, the access line too.
      onPrincipal: (principal) => {
        const scope = currentScope();
        if (scope) scope.fields.principal = principal;
      },
    },
    serves.routes,
  );
  // Nothing runs once the handler returns (the environment is frozen): what the answer left
  // running (acks=0 appends, acks=1 follower copies) is finished first, in the invocation's scope.
  const settled = new Hono();
  settled.all('*', async (c) => {
    // The release this function runs, for the feature level's raise (one write per quarter hour).
    await services.features.keepRegistered(functionName, systemClock.now(), (e) =>
      log(telemetry, 'warn', 'process registration failed', { error: String(e) }),
    );
    const answer = await app.fetch(c.req.raw, c.env);
    await settleBackgroundWork(services);
    return answer;
  });
  return handle(observedApp(settled, telemetry, only));
}
