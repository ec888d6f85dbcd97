/** Lambda entry point. Produce: POST .../topics/{topic}/records[:batch] and the other produce routes. */
import { createHttpHandler } from './http-entry.js';
import { PRODUCE_SERVES } from './produce-routes.js';

export const handler = createHttpHandler('produce', process.env, PRODUCE_SERVES);
