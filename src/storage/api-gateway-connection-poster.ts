/**
 * The ConnectionPoster on AWS: API Gateway's management API (PostToConnection) on the WebSocket
 * stage that holds the connection. One SDK client per endpoint, created on first use.
 */
import { ApiGatewayManagementApiClient, GoneException, PostToConnectionCommand } from '@aws-sdk/client-apigatewaymanagementapi';
import type { ConnectionPoster } from '../push/ports.js';

export function apiGatewayConnectionPoster(region?: string): ConnectionPoster {
  const clients = new Map<string, ApiGatewayManagementApiClient>();
  const clientFor = (endpoint: string) => {
    let c = clients.get(endpoint);
    if (!c) clients.set(endpoint, (c = new ApiGatewayManagementApiClient({ endpoint, ...(region ? { region } : {}), maxAttempts: 2 })));
    return c;
  };
  return {
    async post(endpoint, connectionId, message) {
      try {
        await clientFor(endpoint).send(new PostToConnectionCommand({ ConnectionId: connectionId, Data: Buffer.from(message) }));
        return 'delivered';
      } catch (e) {
        if (e instanceof GoneException) return 'gone';
        throw e;
      }
    },
  };
}
