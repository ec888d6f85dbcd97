/**
 * Log lines go through the Logger seam (src/metrics.ts), which the host hands in: JSON lines with
 * the request id on Lambda, JSON on stdout for the local server. Nothing else in src/ writes to
 * the console: a line written there directly loses the structure and the request id.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '../..');

/**
 * Where the console is the output itself: the CLI's, the local server's (its usage, startup
 * banner and its Logger's one sink), and the shipped client's (it has no host to hand it a
 * Logger: a consumer's background errors go to stderr unless `onError` takes them). The web
 * console's built assets are browser code, as strings.
 */
const CONSOLE_ALLOWED = /^src\/(cli\/|server\.ts$|client\/|console\/assets\.generated\.ts$)/;

const consoleCalls = (text: string): string[] =>
  text
    .split('\n')
    .filter((line) => /\bconsole\.(log|error|warn|info|debug|trace)\s*\(/.test(line) && !/^\s*(\*|\/\/)/.test(line));

describe('logging', () => {
  it('writes to the console only in the CLI, the local server and the client', () => {
    const offenders = readdirSync(join(root, 'src'), { recursive: true, encoding: 'utf8' })
      .filter((f) => f.endsWith('.ts'))
      .map((f) => `src/${f}`)
      .filter((f) => !CONSOLE_ALLOWED.test(f))
      .flatMap((f) => consoleCalls(readFileSync(join(root, f), 'utf8')).map((line) => `${f}: ${line.trim()}`));
    expect(offenders).toEqual([]);
  });

  it('the check finds a console call and leaves comments alone (it can fail)', () => {
    expect(consoleCalls("  console.log('x');\n  // console.log('y')\n   * console.error(z)")).toEqual([
      "  console.log('x');",
    ]);
  });
});
