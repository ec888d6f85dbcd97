/** Lambda entry point. Fetch: GET .../topics/{topic}/partitions/{partition}/records. */
import { FETCH_ROUTES } from './fetch-routes.js';
import { createHttpHandler } from './http-entry.js';

export const handler = createHttpHandler('fetch', process.env, FETCH_ROUTES);
