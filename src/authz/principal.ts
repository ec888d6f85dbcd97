/**
 * Who is asking: a Kafka principal (`User:<name>`) for every request. Behind API Gateway it comes
 * from the request context the authorizer filled in (never from a header the caller controls):
 * the SigV4 caller's IAM ARN, a JWT claim, or the API key authorizer's context. The local server
 * maps bearer tokens to principals from its auth config; without a token (or without any token
 * configured) the caller is `User:ANONYMOUS`, as Kafka names an unauthenticated client.
 */
import { timingSafeEqual } from 'node:crypto';
import { KafkaError } from '../wire/errors.js';

export const ANONYMOUS = 'User:ANONYMOUS';

/** The parts of an API Gateway request context this reads: HTTP API (v2), and REST API (v1) with IAM auth. */
export interface GatewayRequestContext {
  authorizer?: {
    iam?: { userArn?: string };
    jwt?: { claims?: Record<string, unknown> };
    lambda?: Record<string, unknown> | null;
  } | null;
  http?: { sourceIp?: string };
  /** REST APIs (v1): the SigV4 caller. */
  identity?: { userArn?: string | null; sourceIp?: string };
}

export interface PrincipalOptions {
  /** The JWT claim that names the principal (default `sub`). */
  claim: string;
  /** Local mode: bearer token -> principal. Empty: every local caller is anonymous. */
  tokens: ReadonlyMap<string, string>;
  /** The Kafka listener's SASL/PLAIN users: user -> password. */
  plainUsers: ReadonlyMap<string, string>;
  /** The Kafka listener's sasl.enabled.mechanisms; empty: it asks for no SASL. */
  saslMechanisms: readonly string[];
}

const user = (name: string) => `User:${name}`;

/**
 * An IAM caller's ARN as a principal name. An assumed role's ARN carries the session name
 * (`arn:aws:sts::123456789012:assumed-role/Reader/i-0abc`), which changes with every session:
 * it is named by its role (`arn:aws:iam::123456789012:role/Reader`) so that an ACL can name it.
 */
export function iamPrincipalName(arn: string): string {
  const m = /^arn:(aws[a-z-]*):sts::(\d{12}):assumed-role\/([^/]+)\/.+$/.exec(arn);
  return m ? `arn:${m[1]}:iam::${m[2]}:role/${m[3]}` : arn;
}

/**
 * The form in which principals are compared. An IAM role's ARN carries its path (every IAM Identity
 * Center role lives under `role/aws-reserved/sso.amazonaws.com/`), but STS drops the path from its
 * sessions' ARNs, so the principal of a request never has it. Role names are unique in an account
 * whatever their path, so a role is compared by partition, account and name: an ACL or a super
 * user may name it with or without its path, and either form matches its sessions.
 */
export function principalMatchKey(principal: string): string {
  const m = /^User:arn:(aws[a-z-]*):iam::(\d{12}):role\/(?:.*\/)?([^/]+)$/.exec(principal);
  return m ? `User:arn:${m[1]}:iam::${m[2]}:role/${m[3]}` : principal;
}

/** Whether two principals name the same caller (a role with or without its path). */
export const samePrincipal = (a: string, b: string): boolean =>
  a === b || principalMatchKey(a) === principalMatchKey(b);

/** The principal API Gateway's authorizer vouched for, or undefined when there is none. */
export function gatewayPrincipal(rc: GatewayRequestContext | undefined, claim: string): string | undefined {
  const a = rc?.authorizer;
  if (!a) return rc?.identity?.userArn ? user(iamPrincipalName(rc.identity.userArn)) : undefined;
  if (a.iam?.userArn) return user(iamPrincipalName(a.iam.userArn));
  const claimed = a.jwt?.claims?.[claim];
  if (typeof claimed === 'string' && claimed !== '') return user(claimed);
  if (a.jwt)
    throw new KafkaError('SASL_AUTHENTICATION_FAILED', `The token has no ${claim} claim to name its principal`);
  const keyId = a.lambda?.apiKeyId;
  if (typeof keyId === 'string' && keyId !== '') return user(keyId);
  return undefined;
}

/**
 * The principal of a WebSocket API message (the push API): IAM-authorized connections carry the
 * caller in `identity`; the $connect Lambda authorizers (functions/*-authorizer.ts) name it as the
 * policy's principalId (the JWT's PRINCIPAL_CLAIM, the API key's id), which API Gateway passes on to every
 * route of the connection.
 */
export function webSocketPrincipal(rc: {
  identity?: { userArn?: string | null } | null;
  authorizer?: { principalId?: unknown; apiKeyId?: unknown } | null;
}): string {
  if (rc.identity?.userArn) return user(iamPrincipalName(rc.identity.userArn));
  const a = rc.authorizer;
  if (typeof a?.apiKeyId === 'string' && a.apiKeyId !== '') return user(a.apiKeyId);
  if (typeof a?.principalId === 'string' && a.principalId !== '' && a.principalId !== 'consumer')
    return user(a.principalId);
  return ANONYMOUS;
}

/** The local server's principal for an Authorization header. */
export function bearerPrincipal(authorization: string | undefined, tokens: ReadonlyMap<string, string>): string {
  if (tokens.size === 0 || authorization === undefined) return ANONYMOUS;
  const m = /^Bearer\s+(\S+)\s*$/i.exec(authorization);
  const principal = m ? tokens.get(m[1]!) : undefined;
  if (!principal) throw new KafkaError('SASL_AUTHENTICATION_FAILED', 'The bearer token is not one the server knows');
  return principal;
}

/** A principal's name without its type (`User:alice` -> `alice`): what Kafka's user quotas name. */
export const principalName = (principal: string): string => principal.slice(principal.indexOf(':') + 1);

/**
 * SASL/PLAIN (RFC 4616: `authzid NUL authcid NUL password`) as Kafka's PlainSaslServer checks it:
 * the user's password must match, and an authorization id, when given, must be the user. The
 * principal is `User:<user>`, the name ACLs give.
 */
export function plainPrincipal(authBytes: Uint8Array, users: ReadonlyMap<string, string>): string {
  const parts = Buffer.from(authBytes).toString('utf8').split('\u0000');
  if (parts.length !== 3 || parts[1] === '' || parts[2] === '')
    throw new KafkaError(
      'SASL_AUTHENTICATION_FAILED',
      'Invalid SASL/PLAIN response: expected authzid NUL user NUL password',
    );
  const [authzid, name, password] = parts as [string, string, string];
  if (authzid !== '' && authzid !== name)
    throw new KafkaError(
      'SASL_AUTHENTICATION_FAILED',
      'Authentication failed: Client requested an authorization id that is different from username',
    );
  const expected = users.get(name);
  // Compared in constant time, so the answer's timing says nothing about the password.
  const given = Buffer.from(password, 'utf8');
  const ok =
    expected !== undefined &&
    given.byteLength === Buffer.byteLength(expected) &&
    timingSafeEqual(given, Buffer.from(expected, 'utf8'));
  if (!ok) throw new KafkaError('SASL_AUTHENTICATION_FAILED', 'Authentication failed: Invalid username or password');
  return user(name);
}
