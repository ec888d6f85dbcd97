import { compareKeys } from './key-order.js';
import {
  listLimit,
  ObjectNotFoundError,
  type ByteRange,
  type ObjectInfo,
  type ObjectPage,
  type ObjectStore,
} from './ports.js';

/** Objects in a Map: for unit tests and as the reference engine of the contract suite. */
export class MemoryObjectStore implements ObjectStore {
  private readonly objects = new Map<string, { body: Uint8Array; lastModified: number }>();

  constructor(readonly name = 'memory') {}

  async put(key: string, body: Uint8Array): Promise<void> {
    this.objects.set(key, { body: Uint8Array.from(body), lastModified: Date.now() });
  }

  async get(key: string, range?: ByteRange): Promise<Uint8Array> {
    const o = this.objects.get(key);
    if (!o) throw new ObjectNotFoundError(key);
    return range ? o.body.slice(range.start, range.end) : o.body.slice();
  }

  async head(key: string): Promise<ObjectInfo | undefined> {
    const o = this.objects.get(key);
    return o && { key, size: o.body.byteLength, lastModified: o.lastModified };
  }

  async list(prefix: string, page: { startAfter?: string; limit?: number } = {}): Promise<ObjectPage> {
    const limit = listLimit(page.limit);
    const { startAfter } = page;
    const keys = [...this.objects.keys()]
      .filter((k) => k.startsWith(prefix) && (startAfter === undefined || compareKeys(k, startAfter) > 0))
      .sort(compareKeys);
    const objects = keys.slice(0, limit).map((key) => {
      const o = this.objects.get(key)!;
      return { key, size: o.body.byteLength, lastModified: o.lastModified };
    });
    // S3 answers MaxKeys=0 with an empty page that is not truncated, so there is no next page.
    const last = objects.at(-1);
    return keys.length > limit && last ? { objects, nextStartAfter: last.key } : { objects };
  }

  async delete(keys: string[]): Promise<void> {
    for (const k of keys) this.objects.delete(k);
  }
}
