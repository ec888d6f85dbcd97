/** Lambda entry point. Admin: every other path (topics, configs, partitions, offsets, health, OpenAPI). */
import { createHttpHandler } from './http-entry.js';

export const handler = createHttpHandler('admin', process.env);
