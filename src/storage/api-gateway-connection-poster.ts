/**
 * The ConnectionPoster on AWS: API Gateway's management API (PostToConnection) on the WebSocket
 * stage that holds the connection. One SDK client per endpoint, created on first use.
 */
import {
  ApiGatewayManagementApiClient,
  GoneException,
  PostToConnectionCommand,
} from '@aws-sdk/client-apigatewaymanagementapi';

/** src/push/ports.ts's ConnectionPoster (structurally: storage sits below push in the module map). */
export function apiGatewayConnectionPoster(region?: string): {
  post(endpoint: string, connectionId: string, message: string): Promise<'delivered' | 'gone'>;
} {
  const clients = new Map<string, ApiGatewayManagementApiClient>();
  const clientFor = (endpoint: string) => {
    let c = clients.get(endpoint);
    if (!c) {
      c = new ApiGatewayManagementApiClient({ endpoint, ...(region ? { region } : {}), maxAttempts: 2 });
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
