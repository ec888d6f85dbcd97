/**
 * What a receive reads, counted through the storage decorator (observed-stores.ts), on the three
 * backends: share-partitions where this process found nothing to take are looked at after the
 * others (and still looked at when the others give nothing, such as records another process
 * appended), and the log is read in about the bytes the records wanted take, not a megabyte.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { observeStorage, type StorageCall } from '../../src/storage/observed-stores.js';
import { allBackends } from '../support/backends.js';
import { testApp } from '../support/test-app.js';
import { shareClient } from './support.js';

for (const backend of allBackends) {
  describe(`what a share receive reads on ${backend.name}`, () => {
    let stop: () => Promise<void>;
    let api: ReturnType<typeof shareClient>;
    /** Another process on the same storage: its appends tell the first process nothing. */
    let other: ReturnType<typeof shareClient>;
    let call: ReturnType<typeof testApp>['call'];
    let calls: StorageCall[] = [];

    beforeAll(async () => {
      const started = await backend.start();
      stop = started.stop;
      ({ call } = testApp({ storage: observeStorage(started.storage, (c) => calls.push(c)) }));
      api = shareClient(call);
      other = shareClient(testApp({ storage: started.storage }).call);
      for (const [topic, partitions] of [
        ['visits', 4],
        ['sized', 1],
        ['big', 1],
        ['contended', 1],
      ] as const)
        expect((await call('POST', 'topics', { topic_name: topic, partitions_count: partitions })).status).toBe(201);
    }, 60_000);
    afterAll(() => stop?.());

    const sharePartitionReads = () =>
      calls.filter((c) => c.op === 'GetItem' && c.sk.startsWith('sp#')).map((c) => (c as { sk: string }).sk);

    it('looks first at share-partitions that gave records, and at the others when those give nothing', async () => {
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
      // Records another process appends to a partition this one found empty are still taken, once
      // the others have nothing left.
      await other.produce('visits', ['d'], 1);
      calls = [];
      const rest = await api.receive('gv', ['visits'], 'w', 100);
      expect(rest.map((r) => [r.partition_id, r.offset])).toEqual([
        [3, 1],
        [3, 2],
        [1, 0],
      ]);
      expect(sharePartitionReads()[0]).toBe('sp#visits#3');
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
