/**
 * The built web console (console/, compiled into assets.generated.ts by `npm run build:console`):
 * plain data, so the local server, the admin Lambda and `kafka-log console` serve the same files.
 */
import { CONSOLE_ASSETS } from './assets.generated.js';

export interface ConsoleAsset {
  type: string;
  body: string;
  /** Hashed file names never change content: cache them for good; the page itself, never. */
  cacheControl: string;
}

/** The asset at a path below /console/ ('' is the page). */
export function consoleAsset(path: string): ConsoleAsset | undefined {
  const name = path === '' ? 'index.html' : path;
  const a = Object.hasOwn(CONSOLE_ASSETS, name) ? CONSOLE_ASSETS[name] : undefined;
  if (!a) return undefined;
  return { ...a, cacheControl: name.startsWith('assets/') ? 'public, max-age=31536000, immutable' : 'no-cache' };
}
