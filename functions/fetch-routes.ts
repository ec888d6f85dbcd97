/** The route API Gateway sends to the fetch function (infra/routes.ts): a partition's records. */
import type { AppRoutes } from '../src/http/app.js';
import { recordRoutes } from '../src/http/record-routes.js';

export const FETCH_ROUTES: AppRoutes = { cluster: [recordRoutes] };
