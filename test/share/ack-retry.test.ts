/**
 * A retried acknowledgement whose first attempt applied: the share-partition write went in but its
 * answer was lost (an ambiguous write inside the server, or the HTTP answer lost and the request
 * sent again by the client). With the same `request_id`, the retry is recognised by the token the
 * item keeps and answered as the first attempt was, offset by offset, instead of INVALID_RECORD_STATE.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { allBackends } from '../support/backends.js';
import { FaultyMetadataStore } from '../support/fault-injection.js';
import { testApp } from '../support/test-app.js';
import { manualClock, shareClient } from './support.js';

for (const backend of allBackends) {
  describe(`share acknowledgement retries on ${backend.name}`, () => {
    let stop: () => Promise<void>;
    let metadata: FaultyMetadataStore;
    let call: ReturnType<typeof testApp>['call'];
    let api: ReturnType<typeof shareClient>;
    const spWrite = (key: string) => key.includes('|sp#');

    beforeAll(async () => {
      const started = await backend.start();
      stop = started.stop;
      metadata = new FaultyMetadataStore(started.storage.metadata);
      ({ call } = testApp({ storage: { ...started.storage, metadata }, clock: manualClock() }));
      api = shareClient(call);
      expect((await call('POST', 'topics', { topic_name: 'retry', partitions_count: 1 })).status).toBe(201);
      await api.produce('retry', ['a', 'b', 'c', 'd', 'e']);
      await api.earliest('gr');
      expect((await api.receive('gr', ['retry'], 'w')).map((r) => r.offset)).toEqual([0, 1, 2, 3, 4]);
    }, 60_000);
    afterAll(() => stop?.());

    const ack = (member: string, offsets: number[], requestId?: string) =>
      call('POST', 'share-groups/gr/records:acknowledge', {
        member_id: member,
        ...(requestId ? { request_id: requestId } : {}),
        acknowledgements: offsets.map((offset) => ({ topic_name: 'retry', partition_id: 0, offset, type: 'accept' })),
      });
    const errors = (res: Awaited<ReturnType<typeof ack>>) => {
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      return (res.body.data as { error: string | null }[]).map((d) => d.error);
    };

    it('answers an acknowledgement whose write applied with its answer lost as applied, and its retry too', async () => {
      metadata.faults.fail('put', { when: 'after', match: spWrite });
      expect(errors(await ack('w', [0], 'r1'))).toEqual([null]);
      expect(metadata.faults.injected).toBe(1);
      // The HTTP answer lost as well: the client sends the same request again.
      expect(errors(await ack('w', [0], 'r1'))).toEqual([null]);
      // The SDK's own retry of the write (a failed condition against the write itself).
      metadata.faults.fail('put', { when: 'retried', match: spWrite });
      expect(errors(await ack('w', [1], 'r2'))).toEqual([null]);
      expect(metadata.faults.injected).toBe(2);
      expect(errors(await ack('w', [1], 'r2'))).toEqual([null]);
    });

    it('answers a retry offset by offset as the first attempt was, for its member only', async () => {
      // Offset 0 was accepted before: refused in the first attempt, and again in the retry.
      expect(errors(await ack('w', [2, 0], 'r3'))).toEqual([null, 'INVALID_RECORD_STATE']);
      expect(errors(await ack('w', [2, 0], 'r3'))).toEqual([null, 'INVALID_RECORD_STATE']);
      // Another member's request with the same id is another request.
      expect(errors(await ack('other', [3], 'r3'))).toEqual(['INVALID_RECORD_STATE']);
      // Without a request id a repeat is a new request: the record is no longer held.
      expect(errors(await ack('w', [3]))).toEqual([null]);
      expect(errors(await ack('w', [3]))).toEqual(['INVALID_RECORD_STATE']);
      // Each record accepted once: SPSO moved past the four.
      const d = await api.describe('gr');
      expect(d.partitions[0]).toMatchObject({ start_offset: 4, lag: 1 });
    });
  });
}
