/**
 * `kafka-log acls` (kafka-acls.sh) and `kafka-log configs` (kafka-configs.sh, client quotas)
 * against a local server whose auth config turns authorization on and maps bearer tokens.
 */
import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { build } from 'esbuild';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT, startServer, stopServer, tempDir, type LocalServer } from '../support/local-server.js';

interface Run {
  code: number;
  out: string[];
  err: string[];
}

describe('kafka-log acls and configs', () => {
  let dir: Awaited<ReturnType<typeof tempDir>>;
  let server: LocalServer;
  let bundle: string;

  const cli = (token: string, args: string[]): Promise<Run> =>
    new Promise((resolve) => {
      const env = { ...process.env, KAFKA_LOG_URL: server.origin, KAFKA_LOG_CLI_ENTRY: '1', KAFKA_LOG_TOKEN: token };
      execFile(process.execPath, [bundle, ...args], { cwd: ROOT, env, timeout: 30_000 }, (error, stdout, stderr) => {
        const lines = (s: string) => (s === '' ? [] : s.replace(/\n$/, '').split('\n'));
        resolve({ code: error ? ((error as { code?: number }).code ?? 1) : 0, out: lines(stdout), err: lines(stderr) });
      });
    });
  const admin = (...args: string[]) => cli('admin-token', args);
  const alice = (...args: string[]) => cli('alice-token', args);

  beforeAll(async () => {
    dir = await tempDir('cli-acls-');
    const auth = join(dir.path, 'auth.json');
    writeFileSync(
      auth,
      JSON.stringify({
        authorization: true,
        'super.users': ['User:admin'],
        tokens: { 'admin-token': 'User:admin', 'alice-token': 'User:alice' },
      }),
    );
    bundle = join(dir.path, 'kafka-log.mjs');
    const [s] = await Promise.all([
      startServer(join(dir.path, 'data'), 0, { AUTH_CONFIG: auth, SCHEDULER_INTERVAL_MS: '0' }),
      build({
        entryPoints: [join(ROOT, 'src/cli/main.ts')],
        outfile: bundle,
        bundle: true,
        platform: 'node',
        format: 'esm',
        target: 'node20',
        external: ['@smithy/*', '@aws-sdk/*'],
        logLevel: 'silent',
      }),
    ]);
    server = s;
  });
  afterAll(async () => {
    await stopServer(server);
    await dir.remove();
  });

  it('--add, --list and --remove shaped like kafka-acls.sh; the ACLs take effect', async () => {
    expect((await admin('topics', 'create', '--topic', 'orders')).code).toBe(0);
    expect(await alice('topics', 'describe', '--topic', 'orders')).toMatchObject({
      code: 1,
      err: [expect.stringMatching(/^Error: TOPIC_AUTHORIZATION_FAILED: Principal User:alice/)],
    });

    const added = await admin(
      'acls',
      '--add',
      '--allow-principal',
      'User:alice',
      '--operation',
      'Read',
      '--operation',
      'DescribeConfigs',
      '--topic',
      'orders',
      '--group',
      'billing-',
      '--resource-pattern-type',
      'prefixed',
    );
    expect(added).toMatchObject({ code: 0, err: [] });
    expect(added.out).toContain(
      'Adding ACLs for resource `ResourcePattern(resourceType=TOPIC, name=orders, patternType=PREFIXED)`:',
    );
    expect(added.out).toContain('\t(principal=User:alice, host=*, operation=DESCRIBE_CONFIGS, permissionType=ALLOW)');
    expect(
      (await admin('acls', '--add', '--deny-principal', 'User:alice', '--operation', 'Describe', '--topic', 'orders'))
        .code,
    ).toBe(0);

    const listed = await admin('acls', '--list', '--topic', 'orders', '--resource-pattern-type', 'match');
    expect(listed.out.filter((l) => l.startsWith('Current ACLs'))).toEqual([
      'Current ACLs for resource `ResourcePattern(resourceType=TOPIC, name=orders, patternType=LITERAL)`:',
      'Current ACLs for resource `ResourcePattern(resourceType=TOPIC, name=orders, patternType=PREFIXED)`:',
    ]);
    expect((await admin('acls', '--list')).out.filter((l) => l.startsWith('\t'))).toHaveLength(5);

    // The DENY of DESCRIBE wins over the DESCRIBE that the prefixed READ implies.
    expect((await alice('topics', 'describe', '--topic', 'orders')).err[0]).toMatch(/TOPIC_AUTHORIZATION_FAILED/);
    const removed = await admin(
      'acls',
      '--remove',
      '--deny-principal',
      'User:alice',
      '--operation',
      'Describe',
      '--topic',
      'orders',
    );
    expect(removed.out).toContain('\t(principal=User:alice, host=*, operation=DESCRIBE, permissionType=DENY)');
    expect((await alice('topics', 'describe', '--topic', 'orders')).code).toBe(0);

    // An ACL naming a host applies to requests from that address only (here the loopback peer).
    await admin('topics', 'create', '--topic', 'hosted');
    await admin(
      'acls',
      '--add',
      '--allow-principal',
      'User:alice',
      '--allow-host',
      '10.9.9.9',
      '--operation',
      'All',
      '--topic',
      'hosted',
    );
    expect((await alice('topics', 'describe', '--topic', 'hosted')).code).toBe(1);
    await admin(
      'acls',
      '--add',
      '--allow-principal',
      'User:alice',
      '--allow-host',
      '127.0.0.1',
      '--operation',
      'All',
      '--topic',
      'hosted',
    );
    expect((await alice('topics', 'describe', '--topic', 'hosted')).code).toBe(0);

    expect(await admin('acls', '--add', '--topic', 'orders')).toMatchObject({ code: 2 });
    expect(await admin('acls', '--list', '--add')).toMatchObject({ code: 2 });
    expect(await alice('acls', '--list')).toMatchObject({
      code: 1,
      err: [expect.stringMatching(/CLUSTER_AUTHORIZATION_FAILED/)],
    });
  }, 60_000);

  it('configs --entity-type users|clients --alter --add-config / --delete-config, and --describe', async () => {
    expect(
      await admin(
        'configs',
        '--entity-type',
        'users',
        '--entity-name',
        'alice',
        '--alter',
        '--add-config',
        'producer_byte_rate=1048576,consumer_byte_rate=2097152',
      ),
    ).toEqual({
      code: 0,
      out: ["Completed updating config for user-principal 'alice'."],
      err: [],
    });
    expect(
      (
        await admin(
          'configs',
          '--entity-type',
          'clients',
          '--entity-default',
          '--alter',
          '--add-config',
          'request_percentage=50',
        )
      ).code,
    ).toBe(0);
    expect((await admin('configs', '--entity-type', 'users', '--describe')).out).toEqual([
      "Quota configs for user-principal 'alice' are producer_byte_rate=1048576, consumer_byte_rate=2097152",
    ]);
    expect(
      (
        await admin(
          'configs',
          '--entity-type',
          'users',
          '--entity-name',
          'alice',
          '--alter',
          '--delete-config',
          'consumer_byte_rate',
        )
      ).code,
    ).toBe(0);
    expect((await admin('configs', '--entity-type', 'users', '--entity-name', 'alice', '--describe')).out).toEqual([
      "Quota configs for user-principal 'alice' are producer_byte_rate=1048576",
    ]);
    expect((await admin('configs', '--entity-type', 'clients', '--entity-default', '--describe')).out).toEqual([
      "Quota configs for client-id '<default>' are request_percentage=50",
    ]);
    expect(
      await admin(
        'configs',
        '--entity-type',
        'users',
        '--entity-name',
        'alice',
        '--alter',
        '--add-config',
        'no_such=1',
      ),
    ).toMatchObject({ code: 1, err: [expect.stringMatching(/INVALID_REQUEST: Unknown quota no_such/)] });
    expect(await admin('configs', '--entity-type', 'topics', '--describe')).toMatchObject({ code: 2 });
  }, 60_000);
});
