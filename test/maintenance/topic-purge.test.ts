/**
 * Topic deletion as Kafka does it: the delete answers once the topic is marked (its tombstone and
 * the purge record), and the scheduler's background work removes its partitions' items and
 * objects. A purge interrupted at any step (a fault before or after the step took effect, the
 * run's deadline) finishes in a later run.
 */
import { describe, expect, it } from 'vitest';
import { createStorage, type Storage } from '../../src/compose.js';
import {
  ABORT_PREFIX,
  dataPrefix,
  INDEX_PREFIX,
  partitionPk,
  segmentPrefix,
  STATE_SK,
} from '../../src/storage/key-layout.js';
import { pendingTopicPurges } from '../../src/topics/topic-purges.js';
import type { Topic } from '../../src/topics/topics.js';
import { FaultyMetadataStore, FaultyObjectStore } from '../support/fault-injection.js';
import { harness, listKeys, rec, TestClock } from './helpers.js';

const PARTITIONS = 3;

/** A storage behind fault injection over memory stores (kept to look at what is left). */
function faultyStorage(clock: TestClock, onStateDelete?: () => void) {
  const inner = createStorage({ kind: 'memory', replicaStores: 2 });
  class Metadata extends FaultyMetadataStore {
    override delete(pk: string, sk: string, c?: { ifVersion: number }) {
      if (sk === STATE_SK) onStateDelete?.();
      return super.delete(pk, sk, c);
    }
  }
  const metadata = new Metadata(inner.metadata);
  const stores = inner.stores.map((s) => new FaultyObjectStore(s));
  const storage: Storage = { metadata, stores, close: () => {} };
  return { inner, metadata, stores, h: harness(storage, clock) };
}

/** A topic of a few partitions on both stores, with records in each, then deleted. */
async function deletedTopic(h: ReturnType<typeof harness>): Promise<Topic> {
  const topic = await h.topics.create({
    name: `gone-${Math.random().toString(36).slice(2, 8)}`,
    partitionCount: PARTITIONS,
    replicationFactor: 2,
  });
  for (let p = 0; p < PARTITIONS; p++)
    for (const v of ['a', 'b']) await h.produce(topic, [rec(`k${p}`, `${v}${p}`, h.clock.now())], p);
  await h.topics.delete(topic.name);
  return topic;
}

/** What is left of a topic incarnation: items, objects and its purge record. */
async function leftovers(inner: Storage, topic: Topic) {
  const items: string[] = [];
  for (let p = 0; p < PARTITIONS; p++) {
    const pk = partitionPk(topic.name, p);
    for (const prefix of [INDEX_PREFIX, ABORT_PREFIX])
      for (const i of await inner.metadata.query<{ topicId: string }>(pk, { beginsWith: prefix }))
        if (i.value.topicId === topic.id) items.push(`${pk}|${i.sk}`);
    const state = await inner.metadata.get<{ topicId: string }>(pk, STATE_SK);
    if (state?.value.topicId === topic.id) items.push(`${pk}|${STATE_SK}`);
  }
  const objects: string[] = [];
  for (const store of inner.stores)
    for (const prefix of [dataPrefix(topic.id), segmentPrefix(topic.id)])
      objects.push(...(await listKeys(store, prefix)));
  const purges = (await pendingTopicPurges(inner.metadata)).filter((i) => i.value.id === topic.id);
  return { items, objects, purges: purges.map((i) => i.value) };
}

const NOTHING = { items: [], objects: [], purges: [] };

describe('topic deletion: marked at once, purged by the scheduler', () => {
  it('the delete leaves the data to the scheduler, whose next run removes it all', async () => {
    const clock = new TestClock(1_000_000);
    const { inner, h } = faultyStorage(clock);
    const topic = await deletedTopic(h);
    const before = await leftovers(inner, topic);
    expect(before.items.length).toBeGreaterThanOrEqual(2 * PARTITIONS); // states and index entries
    expect(before.objects.length).toBeGreaterThan(0);
    expect(before.purges).toMatchObject([
      { id: topic.id, name: topic.name, partitionCount: PARTITIONS, nextPartition: 0 },
    ]);
    await expect(h.topics.get(topic.name)).rejects.toMatchObject({ errorName: 'UNKNOWN_TOPIC_OR_PARTITION' });
    expect(await h.run()).toMatchObject({ topicsPurged: 1 });
    expect(await leftovers(inner, topic)).toEqual(NOTHING);
    // Nothing more to do: the next run purges nothing.
    expect((await h.run()).topicsPurged).toBeUndefined();
  });

  type Step = { store: 'metadata' | 'objects'; op: string; match: (key: string) => boolean; what: string };
  const STEPS: Step[] = [
    { store: 'metadata', op: 'query', match: (k) => k === 'cluster', what: 'listing the purges' },
    { store: 'metadata', op: 'get', match: (k) => k.startsWith('cluster|topic#'), what: 'checking the topic is gone' },
    { store: 'metadata', op: 'query', match: (k) => k.startsWith('part#'), what: 'listing index entries' },
    { store: 'metadata', op: 'delete', match: (k) => k.includes('|idx#'), what: 'deleting an index entry' },
    { store: 'metadata', op: 'get', match: (k) => k.endsWith('|state'), what: 'reading a partition state' },
    { store: 'metadata', op: 'delete', match: (k) => k.endsWith('|state'), what: 'deleting a partition state' },
    { store: 'objects', op: 'list', match: () => true, what: 'listing objects' },
    { store: 'objects', op: 'delete', match: () => true, what: 'deleting objects' },
    {
      store: 'metadata',
      op: 'delete',
      match: (k) => k.startsWith('cluster|purge#'),
      what: 'removing the purge record',
    },
  ];
  for (const step of STEPS)
    for (const when of ['before', 'after'] as const)
      it(`a purge that fails ${when} ${step.what} finishes in the next run`, async () => {
        const clock = new TestClock(1_000_000);
        const { inner, metadata, stores, h } = faultyStorage(clock);
        const topic = await deletedTopic(h);
        const faults = step.store === 'metadata' ? [metadata.faults] : [stores[1]!.faults];
        for (const f of faults) f.fail(step.op as never, { when, match: step.match });
        await h.run();
        expect(faults[0]!.injected).toBe(1);
        for (const f of faults) f.clear();
        await h.run();
        expect(await leftovers(inner, topic)).toEqual(NOTHING);
      });

  it('a run that reaches its deadline notes how far it went; the next goes on from there', async () => {
    const clock = new TestClock(1_000_000);
    // Each partition state deleted takes 10 ms of the run's time.
    const { inner, h } = faultyStorage(clock, () => clock.advance(10));
    const topic = await deletedTopic(h);
    const report = await h.run({ deadline: clock.now() + 5 });
    expect(report).toMatchObject({ incomplete: 1 });
    expect(report.topicsPurged).toBeUndefined();
    const half = await leftovers(inner, topic);
    expect(half.purges).toMatchObject([{ nextPartition: 1 }]);
    expect(half.items.some((i) => i.startsWith(partitionPk(topic.name, 0)))).toBe(false);
    expect(half.items.some((i) => i.startsWith(partitionPk(topic.name, 1)))).toBe(true);
    expect(await h.run()).toMatchObject({ topicsPurged: 1 });
    expect(await leftovers(inner, topic)).toEqual(NOTHING);
  });

  it('a delete that died before its tombstone leaves the live topic alone; deleting it later purges it', async () => {
    const clock = new TestClock(1_000_000);
    const { inner, metadata, h } = faultyStorage(clock);
    const topic = await h.topics.create({ name: 'half-deleted', partitionCount: PARTITIONS, replicationFactor: 1 });
    await h.produce(topic, [rec('k', 'v', clock.now())]);
    metadata.faults.fail('put', { match: (k) => k === 'cluster|topic#half-deleted', times: 3 });
    await expect(h.topics.delete(topic.name)).rejects.toThrow();
    metadata.faults.clear();
    expect((await leftovers(inner, topic)).purges).toHaveLength(1);
    await h.run();
    expect((await h.readAll(await h.topics.get(topic.name))).map((r) => r.value)).toEqual(['v']);
    await h.topics.delete(topic.name);
    await h.run();
    expect(await leftovers(inner, topic)).toEqual(NOTHING);
  });
});
