import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Kafka, KafkaClientError } from '../../src/client/index.js';
import { startServer, stopServer, tempDir, type LocalServer } from '../support/local-server.js';

describe('admin client against the local server', () => {
  let dir: Awaited<ReturnType<typeof tempDir>>;
  let server: LocalServer;
  let kafka: Kafka;

  beforeAll(async () => {
    dir = await tempDir('client-admin-');
    server = await startServer(dir.path);
    kafka = new Kafka({ url: `${server.origin}/v3/clusters/local` });
  });
  afterAll(async () => {
    await stopServer(server);
    await dir.remove();
  });

  it('creates, lists, describes, alters, grows and deletes topics', async () => {
    const admin = kafka.admin();
    expect(
      await admin.createTopics({
        topics: [
          { topic: 'a', numPartitions: 2, configEntries: [{ name: 'retention.ms', value: '60000' }] },
          { topic: 'b' },
        ],
      }),
    ).toBe(true);
    expect(await admin.createTopics({ topics: [{ topic: 'a' }] })).toBe(false);
    expect(await admin.listTopics()).toEqual(['a', 'b']);
    const d = await admin.describeTopic('a');
    expect(d).toMatchObject({ name: 'a', partitionCount: 2, replicationFactor: 1 });
    expect(d.partitions[1]).toEqual({
      partition: 1,
      leader: 0,
      leaderEpoch: 0,
      replicas: [0],
      isr: [0],
      logStartOffset: 0,
      highWatermark: 0,
      logEndOffset: 0,
    });
    const configs = await admin.describeTopicConfigs('a');
    expect(configs.find((c) => c.name === 'retention.ms')).toMatchObject({ value: '60000', isDefault: false });
    await admin.alterTopicConfigs('a', { set: { 'cleanup.policy': 'compact' }, delete: ['retention.ms'] });
    const after = await admin.describeTopicConfigs('a');
    expect(after.find((c) => c.name === 'retention.ms')).toMatchObject({ isDefault: true });
    expect(after.find((c) => c.name === 'cleanup.policy')).toMatchObject({ value: 'compact', isDefault: false });
    await expect(admin.alterTopicConfigs('a', { set: { 'retention.ms': 'soon' } })).rejects.toMatchObject({
      type: 'INVALID_CONFIG',
      retriable: false,
    });
    await admin.createPartitions({ topicPartitions: [{ topic: 'a', count: 5 }] });
    expect((await admin.describeTopic('a')).partitionCount).toBe(5);
    await admin.deleteTopics({ topics: ['b'] });
    expect(await admin.listTopics()).toEqual(['a']);
    const e = await admin.describeTopic('b').catch((x: unknown) => x);
    expect(e).toBeInstanceOf(KafkaClientError);
    expect(e).toMatchObject({ type: 'UNKNOWN_TOPIC_OR_PARTITION', status: 404 });
  });

  it('lists offsets (earliest, latest, by time) and deletes records', async () => {
    const admin = kafka.admin();
    await admin.createTopics({ topics: [{ topic: 'offsets', numPartitions: 2 }] });
    const producer = kafka.producer();
    const t0 = Date.now();
    await producer.send({
      topic: 'offsets',
      messages: Array.from({ length: 10 }, (_, i) => ({ value: `v${i}`, partition: 0, timestamp: t0 + i * 1000 })),
    });
    await producer.close();
    expect(await admin.listOffset('offsets', 0, 'earliest')).toMatchObject({ offset: 0 });
    expect(await admin.listOffset('offsets', 0, 'latest')).toMatchObject({ offset: 10 });
    expect(await admin.listOffset('offsets', 0, { timestamp: t0 + 4500 })).toEqual({ offset: 5, timestamp: t0 + 5000 });
    expect(await admin.fetchTopicOffsets('offsets')).toEqual([
      { partition: 0, offset: 10, high: 10, low: 0 },
      { partition: 1, offset: 0, high: 0, low: 0 },
    ]);
    expect(await admin.fetchTopicOffsetsByTimestamp('offsets', t0 + 2000)).toEqual([
      { partition: 0, offset: 2 },
      { partition: 1, offset: 0 },
    ]);
    const deleted = await admin.deleteTopicRecords({ topic: 'offsets', partitions: [{ partition: 0, offset: 4 }] });
    expect(deleted).toEqual([{ partition: 0, lowWatermark: 4 }]);
    expect((await admin.fetchTopicOffsets('offsets'))[0]).toMatchObject({ low: 4, high: 10 });
  });

  it('lists, describes, resets (dry run, then execute) and deletes consumer groups', async () => {
    const admin = kafka.admin();
    await admin.createTopics({ topics: [{ topic: 'g', numPartitions: 2 }] });
    const producer = kafka.producer();
    await producer.send({
      topic: 'g',
      messages: Array.from({ length: 8 }, (_, i) => ({ value: `v${i}`, partition: i % 2 })),
    });
    await producer.close();
    await admin.setOffsets({
      groupId: 'reporting',
      topic: 'g',
      partitions: [
        { partition: 0, offset: 1 },
        { partition: 1, offset: 3 },
      ],
    });
    expect((await admin.listGroups()).groups).toEqual([{ groupId: 'reporting', protocolType: '', state: 'Empty' }]);
    const d = await admin.describeGroup('reporting');
    expect(d.partitions.map((p) => [p.partition, p.committedOffset, p.logEndOffset, p.lag])).toEqual([
      [0, 1, 4, 3],
      [1, 3, 4, 1],
    ]);
    expect(await admin.fetchOffsets({ groupId: 'reporting', topics: ['g'] })).toEqual([
      {
        topic: 'g',
        partitions: [
          { partition: 0, offset: 1, metadata: '' },
          { partition: 1, offset: 3, metadata: '' },
        ],
      },
    ]);
    const plan = await admin.resetGroupOffsets({
      groupId: 'reporting',
      scope: { allTopics: true },
      strategy: { shiftBy: -1 },
    });
    expect(plan).toEqual([
      { topic: 'g', partition: 0, currentOffset: 1, newOffset: 0 },
      { topic: 'g', partition: 1, currentOffset: 3, newOffset: 2 },
    ]);
    expect((await admin.describeGroup('reporting')).partitions[0]!.committedOffset).toBe(1); // a dry run
    await admin.resetGroupOffsets({
      groupId: 'reporting',
      scope: { topics: [{ topic: 'g', partitions: [1] }] },
      strategy: { toLatest: true },
      dryRun: false,
    });
    expect((await admin.describeGroup('reporting')).partitions.map((p) => p.committedOffset)).toEqual([1, 4]);
    await admin.resetOffsets({ groupId: 'reporting', topic: 'g', earliest: true });
    expect((await admin.describeGroup('reporting')).partitions.map((p) => p.committedOffset)).toEqual([0, 0]);

    // A group with a member cannot be reset or deleted.
    const consumer = kafka.consumer({ groupId: 'reporting', heartbeatIntervalMs: 100 });
    await consumer.subscribe({ topics: ['g'] });
    await consumer.poll({ timeoutMs: 300 });
    await expect(
      admin.resetGroupOffsets({
        groupId: 'reporting',
        scope: { allTopics: true },
        strategy: { toEarliest: true },
        dryRun: false,
      }),
    ).rejects.toMatchObject({ type: 'NON_EMPTY_GROUP' });
    await expect(admin.deleteGroups(['reporting'])).rejects.toMatchObject({ type: 'NON_EMPTY_GROUP' });
    expect((await admin.describeGroup('reporting')).members.map((m) => m.subscribedTopics)).toEqual([['g']]);
    await consumer.close();
    await admin.deleteGroups(['reporting']);
    expect((await admin.listGroups()).groups).toEqual([]);
    await expect(admin.describeGroup('reporting')).rejects.toMatchObject({ type: 'GROUP_ID_NOT_FOUND' });
  });
});
