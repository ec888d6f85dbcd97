/** Lambda entry point. Fetch: GET .../topics/{topic}/partitions/{partition}/records. */
import { FETCH_SERVES } from './fetch-routes.js';
import { createHttpHandler } from './http-entry.js';

export const handler = createHttpHandler('fetch', process.env, FETCH_SERVES);
