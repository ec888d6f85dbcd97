/**
 * The local server's command line: flags over the environment, npm's swallowed flags, and a bad
 * flag or variable told in a line with the usage (exit 2), never a stack; --help prints the usage.
 */
import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { parseServerArgs, ServerArgsError } from '../../src/config/server-args.js';

const ROOT = new URL('../..', import.meta.url).pathname;
const env = (args: ReturnType<typeof parseServerArgs>) => (args.help ? {} : args.env);

describe('server flags', () => {
  it('override the environment variables they name', () => {
    const e = env(parseServerArgs(['--port', '9000', '--data-dir', '/tmp/x', '--kafka-port=0'], { PORT: '1' }));
    expect(e).toMatchObject({ PORT: '9000', DATA_DIR: '/tmp/x', KAFKA_PORT: '0' });
    expect(parseServerArgs(['--help'], {})).toEqual({ help: true });
  });

  it('take what npm kept for itself: `npm start --port=9000` and `npm start --port 9000`', () => {
    const npm = { npm_lifecycle_event: 'start' };
    expect(env(parseServerArgs([], { ...npm, npm_config_port: '9000' }))).toMatchObject({ PORT: '9000' });
    expect(env(parseServerArgs(['9000'], { ...npm, npm_config_port: 'true' }))).toMatchObject({ PORT: '9000' });
    // Ambiguous (two swallowed flags): refused, saying how to write it.
    expect(() =>
      parseServerArgs(['9000', '/tmp/x'], { ...npm, npm_config_port: 'true', npm_config_data_dir: 'true' }),
    ).toThrow(/npm kept --port, --data-dir for itself: write the flags after "--"/);
    // Outside npm, an npm_config_ variable means nothing.
    expect(env(parseServerArgs([], { npm_config_port: '9000' })).PORT).toBeUndefined();
  });

  it('refuses an unknown flag or a stray argument', () => {
    expect(() => parseServerArgs(['--bogus'], {})).toThrow(ServerArgsError);
    expect(() => parseServerArgs(['--bogus'], {})).toThrow(/^Unknown option '--bogus'\.$/);
    expect(() => parseServerArgs(['extra'], {})).toThrow(/Unexpected argument "extra"/);
  });

  it('npm start -- --help prints the usage; a bad flag or variable exits 2 with a line, not a stack', () => {
    const run = (args: string[], extra: Record<string, string> = {}) =>
      spawnSync(process.execPath, ['--import', 'tsx', 'src/server.ts', ...args], {
        cwd: ROOT,
        env: { ...process.env, ...extra },
        encoding: 'utf8',
        timeout: 30_000,
      });
    const help = run(['--help']);
    expect(help.status).toBe(0);
    expect(help.stdout).toMatch(/^Usage: npm start -- \[flags\]/);
    expect(help.stdout).toContain('--port <n>                       HTTP port (PORT, default 8080)');
    const bad = run(['--bogus']);
    expect(bad.status).toBe(2);
    expect(bad.stderr).toMatch(/^Unknown option '--bogus'\.\n\nUsage:/);
    const badEnv = run([], { KAFKA_PORT: 'abc' });
    expect(badEnv.status).toBe(2);
    expect(badEnv.stderr).toMatch(/^Invalid configuration: KAFKA_PORT: /);
    for (const r of [bad, badEnv]) expect(r.stderr).not.toMatch(/\n\s+at /);
  }, 60_000);
});
