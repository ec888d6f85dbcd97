/**
 * What a receive reads, counted through the storage decorator (observed-stores.ts), on the three
 * backends: share-partitions where this process found nothing to take are passed by without a
 * read until something it hears of (its appends, its releases, a lock's end) or SHARE_EMPTY_SKIP_MS
 * (another process's appends and releases) may have changed that, and looked at after the others;
 * the log is read in about the bytes the records wanted take, not a megabyte.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SHARE_EMPTY_SKIP_MS } from '../../src/share/empty-looks.js';
import { observeStorage, type StorageCall } from '../../src/storage/observed-stores.js';
import { allBackends } from '../support/backends.js';
import { testApp } from '../support/test-app.js';
import { manualClock, shareClient, type Received } from './support.js';

for (const backend of allBackends) {
  describe(`what a share receive reads on ${backend.name}`, () => {
    let stop: () => Promise<void>;
    let api: ReturnType<typeof shareClient>;
    /** Another process on the same storage: its appends tell the first process nothing. */
    let other: ReturnType<typeof shareClient>;
    let call: ReturnType<typeof testApp>['call'];
    let calls: StorageCall[] = [];
    /** A process whose clock the test moves, on the same storage, its calls counted too. */
    let timed: ReturnType<typeof shareClient>;
    /** Another process on the same storage and clock. */
    let elsewhere: ReturnType<typeof shareClient>;
    const clock = manualClock();

    beforeAll(async () => {
      const started = await backend.start();
      stop = started.stop;
      const observed = observeStorage(started.storage, (c) => calls.push(c));
      ({ call } = testApp({ storage: observed }));
      api = shareClient(call);
      other = shareClient(testApp({ storage: started.storage }).call);
      timed = shareClient(testApp({ storage: observed, clock }).call);
      elsewhere = shareClient(testApp({ storage: started.storage, clock }).call);
      for (const [topic, partitions] of [
        ['visits', 4],
        ['skips', 4],
        ['polled', 3],
        ['sized', 1],
        ['big', 1],
        ['contended', 1],
      ] as const)
        expect((await call('POST', 'topics', { topic_name: topic, partitions_count: partitions })).status).toBe(201);
    }, 60_000);
    afterAll(() => stop?.());

    const sharePartitionReads = () =>
      calls.filter((c) => c.op === 'GetItem' && c.sk.startsWith('sp#')).map((c) => (c as { sk: string }).sk);

    it('looks first at share-partitions that gave records', async () => {
      await api.produce('visits', ['a', 'b', 'c'], 3);
      await api.earliest('gv');
      // The first receive looks at all four partitions: three have nothing.
      const first = await api.receive('gv', ['visits'], 'w', 100);
      expect(first.map((r) => [r.partition_id, r.offset])).toEqual([
        [3, 0],
        [3, 1],
        [3, 2],
      ]);
      expect(
        await api.ack('gv', 'w', [{ topic: 'visits', partition: 3, offset: 0, last: 2, type: 'release' }]),
      ).toEqual([null, null, null]);
      // Partition 3 first, whatever the random start: one share-partition read for one record.
      calls = [];
      expect((await api.receive('gv', ['visits'], 'w', 1)).map((r) => [r.partition_id, r.offset])).toEqual([[3, 0]]);
      expect(sharePartitionReads()).toEqual(['sp#visits#3']);
    });

    it('passes by share-partitions found with nothing to take until something may have changed', async () => {
      await timed.earliest('gk');
      await timed.produce('skips', ['a'], 0);
      calls = [];
      const [a] = await timed.receive('gk', ['skips'], 'w', 100);
      expect(a).toMatchObject({ partition_id: 0, offset: 0 });
      expect(sharePartitionReads()).toHaveLength(4);
      // The three it found empty are passed by; the one that gave is looked at.
      calls = [];
      expect(await timed.receive('gk', ['skips'], 'w', 100)).toEqual([]);
      expect(sharePartitionReads()).toEqual(['sp#skips#0']);
      // Due again after SHARE_EMPTY_SKIP_MS: an empty look reads each share-partition, the next none.
      clock.advance(SHARE_EMPTY_SKIP_MS);
      calls = [];
      expect(await timed.receive('gk', ['skips'], 'w', 100)).toEqual([]);
      expect(sharePartitionReads()).toHaveLength(4);
      const firstLook = calls.length;
      calls = [];
      expect(await timed.receive('gk', ['skips'], 'w', 100)).toEqual([]);
      expect(sharePartitionReads()).toEqual([]);
      expect(calls.length).toBeLessThan(firstLook);
      // This process's append: looked at (and taken) at once.
      await timed.produce('skips', ['b'], 2);
      calls = [];
      expect((await timed.receive('gk', ['skips'], 'w', 100)).map((r) => [r.partition_id, r.offset])).toEqual([[2, 0]]);
      expect(sharePartitionReads()).toEqual(['sp#skips#2']);
      // Another process's append (it tells this one nothing): taken once the look is due again.
      expect(await timed.receive('gk', ['skips'], 'w', 100)).toEqual([]);
      await elsewhere.produce('skips', ['c'], 3);
      clock.advance(SHARE_EMPTY_SKIP_MS);
      expect((await timed.receive('gk', ['skips'], 'w', 100)).map((r) => [r.partition_id, r.offset])).toEqual([[3, 0]]);
      // Another process's release: redelivered once the look is due again.
      expect(await timed.receive('gk', ['skips'], 'v', 100)).toEqual([]);
      expect(await elsewhere.ack('gk', 'w', [{ topic: 'skips', partition: 3, offset: 0, type: 'release' }])).toEqual([
        null,
      ]);
      clock.advance(SHARE_EMPTY_SKIP_MS);
      expect(
        (await timed.receive('gk', ['skips'], 'v', 100)).map((r) => [r.partition_id, r.offset, r.delivery_count]),
      ).toEqual([[3, 0, 2]]);
      // This process's release: redelivered at once.
      expect(await timed.receive('gk', ['skips'], 'w', 100)).toEqual([]);
      expect(await timed.ack('gk', 'v', [{ topic: 'skips', partition: 3, offset: 0, type: 'release' }])).toEqual([
        null,
      ]);
      expect(
        (await timed.receive('gk', ['skips'], 'w', 100)).map((r) => [r.partition_id, r.offset, r.delivery_count]),
      ).toEqual([[3, 0, 3]]);
      // Locks that end: the records come back to the next look after the lock duration.
      expect(await timed.receive('gk', ['skips'], 'v', 100)).toEqual([]);
      clock.advance(30_000);
      const expired = await timed.receive('gk', ['skips'], 'v', 100);
      expect(expired.map((r) => [r.partition_id, r.offset, r.delivery_count]).sort()).toEqual([
        [0, 0, 2],
        [2, 0, 2],
        [3, 0, 4],
      ]);
    });

    it("takes another process's records appended during a long poll", async () => {
      await api.earliest('gp');
      const waiting = call('POST', 'share-groups/gp/records:receive', {
        topics: ['polled'],
        member_id: 'w',
        max_records: 100,
        max_wait_ms: 10_000,
        format: 'string',
      });
      // The receive has looked (and found nothing) before the other process appends.
      await new Promise((r) => setTimeout(r, 2 * SHARE_EMPTY_SKIP_MS));
      await other.produce('polled', ['late'], 1);
      const res = await waiting;
      expect(res.status).toBe(200);
      expect((res.body.data as Received[]).map((r) => [r.partition_id, r.offset, r.value?.data])).toEqual([
        [1, 0, 'late'],
      ]);
    });

    it('reads the log in about the bytes the records wanted take', async () => {
      await api.earliest('gs');
      // Sixty produce requests of ten small records: each its own batch in its own object.
      for (let i = 0; i < 60; i++)
        await api.produce(
          'sized',
          Array.from({ length: 10 }, (_, j) => `${i * 10 + j}`.padStart(100, '.')),
        );
      calls = [];
      const small = await api.receive('gs', ['sized'], 'w', 100);
      expect(small.map((r) => r.offset)).toEqual(Array.from({ length: 100 }, (_, i) => i));
      // Ten batches hold them; a megabyte's read was all sixty.
      const objectReads = calls.filter((c) => c.op === 'GetObject').length;
      expect(objectReads).toBeGreaterThanOrEqual(10);
      expect(objectReads).toBeLessThanOrEqual(30);
    });

    it('reads on from where a read ended when the records are bigger than the first read was sized for', async () => {
      await api.earliest('gb');
      for (let i = 0; i < 5; i++)
        await api.produce(
          'big',
          Array.from({ length: 20 }, (_, j) => `${i * 20 + j}`.padStart(4096, '.')),
        );
      // The first read, sized for small records, holds few of these: all 100 still come from it.
      const got = await api.receive('gb', ['big'], 'w', 100);
      expect(got.map((r) => r.offset)).toEqual(Array.from({ length: 100 }, (_, i) => i));
      expect(got.at(-1)?.value?.data).toBe('99'.padStart(4096, '.'));
    });

    it("orders one process's writers of a share-partition: concurrent receives and acks lose no race", async () => {
      await api.produce(
        'contended',
        Array.from({ length: 40 }, (_, i) => `c${i}`),
      );
      await api.earliest('gc');
      calls = [];
      // Eight receivers of one process at once on one share-partition: each waits for the one before
      // (without that, all read the same version, and all but one lost the write and took nothing).
      const got = await Promise.all(Array.from({ length: 8 }, (_, w) => api.receive('gc', ['contended'], `w${w}`, 5)));
      expect(got.map((g) => g.length)).toEqual(Array(8).fill(5));
      expect(got.flat().map((r) => r.offset)).toEqual(expect.arrayContaining(Array.from({ length: 40 }, (_, i) => i)));
      const acks = await Promise.all(
        got.map((g, w) =>
          api.ack('gc', `w${w}`, [{ topic: 'contended', offset: g[0]!.offset, last: g[4]!.offset, type: 'accept' }]),
        ),
      );
      expect(acks.flat()).toEqual(Array(40).fill(null));
      const lost = calls.filter((c) => c.op === 'UpdateItem' && c.conditionFailed);
      expect(lost).toEqual([]);
      expect((await api.describe('gc')).partitions[0]).toMatchObject({ start_offset: 40, lag: 0 });
    });
  });
}
