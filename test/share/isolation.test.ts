/**
 * share.isolation.level (KIP-932's group config) over HTTP on every backend: read_committed
 * delivers only records below the last stable offset, so an open transaction's records wait for
 * its commit, and never an aborted transaction's, whose offsets SPSO moves past; read_uncommitted
 * (the default) delivers both.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { allBackends } from '../support/backends.js';
import { setup } from '../transactions/helpers.js';
import { manualClock, shareClient } from './support.js';

for (const backend of allBackends) {
  describe(`share.isolation.level on ${backend.name}`, () => {
    let stop: () => Promise<void>;
    let t: Awaited<ReturnType<typeof setup>>;
    let api: ReturnType<typeof shareClient>;

    beforeAll(async () => {
      const started = await backend.start();
      stop = started.stop;
      t = await setup({ storage: started.storage, clock: manualClock() });
      api = shareClient(t.call);
    }, 60_000);
    afterAll(() => stop?.());

    const produce = (values: string[]) =>
      t
        .call('POST', 'topics/out/records:batch', {
          entries: values.map((v, i) => ({ id: String(i), partition_id: 0, value: { type: 'STRING', data: v } })),
        })
        .then((r) => expect(r.body.failures).toEqual([]));
    const isolation = async (group: string, value: string) =>
      (await t.call('PUT', `share-groups/${group}/configs/share.isolation.level`, { value })).status;
    const take = async (group: string) => {
      const got = await api.receive(group, ['out'], 'w');
      if (got.length > 0)
        await api.ack(
          group,
          'w',
          got.map((r) => ({ topic: 'out', offset: r.offset, type: 'accept' })),
        );
      return got.map((r) => [r.offset, r.value?.data]);
    };

    it('read_committed: an open transaction waits for its commit, an aborted one is never delivered', async () => {
      expect(await isolation('rc', 'read_committed')).toBe(204);
      await api.earliest('rc');
      const configs = (await t.call('GET', 'share-groups/rc/configs')).body.data as { name: string; value: string }[];
      expect(configs.find((c) => c.name === 'share.isolation.level')?.value).toBe('read_committed');

      await produce(['a']);
      const p = await t.init('tx');
      expect((await t.produce('tx', p, 0, ['b', 'c'])).body.failures).toEqual([]);
      await produce(['d']);
      // The last stable offset is 1 (the open transaction's first record): only `a`.
      expect(await take('rc')).toEqual([[0, 'a']]);
      expect(await take('rc')).toEqual([]);
      expect((await t.call('POST', 'transactions/tx/commit', p)).status).toBe(200);
      // Committed (its marker at 4): its records and the one after them.
      expect(await take('rc')).toEqual([
        [1, 'b'],
        [2, 'c'],
        [3, 'd'],
      ]);

      const q = await t.init('tx');
      expect((await t.produce('tx', q, 0, ['e', 'f'])).body.failures).toEqual([]);
      expect(await take('rc')).toEqual([]);
      expect((await t.call('POST', 'transactions/tx/abort', q)).status).toBe(200);
      await produce(['g']);
      // Aborted (5, 6; its marker at 7): never delivered, and SPSO moves past them.
      expect(await take('rc')).toEqual([[8, 'g']]);
      const described = (await api.describe('rc')).partitions.find(
        (x: { partition_id: number }) => x.partition_id === 0,
      );
      expect(described).toMatchObject({ start_offset: 9, end_offset: 9, lag: 0 });
    });

    it('read_uncommitted (the default) delivers the aborted records too; a bad value is INVALID_CONFIG', async () => {
      await api.earliest('ru');
      expect(await take('ru')).toEqual([
        [0, 'a'],
        [1, 'b'],
        [2, 'c'],
        [3, 'd'],
        [5, 'e'],
        [6, 'f'],
        [8, 'g'],
      ]);
      const bad = await t.call('PUT', 'share-groups/ru/configs/share.isolation.level', { value: 'committed' });
      expect([bad.status, bad.body.error]).toEqual([400, 'INVALID_CONFIG']);
    });

    it('read_committed with share.auto.offset.reset=latest starts at the last stable offset', async () => {
      const p = await t.init('tx');
      expect((await t.produce('tx', p, 0, ['h'])).body.failures).toEqual([]);
      // A group made now, read_committed, latest: it starts below the open transaction.
      expect(await isolation('late', 'read_committed')).toBe(204);
      expect(await take('late')).toEqual([]);
      expect((await t.call('POST', 'transactions/tx/commit', p)).status).toBe(200);
      expect(await take('late')).toEqual([[9, 'h']]);
    });
  });
}
