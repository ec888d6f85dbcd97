/**
 * The code of an earlier release, runnable: `git archive` of its commit (which is in main's history,
 * so a clean clone has it even without the tag) into a directory under the OS temp dir, kept for
 * the next run, with this checkout's node_modules linked in when it holds every package of the
 * release's package-lock.json at the same version. Answers a reason instead when that cannot
 * be done (a shallow clone without the commit, other dependencies), for the caller to skip with.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const ROOT = join(import.meta.dirname, '../..');

/** The releases the upgrade tests run beside the current code: tag and commit. */
export const PREVIOUS_RELEASE = { tag: 'v0.1.0', commit: 'd461e682525996678e3c579e41c1673db414f5ff' };

type Lock = { packages?: Record<string, { version?: string; resolved?: string }> };

/**
 * The packages of `release`'s lockfile that this checkout's lockfile lacks or has at another
 * version (the root's own entry aside): none, and this node_modules serves the release as well.
 */
function missingPackages(release: string, current: string): string[] {
  const have = (JSON.parse(current) as Lock).packages ?? {};
  return Object.entries((JSON.parse(release) as Lock).packages ?? {})
    .filter(([path, p]) => path !== '' && have[path]?.version !== p.version)
    .map(([path, p]) => `${path.replace(/^node_modules\//, '')}@${p.version}`);
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
  const missing = missingPackages(lock, readFileSync(join(ROOT, 'package-lock.json'), 'utf8'));
  if (missing.length > 0)
    return {
      skip: `the release at ${commit} needs packages this checkout does not have (${missing.slice(0, 3).join(', ')}${missing.length > 3 ? ', ...' : ''}): run \`npm ci\` in a worktree of it`,
    };
  // One per checkout too: its node_modules link points into this checkout.
  const dir = join(
    tmpdir(),
    `kafka-log-release-${commit.slice(0, 12)}-${createHash('sha1').update(ROOT).digest('hex').slice(0, 8)}`,
  );
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
