import { requireReadable, type FormatName } from './formats.js';

/**
 * A local SQLite file's format version, from `PRAGMA user_version` (0, SQLite's default, is version
 * 1: every file v0.1.0 wrote). Refused on open when newer than this code reads.
 */
/** The one call of a better-sqlite3 database it makes (typed here so this module imports no SQLite). */
interface PragmaReader {
  pragma(source: string, options: { simple: true }): unknown;
}

export function requireFileFormat(db: PragmaReader, format: FormatName, path: string): void {
  const found = Math.max(1, db.pragma('user_version', { simple: true }) as number);
  requireReadable(format, found, path);
}
