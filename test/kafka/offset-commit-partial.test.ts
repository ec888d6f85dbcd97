/**
 * OffsetCommit answers each partition's outcome: when the write of some partitions' offsets fails
 * (a store error here, injected on those partitions' items only), those partitions get the error
 * and keep the offset they had, while the others are written and answered NONE, as Kafka answers.
 */
import { afterEach, describe, expect, it } from 'vitest';
import * as m from '../../src/kafka/protocol/messages/index.js';
import { ERRORS } from '../../src/wire/errors.js';
import { awsBackend, memoryBackend } from '../support/backends.js';
import { FaultyMetadataStore } from '../support/fault-injection.js';
import { startKafkaServer, type TestKafkaServer } from './support/kafka-server.js';
import { RawClient } from './support/raw-client.js';

describe.each([memoryBackend, awsBackend])(
  'OffsetCommit with a write failing for some partitions on $name',
  (backend) => {
    let s: TestKafkaServer;
    let c: RawClient;
    let metadata: FaultyMetadataStore;
    let stop: () => Promise<void>;
    afterEach(async () => {
      c?.close();
      await s?.close();
      await stop?.();
    });

    const start = async (topic: string) => {
      const started = await backend.start();
      stop = started.stop;
      metadata = new FaultyMetadataStore(started.storage.metadata);
      s = await startKafkaServer({}, {}, () => ({ ...started.storage, metadata }));
      await s.services.topics.create({ name: topic, partitionCount: 3, replicationFactor: 1 });
      c = await RawClient.open(s.broker);
    };

    const commit = async (version: number, body: Record<string, unknown>, topic: string, offset: number) =>
      (
        await c.request(m.OffsetCommit, version, {
          groupInstanceId: null,
          topics: [
            {
              name: topic,
              partitions: [0, 1, 2].map((p) => ({
                partitionIndex: p,
                committedOffset: offset,
                committedMetadata: 'm',
              })),
            },
          ],
          ...body,
        })
      ).body.topics[0].partitions as { partitionIndex: number; errorCode: number }[];

    const committed = async (groupId: string, topic: string) =>
      (
        await c.request(m.OffsetFetch, 7, {
          groupId,
          topics: [{ name: topic, partitionIndexes: [0, 1, 2] }],
          requireStable: false,
        })
      ).body.topics[0].partitions.map((p: { committedOffset: number }) => p.committedOffset);

    /** The next write of partition 1's offset item fails before it applies. */
    const failPartitionOne = (groupId: string, topic: string) =>
      metadata.faults.fail('put', { match: (k) => k === `group#${groupId}|off#${topic}#1` });

    it('a commit without a member: the partition whose write failed gets its error, the others NONE', async () => {
      await start('pc');
      const admin = { groupId: 'pc-admin', generationIdOrMemberEpoch: -1, memberId: '' };
      expect((await commit(8, admin, 'pc', 5)).map((p) => p.errorCode)).toEqual([0, 0, 0]);
      failPartitionOne('pc-admin', 'pc');
      expect(await commit(8, admin, 'pc', 7)).toEqual([
        { partitionIndex: 0, errorCode: 0 },
        { partitionIndex: 1, errorCode: ERRORS.UNKNOWN_SERVER_ERROR.code },
        { partitionIndex: 2, errorCode: 0 },
      ]);
      expect(metadata.faults.injected).toBe(1);
      expect(await committed('pc-admin', 'pc')).toEqual([7, 5, 7]);
    });

    it('a KIP-848 member commit (v9): the partition whose write failed gets its error, the others NONE', async () => {
      await start('pk');
      const joined = (
        await c.request(m.ConsumerGroupHeartbeat, 0, {
          groupId: 'pk-group',
          memberId: '',
          memberEpoch: 0,
          instanceId: null,
          rackId: null,
          rebalanceTimeoutMs: 10_000,
          subscribedTopicNames: ['pk'],
          serverAssignor: null,
          topicPartitions: null,
        })
      ).body;
      expect(joined.errorCode).toBe(0);
      const member = { groupId: 'pk-group', memberId: joined.memberId, generationIdOrMemberEpoch: joined.memberEpoch };
      expect((await commit(9, member, 'pk', 5)).map((p) => p.errorCode)).toEqual([0, 0, 0]);
      failPartitionOne('pk-group', 'pk');
      expect(await commit(9, member, 'pk', 7)).toEqual([
        { partitionIndex: 0, errorCode: 0 },
        { partitionIndex: 1, errorCode: ERRORS.UNKNOWN_SERVER_ERROR.code },
        { partitionIndex: 2, errorCode: 0 },
      ]);
      expect(metadata.faults.injected).toBe(1);
      expect(await committed('pk-group', 'pk')).toEqual([7, 5, 7]);
    });
  },
);
