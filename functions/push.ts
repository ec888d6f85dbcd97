/** Lambda entry point. Push: the WebSocket API's `subscribe` route. */
import { createPushHandler } from './push-entry.js';

export const handler = createPushHandler(process.env);
