/**
 * The routes API Gateway sends to the produce function (infra/routes.ts): records, records:batch,
 * a partition's record batches, Kafka's ProduceRequest, and the two other POSTs at a topic's depth
 * (`configs:alter`, `replicas:sync`). Only these route modules go into its bundle, and no consumer
 * group services (the transaction coordinator stays: transactional produces are verified by it).
 */
import { PRODUCE_PARTS } from '../src/compose.js';
import type { AppRoutes } from '../src/http/app.js';
import { produceRequestRoutes } from '../src/http/produce-request-routes.js';
import { recordRoutes } from '../src/http/record-routes.js';
import { topicConfigAlterRoutes } from '../src/http/topic-config-alter-routes.js';
import type { FunctionServes } from './http-entry.js';

export const PRODUCE_ROUTES: AppRoutes = { cluster: [recordRoutes, produceRequestRoutes, topicConfigAlterRoutes] };

export const PRODUCE_SERVES: FunctionServes = {
  routes: PRODUCE_ROUTES,
  parts: PRODUCE_PARTS,
};
