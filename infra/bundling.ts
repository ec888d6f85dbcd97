/**
 * The Lambda bundles as plain esbuild builds: the same options the stack's NodejsFunctions pass to
 * the local esbuild (infra/log-functions.ts `BUNDLING`), for the bundle bench (bench/bundles.ts)
 * and the bundle tests, which read esbuild's metafile (what went into each bundle). The bundle
 * test checks that these builds are byte for byte the stack's assets.
 */
import { join } from 'node:path';
import type { BuildOptions } from 'esbuild';
import { BUNDLING, CREDENTIAL_PROVIDER_ALIAS, FUNCTION_ENTRIES, REPO_ROOT, type BundleName } from './log-functions.js';

export function esbuildOptions(name: BundleName, outdir: string): BuildOptions & { outfile: string } {
  return {
    entryPoints: [join(REPO_ROOT, 'functions', FUNCTION_ENTRIES[name])],
    absWorkingDir: REPO_ROOT,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: BUNDLING.target!,
    mainFields: BUNDLING.mainFields!,
    minify: BUNDLING.minify!,
    sourcemap: BUNDLING.sourceMap!,
    sourcesContent: BUNDLING.sourcesContent!,
    external: BUNDLING.externalModules!,
    alias: CREDENTIAL_PROVIDER_ALIAS,
    banner: { js: BUNDLING.banner! },
    outfile: join(outdir, 'index.mjs'),
    logLevel: 'warning',
  };
}
