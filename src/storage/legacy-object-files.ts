import { readdir, readFile, rmdir, stat, unlink } from 'node:fs/promises';
import { join } from 'node:path';

/**
 * The local object store's earlier layout, one file per object, read once to move a directory
 * written by an older version into pack files (src/storage/local-object-store.ts).
 *
 * There a key was split on '/', each segment percent-encoded (bytes outside `[A-Za-z0-9._-]`, and
 * a leading '.'), a segment continuing the key was a directory `<segment>+`, and an empty segment
 * the name `%`; names starting with '.' were temp files of writes in flight.
 */

/**
 * Hands every object file under `root` (but the entries named in `skip`) to `store`, then deletes
 * it, and removes temp files and the directories left empty. Files this layout cannot have
 * written are left alone. A crash midway is harmless: an object is deleted only after `store`
 * resolved, and storing one again overwrites the same key with the same bytes.
 */
export async function importLegacyFiles(
  root: string,
  skip: Set<string>,
  store: (key: string, body: Uint8Array, modified: number) => Promise<void>,
): Promise<number> {
  let imported = 0;
  const walk = async (dir: string, keyPrefix: string, top: boolean): Promise<void> => {
    for (const d of await readdir(dir, { withFileTypes: true })) {
      if (top && skip.has(d.name)) continue;
      const path = join(dir, d.name);
      if (d.name.startsWith('.tmp-') && d.isFile()) {
        await unlink(path); // a write in flight when the old version stopped: never acknowledged
        continue;
      }
      const isDirectory = d.isDirectory();
      if (isDirectory !== d.name.endsWith('+') || !(isDirectory || d.isFile())) continue;
      const segment = decodeSegment(isDirectory ? d.name.slice(0, -1) : d.name);
      if (segment === undefined) continue;
      if (isDirectory) {
        await walk(path, `${keyPrefix}${segment}/`, false);
        await rmdir(path).catch(() => {}); // kept when something foreign is left in it
      } else {
        const modified = Math.floor((await stat(path)).mtimeMs);
        await store(keyPrefix + segment, await readFile(path), modified);
        await unlink(path);
        imported++;
      }
    }
  };
  await walk(root, '', true);
  return imported;
}

const SAFE_BYTE = /^[A-Za-z0-9._-]$/;

function decodeSegment(name: string): string | undefined {
  if (name === '%') return '';
  if (name === '' || name.startsWith('.')) return undefined;
  const bytes: number[] = [];
  for (let i = 0; i < name.length; i++) {
    const ch = name[i]!;
    if (ch === '%') {
      const hex = name.slice(i + 1, i + 3);
      if (!/^[0-9A-F]{2}$/.test(hex)) return undefined;
      bytes.push(parseInt(hex, 16));
      i += 2;
    } else if (SAFE_BYTE.test(ch)) {
      bytes.push(ch.charCodeAt(0));
    } else {
      return undefined;
    }
  }
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(Uint8Array.from(bytes));
  } catch {
    return undefined;
  }
}
