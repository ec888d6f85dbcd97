import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createStorage } from '../../src/compose.js';
import { groupApp, manualClock } from '../groups/helpers.js';

describe('consumer groups across a server restart (local backend: SQLite + files)', () => {
  let dir: string | undefined;
  afterEach(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('keeps committed offsets, members, generations and REST v2 instances', async () => {
    dir = await mkdtemp(join(tmpdir(), 'groups-restart-'));
    const backend = { kind: 'local' as const, dataDir: dir, replicaStores: 1, fsync: false };
    const clock = manualClock();

    const first = createStorage(backend);
    const g1 = groupApp({ storage: first, clock });
    await g1.createTopic('t', 2);
    await g1.produce('t', 0, 4);
    await g1.produce('t', 1, 4);
    const m = await g1.join('g', ['t'], { 'session.timeout.ms': 60_000 });
    expect(
      (
        await g1.call('POST', 'consumer-groups/g/offsets:commit', {
          member_id: m.member_id,
          generation_id: m.member_epoch,
          offsets: [{ topic_name: 't', partition_id: 0, offset: 3, metadata: 'kept' }],
        })
      ).status,
    ).toBe(200);
    expect(
      (
        await g1.call('POST', '/consumers/v2g', {
          name: 'c',
          'auto.offset.reset': 'earliest',
          'auto.commit.enable': 'false',
        })
      ).status,
    ).toBe(200);
    await g1.call('POST', '/consumers/v2g/instances/c/subscription', { topics: ['t'] });
    expect((await g1.call('GET', '/consumers/v2g/instances/c/records?timeout=0')).body).toHaveLength(8);
    await g1.call('POST', '/consumers/v2g/instances/c/offsets', { offsets: [{ topic: 't', partition: 1, offset: 1 }] });
    const before = await g1.describe('g');
    first.close();

    const second = createStorage(backend);
    try {
      const g2 = groupApp({ storage: second, clock });
      clock.advance(1_000);
      const after = await g2.describe('g');
      expect(after).toMatchObject({ state: 'STABLE', group_epoch: before.group_epoch });
      expect(after.partitions).toEqual(before.partitions);
      expect(after.partitions[0]).toMatchObject({ committed_offset: 3, log_end_offset: 4, lag: 1 });
      // The member carries on with the generation it had.
      expect(await g2.heartbeat('g', { member_id: m.member_id, member_epoch: m.member_epoch })).toMatchObject({
        status: 200,
        body: { member_epoch: m.member_epoch },
      });
      expect((await g2.call('GET', 'consumer-groups/g/offsets')).body.data[0]).toMatchObject({
        committed_offset: 3,
        offset_metadata: 'kept',
      });
      // The v2 instance survives too: its positions continue where they were.
      expect((await g2.call('GET', '/consumers/v2g/instances/c/records?timeout=0')).body).toEqual([]);
      await g2.produce('t', 1, 1);
      expect(
        (await g2.call('GET', '/consumers/v2g/instances/c/records?timeout=0')).body.map(
          (r: { offset: number }) => r.offset,
        ),
      ).toEqual([4]);
      expect(
        (await g2.call('GET', '/consumers/v2g/instances/c/offsets?topic=t&partition=1')).body.offsets[0].offset,
      ).toBe(2);
      expect(
        (await g2.call('GET', 'consumer-groups')).body.data.map(
          (x: { consumer_group_id: string }) => x.consumer_group_id,
        ),
      ).toEqual(['g', 'v2g']);
    } finally {
      second.close();
    }
  });
});
