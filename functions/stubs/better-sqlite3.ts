/**
 * Stands in for better-sqlite3 in the Lambda bundles (esbuild aliases the package to this file).
 * The embedded backend never runs in Lambda, but src/compose.ts imports its adapter statically;
 * the native module cannot be bundled, so construction fails loudly instead.
 */
export default class UnavailableDatabase {
  constructor() {
    throw new Error('The embedded (SQLite) backend is not available in the Lambda bundle; set STORAGE_BACKEND=aws');
  }
}
