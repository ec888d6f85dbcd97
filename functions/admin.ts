/** Lambda entry point. Admin: every other path (topics, configs, partitions, offsets, health, OpenAPI, console). */
import { ALL_PARTS } from '../src/compose.js';
import { ALL_ROUTES } from '../src/http/app.js';
import { createHttpHandler } from './http-entry.js';

export const handler = createHttpHandler('admin', process.env, { routes: ALL_ROUTES, parts: ALL_PARTS });
