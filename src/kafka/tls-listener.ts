/**
 * The listener's TLS (Kafka's SSL and SASL_SSL): the server certificate and key in PEM, client
 * certificates as ssl.client.auth asks (`required`: the handshake fails without a trusted one;
 * `requested`: one may be given, and if it is, it must be trusted), and the principal of a client
 * certificate from its subject through ssl.principal.mapping.rules. A subject no rule maps is
 * refused, as Kafka fails the authentication.
 */
import type { Socket } from 'node:net';
import { createServer, type Server, type TLSSocket } from 'node:tls';
import { mapDistinguishedName, parseMappingRules, subjectDistinguishedName } from '../authz/ssl-principal.js';
import type { ListenerTls } from '../config/server-config.js';
import type { Logger } from '../metrics.js';

export function createTlsListener(
  tls: ListenerTls,
  logger: Logger,
  accept: (socket: Socket, principal?: string) => void,
): Server {
  const rules = parseMappingRules(tls.principalMappingRules); // throws at start on a bad rule
  const server = createServer(
    {
      cert: tls.certificateChain,
      key: tls.key,
      ...(tls.keyPassword ? { passphrase: tls.keyPassword } : {}),
      ...(tls.trustedCertificates ? { ca: tls.trustedCertificates } : {}),
      requestCert: tls.clientAuth !== 'none',
      rejectUnauthorized: tls.clientAuth === 'required',
      minVersion: 'TLSv1.2', // Kafka's ssl.enabled.protocols: TLSv1.2,TLSv1.3
    },
    (socket: TLSSocket) => {
      const refuse = (reason: string) => {
        logger.warn('kafka connection closed', { reason, remote: socket.remoteAddress, audit: 'denied' });
        socket.destroy();
      };
      if (tls.clientAuth === 'none') return accept(socket);
      const peer = socket.getPeerCertificate();
      if (!peer?.raw) return accept(socket); // `requested` and none given: the connection is anonymous
      if (!socket.authorized) return refuse(`untrusted client certificate: ${socket.authorizationError}`);
      let name: string;
      try {
        name = mapDistinguishedName(subjectDistinguishedName(peer.raw), rules);
      } catch (e) {
        return refuse(`client certificate principal: ${(e as Error).message}`);
      }
      accept(socket, `User:${name}`);
    },
  );
  server.on('tlsClientError', (e: NodeJS.ErrnoException, socket) => {
    // A connection gone before its handshake ended: the client left, or the listener refused it
    // (max.connections and the like, counted there); a line each would let a flood fill the log.
    if (e.code === 'ECONNRESET') return;
    logger.warn('kafka tls handshake failed', { remote: socket.remoteAddress, error: e.message });
  });
  return server;
}
