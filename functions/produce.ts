/** Lambda entry point. Produce: POST .../topics/{topic}/records and records:batch. */
import { createHttpHandler } from './http-entry.js';

export const handler = createHttpHandler('produce', process.env);
