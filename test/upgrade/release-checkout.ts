/**
 * The code of an earlier release, runnable: `git archive` of its commit (which is in main's history,
 * so a clean clone has it even without the tag) into a directory under the OS temp dir, kept for
 * the next run, with this checkout's node_modules linked in when the release's package-lock.json
 * names the same packages (the root's own version aside). Answers a reason instead when that cannot
 * be done (a shallow clone without the commit, other dependencies), for the caller to skip with.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const ROOT = join(import.meta.dirname, '../..');

/** The releases the upgrade tests run beside the current code: tag and commit. */
export const PREVIOUS_RELEASE = { tag: 'v0.1.0', commit: 'd461e682525996678e3c579e41c1673db414f5ff' };

/** A package-lock without its root's version: the same packages whatever the release number. */
function packages(lock: string): string {
  const parsed = JSON.parse(lock) as { version?: string; packages?: Record<string, { version?: string }> };
  delete parsed.version;
  if (parsed.packages?.['']) delete parsed.packages[''].version;
  return JSON.stringify(parsed);
}

export function releaseCheckout(commit = PREVIOUS_RELEASE.commit): { dir: string } | { skip: string } {
  const git = (...args: string[]) => execFileSync('git', args, { cwd: ROOT, encoding: 'utf8', stdio: 'pipe' });
  let lock: string;
  try {
    git('cat-file', '-e', `${commit}^{commit}`);
    lock = git('show', `${commit}:package-lock.json`);
  } catch {
    return { skip: `commit ${commit} is not in this clone (a shallow clone?): fetch the full history to run this` };
  }
  if (packages(lock) !== packages(readFileSync(join(ROOT, 'package-lock.json'), 'utf8')))
    return {
      skip: `the release at ${commit} uses other packages than this checkout: run \`npm ci\` in a worktree of it`,
    };
  const dir = join(tmpdir(), `kafka-log-release-${commit.slice(0, 12)}`);
  if (existsSync(join(dir, '.complete'))) return { dir };
  const building = `${dir}.${process.pid}`;
  rmSync(building, { recursive: true, force: true });
  mkdirSync(building, { recursive: true });
  const tar = execFileSync('git', ['archive', '--format=tar', commit], { cwd: ROOT, maxBuffer: 1 << 30 });
  execFileSync('tar', ['-x', '-C', building], { input: tar });
  symlinkSync(join(ROOT, 'node_modules'), join(building, 'node_modules'), 'dir');
  writeFileSync(join(building, '.complete'), commit);
  try {
    renameSync(building, dir);
  } catch {
    rmSync(building, { recursive: true, force: true }); // another run finished first
  }
  return { dir };
}
