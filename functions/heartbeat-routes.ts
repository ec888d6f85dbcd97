/** The heartbeat function's one route (HEARTBEAT_ROUTE, functions/http-entry.ts) is a group route. */
import type { AppRoutes } from '../src/http/app.js';
import { groupRoutes } from '../src/http/group-routes.js';

export const HEARTBEAT_ROUTES: AppRoutes = { cluster: [groupRoutes] };
