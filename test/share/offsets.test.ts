/**
 * Share group offsets over HTTP, as Kafka's AlterShareGroupOffsets and DeleteShareGroupOffsets:
 * a reset by strategy (dry run and executed) starts each share-partition afresh, a delete makes
 * them start again by share.auto.offset.reset, both refused while a receiver holds an unexpired
 * lock (the HTTP form of "the group must be empty"); and share.auto.offset.reset=by_duration.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { allBackends } from '../support/backends.js';
import { testApp } from '../support/test-app.js';
import { manualClock, shareClient } from './support.js';

for (const backend of allBackends) {
  describe(`share group offsets on ${backend.name}`, () => {
    let stop: () => Promise<void>;
    let call: ReturnType<typeof testApp>['call'];
    let api: ReturnType<typeof shareClient>;
    const clock = manualClock();

    beforeAll(async () => {
      const started = await backend.start();
      stop = started.stop;
      ({ call } = testApp({ storage: started.storage, clock }));
      api = shareClient(call);
      for (const t of ['reset', 'dur'])
        expect((await call('POST', 'topics', { topic_name: t, partitions_count: 2 })).status).toBe(201);
      await api.produce(
        'reset',
        Array.from({ length: 10 }, (_, i) => `r${i}`),
      );
    }, 60_000);
    afterAll(() => stop?.());

    const reset = (group: string, body: Record<string, unknown>) =>
      call('POST', `share-groups/${group}/offsets:reset`, body);
    const partition0 = async (group: string) =>
      ((await api.describe(group)).partitions as { partition_id: number }[]).find((p) => p.partition_id === 0);

    it('resets to an offset, to the earliest, refuses while a lock is held, and dry-runs', async () => {
      await api.earliest('gr');
      expect((await api.receive('gr', ['reset'], 'a', 3)).map((r) => r.offset)).toEqual([0, 1, 2]);
      const refused = await reset('gr', { strategy: 'to-offset', offset: 7, topics: [{ topic_name: 'reset' }] });
      expect(refused.status).toBe(409);
      expect(refused.body.error).toBe('NON_EMPTY_GROUP');
      const deleteRefused = await call('POST', 'share-groups/gr/offsets:delete', { topics: ['reset'] });
      expect(deleteRefused.body.error).toBe('NON_EMPTY_GROUP');
      // A dry run changes nothing, locks or not.
      const plan = await reset('gr', {
        strategy: 'to-offset',
        offset: 7,
        topics: [{ topic_name: 'reset', partition_ids: [0] }],
        dry_run: true,
      });
      expect(plan.status).toBe(200);
      expect(plan.body.data).toEqual([
        {
          topic_name: 'reset',
          partition_id: 0,
          current_offset: 0,
          new_offset: 7,
          error_code: 0,
          error: null,
        },
      ]);
      expect(await partition0('gr')).toMatchObject({ start_offset: 0, end_offset: 3, state_epoch: 0 });

      // The locks end: the group is empty, and the reset is written.
      clock.advance(30_001);
      const done = await reset('gr', { strategy: 'to-offset', offset: 7, topics: [{ topic_name: 'reset' }] });
      expect(done.status).toBe(200);
      expect(done.body.data.map((d: { partition_id: number; new_offset: number }) => d)).toEqual([
        expect.objectContaining({ partition_id: 0, current_offset: 0, new_offset: 7, error: null }),
        // Clamped into the log: partition 1 is empty.
        expect.objectContaining({ partition_id: 1, new_offset: 0, error: null }),
      ]);
      expect(await partition0('gr')).toMatchObject({
        start_offset: 7,
        end_offset: 7,
        state_epoch: 1,
        lag: 3,
        in_flight: { available: 0, acquired: 0, acknowledged: 0, archived: 0 },
      });
      const got = await api.receive('gr', ['reset'], 'b');
      expect(got.map((r) => [r.offset, r.delivery_count])).toEqual([
        [7, 1],
        [8, 1],
        [9, 1],
      ]);
      await api.ack('gr', 'b', [{ topic: 'reset', offset: 7, last: 9, type: 'accept' }]);

      // Back to the start: every record is delivered afresh, with its delivery count from 1.
      const earliest = await reset('gr', { strategy: 'to-earliest', all_topics: true });
      expect(earliest.body.data.map((d: { new_offset: number }) => d.new_offset)).toEqual([0, 0]);
      const again = await api.receive('gr', ['reset'], 'c', 100);
      expect(again.map((r) => [r.offset, r.delivery_count])).toEqual(Array.from({ length: 10 }, (_, i) => [i, 1]));
      expect(await partition0('gr')).toMatchObject({ start_offset: 0, state_epoch: 2 });
    });

    it('deletes a topic state so that it starts again by share.auto.offset.reset', async () => {
      clock.advance(30_001);
      const deleted = await call('POST', 'share-groups/gr/offsets:delete', { topics: ['reset', 'nope'] });
      expect(deleted.status).toBe(200);
      expect(deleted.body.data).toEqual([
        { topic_name: 'reset', error_code: 0, error: null },
        { topic_name: 'nope', error_code: 3, error: 'UNKNOWN_TOPIC_OR_PARTITION' },
      ]);
      expect((await api.describe('gr')).partitions).toEqual([]);
      // share.auto.offset.reset is earliest for gr: every record again.
      expect((await api.receive('gr', ['reset'], 'd', 100)).map((r) => r.offset)).toEqual(
        Array.from({ length: 10 }, (_, i) => i),
      );
      expect((await call('POST', 'share-groups/never/offsets:delete', { topics: ['reset'] })).body.error).toBe(
        'GROUP_ID_NOT_FOUND',
      );
    });

    it('starts at the first record of the last duration (share.auto.offset.reset=by_duration)', async () => {
      await api.produce('dur', ['old1', 'old2']);
      clock.advance(2 * 3_600_000);
      await api.produce('dur', ['new1', 'new2']);
      const bad = await call('PUT', 'share-groups/gd/configs/share.auto.offset.reset', { value: 'by_duration:-PT1H' });
      expect(bad.body.error).toBe('INVALID_CONFIG');
      expect(
        (await call('PUT', 'share-groups/gd/configs/share.auto.offset.reset', { value: 'by_duration:PT1H' })).status,
      ).toBe(204);
      expect((await api.receive('gd', ['dur'], 'a')).map((r) => r.value?.data)).toEqual(['new1', 'new2']);
      // A reset by duration, as kafka-share-groups.sh --by-duration: three hours back takes all four.
      clock.advance(30_001);
      const res = await reset('gd', { strategy: 'by-duration', duration: 'PT3H', topics: [{ topic_name: 'dur' }] });
      expect(res.body.data[0]).toMatchObject({ partition_id: 0, new_offset: 0 });
      expect((await api.receive('gd', ['dur'], 'b')).map((r) => r.value?.data)).toEqual([
        'old1',
        'old2',
        'new1',
        'new2',
      ]);
      const badReset = await reset('gd', { strategy: 'by-duration', duration: 'soon', all_topics: true });
      expect(badReset.status).toBe(400);
      // --to-datetime in the tools' format (as a consumer group's), not any date Date.parse reads;
      // shift-by moves a committed position, which a share group does not have.
      for (const body of [
        { strategy: 'to-datetime', datetime: '2024-01-01', all_topics: true },
        { strategy: 'shift-by', shift_by: 1, all_topics: true },
      ])
        expect(await reset('gd', body)).toMatchObject({ status: 400, body: { error: 'BAD_REQUEST' } });
    });
  });
}
