/**
 * The local server's push endpoint, shaped like the deployed API Gateway WebSocket API so the
 * client code is the same: consumers connect to `ws://host:port/v3/push`, send `subscribe` (and
 * `ping`) messages, and get `ready` messages. `POST /@connections/{id}` is API Gateway's
 * management API path: any process sharing the storage (another local server) posts there to
 * reach a connection this one holds.
 */
import { randomBytes } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { Hono } from 'hono';
import { WebSocketServer, type WebSocket } from 'ws';
import { toErrorResponse } from './error-mapping.js';
import type { AppServices } from '../services.js';
import { handleSubscribe, parseClientMessage } from '../push/subscribe-handler.js';
import { bearerPrincipal } from '../authz/principal.js';
import { pushSubscribeDeps } from './push-subscribe.js';

export const PUSH_PATH = '/v3/push';

/** What the node server needs: the upgrade handler and the `@connections` routes. */
export interface PushSocket {
  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void;
  routes: Hono;
  close(): void;
}

/** `endpoint()`: this server's origin as other processes reach it (fixed once it listens). */
export function pushSocket(services: AppServices, endpoint: () => string): PushSocket {
  const wss = new WebSocketServer({ noServer: true, maxPayload: 1024 * 1024 });
  const connections = new Map<string, WebSocket>();

  wss.on('connection', (ws, req: IncomingMessage) => {
    // The upgrade was authenticated in handleUpgrade; the principal holds for the connection.
    const principal = bearerPrincipal(req.headers.authorization, services.security.principals.tokens);
    const host = (req.socket.remoteAddress ?? '').replace(/^::ffff:(?=\d+\.\d+\.\d+\.\d+$)/, '');
    const deps = pushSubscribeDeps(services, principal, host);
    const id = randomBytes(12).toString('base64url');
    connections.set(id, ws);
    ws.on('close', () => connections.delete(id));
    ws.on('error', () => ws.terminate());
    ws.on('message', (data, isBinary) => {
      void (async () => {
        try {
          const m = parseClientMessage(isBinary ? '' : data.toString());
          if (m.action === 'ping') return;
          const reply = await handleSubscribe(deps, endpoint(), id, m);
          if (reply) ws.send(JSON.stringify(reply));
        } catch (e) {
          const { body } = toErrorResponse(e);
          ws.send(JSON.stringify({ type: 'error', error: body.error, message: body.message }));
        }
      })();
    });
  });

  const routes = new Hono();
  routes.post('/@connections/:id', async (c) => {
    const ws = connections.get(c.req.param('id'));
    if (!ws || ws.readyState !== ws.OPEN) return c.json({ message: 'Gone' }, 410);
    ws.send(await c.req.text());
    return c.body(null, 200);
  });

  return {
    handleUpgrade(req, socket, head) {
      if (new URL(req.url ?? '/', 'http://x').pathname !== PUSH_PATH) {
        socket.destroy();
        return;
      }
      try {
        bearerPrincipal(req.headers.authorization, services.security.principals.tokens);
      } catch {
        // SASL_AUTHENTICATION_FAILED: as the HTTP routes answer an unknown token.
        socket.end('HTTP/1.1 401 Unauthorized\r\nConnection: close\r\nContent-Length: 0\r\n\r\n');
        return;
      }
      wss.handleUpgrade(req, socket, head, (ws) => wss.emit('connection', ws, req));
    },
    routes,
    close() {
      for (const ws of connections.values()) ws.terminate();
      wss.close();
    },
  };
}
