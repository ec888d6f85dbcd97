/**
 * What this process remembers of a topic's commit log between requests (its own last entries, the
 * states it resolved, the fold marks it read, the fold timers it armed), per metadata store object.
 * The composition root hands each composition its own object (src/storage/process-handle.ts), so
 * a composition is one process's memory: two stores in one process (tests, an embedder) never see
 * each other's, nor do two compositions over one store (tests of several Lambdas, the bench's
 * execution environments), which meet at the store's conditional writes as processes do. Each map
 * is bounded: full, it is cleared whole (everything in it can be read again).
 */
import type { MetadataStore } from '../storage/ports.js';
import type { TopicMeta } from '../topics/topics.js';

export interface BoundedMap<V> {
  get(key: string): V | undefined;
  set(key: string, value: V): void;
  delete(key: string): void;
}

/** A map per metadata store of at most `limit` keys. */
export function perStore<V>(limit: number): (metadata: MetadataStore) => BoundedMap<V> {
  const byStore = new WeakMap<MetadataStore, Map<string, V>>();
  return (metadata) => {
    let map = byStore.get(metadata);
    if (!map) byStore.set(metadata, (map = new Map()));
    const m = map;
    return {
      get: (key) => m.get(key),
      set(key, value) {
        if (m.size >= limit && !m.has(key)) m.clear();
        m.set(key, value);
      },
      delete: (key) => void m.delete(key),
    };
  };
}

/** The key of one shard of one topic incarnation. */
export const shardKey = (topic: Pick<TopicMeta, 'name' | 'id'>, shard: number) => `${topic.name}|${topic.id}|s${shard}`;
/** The key of one partition of one topic incarnation. */
export const partitionKey = (topic: Pick<TopicMeta, 'name' | 'id'>, partition: number) =>
  `${topic.name}|${topic.id}|${partition}`;
