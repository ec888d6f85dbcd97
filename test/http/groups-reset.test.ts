import { beforeEach, describe, expect, it } from 'vitest';
import { groupApp } from '../groups/helpers.js';

const BASE = Date.UTC(2024, 0, 1);
const at = (s: number) => new Date(BASE + s * 1000).toISOString();

/**
 * kafka-consumer-groups.sh --reset-offsets, variant by variant. Partitions 0 and 1 of `t` hold
 * offsets 0..9 with timestamps BASE + offset seconds; the group has committed 5 on both.
 */
describe('offsets:reset (kafka-consumer-groups.sh semantics)', () => {
  let g: ReturnType<typeof groupApp>;
  const reset = (body: Record<string, unknown>) => g.call('POST', 'consumer-groups/g/offsets:reset', body);
  const committed = async () =>
    Object.fromEntries(
      (await g.call('GET', 'consumer-groups/g/offsets')).body.data.map(
        (d: { topic_name: string; partition_id: number; committed_offset: number }) => [
          `${d.topic_name}-${d.partition_id}`,
          d.committed_offset,
        ],
      ),
    );
  const newOffsets = (res: { body: { data: { new_offset: number }[] } }) => res.body.data.map((d) => d.new_offset);

  beforeEach(async () => {
    g = groupApp();
    await g.createTopic('t', 2);
    await g.createTopic('u', 1);
    for (let i = 0; i < 10; i++) {
      await g.produce('t', 0, 1, at(i));
      await g.produce('t', 1, 1, at(i));
    }
    await g.produce('u', 0, 3);
    const commit = await g.call('POST', 'consumer-groups/g/offsets:commit', {
      offsets: [0, 1].map((p) => ({ topic_name: 't', partition_id: p, offset: 5 })),
    });
    expect(commit.status).toBe(200);
    g.clock.advance(10_000); // now = BASE + 10 s
  });

  it('to-earliest and to-latest move to the log start offset and the high watermark', async () => {
    const res = await reset({ topics: [{ topic_name: 't' }], strategy: 'to-earliest' });
    expect(res.body).toMatchObject({
      kind: 'KafkaConsumerGroupOffsetReset',
      strategy: 'to-earliest',
      dry_run: false,
      data: [
        { topic_name: 't', partition_id: 0, current_offset: 5, new_offset: 0 },
        { topic_name: 't', partition_id: 1, current_offset: 5, new_offset: 0 },
      ],
    });
    expect(await committed()).toEqual({ 't-0': 0, 't-1': 0 });
    expect(newOffsets(await reset({ topics: [{ topic_name: 't' }], strategy: 'to-latest' }))).toEqual([10, 10]);
    expect(await committed()).toEqual({ 't-0': 10, 't-1': 10 });
  });

  it('to-offset clamps into [log start, high watermark]', async () => {
    expect(newOffsets(await reset({ topics: [{ topic_name: 't' }], strategy: 'to-offset', offset: 3 }))).toEqual([
      3, 3,
    ]);
    expect(newOffsets(await reset({ topics: [{ topic_name: 't' }], strategy: 'to-offset', offset: 50 }))).toEqual([
      10, 10,
    ]);
    expect(await committed()).toEqual({ 't-0': 10, 't-1': 10 });
  });

  it('shift-by moves from the committed offset, clamped; it needs a committed offset', async () => {
    expect(newOffsets(await reset({ topics: [{ topic_name: 't' }], strategy: 'shift-by', shift_by: -2 }))).toEqual([
      3, 3,
    ]);
    expect(newOffsets(await reset({ topics: [{ topic_name: 't' }], strategy: 'shift-by', shift_by: -100 }))).toEqual([
      0, 0,
    ]);
    expect(newOffsets(await reset({ topics: [{ topic_name: 't' }], strategy: 'shift-by', shift_by: 4 }))).toEqual([
      4, 4,
    ]);
    expect(await reset({ topics: [{ topic_name: 'u' }], strategy: 'shift-by', shift_by: 1 })).toMatchObject({
      status: 400,
      body: { error: 'INVALID_REQUEST' },
    });
  });

  it('to-datetime and by-duration find the first offset at or after the time, else the high watermark', async () => {
    expect(
      newOffsets(
        await reset({ topics: [{ topic_name: 't' }], strategy: 'to-datetime', datetime: '2024-01-01T00:00:07.000' }),
      ),
    ).toEqual([7, 7]);
    expect(
      newOffsets(
        await reset({
          topics: [{ topic_name: 't' }],
          strategy: 'to-datetime',
          datetime: '2024-01-01T01:00:02.500+01:00',
        }),
      ),
    ).toEqual([3, 3]);
    expect(
      newOffsets(await reset({ topics: [{ topic_name: 't' }], strategy: 'to-datetime', datetime: BASE + 60_000 })),
    ).toEqual([10, 10]);
    // now = BASE + 10 s, so PT3S is BASE + 7 s.
    expect(
      newOffsets(await reset({ topics: [{ topic_name: 't' }], strategy: 'by-duration', duration: 'PT3S' })),
    ).toEqual([7, 7]);
    expect(
      newOffsets(await reset({ topics: [{ topic_name: 't' }], strategy: 'by-duration', duration: 'P1D' })),
    ).toEqual([0, 0]);
    expect(await committed()).toEqual({ 't-0': 0, 't-1': 0 });
    expect(
      await reset({ topics: [{ topic_name: 't' }], strategy: 'by-duration', duration: '3 seconds' }),
    ).toMatchObject({ status: 400 });
    expect(
      await reset({ topics: [{ topic_name: 't' }], strategy: 'to-datetime', datetime: 'yesterday' }),
    ).toMatchObject({ status: 400 });
  });

  it('to-current keeps committed offsets and sets the others to the high watermark', async () => {
    const res = await reset({ topics: [{ topic_name: 't' }, { topic_name: 'u' }], strategy: 'to-current' });
    expect(res.body.data).toEqual([
      { topic_name: 't', partition_id: 0, current_offset: 5, new_offset: 5 },
      { topic_name: 't', partition_id: 1, current_offset: 5, new_offset: 5 },
      { topic_name: 'u', partition_id: 0, current_offset: null, new_offset: 3 },
    ]);
  });

  it('resets only the chosen partitions, or every partition with a committed offset (all_topics)', async () => {
    expect(
      (await reset({ topics: [{ topic_name: 't', partition_ids: [1] }], strategy: 'to-earliest' })).body.data,
    ).toEqual([{ topic_name: 't', partition_id: 1, current_offset: 5, new_offset: 0 }]);
    expect(await committed()).toEqual({ 't-0': 5, 't-1': 0 });
    expect(newOffsets(await reset({ all_topics: true, strategy: 'to-latest' }))).toEqual([10, 10]);
    expect(await committed()).toEqual({ 't-0': 10, 't-1': 10 });
    expect(await reset({ topics: [{ topic_name: 't', partition_ids: [7] }], strategy: 'to-latest' })).toMatchObject({
      status: 404,
    });
    expect(await reset({ all_topics: true, topics: [{ topic_name: 't' }], strategy: 'to-latest' })).toMatchObject({
      status: 400,
    });
  });

  it('a dry run shows the plan and changes nothing', async () => {
    const res = await reset({ topics: [{ topic_name: 't' }], strategy: 'to-earliest', dry_run: true });
    expect(res.body).toMatchObject({ dry_run: true, data: [{ new_offset: 0 }, { new_offset: 0 }] });
    expect(await committed()).toEqual({ 't-0': 5, 't-1': 5 });
    // A dry run on an unknown group does not create it.
    expect(
      (
        await g.call('POST', 'consumer-groups/fresh/offsets:reset', {
          topics: [{ topic_name: 't' }],
          strategy: 'to-latest',
          dry_run: true,
        })
      ).status,
    ).toBe(200);
    expect(await g.call('GET', 'consumer-groups/fresh')).toMatchObject({ status: 404 });
  });

  it('refuses a group with active members, as the tool does', async () => {
    await g.join('g', ['t']);
    const res = await reset({ topics: [{ topic_name: 't' }], strategy: 'to-earliest' });
    expect(res).toMatchObject({ status: 409, body: { error: 'NON_EMPTY_GROUP' } });
    expect(res.body.message).toMatch(/inactive, but the current state is Stable/);
    expect(await committed()).toEqual({ 't-0': 5, 't-1': 5 });
  });
});
