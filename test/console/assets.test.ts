/**
 * The served console is the current build of console/: src/console/assets.generated.ts is written
 * by `npm run build:console`, and an edit of console/ without a rebuild fails here.
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { consoleAsset } from '../../src/console/assets.js';

const ROOT = join(import.meta.dirname, '../..');

describe('console assets', () => {
  it('are the current build of console/', async () => {
    const run = await promisify(execFile)(process.execPath, ['--import', 'tsx', 'console/build.ts', '--check'], {
      cwd: ROOT,
    }).then(
      () => ({ code: 0, stderr: '' }),
      (e: { code: number; stderr: string }) => ({ code: e.code, stderr: e.stderr }),
    );
    expect(run).toEqual({ code: 0, stderr: '' });
  }, 60_000);

  it('are a page linking its script and styles relatively, each served with its type and caching', () => {
    const page = consoleAsset('')!;
    expect(page).toMatchObject({ type: 'text/html; charset=utf-8', cacheControl: 'no-cache' });
    const links = [...page.body.matchAll(/(?:src|href)="\.\/([^"]+)"/g)].map((m) => m[1]!);
    expect(links.map((l) => l.replace(/-[\w-]+\./, '.'))).toEqual(['assets/index.js', 'assets/index.css']);
    for (const l of links)
      expect(consoleAsset(l)).toMatchObject({ cacheControl: 'public, max-age=31536000, immutable' });
    expect(consoleAsset('assets/missing.js')).toBeUndefined();
    expect(consoleAsset('../package.json')).toBeUndefined();
    // Nothing is fetched from elsewhere: no absolute URL to another host in the built files.
    for (const l of links) expect(consoleAsset(l)!.body).not.toMatch(/(?:src|href|url)\(?["']?https?:\/\//);
  });
});
