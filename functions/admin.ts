/** Lambda entry point. Admin: every other path (topics, configs, partitions, offsets, health, OpenAPI, console). */
import { ALL_ROUTES } from '../src/http/app.js';
import { createHttpHandler } from './http-entry.js';

export const handler = createHttpHandler('admin', process.env, ALL_ROUTES);
