/**
 * Lambda entry point. Heartbeat: group member heartbeats only, behind the function's URL (IAM
 * auth), so that an idle member's heartbeats pay no API Gateway request (docs/cost-model.md).
 */
import { HEARTBEAT_SERVES } from './heartbeat-routes.js';
import { createHttpHandler, HEARTBEAT_ROUTE } from './http-entry.js';

export const handler = createHttpHandler('heartbeat', process.env, HEARTBEAT_SERVES, HEARTBEAT_ROUTE);
