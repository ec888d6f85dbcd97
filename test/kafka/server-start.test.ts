/** `npm start` (src/server.ts) serves Kafka clients beside the HTTP API, configured by flags or the environment. */
import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { createInterface } from 'node:readline';
import { afterAll, describe, expect, it } from 'vitest';
import { serverConfigFromEnv } from '../../src/config/server-config.js';
import { Metadata, SaslHandshake } from '../../src/kafka/protocol/messages/index.js';
import { ERRORS } from '../../src/wire/errors.js';
import { ROOT, stopServer, tempDir, type LocalServer } from '../support/local-server.js';
import { RawClient } from './support/raw-client.js';
import { hasOpenssl, makeCertificates } from './support/test-certificates.js';

describe('configuration', () => {
  it('defaults to 127.0.0.1:9092; 0 turns the listener off; the advertised listener may carry a port', () => {
    expect(serverConfigFromEnv({}).kafka).toMatchObject({ port: 9092, host: '127.0.0.1', autoCreateTopics: true });
    expect(serverConfigFromEnv({ KAFKA_PORT: '0' }).kafka.port).toBe(0);
    expect(serverConfigFromEnv({ KAFKA_ADVERTISED_HOST: 'kafka.example.com:9094' }).kafka).toMatchObject({
      advertisedHost: 'kafka.example.com',
      advertisedPort: 9094,
    });
    expect(serverConfigFromEnv({ KAFKA_ADVERTISED_HOST: '[::1]' }).kafka).toMatchObject({ advertisedHost: '::1' });
    expect(() => serverConfigFromEnv({ KAFKA_PORT: '70000' })).toThrow();
  });
});

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as { port: number }).port;
  await new Promise((r) => server.close(r));
  return port;
}

let server: LocalServer | undefined;
const dirs: { remove: () => Promise<void> }[] = [];
afterAll(async () => {
  await stopServer(server);
  await Promise.all(dirs.map((d) => d.remove()));
});

describe('npm start', () => {
  it('serves Kafka on --kafka-port and advertises --kafka-advertised-listener', async () => {
    const dir = await tempDir('kafka-start-');
    dirs.push(dir);
    const kafkaPort = await freePort();
    const proc = spawn(
      process.execPath,
      [
        '--import',
        'tsx',
        'src/server.ts',
        '--port',
        '0',
        '--data-dir',
        dir.path,
        '--kafka-port',
        String(kafkaPort),
        '--kafka-advertised-listener',
        `localhost:${kafkaPort}`,
      ],
      {
        cwd: ROOT,
        env: { ...process.env, STORAGE_BACKEND: 'local', SCHEDULER_INTERVAL_MS: '0' },
        stdio: ['ignore', 'pipe', 'inherit'],
      },
    );
    server = { proc, origin: '', port: 0, dataDir: dir.path };
    const lines = createInterface({ input: proc.stdout! });
    const started = await new Promise<{ port: number; advertised: string }>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('no kafka listening line')), 20_000);
      lines.on('line', (line) => {
        const msg = JSON.parse(line) as { msg: string; port: number; advertised: string };
        if (msg.msg === 'kafka listening') {
          clearTimeout(timer);
          resolve(msg);
        }
      });
    });
    expect(started).toEqual({
      level: 'info',
      msg: 'kafka listening',
      host: '127.0.0.1',
      port: kafkaPort,
      advertised: `localhost:${kafkaPort}`,
      securityProtocol: 'PLAINTEXT',
    });
    const c = await RawClient.open(`127.0.0.1:${kafkaPort}`);
    const meta = await c.request(Metadata, 9, {
      topics: null,
      allowAutoTopicCreation: false,
      includeTopicAuthorizedOperations: false,
    });
    expect(meta.body).toMatchObject({
      brokers: [{ nodeId: 0, host: 'localhost', port: kafkaPort, rack: null }],
      clusterId: 'local',
      controllerId: 0,
      topics: [],
    });
    c.close();
  }, 30_000);

  it.skipIf(!hasOpenssl)(
    hasOpenssl
      ? 'serves SASL_SSL from the environment: TLS from PEM files, SCRAM enabled'
      : 'serves SASL_SSL (openssl is not installed: skipped)',
    async () => {
      await stopServer(server);
      const certs = makeCertificates();
      const dir = await tempDir('kafka-start-tls-');
      dirs.push(dir);
      const kafkaPort = await freePort();
      const proc = spawn(
        process.execPath,
        ['--import', 'tsx', 'src/server.ts', '--port', '0', '--data-dir', dir.path, '--kafka-port', String(kafkaPort)],
        {
          cwd: ROOT,
          env: {
            ...process.env,
            STORAGE_BACKEND: 'local',
            SCHEDULER_INTERVAL_MS: '0',
            KAFKA_SSL_CERTIFICATE_FILE: certs.server.certFile,
            KAFKA_SSL_KEY_FILE: certs.server.keyFile,
            KAFKA_SASL_ENABLED_MECHANISMS: 'SCRAM-SHA-512',
          },
          stdio: ['ignore', 'pipe', 'inherit'],
        },
      );
      server = { proc, origin: '', port: 0, dataDir: dir.path };
      const lines = createInterface({ input: proc.stdout! });
      const started = await new Promise<Record<string, unknown>>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error('no kafka listening line')), 20_000);
        lines.on('line', (line) => {
          const msg = JSON.parse(line) as Record<string, unknown>;
          if (msg.msg === 'kafka listening') {
            clearTimeout(timer);
            resolve(msg);
          }
        });
      });
      expect(started).toMatchObject({ securityProtocol: 'SASL_SSL', saslMechanisms: ['SCRAM-SHA-512'] });
      const c = await RawClient.open(`127.0.0.1:${kafkaPort}`, { ca: [certs.ca.cert] });
      expect((await c.request(SaslHandshake, 1, { mechanism: 'PLAIN' })).body).toEqual({
        errorCode: ERRORS.UNSUPPORTED_SASL_MECHANISM.code,
        mechanisms: ['SCRAM-SHA-512'],
      });
      c.close();
    },
    30_000,
  );
});
