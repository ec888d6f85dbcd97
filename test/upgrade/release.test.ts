/**
 * The release a user runs is named in one place (src/wire/release.ts) and everywhere they look:
 * package.json, CHANGELOG.md's newest heading, `kafka-log --version`, the cluster resource, and
 * `kafka-log features describe`, which also lists the running processes' releases.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { serve, type ServerType } from '@hono/node-server';
import { afterAll, describe, expect, it } from 'vitest';
import { main } from '../../src/cli/main.js';
import { openApiDocument } from '../../src/http/openapi.js';
import { SUPPORTED_FEATURE_LEVEL } from '../../src/storage/formats.js';
import { RELEASE } from '../../src/wire/release.js';
import { testApp } from '../support/test-app.js';

const ROOT = join(import.meta.dirname, '../..');

async function cli(argv: string[]) {
  const out: string[] = [];
  const err: string[] = [];
  const code = await main(argv, {
    out: (l) => out.push(l),
    err: (l) => err.push(l),
    stdin: Readable.from([]),
    env: {},
    signal: new AbortController().signal,
  });
  return { code, out, err };
}

let server: ServerType | undefined;
afterAll(() => new Promise<void>((r) => (server ? server.close(() => r()) : r())));

describe('the release', () => {
  it('is the same in package.json, CHANGELOG.md and the code', () => {
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string };
    expect(pkg.version).toBe(RELEASE);
    const changelog = readFileSync(join(ROOT, 'CHANGELOG.md'), 'utf8');
    const newest = /^## (.+)$/m.exec(changelog)?.[1];
    expect(newest === `Unreleased (${RELEASE})` || newest?.startsWith(`${RELEASE} `)).toBe(true);
  });

  it("is the OpenAPI document's info.version", () => {
    expect(openApiDocument.info.version).toBe(RELEASE);
  });

  it('is what kafka-log --version prints', async () => {
    expect(await cli(['--version'])).toEqual({ code: 0, out: [`kafka-log ${RELEASE}`], err: [] });
  });

  it('is shown with the feature level by kafka-log features, which raises it too', async () => {
    const t = testApp();
    await t.services.features.register('http', t.services.clock.now());
    const port = await new Promise<number>((resolve) => {
      server = serve({ fetch: t.app.fetch, port: 0, hostname: '127.0.0.1' }, (info) => resolve(info.port));
    });
    const url = `http://127.0.0.1:${port}`;
    const described = await cli(['features', 'describe', '--bootstrap-server', url]);
    expect(described.code).toBe(0);
    expect(described.out[0]).toBe(
      `FeatureLevel: 1\tSupportedFeatureLevel: ${SUPPORTED_FEATURE_LEVEL}\tFinalizableFeatureLevel: ${SUPPORTED_FEATURE_LEVEL}\tRelease: ${RELEASE}`,
    );
    expect(described.out[2]).toMatch(
      new RegExp(`^http\\s+${RELEASE.replace(/\./g, '\\.')}\\s+${SUPPORTED_FEATURE_LEVEL}\\s`),
    );
    const refused = await cli([
      'features',
      'upgrade',
      '--feature-level',
      String(SUPPORTED_FEATURE_LEVEL + 1),
      '--bootstrap-server',
      url,
    ]);
    expect(refused.code).toBe(1);
    expect(refused.err[0]).toContain(`supports up to ${SUPPORTED_FEATURE_LEVEL}`);
  });
});
