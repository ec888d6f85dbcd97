/** The heartbeat function's one route (HEARTBEAT_ROUTE, functions/http-entry.ts) is a group route. */
import { ALL_PARTS } from '../src/compose.js';
import type { AppRoutes } from '../src/http/app.js';
import { groupRoutes } from '../src/http/group-routes.js';
import type { FunctionServes } from './http-entry.js';

export const HEARTBEAT_ROUTES: AppRoutes = { cluster: [groupRoutes] };

export const HEARTBEAT_SERVES: FunctionServes = { routes: HEARTBEAT_ROUTES, parts: ALL_PARTS };
