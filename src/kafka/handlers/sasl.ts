/**
 * SaslHandshake and SaslAuthenticate: PLAIN (users of the auth config) and SCRAM-SHA-256/512
 * (credentials of the metadata store), as the listener's sasl.enabled.mechanisms allow. A failure
 * is answered SASL_AUTHENTICATION_FAILED (Kafka's words) and ends the connection, as Kafka does.
 */
import { plainPrincipal } from '../../authz/principal.js';
import { isScramMechanism, ScramServer } from '../../authz/scram.js';
import { KafkaError } from '../../wire/errors.js';
import { errorMessageOf, type Handler } from './context.js';

export const saslHandshake: Handler = async (ctx, req, version) => {
  const mechanisms = [...ctx.saslMechanisms];
  if (ctx.connection.sasl !== 'none') return { errorCode: new KafkaError('ILLEGAL_SASL_STATE', '').code, mechanisms };
  if (!mechanisms.includes(req.mechanism))
    return { errorCode: new KafkaError('UNSUPPORTED_SASL_MECHANISM', '').code, mechanisms };
  // After a v0 handshake the tokens come as bare frames; the listener reads them for PLAIN only.
  if (version === 0 && req.mechanism !== 'PLAIN')
    return { errorCode: new KafkaError('UNSUPPORTED_VERSION', '').code, mechanisms };
  ctx.connection.sasl = 'handshaken';
  ctx.connection.mechanism = req.mechanism;
  return { errorCode: 0, mechanisms };
};

export const saslAuthenticate: Handler = async (ctx, req) => {
  const answer = (authBytes: Uint8Array = Buffer.alloc(0)) => ({
    errorCode: 0,
    errorMessage: null,
    authBytes,
    sessionLifetimeMs: 0,
  });
  const fail = (e: KafkaError) => {
    ctx.connection.closeAfterAnswer = true;
    ctx.connection.scram = undefined;
    return { errorCode: e.code, errorMessage: e.message, authBytes: Buffer.alloc(0), sessionLifetimeMs: 0 };
  };
  const { connection } = ctx;
  if (connection.sasl !== 'handshaken')
    return fail(new KafkaError('ILLEGAL_SASL_STATE', 'SaslAuthenticate must follow a SaslHandshake'));
  const mechanism = connection.mechanism ?? '';
  try {
    if (mechanism === 'PLAIN') {
      connection.principal = plainPrincipal(req.authBytes, ctx.plainUsers ?? new Map());
      connection.sasl = 'authenticated';
      return answer();
    }
    if (!isScramMechanism(mechanism)) throw new KafkaError('ILLEGAL_SASL_STATE', `No SASL exchange for ${mechanism}`);
    const { scram: store } = ctx.services.security;
    connection.scram ??= new ScramServer(mechanism, (user, m) => store.get(user, m));
    const out = await connection.scram.step(req.authBytes);
    if (connection.scram.done) {
      connection.principal = `User:${connection.scram.user}`;
      connection.sasl = 'authenticated';
      connection.scram = undefined;
    }
    return answer(out);
  } catch (e) {
    ctx.logger.warn('authentication failed', {
      audit: 'denied',
      host: connection.host,
      mechanism,
      error: errorMessageOf(e),
      ...(e instanceof Error && e.cause ? { cause: String(e.cause) } : {}),
    });
    return fail(e instanceof KafkaError ? e : new KafkaError('SASL_AUTHENTICATION_FAILED', 'Authentication failed'));
  }
};
