/**
 * The WebSocket API's `subscribe` route (API Gateway WebSocket, Lambda proxy integration): arms
 * the connection's partitions (src/push/subscribe-handler.ts) and answers through the route
 * response with the partitions that already have records. `$connect` (authorization only) and
 * `ping` (keep-alive) are mock integrations in the stack: no function runs for them, and none
 * waits while a consumer is idle.
 */
import type { APIGatewayProxyStructuredResultV2, APIGatewayProxyWebsocketEventV2 } from 'aws-lambda';
import { systemClock } from '../src/clock.js';
import { createServices, createStorage, type Storage } from '../src/compose.js';
import { functionConfigFromEnv } from '../src/config/server-config.js';
import { toErrorResponse } from '../src/http/error-mapping.js';
import { handleSubscribe, parseClientMessage } from '../src/push/subscribe-handler.js';
import { gatewayPushSubscribeDeps } from '../src/http/push-subscribe.js';
import { instrumentStorage } from './instrumented-storage.js';
import { log, telemetryFromEnv, telemetryLogger } from './observability.js';

/** `storage`: the environment's (instrumented for metrics) unless given. */
export function createPushHandler(env: Record<string, string | undefined>, storage?: Storage) {
  const telemetry = telemetryFromEnv(env, 'push');
  const config = functionConfigFromEnv(env);
  const services = createServices(config, storage ?? instrumentStorage(createStorage(config.backend)), systemClock, {
    logger: telemetryLogger(telemetry),
  });
  return async (event: APIGatewayProxyWebsocketEventV2): Promise<APIGatewayProxyStructuredResultV2> => {
    const { connectionId, domainName, stage } = event.requestContext;
    const deps = gatewayPushSubscribeDeps(services, event.requestContext, (msg, fields) =>
      log(telemetry, 'warn', msg, { connectionId, ...fields }),
    );
    try {
      const m = parseClientMessage(event.body ?? '');
      if (m.action === 'ping') return { statusCode: 200 };
      const reply = await handleSubscribe(deps, `https://${domainName}/${stage}`, connectionId, m);
      return reply ? { statusCode: 200, body: JSON.stringify(reply) } : { statusCode: 200 };
    } catch (e) {
      const { status, body } = toErrorResponse(e);
      if (status >= 500)
        log(telemetry, 'error', 'push subscribe failed', {
          connectionId,
          error: e instanceof Error ? e.stack : String(e),
        });
      return { statusCode: 200, body: JSON.stringify({ type: 'error', error: body.error, message: body.message }) };
    }
  };
}
