import type { Hono } from 'hono';
import { aclRoutes } from './acl-routes.js';
import type { AppEnv } from './app-env.js';
import type { AppServices } from '../services.js';
import { clusterRoutes } from './cluster-routes.js';
import { consoleRoutes } from './console-routes.js';
import { consumerInstanceRoutes } from './consumer-instance-routes.js';
import { fetchRequestRoutes } from './fetch-request-routes.js';
import { groupRoutes } from './group-routes.js';
import { openApiDocumentAt } from './openapi.js';
import { produceRequestRoutes } from './produce-request-routes.js';
import { producerRoutes } from './producer-routes.js';
import { quotaRoutes } from './quota-routes.js';
import { featureRoutes } from './feature-routes.js';
import { recordFetchRoutes } from './record-fetch-routes.js';
import { recordRoutes } from './record-routes.js';
import { scramRoutes } from './scram-routes.js';
import { shareGroupRoutes } from './share-group-routes.js';
import { type AppOptions, type AppRoutes, createRoutedApp } from './routed-app.js';
import { topicConfigAlterRoutes } from './topic-config-alter-routes.js';
import { topicRoutes } from './topic-routes.js';
import { transactionRoutes } from './transaction-routes.js';
import { triggerRoutes } from './trigger-routes.js';

export type { AppOptions, AppRoutes } from './routed-app.js';

/** Every route: what the local server and the admin function (API Gateway's default route) serve. */
export const ALL_ROUTES: AppRoutes = {
  open: (app, services) => {
    app.get('/health', (c) => c.json({ status: 'ok' }));
    app.get('/openapi.json', (c) => c.json(openApiDocumentAt(new URL(c.req.url).origin)));
    app.route('/console', consoleRoutes());
    const { operationCounts } = services;
    if (operationCounts) app.get('/debug/counters', (c) => c.json(operationCounts()));
  },
  cluster: [
    clusterRoutes,
    topicRoutes,
    topicConfigAlterRoutes,
    recordRoutes,
    recordFetchRoutes,
    produceRequestRoutes,
    fetchRequestRoutes,
    producerRoutes,
    transactionRoutes,
    groupRoutes,
    shareGroupRoutes,
    aclRoutes,
    quotaRoutes,
    scramRoutes,
    featureRoutes,
    triggerRoutes,
  ],
  secured: (app, services) => {
    app.route('/consumers', consumerInstanceRoutes(services));
  },
};

/** The Hono app with every route, the same behind Lambda (the admin function) and the local node server. */
export function createApp(services: AppServices, options: AppOptions = {}): Hono<AppEnv> {
  return createRoutedApp(services, options, ALL_ROUTES);
}
