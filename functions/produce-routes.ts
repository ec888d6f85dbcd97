/**
 * The routes API Gateway sends to the produce function (infra/routes.ts): records, records:batch,
 * a partition's record batches, Kafka's ProduceRequest, and the two other POSTs at a topic's depth
 * (`configs:alter`, `replicas:sync`). Only these route modules go into its bundle.
 */
import type { AppRoutes } from '../src/http/app.js';
import { produceRequestRoutes } from '../src/http/produce-request-routes.js';
import { recordRoutes } from '../src/http/record-routes.js';
import { topicRoutes } from '../src/http/topic-routes.js';

export const PRODUCE_ROUTES: AppRoutes = { cluster: [recordRoutes, produceRequestRoutes, topicRoutes] };
