/**
 * GET /transactions:hanging reads every partition's state: at 10,000 partitions one request would
 * pass an admin function's 29 s. Each request reads at most FIND_HANGING_PAGE states and its
 * metadata.next goes on from there; the client follows the pages.
 */
import { describe, expect, it } from 'vitest';
import { createStorage, type Storage } from '../../src/compose.js';
import { STATE_SK } from '../../src/storage/key-layout.js';
import type { MetadataStore } from '../../src/storage/ports.js';
import { PARTITION_PAGE as FIND_HANGING_PAGE } from '../../src/topics/partition-scan.js';
import { testApp } from '../support/test-app.js';

/** The memory storage, counting partition-state reads. */
function countedStorage() {
  const inner = createStorage({ kind: 'memory', replicaStores: 1 });
  const reads = { states: 0 };
  const metadata: MetadataStore = Object.create(inner.metadata);
  metadata.get = (pk, sk) => {
    if (sk === STATE_SK) reads.states++;
    return inner.metadata.get(pk, sk);
  };
  const storage: Storage = { ...inner, metadata };
  return { storage, reads };
}

describe('find-hanging in pages', () => {
  it('reads at most a page of partition states per request, and metadata.next covers the rest', async () => {
    const { storage, reads } = countedStorage();
    const t = testApp({ storage });
    const partitions = Math.floor(FIND_HANGING_PAGE * 1.5);
    expect((await t.call('POST', 'topics', { topic_name: 'a-wide', partitions_count: partitions })).status).toBe(201);
    expect((await t.call('POST', 'topics', { topic_name: 'b-small', partitions_count: 3 })).status).toBe(201);
    const pages: { metadata: { next: string | null }; data: unknown[] }[] = [];
    let path: string | undefined = 'transactions:hanging?older_than_ms=0';
    while (path) {
      reads.states = 0;
      const res = await t.call('GET', path);
      expect(res.status).toBe(200);
      expect(reads.states).toBeLessThanOrEqual(FIND_HANGING_PAGE);
      pages.push(res.body);
      const next: string | null = res.body.metadata.next;
      path = next ? `transactions:hanging${new URL(next).search}` : undefined;
    }
    expect(pages).toHaveLength(2);
    expect(pages[0]!.metadata.next).toContain('page_token=');
    expect(pages[1]!.metadata.next).toBeNull();
    // A token the server did not give is a Kafka error, not a 500.
    expect(await t.call('GET', 'transactions:hanging?page_token=bm9wZQ')).toMatchObject({
      status: 400,
      body: { error: 'INVALID_REQUEST' },
    });
  });

  it('a page boundary inside a topic misses no partition and repeats none', async () => {
    const { storage } = countedStorage();
    const t = testApp({ storage });
    await t.call('POST', 'topics', { topic_name: 'x', partitions_count: 4 });
    await t.call('POST', 'topics', { topic_name: 'y', partitions_count: 3 });
    const seen: string[] = [];
    let after: { topic: string; partition: number } | undefined;
    for (;;) {
      const page = await t.services.transactions.findHanging({
        olderThanMs: 0,
        maxPartitions: 3,
        ...(after ? { after } : {}),
      });
      if (page.next) seen.push(`${page.next.topic}-${page.next.partition}`);
      if (!page.next) break;
      after = page.next;
    }
    expect(seen).toEqual(['x-2', 'y-1']);
  });
});
