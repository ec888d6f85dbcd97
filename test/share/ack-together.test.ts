/**
 * Acknowledgements of one share-partition that arrive while this process is writing it wait for
 * that write and are then written together: one conditional write for all of them, each applied
 * as it would have been after the others (in order of arrival), each answered on its own, and a
 * retry among them (same member and request id) answered as the first attempt.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ShareAck } from '../../src/share/share-groups.js';
import { allBackends } from '../support/backends.js';
import { FaultyMetadataStore } from '../support/fault-injection.js';
import { testApp } from '../support/test-app.js';
import { manualClock, shareClient } from './support.js';

for (const backend of allBackends) {
  describe(`share acknowledgements written together on ${backend.name}`, () => {
    let stop: () => Promise<void>;
    let metadata: FaultyMetadataStore;
    let app: ReturnType<typeof testApp>;
    let api: ReturnType<typeof shareClient>;
    let writes = 0;
    const spWrite = (key: string) => key.includes('|sp#');

    beforeAll(async () => {
      const started = await backend.start();
      stop = started.stop;
      metadata = new FaultyMetadataStore(started.storage.metadata);
      const put = metadata.put.bind(metadata);
      metadata.put = (pk, sk, ...rest) => {
        if (sk.startsWith('sp#')) writes++;
        return put(pk, sk, ...rest);
      };
      app = testApp({ storage: { ...started.storage, metadata }, clock: manualClock() });
      api = shareClient(app.call);
      expect((await app.call('POST', 'topics', { topic_name: 'together', partitions_count: 1 })).status).toBe(201);
      await api.produce('together', ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h']);
      await api.earliest('gt');
    }, 60_000);
    afterAll(() => stop?.());

    const acks = (type: ShareAck['type'], ...offsets: number[]): ShareAck[] =>
      offsets.map((offset) => ({ topic: 'together', partition: 0, offset, type }));
    const ack = (member: string, list: ShareAck[], requestId?: string) =>
      app.services.share.acknowledge('gt', member, list, requestId);

    it('writes the acknowledgements that waited for a write in one, each answered as if alone', async () => {
      expect((await api.receive('gt', ['together'], 'm1', 2)).map((r) => r.offset)).toEqual([0, 1]);
      expect((await api.receive('gt', ['together'], 'm2', 2)).map((r) => r.offset)).toEqual([2, 3]);
      const held = metadata.faults.gate('put', spWrite);
      writes = 0;
      const first = ack('m1', acks('accept', 0), 'a');
      await held.reached;
      const waiting = [
        ack('m2', acks('accept', 2), 'b'),
        // Not m1's record: refused, the others still applied.
        ack('m1', acks('accept', 3), 'c'),
        // The same request again (same member and request id): answered as the first attempt.
        ack('m2', acks('accept', 2), 'b'),
        ack('m1', acks('release', 1), 'd'),
        // Applied after m2's accept of 2: no longer held.
        ack('m2', acks('reject', 2), 'e'),
      ];
      held.release();
      expect(await first).toEqual([undefined]);
      expect(await Promise.all(waiting)).toEqual([
        [undefined],
        ['INVALID_RECORD_STATE'],
        [undefined],
        [undefined],
        ['INVALID_RECORD_STATE'],
      ]);
      expect(writes).toBe(2);
      const p = (await api.describe('gt')).partitions[0];
      expect(p).toMatchObject({ start_offset: 1, in_flight: { available: 1, acquired: 1, acknowledged: 1 } });
      // The released record is delivered again.
      const again = await api.receive('gt', ['together'], 'm3', 1);
      expect(again.map((r) => [r.offset, r.delivery_count])).toEqual([[1, 2]]);
    });

    it('answers every request of a write together whose answer was lost as applied', async () => {
      const got = await api.receive('gt', ['together'], 'm4', 3);
      expect(got.map((r) => r.offset)).toEqual([4, 5, 6]);
      const held = metadata.faults.gate('put', spWrite);
      const first = ack('m4', acks('accept', 4), 'f');
      await held.reached;
      // The write of the two that waited applies, then its answer is lost.
      metadata.faults.fail('put', { when: 'after', match: spWrite });
      const waiting = [ack('m4', acks('accept', 5), 'g'), ack('m4', acks('accept', 6, 4), 'h')];
      held.release();
      expect(await first).toEqual([undefined]);
      expect(await Promise.all(waiting)).toEqual([[undefined], [undefined, 'INVALID_RECORD_STATE']]);
      expect(metadata.faults.injected).toBeGreaterThan(0);
      const p = (await api.describe('gt')).partitions[0];
      expect(p.in_flight).toMatchObject({ acquired: 2 });
      // Retries of both requests are answered as their first attempts.
      expect(await ack('m4', acks('accept', 5), 'g')).toEqual([undefined]);
      expect(await ack('m4', acks('accept', 6, 4), 'h')).toEqual([undefined, 'INVALID_RECORD_STATE']);
    });
  });
}
