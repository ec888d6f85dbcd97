/**
 * Deleting a share group (Kafka's DeleteGroups, Admin.deleteShareGroups) over HTTP on every backend:
 * GROUP_ID_NOT_FOUND for a group never used, NON_EMPTY_GROUP while a receiver holds a record under
 * an unexpired lock, and once deleted a group of the name starts again by share.auto.offset.reset.
 * With the store's writes made ambiguous (applied, answer lost; applied and sent again) and a
 * deletion stopped midway (a removal failing before it applies): the group stays listed until a
 * deletion finishes, and never leaves state behind that a group of the name would read.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { allBackends } from '../support/backends.js';
import { FaultyMetadataStore } from '../support/fault-injection.js';
import { testApp } from '../support/test-app.js';
import { manualClock, shareClient } from './support.js';

for (const backend of allBackends) {
  describe(`share group deletion on ${backend.name}`, () => {
    let stop: () => Promise<void>;
    let metadata: FaultyMetadataStore;
    let call: ReturnType<typeof testApp>['call'];
    let api: ReturnType<typeof shareClient>;
    const clock = manualClock();
    const spRemoval = (key: string) => key.includes('|sp#');
    const registry = (group: string) => (key: string) => key.endsWith(`|sgroup#${group}`);

    beforeAll(async () => {
      const started = await backend.start();
      stop = started.stop;
      metadata = new FaultyMetadataStore(started.storage.metadata);
      ({ call } = testApp({ storage: { ...started.storage, metadata }, clock }));
      api = shareClient(call);
      expect((await call('POST', 'topics', { topic_name: 'del', partitions_count: 2 })).status).toBe(201);
      await api.produce('del', ['a', 'b', 'c']);
      await api.produce('del', ['d', 'e'], 1);
    }, 60_000);
    afterAll(() => stop?.());

    const remove = (group: string) => call('DELETE', `share-groups/${group}`);
    const listed = async () =>
      ((await call('GET', 'share-groups')).body.data as { group_id: string }[]).map((g) => g.group_id);
    /** Every record of both partitions taken and accepted: SPSO at the end of each. */
    const drain = async (group: string) => {
      const got = await api.receive(group, ['del'], 'w');
      expect(got).toHaveLength(5);
      const errors = await api.ack(
        group,
        'w',
        got.map((r) => ({ topic: 'del', partition: r.partition_id, offset: r.offset, type: 'accept' })),
      );
      expect(errors.every((e) => e === null)).toBe(true);
    };
    const startsAfresh = async (group: string) => {
      // Its configs stayed (earliest): everything again, each a first delivery.
      const again = await api.receive(group, ['del'], 'x');
      expect(again.map((r) => [r.partition_id, r.offset, r.delivery_count]).sort()).toEqual([
        [0, 0, 1],
        [0, 1, 1],
        [0, 2, 1],
        [1, 0, 1],
        [1, 1, 1],
      ]);
      await api.ack(
        group,
        'x',
        again.map((r) => ({ topic: 'del', partition: r.partition_id, offset: r.offset, type: 'release' })),
      );
    };

    it('GROUP_ID_NOT_FOUND for a group never used; NON_EMPTY_GROUP while a lock is held; then gone', async () => {
      const never = await remove('never');
      expect([never.status, never.body.error_code]).toEqual([404, 40406]);
      await api.earliest('g1');
      const held = await api.receive('g1', ['del'], 'w', 1);
      expect(held).toHaveLength(1);
      const busy = await remove('g1');
      expect([busy.status, busy.body.error_code]).toEqual([409, 40906]);
      expect((await api.describe('g1')).partitions).toHaveLength(1);
      // The lock ends (30 s): nobody holds anything, the group is empty.
      clock.advance(31_000);
      await api.receive('g1', ['del'], 'w');
      await api.ack('g1', 'w', [
        { topic: 'del', partition: 0, offset: 0, last: 2, type: 'accept' },
        { topic: 'del', partition: 1, offset: 0, last: 1, type: 'accept' },
      ]);
      expect((await api.describe('g1')).lag).toBe(0);
      expect((await remove('g1')).status).toBe(204);
      expect(await listed()).not.toContain('g1');
      expect((await call('GET', 'share-groups/g1')).status).toBe(404);
      expect((await remove('g1')).status).toBe(404);
      await startsAfresh('g1');
      expect(await listed()).toContain('g1');
    });

    it('finishes under ambiguous removals: applied with the answer lost, and applied then sent again', async () => {
      await api.earliest('g2');
      await drain('g2');
      // The SDK's own retry of a removal that applied: recognised at once.
      metadata.faults.fail('delete', { when: 'retried', match: spRemoval });
      metadata.faults.fail('delete', { when: 'retried', match: registry('g2') });
      const before = metadata.faults.injected;
      expect((await remove('g2')).status).toBe(204);
      expect(metadata.faults.injected - before).toBe(2);
      expect(await listed()).not.toContain('g2');
      await startsAfresh('g2');

      // Applied, then the answer lost: the request fails, the group is still listed, and
      // deleting again finishes it.
      await drain('g2');
      metadata.faults.fail('delete', { when: 'after', match: spRemoval });
      expect((await remove('g2')).status).toBe(500);
      expect(await listed()).toContain('g2');
      expect((await remove('g2')).status).toBe(204);
      expect(await listed()).not.toContain('g2');
      await startsAfresh('g2');

      // The registry's removal applied with its answer lost: the group is gone, and a retry is
      // answered as for a group that does not exist.
      await drain('g2');
      metadata.faults.fail('delete', { when: 'after', match: registry('g2') });
      expect((await remove('g2')).status).toBe(500);
      expect(await listed()).not.toContain('g2');
      expect((await remove('g2')).status).toBe(404);
      await startsAfresh('g2');
    });

    it('stopped midway, leaves the group listed with the rest of its state; deleting again finishes', async () => {
      await api.earliest('g3');
      await drain('g3');
      // One share-partition's removal fails before it applies (the process dies there).
      metadata.faults.fail('delete', { when: 'before', match: (k) => k.includes('|sp#del#1') });
      expect((await remove('g3')).status).toBe(500);
      expect(await listed()).toContain('g3');
      const left = (await api.describe('g3')).partitions as { partition_id: number; start_offset: number }[];
      expect(left.map((p) => [p.partition_id, p.start_offset])).toEqual([[1, 2]]);
      expect((await remove('g3')).status).toBe(204);
      expect(await listed()).not.toContain('g3');
      await startsAfresh('g3');
    });

    it('a receive that starts the group again while the registry goes keeps it listed', async () => {
      await api.earliest('g4');
      await drain('g4');
      const gate = metadata.faults.gate('delete', registry('g4'));
      const deleting = remove('g4');
      await gate.reached;
      // Every share-partition is gone: this receive starts the group afresh.
      const got = await api.receive('g4', ['del'], 'late', 1);
      expect(got.map((r) => r.delivery_count)).toEqual([1]);
      gate.release();
      expect((await deleting).status).toBe(204);
      expect(await listed()).toContain('g4');
      expect((await api.describe('g4')).partitions).toHaveLength(1);
    });
  });
}
