/**
 * The ConnectionPoster on AWS: API Gateway's management API (PostToConnection) on the WebSocket
 * stage that holds the connection. One SDK client per endpoint, created on first use.
 */
import {
  ApiGatewayManagementApiClient,
  GoneException,
  PostToConnectionCommand,
} from '@aws-sdk/client-apigatewaymanagementapi';
import { SDK_TIMEOUTS, sdkClientTimeouts } from './sdk-timeouts.js';

/** src/push/ports.ts's ConnectionPoster (structurally: storage sits below push in the module map). */
export function apiGatewayConnectionPoster(region?: string): {
  post(endpoint: string, connectionId: string, message: string): Promise<'delivered' | 'gone'>;
} {
  const clients = new Map<string, ApiGatewayManagementApiClient>();
  const clientFor = (endpoint: string) => {
    let c = clients.get(endpoint);
    if (!c) {
      // A small message to an API answering in milliseconds: DynamoDB's timeouts, with 2 attempts
      // (a lost notification costs a consumer a fallback poll, not data).
      c = new ApiGatewayManagementApiClient({
        ...sdkClientTimeouts({ ...SDK_TIMEOUTS.request.dynamodb, maxAttempts: 2 }),
        endpoint,
        ...(region ? { region } : {}),
      });
      clients.set(endpoint, c);
    }
    return c;
  };
  return {
    async post(endpoint, connectionId, message) {
      try {
        await clientFor(endpoint).send(
          new PostToConnectionCommand({ ConnectionId: connectionId, Data: Buffer.from(message) }),
        );
        return 'delivered';
      } catch (e) {
        if (e instanceof GoneException) return 'gone';
        throw e;
      }
    },
  };
}
