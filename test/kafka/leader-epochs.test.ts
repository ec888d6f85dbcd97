/**
 * Leader epochs on the listener (KIP-320): Fetch and OffsetForLeaderEpoch check the client's
 * current leader epoch against the partition's, and OffsetForLeaderEpoch answers where an epoch
 * ends from the partition's epoch history.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as m from '../../src/kafka/protocol/messages/index.js';
import { ERRORS } from '../../src/wire/errors.js';
import { startKafkaServer, type TestKafkaServer } from './support/kafka-server.js';
import { RawClient } from './support/raw-client.js';

let s: TestKafkaServer;
let c: RawClient;
beforeAll(async () => {
  s = await startKafkaServer();
  const topic = await s.services.topics.create({ name: 'epochs', partitionCount: 1, replicationFactor: 1 });
  await fetch(`${s.http}/topics/epochs/records:batch`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      entries: [0, 1, 2].map((i) => ({ id: String(i), partition_id: 0, value: { type: 'STRING', data: `v${i}` } })),
    }),
  });
  expect((await s.services.log.state(topic, 0)).highWatermark).toBe(3);
  c = await RawClient.open(s.broker);
});
afterAll(async () => {
  c?.close();
  await s?.close();
});

const fetchWith = async (currentLeaderEpoch: number) =>
  (
    await c.request(m.Fetch, 12, {
      maxWaitMs: 0,
      minBytes: 0,
      isolationLevel: 0,
      sessionId: 0,
      topics: [
        {
          topic: 'epochs',
          partitions: [{ partition: 0, currentLeaderEpoch, fetchOffset: 0, partitionMaxBytes: 1 << 20 }],
        },
      ],
    })
  ).body.responses[0].partitions[0];

const epochOf = async (currentLeaderEpoch: number, leaderEpoch: number) =>
  (
    await c.request(m.OffsetForLeaderEpoch, 4, {
      replicaId: -1,
      topics: [{ topic: 'epochs', partitions: [{ partition: 0, currentLeaderEpoch, leaderEpoch }] }],
    })
  ).body.topics[0].partitions[0];

const listLatest = async (currentLeaderEpoch: number) =>
  (
    await c.request(m.ListOffsets, 6, {
      replicaId: -1,
      isolationLevel: 0,
      topics: [{ name: 'epochs', partitions: [{ partitionIndex: 0, currentLeaderEpoch, timestamp: -1 }] }],
    })
  ).body.topics[0].partitions[0];

describe('current leader epoch', () => {
  it("ListOffsets answers the epoch of the offset, and checks the client's", async () => {
    const leaderEpoch = (await s.services.log.state(await s.services.topics.get('epochs'), 0)).leaderEpoch;
    expect(await listLatest(leaderEpoch)).toMatchObject({ errorCode: 0, offset: 3, leaderEpoch });
    expect((await listLatest(leaderEpoch + 1)).errorCode).toBe(ERRORS.UNKNOWN_LEADER_EPOCH.code);
  });

  it('Fetch serves the current epoch and no epoch, and answers a newer one UNKNOWN_LEADER_EPOCH', async () => {
    const leaderEpoch = (await s.services.log.state(await s.services.topics.get('epochs'), 0)).leaderEpoch;
    for (const current of [leaderEpoch, -1]) {
      const p = await fetchWith(current);
      expect(p.errorCode).toBe(0);
      expect(p.records.byteLength).toBeGreaterThan(0);
    }
    const newer = await fetchWith(leaderEpoch + 1);
    expect(newer).toMatchObject({ errorCode: ERRORS.UNKNOWN_LEADER_EPOCH.code, records: null });
  });

  it('OffsetForLeaderEpoch answers the log end offset for the latest epoch, unknown for a newer one', async () => {
    const leaderEpoch = (await s.services.log.state(await s.services.topics.get('epochs'), 0)).leaderEpoch;
    expect(await epochOf(leaderEpoch, leaderEpoch)).toMatchObject({ errorCode: 0, leaderEpoch, endOffset: 3 });
    expect(await epochOf(-1, leaderEpoch + 3)).toMatchObject({ errorCode: 0, leaderEpoch: -1, endOffset: -1 });
    expect((await epochOf(leaderEpoch + 1, leaderEpoch)).errorCode).toBe(ERRORS.UNKNOWN_LEADER_EPOCH.code);
  });
});
