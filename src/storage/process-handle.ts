import type { MetadataStore } from './ports.js';

/**
 * One composition's own handle on a metadata store (src/compose.ts makes one per composition):
 * every call passes through unchanged. What a process remembers between requests is kept per
 * metadata store object (src/partition/process-cache.ts), so on its handle: two compositions over
 * one store in one process (tests of several Lambdas, the bench's execution environments) remember
 * apart, as two processes do, and meet at the store's conditional writes.
 */
export function processHandle(metadata: MetadataStore): MetadataStore {
  const handle: MetadataStore = {
    get: (pk, sk) => metadata.get(pk, sk),
    query: (pk, options) => metadata.query(pk, options),
    put: (pk, sk, value, condition, options) => metadata.put(pk, sk, value, condition, options),
    delete: (pk, sk, condition) => metadata.delete(pk, sk, condition),
  };
  // The optional calls stay optional: callers ask whether the store has them.
  if (metadata.putAll) handle.putAll = metadata.putAll.bind(metadata);
  if (metadata.changeStamp) handle.changeStamp = metadata.changeStamp.bind(metadata);
  return handle;
}
