/**
 * Share groups over HTTP (KIP-932 semantics) on the three backends: acquisition under a lock,
 * acknowledgement by offset, redelivery after a release or a lock's end, archiving after the
 * delivery count limit, share.auto.offset.reset and the in-flight bound.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { allBackends } from '../support/backends.js';
import { testApp } from '../support/test-app.js';
import type { Storage } from '../../src/compose.js';
import { receivedListSchema } from '../../src/http/share-group-routes.js';
import { manualClock, shareClient } from './support.js';

for (const backend of allBackends) {
  describe(`share groups over HTTP on ${backend.name}`, () => {
    let storage: Storage;
    let stop: () => Promise<void>;
    const clock = manualClock();
    let api: ReturnType<typeof shareClient>;
    let call: ReturnType<typeof testApp>['call'];
    let services: ReturnType<typeof testApp>['services'];

    beforeAll(async () => {
      ({ storage, stop } = await backend.start());
      ({ call, services } = testApp({ storage, clock }));
      api = shareClient(call);
      for (const t of ['q', 'latest', 'locks', 'many', 'shape', 'marks'])
        expect((await call('POST', 'topics', { topic_name: t, partitions_count: 1 })).status).toBe(201);
    }, 60_000);
    afterAll(() => stop?.());

    it('acquires records for one receiver at a time and moves SPSO past acknowledged ones', async () => {
      await api.produce(
        'q',
        Array.from({ length: 10 }, (_, i) => `m${i}`),
      );
      await api.earliest('g1');
      const a = await api.receive('g1', ['q'], 'a', 4);
      expect(a.map((r) => [r.offset, r.delivery_count, r.value?.data])).toEqual([
        [0, 1, 'm0'],
        [1, 1, 'm1'],
        [2, 1, 'm2'],
        [3, 1, 'm3'],
      ]);
      const b = await api.receive('g1', ['q'], 'b', 100);
      expect(b.map((r) => r.offset)).toEqual([4, 5, 6, 7, 8, 9]);
      expect(await api.receive('g1', ['q'], 'c', 100)).toEqual([]);
      // b may not acknowledge a's records; a may.
      expect(await api.ack('g1', 'b', [{ topic: 'q', offset: 0, type: 'accept' }])).toEqual(['INVALID_RECORD_STATE']);
      expect(await api.ack('g1', 'a', [{ topic: 'q', offset: 0, last: 3, type: 'accept' }])).toEqual([
        null,
        null,
        null,
        null,
      ]);
      // Acknowledged once: a second acknowledgement is refused.
      expect(await api.ack('g1', 'a', [{ topic: 'q', offset: 1, type: 'accept' }])).toEqual(['INVALID_RECORD_STATE']);
      const d = await api.describe('g1');
      expect(d.partitions).toEqual([
        expect.objectContaining({
          topic_name: 'q',
          start_offset: 4,
          end_offset: 10,
          high_watermark: 10,
          lag: 6,
          in_flight: { available: 0, acquired: 6, acknowledged: 0, archived: 0 },
        }),
      ]);
      // b acknowledges in one request: accept, reject, release, renew.
      expect(
        await api.ack('g1', 'b', [
          { topic: 'q', offset: 4, last: 6, type: 'accept' },
          { topic: 'q', offset: 7, type: 'reject' },
          { topic: 'q', offset: 8, type: 'release' },
          { topic: 'q', offset: 9, type: 'renew' },
        ]),
      ).toEqual([null, null, null, null, null, null]);
      const again = await api.receive('g1', ['q'], 'c', 100);
      expect(again.map((r) => [r.offset, r.delivery_count])).toEqual([[8, 2]]);
      const after = await api.describe('g1');
      expect(after.partitions[0]).toMatchObject({ start_offset: 8, end_offset: 10, lag: 2 });
    });

    it('starts a new share-partition at the high watermark (share.auto.offset.reset=latest)', async () => {
      await api.produce('latest', ['old1', 'old2']);
      expect(await api.receive('glatest', ['latest'], 'a')).toEqual([]);
      await api.produce('latest', ['new1']);
      const got = await api.receive('glatest', ['latest'], 'a');
      expect(got.map((r) => [r.offset, r.value?.data])).toEqual([[2, 'new1']]);
    });

    it('answers a receive in the shape its schema lists, key, value and headers in each format', async () => {
      const produced = await call('POST', 'topics/shape/records:batch', {
        entries: [
          {
            id: 0,
            partition_id: 0,
            timestamp: '2023-11-14T22:13:05.678Z',
            key: { type: 'STRING', data: 'k "quoted" \\ é' },
            value: { type: 'JSON', data: { n: 1, s: 'x' } },
            headers: [
              { name: 'h"1', value: Buffer.from('v1').toString('base64') },
              { name: 'h2', value: null },
            ],
          },
          { id: 1, partition_id: 0, timestamp: '2023-11-14T22:13:05.678Z', value: null },
        ],
      });
      expect(produced.body.failures, JSON.stringify(produced.body)).toEqual([]);
      await api.earliest('gshape');
      const expected = (format: string, key: unknown, value: unknown, offset: number, member: string) => ({
        topic_name: 'shape',
        partition_id: 0,
        offset,
        timestamp: '2023-11-14T22:13:05.678Z',
        key,
        value,
        headers:
          offset === 0
            ? [
                { name: 'h"1', value: Buffer.from('v1').toString('base64') },
                { name: 'h2', value: null },
              ]
            : [],
        delivery_count: format === 'binary' ? 1 : format === 'string' ? 2 : 3,
        lock_expires_at: new Date(clock.now() + 30_000).toISOString(),
        member,
      });
      const keyBytes = Buffer.from('k "quoted" \\ é');
      const valueText = JSON.stringify({ n: 1, s: 'x' });
      const shows = {
        binary: [
          { type: 'BINARY', data: keyBytes.toString('base64') },
          { type: 'BINARY', data: Buffer.from(valueText).toString('base64') },
        ],
        string: [
          { type: 'STRING', data: 'k "quoted" \\ é' },
          { type: 'STRING', data: valueText },
        ],
        json: [
          { type: 'STRING', data: 'k "quoted" \\ é' },
          { type: 'JSON', data: { n: 1, s: 'x' } },
        ],
      };
      for (const [format, [key, value]] of Object.entries(shows)) {
        const member = `m "${format}"`;
        const res = await call('POST', 'share-groups/gshape/records:receive', {
          topics: ['shape'],
          member_id: member,
          format,
        });
        expect(res.status).toBe(200);
        expect(receivedListSchema.parse(res.body)).toBeTruthy();
        const { member: _, ...first } = expected(format, key, value, 0, member);
        const { member: __, ...second } = expected(format, null, null, 1, member);
        expect(res.body).toEqual({
          kind: 'KafkaShareRecordList',
          group_id: 'gshape',
          member_id: member,
          data: [first, second],
        });
        // Released, for the next format's receive to take them again.
        expect(await api.ack('gshape', member, [{ topic: 'shape', offset: 0, last: 1, type: 'release' }])).toEqual([
          null,
          null,
        ]);
      }
    });

    it('redelivers a record whose lock ended, refuses late acknowledgements, archives after the delivery count', async () => {
      await api.produce('locks', ['x']);
      await api.earliest('glocks');
      for (let delivery = 1; delivery <= 5; delivery++) {
        const got = await api.receive('glocks', ['locks'], `w${delivery}`);
        expect(got.map((r) => [r.offset, r.delivery_count])).toEqual([[0, delivery]]);
        // Locked: nobody else gets it.
        expect(await api.receive('glocks', ['locks'], 'other')).toEqual([]);
        if (delivery === 2) {
          // Renewed: still locked past the first 30 s.
          expect(await api.ack('glocks', 'w2', [{ topic: 'locks', offset: 0, type: 'renew', count: 2 }])).toEqual([
            null,
          ]);
          clock.advance(20_000);
          expect(await api.receive('glocks', ['locks'], 'other')).toEqual([]);
        }
        clock.advance(30_001);
        // The lock ended: its holder's acknowledgement comes too late.
        expect(await api.ack('glocks', `w${delivery}`, [{ topic: 'locks', offset: 0, type: 'accept' }])).toEqual([
          'INVALID_RECORD_STATE',
        ]);
      }
      // Fifth lock ended: archived, never delivered again, and SPSO moved past it.
      expect(await api.receive('glocks', ['locks'], 'w6')).toEqual([]);
      const d = await api.describe('glocks');
      expect(d.partitions[0]).toMatchObject({ start_offset: 1, end_offset: 1, lag: 0 });
    });

    it('holds at most group.share.partition.max.record.locks (200) records in flight per share-partition', async () => {
      await api.produce(
        'many',
        Array.from({ length: 250 }, (_, i) => `r${i}`),
      );
      await api.earliest('gmany');
      const first = await api.receive('gmany', ['many'], 'a', 1000);
      expect(first).toHaveLength(200);
      expect(await api.receive('gmany', ['many'], 'b', 1000)).toEqual([]);
      // Acknowledging the first 50 makes room for 50 more.
      await api.ack('gmany', 'a', [{ topic: 'many', offset: 0, last: 49, type: 'accept' }]);
      const more = await api.receive('gmany', ['many'], 'b', 1000);
      expect(more.map((r) => r.offset)).toEqual(Array.from({ length: 50 }, (_, i) => 200 + i));
    });

    it("moves SPEO past transaction markers at the log's tail, so the lag comes to 0", async () => {
      const topic = await services.topics.get('marks');
      const producer = { producerId: 7_000_000, producerEpoch: 0, transactional: true };
      const appended = (
        await services.log.append(
          topic,
          [{ partition: 0, records: [{ key: null, value: Buffer.from('t0'), headers: [], timestamp: 1 }] }],
          { producer: { ...producer, baseSequences: new Map([[0, 0]]) } },
        )
      ).get(0)!;
      expect(appended.ok).toBe(true);
      await api.earliest('gmarks');
      const got = await api.receive('gmarks', ['marks'], 'w');
      expect(got.map((r) => r.offset)).toEqual([0]);
      expect(await api.ack('gmarks', 'w', [{ topic: 'marks', offset: 0, type: 'accept' }])).toEqual([null]);
      // The transaction ends after its record was delivered: its marker (offset 1) is the log's tail.
      const marker = await services.log.writeMarker(topic, 0, { type: 'COMMIT', ...producer, coordinatorEpoch: 0 });
      expect(marker).toEqual({ written: true, offset: 1 });
      expect((await api.describe('gmarks')).partitions[0]).toMatchObject({ end_offset: 1, high_watermark: 2, lag: 1 });
      expect(await api.receive('gmarks', ['marks'], 'w')).toEqual([]);
      expect((await api.describe('gmarks')).partitions[0]).toMatchObject({
        start_offset: 2,
        end_offset: 2,
        high_watermark: 2,
        lag: 0,
      });
    });

    it('answers bad requests with Kafka error names and no partial state', async () => {
      const bad = await call('POST', 'share-groups/g1/records:acknowledge', {
        member_id: 'a',
        acknowledgements: [{ topic_name: 'q', partition_id: 0, offset: 1, type: 'maybe' }],
      });
      expect(bad.status).toBe(400);
      const unknown = await call('POST', 'share-groups/gx/records:receive', { topics: ['nope'] });
      expect(unknown.status).toBe(404);
      expect(unknown.body.error).toBe('UNKNOWN_TOPIC_OR_PARTITION');
      expect((await call('GET', 'share-groups/never')).body.error).toBe('GROUP_ID_NOT_FOUND');
      const badConfig = await call('PUT', 'share-groups/g1/configs/share.delivery.count.limit', { value: '99' });
      expect(badConfig.status).toBe(400);
      expect(badConfig.body.error).toBe('INVALID_CONFIG');
      const list = await call('GET', 'share-groups');
      expect(list.body.data.map((g: { group_id: string }) => g.group_id)).toEqual(
        expect.arrayContaining(['g1', 'glatest', 'glocks', 'gmany']),
      );
    });

    it('lists share groups beside consumer groups, with their type and state (ListGroups)', async () => {
      const hb = await call('POST', 'consumer-groups/cg/consumers:heartbeat', {
        member_epoch: 0,
        subscribed_topic_names: ['q'],
      });
      expect(hb.status, JSON.stringify(hb.body)).toBe(200);
      // A share group is STABLE while a record is held under an unexpired lock, EMPTY after.
      await api.produce('latest', ['busy']);
      expect((await api.receive('glatest', ['latest'], 'holder')).length).toBeGreaterThan(0);
      expect((await api.describe('glatest')).state).toBe('STABLE');
      const all = await call('GET', 'groups');
      expect(all.status).toBe(200);
      const byId = new Map(
        (all.body.data as { group_id: string; type: string; state: string }[]).map((g) => [g.group_id, g]),
      );
      expect(byId.get('cg')).toMatchObject({ type: 'CONSUMER', protocol_type: 'consumer', state: 'STABLE' });
      expect(byId.get('glatest')).toMatchObject({ type: 'SHARE', protocol_type: 'share', state: 'STABLE' });
      const shares = await call('GET', 'groups?types=share');
      expect(shares.body.data.map((g: { type: string }) => g.type)).toEqual(shares.body.data.map(() => 'SHARE'));
      expect(shares.body.data.map((g: { group_id: string }) => g.group_id)).toContain('glatest');
      expect((await call('GET', 'groups?types=streams')).status).toBe(400);
      clock.advance(30_001);
      expect((await api.describe('glatest')).state).toBe('EMPTY');
    });

    it("describes a share group's live Kafka-protocol members, and drops one whose session ended", async () => {
      const joined = await services.share.members.heartbeat('glatest', {
        memberId: 'm-1',
        memberEpoch: 0,
        rackId: null,
        subscribedTopics: ['latest'],
        clientId: 'share-client',
        clientHost: '/10.0.0.1',
      });
      const d = await api.describe('glatest');
      expect(d.state).toBe('STABLE');
      expect(d.members).toEqual([
        {
          member_id: 'm-1',
          member_epoch: joined.memberEpoch,
          client_id: 'share-client',
          client_host: '/10.0.0.1',
          rack_id: null,
          subscribed_topic_names: ['latest'],
          assignment: [{ topic_name: 'latest', partition_ids: [0] }],
          last_heartbeat: new Date(clock.now()).toISOString(),
        },
      ]);
      clock.advance(services.share.members.limits.sessionTimeoutMs);
      const after = await api.describe('glatest');
      expect(after.members).toEqual([]);
      expect(after.state).toBe('EMPTY');
    });
  });
}
