/**
 * The dead-letter topic (KIP-1191's errors.deadletterqueue.topic.name): a rejected record, and one
 * past the delivery count limit, is copied to the group's dead-letter topic with headers naming the
 * group, source topic, partition, offset, delivery count and reason, before it is archived; and
 * exactly once when the copy's produce applies but its answer is lost (the next writer of the
 * share-partition produces it again with the same producer sequence, which the log answers as a
 * duplicate).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clogPk } from '../../src/storage/key-layout.js';
import { allBackends } from '../support/backends.js';
import { FaultyMetadataStore } from '../support/fault-injection.js';
import { testApp } from '../support/test-app.js';
import { manualClock, shareClient } from './support.js';

interface Copy {
  offset: number;
  value: { data: string } | null;
  headers: { name: string; value: string | null }[];
}

for (const backend of allBackends) {
  describe(`share group dead-letter topic on ${backend.name}`, () => {
    let stop: () => Promise<void>;
    let metadata: FaultyMetadataStore;
    let call: ReturnType<typeof testApp>['call'];
    let api: ReturnType<typeof shareClient>;

    beforeAll(async () => {
      const started = await backend.start();
      stop = started.stop;
      metadata = new FaultyMetadataStore(started.storage.metadata);
      ({ call } = testApp({ storage: { ...started.storage, metadata }, clock: manualClock() }));
      api = shareClient(call);
      for (const t of ['jobs', 'dlq.jobs'])
        expect((await call('POST', 'topics', { topic_name: t, partitions_count: 1 })).status).toBe(201);
      await api.produce('jobs', ['p0', 'p1', 'p2', 'p3']);
      await api.earliest('gdl');
      const set = (name: string, value: string) => call('PUT', `share-groups/gdl/configs/${name}`, { value });
      expect((await set('errors.deadletterqueue.topic.name', 'jobs-dead')).body.error).toBe('INVALID_CONFIG');
      expect((await set('errors.deadletterqueue.topic.name', 'dlq.jobs')).status).toBe(204);
      expect((await set('errors.deadletterqueue.copy.record.enable', 'true')).status).toBe(204);
      expect((await set('share.delivery.count.limit', '2')).status).toBe(204);
    }, 60_000);
    afterAll(() => stop?.());

    const copies = async (): Promise<Copy[]> =>
      (await call('GET', 'topics/dlq.jobs/partitions/0/records?offset=0&format=string')).body.records ?? [];
    const headers = (c: Copy) =>
      Object.fromEntries(c.headers.map((h) => [h.name, Buffer.from(h.value ?? '', 'base64').toString()]));

    it('copies a rejected record and one past the delivery count limit, with their context headers', async () => {
      expect((await api.receive('gdl', ['jobs'], 'a', 2)).map((r) => r.offset)).toEqual([0, 1]);
      expect(
        await api.ack('gdl', 'a', [
          { topic: 'jobs', offset: 0, type: 'reject' },
          { topic: 'jobs', offset: 1, type: 'release' },
        ]),
      ).toEqual([null, null]);
      // Released once: delivered again; released past the limit (2): archived, copied.
      expect((await api.receive('gdl', ['jobs'], 'b', 1)).map((r) => [r.offset, r.delivery_count])).toEqual([[1, 2]]);
      expect(await api.ack('gdl', 'b', [{ topic: 'jobs', offset: 1, type: 'release' }])).toEqual([null]);
      const got = await copies();
      expect(got.map((c) => c.value?.data)).toEqual(['p0', 'p1']);
      expect(headers(got[0]!)).toEqual({
        '__dlq.errors.group.id': 'gdl',
        '__dlq.errors.topic': 'jobs',
        '__dlq.errors.partition': '0',
        '__dlq.errors.offset': '0',
        '__dlq.errors.delivery.count': '1',
        '__dlq.errors.reason': 'rejected',
      });
      expect(headers(got[1]!)).toMatchObject({
        '__dlq.errors.offset': '1',
        '__dlq.errors.delivery.count': '2',
        '__dlq.errors.reason': 'delivery_count_limit',
      });
      const d = await api.describe('gdl');
      expect(d.partitions[0]).toMatchObject({ start_offset: 2, in_flight: { archived: 0 } });
    });

    it('produces a copy once when its produce applied and the answer was lost', async () => {
      expect((await api.receive('gdl', ['jobs'], 'c', 1)).map((r) => r.offset)).toEqual([2]);
      // The dead-letter partition's commit applies, then fails: the copy is in, its producer does not know.
      // (Its commit point is the partition's state, or its shard's log entry on a topic made at level 9.)
      const commit = (k: string) =>
        (k.includes('dlq.jobs') && k.endsWith('|state')) || (k.startsWith(clogPk('dlq.jobs', 0)) && k.includes('|e#'));
      metadata.faults.fail('put', { when: 'after', match: commit });
      expect(await api.ack('gdl', 'c', [{ topic: 'jobs', offset: 2, type: 'reject' }])).toEqual([null]);
      expect(metadata.faults.injected).toBe(1);
      // Still archiving: SPSO waits on it.
      expect((await api.describe('gdl')).partitions[0]).toMatchObject({ start_offset: 2, in_flight: { archived: 1 } });
      // The next writer of the share-partition produces it again: the log answers a duplicate.
      expect((await api.receive('gdl', ['jobs'], 'd', 1)).map((r) => r.offset)).toEqual([3]);
      expect((await copies()).map((c) => headers(c)['__dlq.errors.offset'])).toEqual(['0', '1', '2']);
      expect((await api.describe('gdl')).partitions[0]).toMatchObject({ start_offset: 3, in_flight: { archived: 0 } });
    });
  });
}
