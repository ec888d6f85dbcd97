/**
 * Each HTTP function builds its app from the route modules of its own API Gateway routes
 * (functions/*-routes.ts), so that its bundle holds only those (test/functions/bundles.test.ts).
 * Here: every route of the full app is served by the function API Gateway sends it to
 * (infra/routes.ts `routeFor`), with the same method and path, so no route is lost by the split.
 */
import { describe, expect, it } from 'vitest';
import { FETCH_ROUTES, FETCH_SERVES } from '../../functions/fetch-routes.js';
import { HEARTBEAT_ROUTES } from '../../functions/heartbeat-routes.js';
import { PRODUCE_ROUTES, PRODUCE_SERVES } from '../../functions/produce-routes.js';
import { HEARTBEAT_ROUTE } from '../../functions/http-entry.js';
import { type HttpFunctionName, routeFor } from '../../infra/routes.js';
import { composeServices, createServices, createStorage } from '../../src/compose.js';
import { serverConfigFromEnv } from '../../src/config/server-config.js';
import { ALL_ROUTES, type AppRoutes } from '../../src/http/app.js';
import { createRoutedApp } from '../../src/http/routed-app.js';

const config = serverConfigFromEnv({ STORAGE_BACKEND: 'memory', CLUSTER_ID: 'c' });
const services = createServices(config, createStorage(config.backend));
const routesOf = (routes: AppRoutes) =>
  new Set(
    createRoutedApp(services, {}, routes)
      .routes.filter((r) => r.method !== 'ALL')
      .map((r) => `${r.method} ${r.path}`),
  );
const BY_FUNCTION: Record<HttpFunctionName, Set<string>> = {
  produce: routesOf(PRODUCE_ROUTES),
  fetch: routesOf(FETCH_ROUTES),
  admin: routesOf(ALL_ROUTES),
};
const everyRoute = [...BY_FUNCTION.admin];

/** A request path that the route's Hono pattern matches (each parameter one segment). */
const samplePath = (pattern: string) =>
  pattern
    .replace(':clusterId', 'c')
    .replace(/\/:[A-Za-z_]+(\{[^}]*\})?/g, '/x')
    .replace(/\*/g, 'x');

describe('the functions split the routes as API Gateway does', () => {
  it('each route of the app is served by the function its API Gateway route targets', () => {
    const missing = everyRoute.filter((route) => {
      const [method, path] = route.split(' ') as [string, string];
      const target = routeFor(method, samplePath(path))!.target;
      return !BY_FUNCTION[target].has(route);
    });
    expect(missing).toEqual([]);
    // The split is real: produce and fetch have routes of their own to serve.
    const targets = everyRoute.map((r) => routeFor(r.split(' ')[0]!, samplePath(r.split(' ')[1]!))!.target);
    expect(targets.filter((t) => t === 'produce').length).toBeGreaterThan(3);
    expect(targets).toContain('fetch');
  });

  it('the heartbeat function serves its one route', () => {
    const heartbeat = routesOf(HEARTBEAT_ROUTES);
    const served = [...heartbeat].filter((r) => {
      const [method, path] = r.split(' ') as [string, string];
      return method === HEARTBEAT_ROUTE.method && HEARTBEAT_ROUTE.path.test(samplePath(path));
    });
    expect(served).toHaveLength(1);
  });

  it('produce and fetch compose no consumer group services, and describe the broker as the others do', () => {
    const env = { STORAGE_BACKEND: 'memory', CLUSTER_ID: 'c', GROUP_INITIAL_REBALANCE_DELAY_MS: '1234' };
    const full = createServices(serverConfigFromEnv(env), createStorage(config.backend));
    for (const serves of [PRODUCE_SERVES, FETCH_SERVES]) {
      const own = serverConfigFromEnv(env);
      const services = composeServices(own, createStorage(own.backend), full.clock, {}, serves.parts);
      // DescribeConfigs BROKER answers the same values without the group coordinator built.
      expect(services.brokerConfigs).toEqual(full.brokerConfigs);
      expect(() => services.groups.coordinator).toThrow(/consumer groups are not composed/);
    }
    expect(full.brokerConfigs).toContainEqual(
      expect.objectContaining({ name: 'group.initial.rebalance.delay.ms', value: '1234' }),
    );
  });
});
