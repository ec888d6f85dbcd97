import { describe, expect, it } from 'vitest';
import { CLUSTER_PK, topicSk } from '../../src/storage/key-layout.js';
import { MemoryMetadataStore } from '../../src/storage/memory-metadata-store.js';
import { TOPIC_DELETION_HOLD_MS, TOPIC_METADATA_MAX_AGE_MS, TopicRegistry } from '../../src/topics/topics.js';
import { FaultyMetadataStore } from '../support/fault-injection.js';

/** Two processes (two registries, each with its cache) on one table, and a clock the test moves. */
function twoProcesses() {
  let now = 1_000_000;
  const clock = { now: () => now };
  const metadata = new FaultyMetadataStore(new MemoryMetadataStore());
  let reads = 0;
  let queries = 0;
  const counting = {
    ...metadata,
    get: <T>(pk: string, sk: string) => {
      reads++;
      return metadata.get<T>(pk, sk);
    },
    query: <T>(...args: Parameters<typeof metadata.query>) => {
      queries++;
      return metadata.query<T>(...args);
    },
    put: metadata.put.bind(metadata),
    delete: metadata.delete.bind(metadata),
  };
  return {
    metadata,
    a: new TopicRegistry(counting, clock, 1),
    b: new TopicRegistry(metadata, clock, 1),
    advance: (ms: number) => {
      now += ms;
    },
    reads: () => reads,
    queries: () => queries,
  };
}

const create = (r: TopicRegistry, name: string, partitionCount = 1, configs: Record<string, string> = {}) =>
  r.create({ name, partitionCount, replicationFactor: 1, configs });

describe('the topic metadata cache', () => {
  it('reads a topic once per max age, not once per request', async () => {
    const { a, b, advance, reads } = twoProcesses();
    await create(b, 't');
    for (let i = 0; i < 100; i++) await a.get('t');
    expect(reads()).toBe(1);
    advance(TOPIC_METADATA_MAX_AGE_MS);
    await a.get('t');
    expect(reads()).toBe(2);
  });

  it('finds topics by id from the cache, reading the listing only for an id it does not hold', async () => {
    const { a, b, advance, reads, queries } = twoProcesses();
    const t = await create(b, 't');
    const u = await create(b, 'u');
    expect([...(await a.getByIds([t.id, u.id.toUpperCase(), 'no-such-id'])).values()].map((x) => x.name)).toEqual([
      't',
      'u',
    ]);
    expect(queries()).toBe(1);
    for (let i = 0; i < 50; i++) expect((await a.getByIds([t.id])).get(t.id)?.name).toBe('t');
    expect(queries()).toBe(1); // served from the cache, as `get` is
    expect(reads()).toBe(0);
    advance(TOPIC_METADATA_MAX_AGE_MS);
    await a.getByIds([t.id]);
    expect(queries()).toBe(2);
  });

  it("sees another process's config change and added partitions within the max age, its own at once", async () => {
    const { a, b, advance } = twoProcesses();
    await create(a, 't', 1);
    expect((await a.get('t')).config.retentionMs).toBe(604_800_000);
    await b.alterConfigs('t', { 'retention.ms': '1000' });
    await b.addPartitions('t', 3);
    expect((await b.get('t')).partitionCount).toBe(3); // the process that changed it
    advance(TOPIC_METADATA_MAX_AGE_MS - 1);
    expect((await a.get('t')).partitionCount).toBe(1); // bounded staleness elsewhere
    advance(1);
    const seen = await a.get('t');
    expect(seen.partitionCount).toBe(3);
    expect(seen.config.retentionMs).toBe(1000);
    await a.alterConfigs('t', { 'retention.ms': '2000' });
    expect((await a.get('t')).config.retentionMs).toBe(2000);
  });

  it('never serves a deleted topic once its name has a new id: the name is held past every cache age', async () => {
    const { a, b, advance } = twoProcesses();
    const first = await create(b, 't', 1, { 'cleanup.policy': 'compact' });
    expect((await a.get('t')).id).toBe(first.id); // cached in a
    await b.delete('t');
    await expect(b.get('t')).rejects.toMatchObject({ errorName: 'UNKNOWN_TOPIC_OR_PARTITION' });
    let second: Awaited<ReturnType<typeof create>> | undefined;
    for (let waited = 0; !second; waited += 100) {
      try {
        second = await create(b, 't', 6);
      } catch (e) {
        expect(e).toMatchObject({
          errorName: 'TOPIC_ALREADY_EXISTS',
          message: expect.stringMatching(/marked for deletion/),
        });
        expect(waited).toBeLessThan(TOPIC_DELETION_HOLD_MS);
        // Until the name is free, a may still serve the old topic, or already know it gone; never anything else.
        const seen = await a.get('t').catch((err: { errorName: string }) => err.errorName);
        expect(seen === 'UNKNOWN_TOPIC_OR_PARTITION' || (typeof seen === 'object' && seen.id === first.id)).toBe(true);
        advance(100);
      }
    }
    expect(second.id).not.toBe(first.id);
    const seen = await a.get('t'); // the very moment the new incarnation exists
    expect(seen).toMatchObject({ id: second.id, partitionCount: 6 });
    expect(seen.config.cleanupPolicy.compact).toBe(false);
  });

  it('frees the name of a topic deleted by this process after the hold too, and drops it from the cache at once', async () => {
    const { a, advance } = twoProcesses();
    await create(a, 't');
    await a.get('t');
    await a.delete('t');
    await expect(a.get('t')).rejects.toMatchObject({ errorName: 'UNKNOWN_TOPIC_OR_PARTITION' });
    await expect(a.delete('t')).rejects.toMatchObject({ errorName: 'UNKNOWN_TOPIC_OR_PARTITION' });
    await expect(a.alterConfigs('t', { 'retention.ms': '1' })).rejects.toMatchObject({
      errorName: 'UNKNOWN_TOPIC_OR_PARTITION',
    });
    await expect(
      a.create({ name: 't', partitionCount: 1, replicationFactor: 1, validateOnly: true }),
    ).rejects.toMatchObject({
      errorName: 'TOPIC_ALREADY_EXISTS',
    });
    advance(TOPIC_DELETION_HOLD_MS);
    await a.create({ name: 't', partitionCount: 1, replicationFactor: 1, validateOnly: true });
    expect((await create(a, 't', 2)).partitionCount).toBe(2);
  });

  it('lists no deleted topic, and removes tombstones past their hold', async () => {
    const { a, metadata, advance } = twoProcesses();
    await create(a, 'kept');
    await create(a, 'gone');
    await a.delete('gone');
    expect((await a.list()).map((t) => t.name)).toEqual(['kept']);
    expect(await metadata.get(CLUSTER_PK, topicSk('gone'))).toBeDefined();
    advance(TOPIC_DELETION_HOLD_MS);
    expect((await a.list()).map((t) => t.name)).toEqual(['kept']);
    expect(await metadata.get(CLUSTER_PK, topicSk('gone'))).toBeUndefined();
  });

  it('recognises its own delete and create when the answer was lost and the write sent again', async () => {
    const { a, metadata } = twoProcesses();
    metadata.faults.fail('put', { when: 'retried', match: (k) => k.endsWith(topicSk('t')) });
    const created = await create(a, 't');
    expect((await a.get('t')).id).toBe(created.id);
    metadata.faults.fail('put', { when: 'retried', match: (k) => k.endsWith(topicSk('t')) });
    expect((await a.delete('t')).id).toBe(created.id);
    expect(metadata.faults.injected).toBe(2);
    await expect(a.get('t')).rejects.toMatchObject({ errorName: 'UNKNOWN_TOPIC_OR_PARTITION' });
  });

  it('hands out frozen topics: one caller cannot change what the others read', async () => {
    const { a } = twoProcesses();
    await create(a, 't', 1, { 'retention.ms': '5' });
    const topic = await a.get('t');
    expect(Object.isFrozen(topic) && Object.isFrozen(topic.config) && Object.isFrozen(topic.configs)).toBe(true);
  });
});
