/**
 * TLS, SASL/SCRAM and mutual TLS on the Kafka listener, through the clients people run: kafkajs
 * (SASL_SSL with SCRAM-SHA-512, SCRAM-SHA-256 and PLAIN; SSL with a client certificate) and
 * librdkafka (kcat) where installed. Credentials are made with AlterUserScramCredentials as
 * Kafka's admin client sends it (salt and salted password, never the password), checked by
 * DescribeUserScramCredentials, and stored hashed. Certificates are made at test time by openssl.
 */
import { execFile, spawnSync } from 'node:child_process';
import { createHash, createHmac, pbkdf2Sync, randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Kafka, logLevel, type KafkaConfig, type SASLOptions } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Readable } from 'node:stream';
import { validateBinding } from '../../src/authz/acl.js';
import { main } from '../../src/cli/main.js';
import * as m from '../../src/kafka/protocol/messages/index.js';
import { SCRAM_PK } from '../../src/storage/key-layout.js';
import { ERRORS } from '../../src/wire/errors.js';
import { startKafkaServer, type TestKafkaServer } from './support/kafka-server.js';
import { RawClient } from './support/raw-client.js';
import { hasOpenssl, makeCertificates, type TestCertificates } from './support/test-certificates.js';

process.env.KAFKAJS_NO_PARTITIONER_WARNING = '1';
const run = promisify(execFile);
const hasKcat = spawnSync('kcat', ['-V']).status === 0;
const PYTHON = '/usr/bin/python3';
const hasConfluentKafka = spawnSync(PYTHON, ['-c', 'import confluent_kafka']).status === 0;
const code = (name: keyof typeof ERRORS) => ERRORS[name].code;
const SHA256 = 1;
const SHA512 = 2;

let certs: TestCertificates;
let sasl: TestKafkaServer; // SASL_SSL: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512
let mtls: TestKafkaServer; // SSL with ssl.client.auth=required

const allow = (principal: string, resourceType: string, resourceName: string, operation: string) =>
  validateBinding({ principal, resourceType, resourceName, operation, permission: 'ALLOW' });

beforeAll(async () => {
  if (!hasOpenssl) return;
  certs = makeCertificates();
  const dir = mkdtempSync(join(tmpdir(), 'kafka-scram-'));
  const auth = join(dir, 'auth.json');
  writeFileSync(
    auth,
    JSON.stringify({
      authorization: true,
      'super.users': 'User:admin',
      'sasl.plain.users': { admin: 'admin-secret' },
      'sasl.enabled.mechanisms': 'PLAIN,SCRAM-SHA-256,SCRAM-SHA-512',
      tokens: { 'admin-token': 'User:admin', 'bob-token': 'User:bob' },
    }),
  );
  const tlsEnv = { KAFKA_SSL_CERTIFICATE_FILE: certs.server.certFile, KAFKA_SSL_KEY_FILE: certs.server.keyFile };
  sasl = await startKafkaServer({}, { AUTH_CONFIG: auth, ...tlsEnv });
  mtls = await startKafkaServer(
    {},
    {
      ...tlsEnv,
      AUTHORIZATION: 'true',
      KAFKA_SSL_TRUSTSTORE_FILE: certs.ca.certFile,
      KAFKA_SSL_CLIENT_AUTH: 'required',
      KAFKA_SSL_PRINCIPAL_MAPPING_RULES: 'RULE:^CN=([^,]+),OU=eng,.*$/$1/L, DEFAULT',
    },
  );
  for (const s of [sasl, mtls]) {
    for (const name of ['paid', 'secret'])
      await s.services.topics.create({ name, partitionCount: 1, replicationFactor: 1 });
    await s.services.security.acls.create([
      allow('User:alice', 'TOPIC', 'paid', 'ALL'),
      allow('User:alice', 'GROUP', 'billing', 'READ'),
      allow('User:bob', 'TOPIC', 'paid', 'DESCRIBE'),
    ]);
  }
}, 60_000);
afterAll(async () => {
  await sasl?.close();
  await mtls?.close();
});

const tlsTo = () => ({ ca: [certs.ca.cert] });

/** A bare TLS connection authenticated with PLAIN (SaslHandshake v1, then SaslAuthenticate). */
async function plainOverTls(user: string, password: string) {
  const c = await RawClient.open(sasl.broker, tlsTo());
  const hs = (await c.request(m.SaslHandshake, 1, { mechanism: 'PLAIN' })).body;
  const auth = (await c.request(m.SaslAuthenticate, 2, { authBytes: Buffer.from(`\u0000${user}\u0000${password}`) }))
    .body;
  return { c, hs, auth };
}

/** An upsertion as Kafka's admin client sends it: a fresh salt and the salted password. */
function upsertion(name: string, mechanism: number, password: string, iterations = 8192) {
  const salt = randomBytes(24);
  const hash = mechanism === SHA256 ? 'sha256' : 'sha512';
  const saltedPassword = pbkdf2Sync(password, salt, iterations, mechanism === SHA256 ? 32 : 64, hash);
  return { name, mechanism, iterations, salt, saltedPassword };
}

/** A bare TLS connection authenticated by SCRAM-SHA-256, the client side written here from RFC 5802 with node's crypto. */
async function scramOverTls(user: string, password: string) {
  const c = await RawClient.open(sasl.broker, tlsTo());
  await c.request(m.SaslHandshake, 1, { mechanism: 'SCRAM-SHA-256' });
  const bare = `n=${user},r=${randomBytes(12).toString('base64')}`;
  const first = (await c.request(m.SaslAuthenticate, 2, { authBytes: Buffer.from(`n,,${bare}`) })).body;
  const serverFirst = first.authBytes.toString();
  const [, nonce, salt, iterations] = /^r=([^,]+),s=([^,]+),i=(\d+)$/.exec(serverFirst)!;
  const salted = pbkdf2Sync(password, Buffer.from(salt!, 'base64'), Number(iterations), 32, 'sha256');
  const clientKey = createHmac('sha256', salted).update('Client Key').digest();
  const withoutProof = `c=biws,r=${nonce}`;
  const signature = createHmac('sha256', createHash('sha256').update(clientKey).digest())
    .update(`${bare},${serverFirst},${withoutProof}`)
    .digest();
  const proof = Buffer.from(clientKey.map((x, i) => x ^ signature[i]!));
  const final = (
    await c.request(m.SaslAuthenticate, 2, { authBytes: Buffer.from(`${withoutProof},p=${proof.toString('base64')}`) })
  ).body;
  expect(final.errorCode).toBe(0);
  return c;
}

const kafkajs = (config: Partial<KafkaConfig>, broker = sasl.broker) =>
  new Kafka({
    brokers: [broker],
    clientId: 'tls-test',
    logLevel: logLevel.NOTHING,
    retry: { retries: 1, initialRetryTime: 50 },
    ...config,
  });

describe.skipIf(!hasOpenssl)(hasOpenssl ? 'SASL_SSL' : 'SASL_SSL (openssl is not installed: skipped)', () => {
  it('PLAIN over TLS; the handshake lists the enabled mechanisms; ApiVersions has the SCRAM admin APIs at v0', async () => {
    const { c, hs, auth } = await plainOverTls('admin', 'admin-secret');
    expect(hs).toMatchObject({ errorCode: 0, mechanisms: ['PLAIN', 'SCRAM-SHA-256', 'SCRAM-SHA-512'] });
    expect(auth.errorCode).toBe(0);
    const versions = (await c.request(m.ApiVersions, 3, { clientSoftwareName: 't', clientSoftwareVersion: '1' })).body;
    for (const apiKey of [50, 51]) expect(versions.apiKeys).toContainEqual({ apiKey, minVersion: 0, maxVersion: 0 });
    c.close();
    // Plain TCP to a TLS listener gets nowhere.
    const plain = await RawClient.open(sasl.broker);
    plain.write(plain.frame(m.ApiVersions, 0, {}));
    expect(await plain.readFrame(3000).catch(() => undefined)).toBeUndefined();
    plain.close();
    // kafkajs, PLAIN over TLS.
    const admin = kafkajs({
      ssl: tlsTo(),
      sasl: { mechanism: 'plain', username: 'admin', password: 'admin-secret' },
    }).admin();
    await admin.connect();
    expect((await admin.listTopics()).sort()).toEqual(['paid', 'secret']);
    await admin.disconnect();
  });

  it('AlterUserScramCredentials and DescribeUserScramCredentials with the controller’s answers; stored hashed', async () => {
    const { c } = await plainOverTls('admin', 'admin-secret');
    const altered = (
      await c.request(m.AlterUserScramCredentials, 0, {
        deletions: [{ name: 'nobody', mechanism: SHA256 }],
        upsertions: [
          upsertion('alice', SHA512, 'alice-secret'),
          upsertion('carol', SHA256, 'carol-secret'),
          upsertion('dave', SHA256, 'x', 1000),
          upsertion('erin', SHA256, 'x', 20000),
          upsertion('frank', 7, 'x'),
          upsertion('', SHA256, 'x'),
          upsertion('gina', SHA256, 'x'),
          upsertion('gina', SHA512, 'x'),
        ],
      })
    ).body;
    const byUser = Object.fromEntries(altered.results.map((r: any) => [r.user, [r.errorCode, r.errorMessage]]));
    expect(byUser).toEqual({
      alice: [0, null],
      carol: [0, null],
      nobody: [code('RESOURCE_NOT_FOUND'), 'Attempt to delete a user credential that does not exist'],
      dave: [code('UNACCEPTABLE_CREDENTIAL'), 'Too few iterations'],
      erin: [code('UNACCEPTABLE_CREDENTIAL'), 'Too many iterations'],
      frank: [code('UNSUPPORTED_SASL_MECHANISM'), 'Unknown SCRAM mechanism'],
      '': [code('UNACCEPTABLE_CREDENTIAL'), 'Username must not be empty'],
      gina: [code('DUPLICATE_RESOURCE'), 'A user credential cannot be altered twice in the same request'],
    });
    await c.request(m.AlterUserScramCredentials, 0, {
      deletions: [],
      upsertions: [upsertion('bob', SHA256, 'bob-secret', 4096)],
    });

    const all = (await c.request(m.DescribeUserScramCredentials, 0, { users: null })).body;
    expect(all.errorCode).toBe(0);
    expect(all.results.map((r: any) => [r.user, r.credentialInfos]).sort()).toEqual([
      ['alice', [{ mechanism: SHA512, iterations: 8192 }]],
      ['bob', [{ mechanism: SHA256, iterations: 4096 }]],
      ['carol', [{ mechanism: SHA256, iterations: 8192 }]],
    ]);
    const named = (
      await c.request(m.DescribeUserScramCredentials, 0, {
        users: [{ name: 'alice' }, { name: 'zed' }, { name: 'bob' }, { name: 'bob' }],
      })
    ).body;
    expect(named.results.map((r: any) => [r.user, r.errorCode])).toEqual([
      ['alice', 0],
      ['zed', code('RESOURCE_NOT_FOUND')],
      ['bob', code('DUPLICATE_RESOURCE')],
    ]);
    c.close();

    // Only salt, iterations, StoredKey and ServerKey are kept: no password, no salted password.
    const items = await sasl.metadata.query<Record<string, unknown>>(SCRAM_PK);
    expect(items.map((i) => Object.keys(i.value).sort())).toContainEqual([
      'iterations',
      'mechanism',
      'salt',
      'serverKey',
      'storedKey',
      'user',
    ]);
    expect(JSON.stringify(items)).not.toContain('alice-secret');
  });

  it('kafkajs over TLS with SCRAM-SHA-512: produces and consumes as User:alice', async () => {
    const alice = kafkajs({
      ssl: tlsTo(),
      sasl: { mechanism: 'scram-sha-512', username: 'alice', password: 'alice-secret' },
    });
    const producer = alice.producer();
    await producer.connect();
    await producer.send({ topic: 'paid', messages: [{ value: 'over-tls-1' }, { value: 'over-tls-2' }] });
    await producer.disconnect();
    const consumer = alice.consumer({
      groupId: 'billing',
      sessionTimeout: 6000,
      heartbeatInterval: 300,
      maxWaitTimeInMs: 100,
    });
    await consumer.connect();
    await consumer.subscribe({ topic: 'paid', fromBeginning: true });
    const seen: string[] = [];
    await consumer.run({ eachMessage: async ({ message }) => void seen.push(message.value!.toString()) });
    const end = Date.now() + 15_000;
    while (seen.length < 2 && Date.now() < end) await new Promise((r) => setTimeout(r, 50));
    await consumer.disconnect();
    expect(seen).toEqual(['over-tls-1', 'over-tls-2']);
    // ACLs apply to the SCRAM principal: alice may not read `secret`.
    const admin = alice.admin();
    await admin.connect();
    expect(await admin.listTopics()).toEqual(['paid']);
    await admin.disconnect();
  }, 40_000);

  it('kafkajs with SCRAM-SHA-256; a wrong password or mechanism is SASL_AUTHENTICATION_FAILED and ends the connection', async () => {
    const bob = kafkajs({
      ssl: tlsTo(),
      sasl: { mechanism: 'scram-sha-256', username: 'bob', password: 'bob-secret' },
    });
    const admin = bob.admin();
    await admin.connect();
    expect(await admin.listTopics()).toEqual(['paid']);
    await admin.disconnect();

    for (const [mechanism, username, password] of [
      ['scram-sha-256', 'bob', 'wrong'],
      ['scram-sha-512', 'bob', 'bob-secret'], // bob has no SHA-512 credential
      ['scram-sha-256', 'nobody', 'x'],
    ] as const) {
      const bad = kafkajs({ ssl: tlsTo(), sasl: { mechanism, username, password } as SASLOptions }).admin();
      await expect(bad.connect()).rejects.toMatchObject({ name: 'KafkaJSSASLAuthenticationError' });
    }

    // The exact answer, on a bare connection: the error code, Kafka's message, then the end.
    const c = await RawClient.open(sasl.broker, tlsTo());
    expect((await c.request(m.SaslHandshake, 1, { mechanism: 'SCRAM-SHA-256' })).body.errorCode).toBe(0);
    const first = (await c.request(m.SaslAuthenticate, 2, { authBytes: Buffer.from('n,,n=bob,r=abcdefgh') })).body;
    expect(first.errorCode).toBe(0);
    expect(first.authBytes.toString()).toMatch(/^r=abcdefgh[^,]+,s=[^,]+,i=4096$/);
    const nonce = /^r=([^,]+)/.exec(first.authBytes.toString())![1];
    const final = (
      await c.request(m.SaslAuthenticate, 2, {
        authBytes: Buffer.from(`c=biws,r=${nonce},p=${Buffer.alloc(32, 1).toString('base64')}`),
      })
    ).body;
    expect(final).toMatchObject({
      errorCode: code('SASL_AUTHENTICATION_FAILED'),
      errorMessage:
        'Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-256',
    });
    expect(await c.waitClosed()).toBe(true);
    expect(sasl.logs.some((l) => l.msg === 'authentication failed' && l.mechanism === 'SCRAM-SHA-256')).toBe(true);

    const raw = await RawClient.open(sasl.broker, tlsTo());
    await raw.request(m.SaslHandshake, 1, { mechanism: 'SCRAM-SHA-256' });
    await raw.request(m.SaslAuthenticate, 2, { authBytes: Buffer.from('n,,n=bob,r=abcdefgh') });
    // Nothing but SASL before the exchange ends.
    raw.write(raw.frame(m.Metadata, 4, { topics: null }));
    expect(await raw.waitClosed()).toBe(true);
  }, 30_000);

  it('the SCRAM admin APIs need DESCRIBE / ALTER on the cluster; a deleted credential no longer authenticates', async () => {
    const b = await scramOverTls('bob', 'bob-secret');
    const described = (await b.request(m.DescribeUserScramCredentials, 0, { users: null })).body;
    expect(described).toMatchObject({ errorCode: code('CLUSTER_AUTHORIZATION_FAILED'), results: [] });
    const refused = (
      await b.request(m.AlterUserScramCredentials, 0, { deletions: [], upsertions: [upsertion('bob', SHA512, 'mine')] })
    ).body;
    expect(refused.results).toEqual([
      { user: 'bob', errorCode: code('CLUSTER_AUTHORIZATION_FAILED'), errorMessage: expect.any(String) },
    ]);
    b.close();
    expect(await sasl.services.security.scram.get('bob', 'SCRAM-SHA-512')).toBeUndefined();

    const { c } = await plainOverTls('admin', 'admin-secret');
    const deleted = (
      await c.request(m.AlterUserScramCredentials, 0, {
        deletions: [{ name: 'carol', mechanism: SHA256 }],
        upsertions: [],
      })
    ).body;
    expect(deleted.results).toEqual([{ user: 'carol', errorCode: 0, errorMessage: null }]);
    c.close();
    const carol = kafkajs({
      ssl: tlsTo(),
      sasl: { mechanism: 'scram-sha-256', username: 'carol', password: 'carol-secret' },
    });
    await expect(carol.admin().connect()).rejects.toMatchObject({ name: 'KafkaJSSASLAuthenticationError' });
  });
});

describe.skipIf(!hasOpenssl)(hasOpenssl ? 'kafka-log configs' : 'kafka-log configs (no openssl: skipped)', () => {
  /** The CLI in-process, against the HTTP API beside the listener. */
  const cli = async (token: string, ...argv: string[]) => {
    const out: string[] = [];
    const err: string[] = [];
    const env = { KAFKA_LOG_URL: new URL(sasl.http).origin, KAFKA_LOG_TOKEN: token };
    const code = await main(argv, {
      out: (l) => out.push(l),
      err: (l) => err.push(l),
      env,
      stdin: Readable.from([]),
      signal: new AbortController().signal,
    });
    return { code, out, err };
  };
  const user = ['configs', '--entity-type', 'users', '--entity-name', 'dora'];

  it("sets a user's SCRAM credentials as kafka-configs.sh does; kafkajs then authenticates with them over TLS", async () => {
    expect(
      await cli(
        'admin-token',
        ...user,
        '--alter',
        '--add-config',
        'SCRAM-SHA-256=[iterations=8192,password=dora-secret],SCRAM-SHA-512=[password=dora-secret]',
      ),
    ).toEqual({ code: 0, out: ["Completed updating config for user-principal 'dora'."], err: [] });
    expect((await cli('admin-token', ...user, '--describe')).out).toEqual([
      "SCRAM credential configs for user-principal 'dora' are SCRAM-SHA-256=iterations=8192, SCRAM-SHA-512=iterations=4096",
    ]);
    for (const mechanism of ['scram-sha-256', 'scram-sha-512'] as const) {
      const admin = kafkajs({
        ssl: tlsTo(),
        sasl: { mechanism, username: 'dora', password: 'dora-secret' } as SASLOptions,
      }).admin();
      await admin.connect();
      await admin.disconnect();
    }
    // Not the admin: CLUSTER_AUTHORIZATION_FAILED; bad input: the controller's error, nothing written.
    expect(await cli('bob-token', ...user, '--describe')).toMatchObject({
      code: 1,
      err: [expect.stringMatching(/CLUSTER_AUTHORIZATION_FAILED/)],
    });
    expect(
      await cli('admin-token', ...user, '--alter', '--add-config', 'SCRAM-SHA-256=[iterations=100,password=x]'),
    ).toMatchObject({
      code: 1,
      err: [expect.stringMatching(/UNACCEPTABLE_CREDENTIAL: Too few iterations/)],
    });
    expect(
      await cli('admin-token', ...user, '--alter', '--add-config', 'SCRAM-SHA-256=[iterations=8192]'),
    ).toMatchObject({ code: 2 });
    expect((await cli('admin-token', ...user, '--alter', '--delete-config', 'SCRAM-SHA-512')).code).toBe(0);
    expect((await cli('admin-token', ...user, '--describe')).out).toEqual([
      "SCRAM credential configs for user-principal 'dora' are SCRAM-SHA-256=iterations=8192",
    ]);
    const gone = kafkajs({
      ssl: tlsTo(),
      sasl: { mechanism: 'scram-sha-512', username: 'dora', password: 'dora-secret' },
    });
    await expect(gone.admin().connect()).rejects.toMatchObject({ name: 'KafkaJSSASLAuthenticationError' });
  }, 30_000);
});

describe.skipIf(!hasOpenssl)(hasOpenssl ? 'mutual TLS' : 'mutual TLS (openssl is not installed: skipped)', () => {
  it('names the connection by its certificate through ssl.principal.mapping.rules, and ACLs apply to that name', async () => {
    const cert = certs.client('/C=US/O=Acme/OU=eng/CN=Alice');
    const alice = kafkajs({ ssl: { ca: [certs.ca.cert], cert: cert.cert, key: cert.key } }, mtls.broker);
    const producer = alice.producer();
    await producer.connect();
    await producer.send({ topic: 'paid', messages: [{ value: 'by-certificate' }] });
    await expect(producer.send({ topic: 'secret', messages: [{ value: 'no' }] })).rejects.toMatchObject({
      cause: { type: 'TOPIC_AUTHORIZATION_FAILED' },
    });
    await producer.disconnect();
    expect((await mtls.services.log.state(await mtls.services.topics.get('paid'), 0)).highWatermark).toBe(1);
    expect(
      mtls.logs.some((l) => l.audit === 'denied' && l.principal === 'User:alice' && l.resourceName === 'secret'),
    ).toBe(true);

    // A subject the first rule does not match falls to DEFAULT: the whole DN, which no ACL names.
    const ops = certs.client('/O=Acme/OU=ops/CN=carl');
    const carl = kafkajs({ ssl: { ca: [certs.ca.cert], cert: ops.cert, key: ops.key } }, mtls.broker).producer();
    await carl.connect();
    await expect(carl.send({ topic: 'paid', messages: [{ value: 'no' }] })).rejects.toMatchObject({
      cause: { type: 'TOPIC_AUTHORIZATION_FAILED' },
    });
    await carl.disconnect();
    expect(mtls.logs.some((l) => l.audit === 'denied' && l.principal === 'User:CN=carl,OU=ops,O=Acme')).toBe(true);
  }, 30_000);

  it('refuses a connection without a certificate and one the CA did not sign', async () => {
    await expect(
      RawClient.open(mtls.broker, { ca: [certs.ca.cert] }).then((c) => c.request(m.ApiVersions, 0, {})),
    ).rejects.toThrow();
    await expect(
      RawClient.open(mtls.broker, { ca: [certs.ca.cert], cert: certs.untrusted.cert, key: certs.untrusted.key }).then(
        (c) => c.request(m.ApiVersions, 0, {}),
      ),
    ).rejects.toThrow();
    const signed = certs.client('/O=Acme/OU=eng/CN=bob');
    const ok = await RawClient.open(mtls.broker, { ca: [certs.ca.cert], cert: signed.cert, key: signed.key });
    expect((await ok.request(m.ApiVersions, 0, {})).body.errorCode).toBe(0);
    ok.close();
  });
});

describe.skipIf(!hasOpenssl)(hasOpenssl ? 'TLS settings' : 'TLS settings (no openssl: skipped)', () => {
  it('refuse at start what cannot work: a key without its certificate, a bad mapping rule, PLAIN without users', async () => {
    const env = { KAFKA_SSL_CERTIFICATE_FILE: certs.server.certFile, KAFKA_SSL_KEY_FILE: certs.server.keyFile };
    await expect(startKafkaServer({}, { KAFKA_SSL_KEY_FILE: certs.server.keyFile })).rejects.toThrow(
      /both a certificate and its key/,
    );
    await expect(startKafkaServer({}, { ...env, KAFKA_SSL_PRINCIPAL_MAPPING_RULES: 'RULE:x' })).rejects.toThrow(
      /Invalid rule/,
    );
    await expect(startKafkaServer({}, { KAFKA_SSL_CLIENT_AUTH: 'required' })).rejects.toThrow(
      /need the listener's certificate/,
    );
    await expect(startKafkaServer({}, { KAFKA_SASL_ENABLED_MECHANISMS: 'PLAIN' })).rejects.toThrow(
      /no sasl.plain.users/,
    );
    await expect(startKafkaServer({}, { KAFKA_SASL_ENABLED_MECHANISMS: 'GSSAPI' })).rejects.toThrow(
      /GSSAPI is not one of/,
    );
  });
});

describe('PLAIN users without PLAIN enabled', () => {
  it('takes no PLAIN token, not even the bare one after a v0 handshake', async () => {
    const s = await startKafkaServer({ plainUsers: new Map([['alice', 'pw']]), saslMechanisms: ['SCRAM-SHA-256'] });
    try {
      for (const version of [0, 1]) {
        const c = await RawClient.open(s.broker);
        expect((await c.request(m.SaslHandshake, version, { mechanism: 'PLAIN' })).body).toEqual({
          errorCode: code('UNSUPPORTED_SASL_MECHANISM'),
          mechanisms: ['SCRAM-SHA-256'],
        });
        const token = Buffer.from('\u0000alice\u0000pw');
        if (version === 0) {
          // The bare token of a v0 handshake is not read as one: as a request it is garbage, and the connection ends unanswered.
          const frame = Buffer.alloc(4 + token.byteLength);
          frame.writeInt32BE(token.byteLength, 0);
          token.copy(frame, 4);
          c.write(frame);
          expect(await c.readFrame()).toBeUndefined();
        } else
          expect((await c.request(m.SaslAuthenticate, 2, { authBytes: token })).body.errorCode).toBe(
            code('ILLEGAL_SASL_STATE'),
          );
        expect(await c.waitClosed()).toBe(true);
      }
    } finally {
      await s.close();
    }
  });
});

describe.skipIf(!hasOpenssl || !hasKcat)(
  hasKcat
    ? 'kcat (librdkafka) over SASL_SSL with SCRAM-SHA-512'
    : 'kcat (Debian package kcat) is not installed: skipped',
  () => {
    it('produces and consumes', async () => {
      const x = [
        '-b',
        sasl.broker,
        '-X',
        'security.protocol=SASL_SSL',
        '-X',
        `ssl.ca.location=${certs.ca.certFile}`,
        '-X',
        'sasl.mechanisms=SCRAM-SHA-512',
        '-X',
        'sasl.username=alice',
        '-X',
        'sasl.password=alice-secret',
      ];
      // Asynchronously: the listener runs in this process, so a synchronous child would starve it.
      const producing = run('kcat', [...x, '-P', '-t', 'paid', '-p', '0'], { timeout: 20_000 });
      producing.child.stdin!.end('from-kcat\n');
      await producing;
      const { stdout } = await run('kcat', [...x, '-C', '-t', 'paid', '-p', '0', '-o', 'beginning', '-e', '-q'], {
        timeout: 20_000,
      });
      expect(stdout.trim().split('\n')).toContain('from-kcat');
      const wrong = await run('kcat', [...x.slice(0, -1), 'sasl.password=wrong', '-L', '-m', '5'], {
        timeout: 20_000,
      }).then(
        () => undefined,
        (e: { stderr: string }) => e.stderr,
      );
      expect(wrong).toMatch(/Authentication failed during authentication due to invalid credentials/);
    }, 60_000);
  },
);

describe.skipIf(!hasOpenssl || !hasConfluentKafka)(
  hasConfluentKafka
    ? 'python3-confluent-kafka (librdkafka) over SASL_SSL with SCRAM-SHA-256'
    : 'python3-confluent-kafka (Debian package) is not installed: skipped',
  () => {
    it('produces and consumes in a group', async () => {
      const script = join(import.meta.dirname, 'support', 'librdkafka-sasl-ssl.py');
      const args = [script, sasl.broker, certs.ca.certFile, 'SCRAM-SHA-256', 'bob', 'bob-secret', 'paid'];
      // Bob may only DESCRIBE `paid` here: give him what a consumer and producer need, as an admin would.
      await sasl.services.security.acls.create([
        allow('User:bob', 'TOPIC', 'paid', 'WRITE'),
        allow('User:bob', 'TOPIC', 'paid', 'READ'),
        allow('User:bob', 'GROUP', 'py-sasl-ssl', 'READ'),
      ]);
      const { stdout } = await run(PYTHON, args, { timeout: 60_000 });
      const result = JSON.parse(stdout.trim().split('\n').at(-1)!);
      expect(result).toEqual({ errors: [], unflushed: 0, seen: Array.from({ length: 10 }, (_, i) => `py-${i}`) });
    }, 90_000);
  },
);
