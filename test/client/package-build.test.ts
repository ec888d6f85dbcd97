/**
 * The client as an npm user gets it: `npm run build` (run by `prepare` on install) compiles
 * src/client and the wire format it imports to JavaScript with declarations, and plain `node`
 * (no TypeScript loader) imports it and talks to a server.
 */
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { serve, type ServerType } from '@hono/node-server';
import { afterAll, describe, expect, it } from 'vitest';
import { testApp } from '../support/test-app.js';

const run = promisify(execFile);
const ROOT = new URL('../..', import.meta.url).pathname;

let server: ServerType | undefined;
let out: string | undefined;
afterAll(async () => {
  server?.close();
  if (out) await rm(out, { recursive: true, force: true });
});

describe('the client package', () => {
  it('builds to JavaScript that plain node imports and uses', async () => {
    // Inside the repository, as dist/ is: the build's imports resolve from its node_modules.
    await mkdir(join(ROOT, 'test-artifacts'), { recursive: true });
    out = await mkdtemp(join(ROOT, 'test-artifacts', 'client-build-'));
    await run(
      process.execPath,
      [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.client.json', '--outDir', out],
      {
        cwd: ROOT,
      },
    );
    const { app } = testApp();
    const port = await new Promise<number>((resolve) => {
      server = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }, (info) => resolve(info.port));
    });
    const script = `
      import { Kafka } from ${JSON.stringify(join(out, 'client/index.js'))};
      const kafka = new Kafka({ url: 'http://127.0.0.1:${port}' });
      const admin = kafka.admin();
      await admin.createTopics({ topics: [{ topic: 'plain', numPartitions: 1 }] });
      const producer = kafka.producer();
      const [md] = await producer.send({ topic: 'plain', messages: [{ key: 'k', value: 'from plain node' }] });
      await producer.close();
      console.log(JSON.stringify({ topics: await admin.listTopics(), offset: md.offset }));
    `;
    const { stdout } = await run(process.execPath, ['--input-type=module', '-e', script], { cwd: tmpdir() });
    expect(JSON.parse(stdout)).toEqual({ topics: ['plain'], offset: 0 });
  }, 120_000);
});
