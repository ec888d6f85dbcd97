/**
 * A composition is one process's state: two compositions over one store in one process (a test of
 * several Lambdas, the bench's execution environments) keep their commit queues and what they
 * remember apart, and meet at the store's conditional writes as two processes do.
 */
import { describe, expect, it } from 'vitest';
import { createServices, type Storage } from '../src/compose.js';
import { serverConfigFromEnv } from '../src/config/server-config.js';
import { perStore } from '../src/partition/process-cache.js';
import { MemoryMetadataStore } from '../src/storage/memory-metadata-store.js';
import { MemoryObjectStore } from '../src/storage/memory-object-store.js';
import { FaultyMetadataStore } from './support/fault-injection.js';
import { rec } from './support/partition-logs.js';
import { readRecords } from './support/read-records.js';

const config = serverConfigFromEnv({ STORAGE_BACKEND: 'memory' });

function sharedStorage() {
  const metadata = new FaultyMetadataStore(new MemoryMetadataStore());
  const storage: Storage = { metadata, stores: [new MemoryObjectStore()], close: () => {} };
  return { metadata, storage };
}

/** The next write of an entry of a shard's commit log, held until released. */
const holdEntryWrite = (metadata: FaultyMetadataStore) =>
  metadata.faults.gate('put', (key) => key.startsWith('clog#') && key.includes('|e#'));

const offsetOf = (answer: Map<number, unknown>) => (answer.get(0) as { info: { baseOffset: number } }).info.baseOffset;

describe('two compositions over one store', () => {
  it('commit to one shard at its conditional write, each in its own queue', async () => {
    const { metadata, storage } = sharedStorage();
    const a = createServices(config, storage);
    const b = createServices(config, storage);
    const topic = await a.topics.create({ name: 'shared', partitionCount: 1, replicationFactor: 1 });
    expect(topic.clog).toBe(true);

    const held = holdEntryWrite(metadata);
    const first = a.log.append(topic, [{ partition: 0, records: [rec('a1')] }]);
    await held.reached;
    // The same process's next commit of the shard waits in its queue behind the held one...
    let queuedDone = false;
    const queued = a.log.append(topic, [{ partition: 0, records: [rec('a2')] }]).then((r) => {
      queuedDone = true;
      return r;
    });
    // ...while another composition's commits, with a queue of their own, take the entry first.
    const other = await b.log.append(topic, [{ partition: 0, records: [rec('b1')] }]);
    expect(offsetOf(other)).toBe(0);
    expect(queuedDone).toBe(false);

    held.release();
    // The held write lost the entry to b's and was decided again on what it found.
    expect(offsetOf(await first)).toBe(1);
    expect(offsetOf(await queued)).toBe(2);
    const read = await readRecords(b.log, topic, 0, 0, 1 << 20);
    expect(read.records.map((r) => [r.offset, Buffer.from(r.value!).toString()])).toEqual([
      [0, 'b1'],
      [1, 'a1'],
      [2, 'a2'],
    ]);
  });

  it('remember apart: each composition has its own handle on the store', () => {
    const { storage } = sharedStorage();
    const a = createServices(config, storage);
    const b = createServices(config, storage);
    expect(a.metadataHandle).not.toBe(b.metadataHandle);
    expect(a.metadataHandle).not.toBe(storage.metadata);
    // The process caches (src/partition/process-cache.ts) key on the handle.
    const remembered = perStore<number>(10);
    remembered(a.metadataHandle).set('shard', 7);
    expect(remembered(a.metadataHandle).get('shard')).toBe(7);
    expect(remembered(b.metadataHandle).get('shard')).toBeUndefined();
  });
});
