/**
 * SASL/SCRAM (RFC 5802, RFC 7677 for SHA-256; SHA-512 as Kafka adds it) as Kafka's ScramSaslServer
 * speaks it. A credential is what Kafka stores (UserScramCredentialRecord): the salt, the iteration
 * count, StoredKey = H(HMAC(SaltedPassword, "Client Key")) and ServerKey = HMAC(SaltedPassword,
 * "Server Key"); never the password nor SaltedPassword. The exchange is two round trips:
 * client-first -> server-first (nonce, salt, iterations), client-final (proof) -> server-final
 * (the server's signature). Hashes are node's (pbkdf2, hmac, sha).
 */
import { createHash, createHmac, pbkdf2Sync, randomBytes, timingSafeEqual } from 'node:crypto';
import { KafkaError } from '../wire/errors.js';

export const SCRAM_MECHANISMS = ['SCRAM-SHA-256', 'SCRAM-SHA-512'] as const;
export type ScramMechanism = (typeof SCRAM_MECHANISMS)[number];

interface MechanismSpec {
  hash: 'sha256' | 'sha512';
  /** The hash's output length: SaltedPassword's length (PBKDF2's dkLen). */
  bytes: number;
  /** Kafka's ScramMechanism type in AlterUserScramCredentials / DescribeUserScramCredentials. */
  type: number;
  /** Kafka's minimum (ScramMechanism.minIterations); the largest accepted is MAX_ITERATIONS. */
  minIterations: number;
}

const SPECS: Record<ScramMechanism, MechanismSpec> = {
  'SCRAM-SHA-256': { hash: 'sha256', bytes: 32, type: 1, minIterations: 4096 },
  'SCRAM-SHA-512': { hash: 'sha512', bytes: 64, type: 2, minIterations: 4096 },
};
/** Kafka's ScramControlManager.MAX_ITERATIONS. */
export const MAX_ITERATIONS = 16384;

export const isScramMechanism = (m: string): m is ScramMechanism => m in SPECS;
export const mechanismType = (m: ScramMechanism): number => SPECS[m].type;
/** The mechanism of a Kafka ScramMechanism type byte; undefined for UNKNOWN (0) and anything else. */
export const mechanismOfType = (type: number): ScramMechanism | undefined =>
  SCRAM_MECHANISMS.find((m) => SPECS[m].type === type);

export interface ScramCredential {
  mechanism: ScramMechanism;
  salt: Buffer;
  iterations: number;
  storedKey: Buffer;
  serverKey: Buffer;
}

const hmac = (m: ScramMechanism, key: Uint8Array, text: string | Uint8Array) =>
  createHmac(SPECS[m].hash, key).update(text).digest();
const hash = (m: ScramMechanism, data: Uint8Array) => createHash(SPECS[m].hash).update(data).digest();

/** Hi(password, salt, i) of RFC 5802: PBKDF2 with the mechanism's HMAC. The password is UTF-8, as Kafka's ScramFormatter takes it. */
export function saltedPassword(m: ScramMechanism, password: string, salt: Uint8Array, iterations: number): Buffer {
  return pbkdf2Sync(Buffer.from(password, 'utf8'), salt, iterations, SPECS[m].bytes, SPECS[m].hash);
}

/** The stored form of a SaltedPassword (what AlterUserScramCredentials sends), as Kafka's controller derives it. */
export function credentialFromSaltedPassword(
  m: ScramMechanism,
  salted: Uint8Array,
  salt: Uint8Array,
  iterations: number,
): ScramCredential {
  return {
    mechanism: m,
    salt: Buffer.from(salt),
    iterations,
    storedKey: hash(m, hmac(m, salted, 'Client Key')),
    serverKey: hmac(m, salted, 'Server Key'),
  };
}

/** Checks an upsertion as Kafka's ScramControlManager does: UNACCEPTABLE_CREDENTIAL for the iterations or an empty user. */
export function validateCredential(user: string, m: ScramMechanism, iterations: number): void {
  if (user === '') throw new KafkaError('UNACCEPTABLE_CREDENTIAL', 'Username must not be empty');
  if (iterations < SPECS[m].minIterations) throw new KafkaError('UNACCEPTABLE_CREDENTIAL', 'Too few iterations');
  if (iterations > MAX_ITERATIONS) throw new KafkaError('UNACCEPTABLE_CREDENTIAL', 'Too many iterations');
}

/** A fresh credential from a password: a random salt (as Kafka's admin client makes, 32+ bytes) and the given iterations. */
export function credentialFromPassword(m: ScramMechanism, password: string, iterations: number): ScramCredential {
  const salt = randomBytes(32);
  return credentialFromSaltedPassword(m, saltedPassword(m, password, salt, iterations), salt, iterations);
}

/** What Kafka answers a SCRAM failure with (SaslServerAuthenticator): the same words for every cause, so a failure says nothing about why. */
export const scramFailure = (m: string) =>
  new KafkaError(
    'SASL_AUTHENTICATION_FAILED',
    `Authentication failed during authentication due to invalid credentials with SASL mechanism ${m}`,
  );

/** RFC 5802's attribute list `k=v,k=v` (values may contain `=`; never `,`). */
function attributes(text: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const part of text.split(',')) {
    const m = /^([A-Za-z])=(.*)$/s.exec(part);
    if (!m) throw new Error(`Invalid SCRAM attribute ${JSON.stringify(part)}`);
    if (!out.has(m[1]!)) out.set(m[1]!, m[2]!);
  }
  return out;
}

/** A saslname: `=2C` is `,` and `=3D` is `=`; any other `=` is invalid (RFC 5802 5.1). */
function saslName(raw: string): string {
  if (/=(?!2C|3D)/.test(raw)) throw new Error('Invalid SCRAM user name encoding');
  return raw.replace(/=2C/g, ',').replace(/=3D/g, '=');
}

const PRINTABLE_NONCE = /^[\x21-\x2b\x2d-\x7e]+$/;

interface ClientFirst {
  gs2Header: string;
  user: string;
  nonce: string;
  bare: string;
}

/** `n,[a=authzid],n=user,r=nonce[,ext...]`. Kafka takes no channel binding (`y` and `p=` are refused). */
function parseClientFirst(text: string): ClientFirst {
  const m = /^(n,(?:a=([^,]*))?,)(.*)$/s.exec(text);
  if (!m) throw new Error('Invalid SCRAM client first message');
  const bare = m[3]!;
  const attrs = attributes(bare);
  const user = attrs.get('n');
  const nonce = attrs.get('r');
  if (!user || !nonce || !PRINTABLE_NONCE.test(nonce) || !bare.startsWith('n='))
    throw new Error('Invalid SCRAM client first message');
  const name = saslName(user);
  if (m[2] !== undefined && m[2] !== '' && saslName(m[2]) !== name)
    throw new KafkaError(
      'SASL_AUTHENTICATION_FAILED',
      'Authentication failed: Client requested an authorization id that is different from username',
    );
  return { gs2Header: m[1]!, user: name, nonce, bare };
}

/** The server side of one exchange: `step` takes each client message and answers the next server one. */
export class ScramServer {
  private state: 'first' | 'final' | 'done' | 'failed' = 'first';
  private clientFirst: ClientFirst | undefined;
  private serverFirst = '';
  private credential: ScramCredential | undefined;
  /** The authenticated user, once done. */
  user: string | undefined;

  constructor(
    readonly mechanism: ScramMechanism,
    private readonly lookup: (user: string, m: ScramMechanism) => Promise<ScramCredential | undefined>,
    /** The server's part of the nonce (printable, no comma); fixed only by tests that replay RFC 7677's example. */
    private readonly serverNonce = () => randomBytes(24).toString('base64'),
  ) {}

  get done(): boolean {
    return this.state === 'done';
  }

  /**
   * The answer to one client message; throws SASL_AUTHENTICATION_FAILED (the exchange is over),
   * ILLEGAL_SASL_STATE when called after the end.
   */
  async step(message: Uint8Array): Promise<Buffer> {
    const text = Buffer.from(message).toString('utf8');
    try {
      if (this.state === 'first') return await this.first(text);
      if (this.state === 'final') return this.final(text);
    } catch (e) {
      this.state = 'failed';
      this.credential = undefined;
      if (e instanceof KafkaError) throw e;
      throw scramFailure(this.mechanism);
    }
    throw new KafkaError('ILLEGAL_SASL_STATE', `Unexpected SASL/${this.mechanism} message in state ${this.state}`);
  }

  private async first(text: string): Promise<Buffer> {
    const cf = parseClientFirst(text);
    let credential: ScramCredential | undefined;
    try {
      credential = await this.lookup(cf.user, this.mechanism);
    } catch (e) {
      // Kafka's words for a store that cannot answer; the cause goes to the log, not to the client.
      throw new KafkaError('SASL_AUTHENTICATION_FAILED', 'Authentication failed: Credentials could not be obtained', {
        cause: e,
      });
    }
    // An unknown user fails here, as Kafka's does (with the same answer as a wrong password).
    if (!credential || credential.iterations < SPECS[this.mechanism].minIterations) throw scramFailure(this.mechanism);
    this.clientFirst = cf;
    this.credential = credential;
    this.serverFirst = `r=${cf.nonce}${this.serverNonce()},s=${credential.salt.toString('base64')},i=${credential.iterations}`;
    this.state = 'final';
    return Buffer.from(this.serverFirst, 'utf8');
  }

  private final(text: string): Buffer {
    const cf = this.clientFirst!;
    const credential = this.credential!;
    const proofAt = text.lastIndexOf(',p=');
    if (proofAt < 0) throw new Error('Invalid SCRAM client final message');
    const withoutProof = text.slice(0, proofAt);
    const attrs = attributes(withoutProof);
    const proof = Buffer.from(text.slice(proofAt + 3), 'base64');
    if (attrs.get('c') !== Buffer.from(cf.gs2Header, 'utf8').toString('base64'))
      throw new Error('Invalid SCRAM channel binding');
    // The nonce must carry the server's, fresh for this exchange (so a recorded exchange cannot be
    // replayed). librdkafka before 2.6.1 sends the client's nonce once more in front of it: Kafka
    // 3.8.1-3.9 accept that (a suffix check), and so does this, as Debian's librdkafka is 2.0.
    const nonce = attrs.get('r') ?? '';
    const expected = /^r=([^,]*)/.exec(this.serverFirst)![1]!;
    if (nonce !== expected && nonce !== cf.nonce + expected)
      throw new Error('Invalid client nonce in the final client message');
    const m = this.mechanism;
    const authMessage = `${cf.bare},${this.serverFirst},${withoutProof}`;
    const clientSignature = hmac(m, credential.storedKey, authMessage);
    if (proof.byteLength !== clientSignature.byteLength) throw new Error('Invalid client proof');
    const clientKey = Buffer.alloc(proof.byteLength);
    for (let i = 0; i < proof.byteLength; i++) clientKey[i] = proof[i]! ^ clientSignature[i]!;
    if (!timingSafeEqual(hash(m, clientKey), credential.storedKey)) throw new Error('Invalid client credentials');
    const serverSignature = hmac(m, credential.serverKey, authMessage);
    this.state = 'done';
    this.user = cf.user;
    this.credential = undefined;
    return Buffer.from(`v=${serverSignature.toString('base64')}`, 'utf8');
  }
}
