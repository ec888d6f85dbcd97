/** The route API Gateway sends to the fetch function (infra/routes.ts): a partition's records. No group services, no transaction coordinator. */
import { FETCH_PARTS } from '../src/compose.js';
import type { AppRoutes } from '../src/http/app.js';
import { recordFetchRoutes } from '../src/http/record-fetch-routes.js';
import type { FunctionServes } from './http-entry.js';

export const FETCH_ROUTES: AppRoutes = { cluster: [recordFetchRoutes] };

export const FETCH_SERVES: FunctionServes = {
  routes: FETCH_ROUTES,
  parts: FETCH_PARTS,
};
