import { describe, expect, it } from 'vitest';
import {
  credentialFromPassword,
  credentialFromSaltedPassword,
  saltedPassword,
  ScramServer,
  type ScramCredential,
} from '../../src/authz/scram.js';
import type { KafkaError } from '../../src/wire/errors.js';

// RFC 7677, section 3: user "user", password "pencil".
const SALT = Buffer.from('W22ZaJ0SNY7soEsUEjb6gQ==', 'base64');
const CLIENT_FIRST = 'n,,n=user,r=rOprNGfwEbeRWgbNEkqO';
const SERVER_NONCE = '%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0';
const NONCE = `rOprNGfwEbeRWgbNEkqO${SERVER_NONCE}`;
const CLIENT_FINAL = `c=biws,r=${NONCE},p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=`;

const rfcCredential = () =>
  credentialFromSaltedPassword('SCRAM-SHA-256', saltedPassword('SCRAM-SHA-256', 'pencil', SALT, 4096), SALT, 4096);
const server = (credential: ScramCredential | undefined) =>
  new ScramServer(
    'SCRAM-SHA-256',
    async (user) => (user === 'user' ? credential : undefined),
    () => SERVER_NONCE,
  );
const step = async (s: ScramServer, text: string) => (await s.step(Buffer.from(text))).toString();

describe('SCRAM server', () => {
  it("answers RFC 7677's example exchange byte for byte from the stored keys alone", async () => {
    const s = server(rfcCredential());
    expect(await step(s, CLIENT_FIRST)).toBe(`r=${NONCE},s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096`);
    expect(await step(s, CLIENT_FINAL)).toBe('v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=');
    expect(s.done).toBe(true);
    expect(s.user).toBe('user');
  });

  it("takes librdkafka's nonce (before 2.6.1: the client's nonce once more in front), as Kafka 3.8.1-3.9 do", async () => {
    // The proof covers the client-final message as sent, so it is computed here for that nonce.
    const { createHash, createHmac } = await import('node:crypto');
    const s = server(rfcCredential());
    const serverFirst = await step(s, CLIENT_FIRST);
    const withoutProof = `c=biws,r=rOprNGfwEbeRWgbNEkqO${NONCE}`;
    const salted = saltedPassword('SCRAM-SHA-256', 'pencil', SALT, 4096);
    const clientKey = createHmac('sha256', salted).update('Client Key').digest();
    const sig = createHmac('sha256', createHash('sha256').update(clientKey).digest())
      .update(`n=user,r=rOprNGfwEbeRWgbNEkqO,${serverFirst},${withoutProof}`)
      .digest();
    const proof = Buffer.from(clientKey.map((b, i) => b ^ sig[i]!)).toString('base64');
    expect(await step(s, `${withoutProof},p=${proof}`)).toMatch(/^v=/);
    expect(s.done).toBe(true);
  });

  it('refuses a wrong proof, a changed nonce, an unknown user and an authzid that is not the user, as Kafka does', async () => {
    const failed = async (credential: ScramCredential | undefined, first: string, final?: string) => {
      const s = server(credential);
      try {
        await step(s, first);
        if (final !== undefined) await step(s, final);
      } catch (e) {
        expect(s.done).toBe(false);
        return e as KafkaError;
      }
      throw new Error('accepted');
    };
    const other = credentialFromPassword('SCRAM-SHA-256', 'not-pencil', 4096);
    const wrong = await failed({ ...other, salt: SALT }, CLIENT_FIRST, CLIENT_FINAL);
    expect(wrong).toMatchObject({
      errorName: 'SASL_AUTHENTICATION_FAILED',
      message:
        'Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-256',
    });
    const nonce = await failed(rfcCredential(), CLIENT_FIRST, CLIENT_FINAL.replace('k0,p=', 'k1,p='));
    expect(nonce.errorName).toBe('SASL_AUTHENTICATION_FAILED');
    const unknown = await failed(rfcCredential(), 'n,,n=nobody,r=abc');
    expect(unknown.message).toBe(wrong.message); // an unknown user reads the same as a wrong password
    const authzid = await failed(rfcCredential(), 'n,a=admin,n=user,r=abc');
    expect(authzid.message).toMatch(/authorization id that is different from username/);
    const binding = await failed(rfcCredential(), 'p=tls-unique,,n=user,r=abc');
    expect(binding.errorName).toBe('SASL_AUTHENTICATION_FAILED');
  });

  it('answers a store that cannot be read as Kafka does, keeping the cause for the log', async () => {
    const down = new Error('ProvisionedThroughputExceededException');
    const s = new ScramServer('SCRAM-SHA-256', () => Promise.reject(down));
    const e = await s.step(Buffer.from(CLIENT_FIRST)).catch((x: unknown) => x as KafkaError);
    expect(e).toMatchObject({
      errorName: 'SASL_AUTHENTICATION_FAILED',
      message: 'Authentication failed: Credentials could not be obtained',
      cause: down,
    });
  });

  it('keeps salt, iterations, StoredKey and ServerKey only, and each salt differs', () => {
    const a = credentialFromPassword('SCRAM-SHA-512', 'secret', 8192);
    const b = credentialFromPassword('SCRAM-SHA-512', 'secret', 8192);
    expect(a.storedKey.byteLength).toBe(64);
    expect(a.serverKey.byteLength).toBe(64);
    expect(a.salt.equals(b.salt)).toBe(false);
    expect(a.storedKey.equals(b.storedKey)).toBe(false);
    expect(JSON.stringify(a)).not.toContain('secret');
  });
});
