/**
 * `npm run bench:bundles [-- --ref main] [-- --runs 9]`: each Lambda function's bundle as the stack
 * builds it (infra/bundling.ts: the NodejsFunction's esbuild options), its size and its source
 * map's, and its cold import: a fresh `node` that imports it once, with and without
 * `--enable-source-maps`, and the process's RSS after it. The import is timed as the CPU time
 * (user + system, all threads) the process spent from before the import() to after it, the
 * module's top level included (the composition a cold start runs): on a shared machine wall time
 * measures the neighbours; on an idle one the two agree within a few ms. Median of --runs
 * processes per cell, the functions interleaved so load on the machine spreads over all of them.
 *
 * --ref builds the same entry points from another commit too (its tree, extracted to a temporary
 * directory beside this repository's node_modules) and prints before and after side by side.
 * Prints a markdown table; docs/performance.md ("Bundles") quotes it.
 */
import { execFileSync, execSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, statSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { build } from 'esbuild';
import { esbuildOptions } from '../infra/bundling.js';
import { FUNCTION_ENTRIES, REPO_ROOT, sourceMapsEnabled, type BundleName } from '../infra/log-functions.js';

const { values: flags } = parseArgs({
  options: { ref: { type: 'string' }, runs: { type: 'string', default: '9' } },
});
const runs = Number(flags.runs);
const NAMES = Object.keys(FUNCTION_ENTRIES) as BundleName[];

/** What a cold start sees in its environment (no AWS call is made while importing). */
const ENV = {
  ...process.env,
  STORAGE_BACKEND: 'aws',
  BUCKETS: 'bench-bucket',
  TABLE_NAME: 'bench-table',
  CLUSTER_ID: 'bench',
  AWS_REGION: 'us-east-1',
  AWS_ACCESS_KEY_ID: 'bench',
  AWS_SECRET_ACCESS_KEY: 'bench',
  API_KEY_SHA256: 'a'.repeat(64),
  JWT_ISSUER: 'https://issuer.example',
  JWT_AUDIENCE: 'bench',
};

interface Row {
  bundleBytes: number;
  mapBytes: number;
  importMs: number;
  importMapsMs: number;
  rssMb: number;
}

/**
 * Builds every entry of the tree at `root` (this repository or an extracted commit) into `out`.
 * Another commit's bundles keep the SDK's own credential chain: the alias to this tree's
 * src/storage/lambda-credentials.ts is not theirs (their stack built them without it).
 */
async function buildAll(root: string, out: string): Promise<Record<BundleName, string>> {
  const files = {} as Record<BundleName, string>;
  for (const name of NAMES) {
    const { alias, ...options } = esbuildOptions(name, join(out, name));
    const entry = join(root, 'functions', FUNCTION_ENTRIES[name]);
    await build({ ...options, ...(root === REPO_ROOT ? { alias } : {}), entryPoints: [entry], absWorkingDir: root });
    files[name] = options.outfile;
  }
  return files;
}

function importOnce(file: string, maps: boolean): { ms: number; rssMb: number } {
  const script = `const t = process.cpuUsage(); await import(${JSON.stringify(pathToFileURL(file).href)}); const u = process.cpuUsage(t); const ms = (u.user + u.system) / 1000; process.stdout.write(JSON.stringify({ ms, rssMb: process.memoryUsage().rss / 1048576 })); process.exit(0);`;
  const args = ['--no-warnings', ...(maps ? ['--enable-source-maps'] : []), '--input-type=module', '-e', script];
  return JSON.parse(execFileSync(process.execPath, args, { env: ENV, encoding: 'utf8' }));
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/** Measures each build, every run of every function of every build in turn, so that load on the machine spreads over all. */
function measure(builds: Record<BundleName, string>[]): Record<BundleName, Row>[] {
  const samples = builds.map(() =>
    Object.fromEntries(NAMES.map((n) => [n, { plain: [] as number[], maps: [] as number[], rss: [] as number[] }])),
  );
  for (let i = 0; i < runs; i++)
    for (const name of NAMES)
      builds.forEach((files, b) => {
        const cell = samples[b]![name]!;
        const plain = importOnce(files[name], false);
        cell.plain.push(plain.ms);
        cell.rss.push(plain.rssMb);
        cell.maps.push(importOnce(files[name], true).ms);
      });
  return builds.map(
    (files, b) =>
      Object.fromEntries(
        NAMES.map((name) => {
          const cell = samples[b]![name]!;
          const row: Row = {
            bundleBytes: statSync(files[name]).size,
            mapBytes: statSync(`${files[name]}.map`).size,
            importMs: median(cell.plain),
            importMapsMs: median(cell.maps),
            rssMb: median(cell.rss),
          };
          return [name, row];
        }),
      ) as Record<BundleName, Row>,
  );
}

const kb = (b: number) => `${Math.round(b / 1024)} KB`;
const ms = (v: number) => `${v.toFixed(0)} ms`;
/** The import a cold start pays: with the source maps loaded where the function turns them on. */
const deployed = (name: BundleName, r: Row) => (sourceMapsEnabled(name) ? r.importMapsMs : r.importMs);

const work = mkdtempSync(join(tmpdir(), 'bundles-bench-'));
try {
  const builds = [await buildAll(REPO_ROOT, join(work, 'after'))];
  if (flags.ref) {
    const tree = join(work, 'tree');
    mkdirSync(tree);
    execSync(`git archive ${flags.ref} | tar -x -C ${tree}`, { cwd: REPO_ROOT, shell: '/bin/bash' });
    symlinkSync(join(REPO_ROOT, 'node_modules'), join(tree, 'node_modules'));
    builds.push(await buildAll(tree, join(work, 'before')));
  }
  const [after, before] = measure(builds) as [Record<BundleName, Row>, Record<BundleName, Row> | undefined];
  console.log(
    `bundles: median of ${runs} fresh node ${process.version} processes per cell, load ${execSync('cat /proc/loadavg').toString().split(' ').slice(0, 3).join(' ')}`,
  );
  console.log('');
  if (before) {
    console.log(
      '| function | bundle before | bundle after | map before | map after | import CPU before (maps on) | import CPU after (as deployed) | after / before | RSS before | RSS after |',
    );
    console.log('|---|---|---|---|---|---|---|---|---|---|');
    for (const name of NAMES) {
      const b = before[name];
      const a = after[name];
      const now = deployed(name, a);
      console.log(
        `| ${name} | ${kb(b.bundleBytes)} | ${kb(a.bundleBytes)} | ${kb(b.mapBytes)} | ${kb(a.mapBytes)} | ${ms(b.importMapsMs)} | ${ms(now)}${sourceMapsEnabled(name) ? ' (maps on)' : ''} | ${Math.round((100 * now) / b.importMapsMs)}% | ${b.rssMb.toFixed(0)} MB | ${a.rssMb.toFixed(0)} MB |`,
      );
    }
  } else {
    console.log(
      '| function | bundle | map | import CPU | import CPU with --enable-source-maps | maps on when deployed | RSS after import |',
    );
    console.log('|---|---|---|---|---|---|---|');
    for (const name of NAMES) {
      const a = after[name];
      console.log(
        `| ${name} | ${kb(a.bundleBytes)} | ${kb(a.mapBytes)} | ${ms(a.importMs)} | ${ms(a.importMapsMs)} | ${sourceMapsEnabled(name) ? 'yes' : 'no'} | ${a.rssMb.toFixed(0)} MB |`,
      );
    }
  }
} finally {
  rmSync(work, { recursive: true, force: true });
}
