/**
 * What a push subscription may do, for both push endpoints: the local server's socket
 * (push-socket.ts) and the deployed WebSocket API's function (functions/push-entry.ts), which
 * serves no socket of its own and so leaves `ws` out of its bundle.
 */
import { webSocketPrincipal } from '../authz/principal.js';
import type { SubscribeDeps } from '../push/subscribe-handler.js';
import type { AppServices } from '../services.js';
import { KafkaError } from '../wire/errors.js';

/**
 * What a push connection's principal may subscribe to: READ on the topic, as a fetch checks
 * (docs/security.md); a denial is audited like the HTTP routes' denials.
 */
export function pushSubscribeDeps(
  services: AppServices,
  principal: string,
  host: string,
  audit: (msg: string, fields: Record<string, unknown>) => void = () => {},
): SubscribeDeps {
  return {
    subscriptions: services.push.subscriptions,
    topics: services.topics,
    log: services.log,
    async authorizeRead(topic) {
      const sec = services.security;
      if (!sec.authorization) return;
      const index = await sec.acls.index();
      if (index.authorize({ principal, host, operation: 'READ', resourceType: 'TOPIC', resourceName: topic })) return;
      audit('authorization denied', {
        audit: 'denied',
        principal,
        host,
        operation: 'READ',
        resourceType: 'TOPIC',
        resourceName: topic,
        action: 'push subscribe',
      });
      throw new KafkaError(
        'TOPIC_AUTHORIZATION_FAILED',
        `Principal ${principal} is not authorized to READ topic ${topic}`,
      );
    },
  };
}

/** The same, for a message of the deployed WebSocket API: its principal from the request context. */
export function gatewayPushSubscribeDeps(
  services: AppServices,
  requestContext: object,
  audit?: (msg: string, fields: Record<string, unknown>) => void,
): SubscribeDeps {
  const rc = requestContext as Parameters<typeof webSocketPrincipal>[0] & { identity?: { sourceIp?: string } | null };
  return pushSubscribeDeps(services, webSocketPrincipal(rc), rc.identity?.sourceIp ?? '', audit);
}
