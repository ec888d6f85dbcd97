/** Lambda entry point. Fetch: GET .../topics/{topic}/partitions/{partition}/records. */
import { createHttpHandler } from './http-entry.js';

export const handler = createHttpHandler('fetch', process.env);
