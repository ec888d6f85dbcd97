/**
 * kafkajs, unmodified, against the Kafka listener: produce with every acks setting and idempotence,
 * a group of three with rebalances on join and leave, commit and resume, seek, admin, and records
 * and offsets shared with the HTTP API in the same process.
 */
import { Kafka, logLevel, type Consumer, type EachMessagePayload } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startKafkaServer, type TestKafkaServer } from './support/kafka-server.js';
import { unpackProducers } from '../../src/partition/producer-state.js';
import { readRecords } from '../support/read-records.js';
import { until } from '../support/until.js';

process.env.KAFKAJS_NO_PARTITIONER_WARNING = '1';

let s: TestKafkaServer;
let kafka: Kafka;
beforeAll(async () => {
  s = await startKafkaServer();
  kafka = new Kafka({
    brokers: [s.broker],
    clientId: 'kafkajs-test',
    logLevel: logLevel.NOTHING,
    retry: { retries: 8, initialRetryTime: 50 },
  });
});
afterAll(async () => {
  await s?.close();
});

const fast = { sessionTimeout: 6000, heartbeatInterval: 300, rebalanceTimeout: 10_000, maxWaitTimeInMs: 200 };

async function createTopic(topic: string, numPartitions: number) {
  const admin = kafka.admin();
  await admin.connect();
  await admin.createTopics({ topics: [{ topic, numPartitions }], waitForLeaders: false });
  await admin.disconnect();
}

async function http(method: string, path: string, body?: unknown) {
  const res = await fetch(`${s.http}/${path}`, {
    method,
    headers: { 'content-type': 'application/json' },
    ...(body ? { body: JSON.stringify(body) } : {}),
  });
  return { status: res.status, body: (await res.json()) as any };
}

describe('produce', () => {
  it('appends with acks 0, 1 and all, and with an idempotent producer', async () => {
    await createTopic('acks', 2);
    const topic = await s.services.topics.get('acks');
    const producer = kafka.producer();
    await producer.connect();
    for (const acks of [1, -1]) {
      const [r] = await producer.send({
        topic: 'acks',
        acks,
        messages: [{ partition: 0, key: 'k', value: `acks=${acks}` }],
      });
      expect(r).toMatchObject({ errorCode: 0, partition: 0 });
    }
    // acks=0 has no answer: the records land after it.
    await producer.send({ topic: 'acks', acks: 0, messages: [{ partition: 0, value: 'acks=0' }] });
    await until('the acks=0 append', async () => (await s.services.log.state(topic, 0)).highWatermark === 3);
    await producer.disconnect();

    const idempotent = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
    await idempotent.connect();
    for (let i = 0; i < 5; i++)
      await idempotent.send({
        topic: 'acks',
        messages: [
          { partition: 1, value: `i${i}` },
          { partition: 1, value: `j${i}` },
        ],
      });
    await idempotent.disconnect();
    const read = await readRecords(s.services.log, topic, 1, 0, 1 << 20);
    expect(read.records.map((r) => Buffer.from(r.value!).toString())).toEqual(
      [0, 1, 2, 3, 4].flatMap((i) => [`i${i}`, `j${i}`]),
    );
    // The batches carried the producer id InitProducerId gave, and its sequences were checked.
    expect(unpackProducers((await s.services.log.state(topic, 1)).pids)).toEqual([
      expect.objectContaining({ baseSequence: 8, lastSequence: 9 }),
    ]);
    const values = (await readRecords(s.services.log, topic, 0, 0, 1 << 20)).records.map((r) =>
      Buffer.from(r.value!).toString(),
    );
    expect(values).toEqual(['acks=1', 'acks=-1', 'acks=0']);
  });
});

describe('consumer groups', () => {
  it('three consumers share the partitions, rebalancing as members join and leave', async () => {
    await createTopic('grouped', 6);
    const assignments = new Map<string, number[]>();
    const seen = new Map<string, string>();
    const consumers: Consumer[] = [];
    const start = async (name: string) => {
      const c = kafka.consumer({ groupId: 'three', ...fast });
      c.on(c.events.GROUP_JOIN, (e) => assignments.set(name, e.payload.memberAssignment.grouped ?? []));
      await c.connect();
      await c.subscribe({ topic: 'grouped', fromBeginning: true });
      await c.run({
        eachMessage: async ({ message }: EachMessagePayload) => void seen.set(message.value!.toString(), name),
      });
      consumers.push(c);
      return c;
    };
    const covered = (names: string[]) => {
      const all = names.flatMap((n) => assignments.get(n) ?? []).sort();
      return (
        names.every((n) => (assignments.get(n) ?? []).length > 0) &&
        JSON.stringify(all) === JSON.stringify([0, 1, 2, 3, 4, 5])
      );
    };
    await start('a');
    await until('a holds every partition', () => covered(['a']));
    await start('b');
    await start('c');
    await until('a, b and c share the partitions', () => covered(['a', 'b', 'c']), 30_000);

    const producer = kafka.producer();
    await producer.connect();
    await producer.send({
      topic: 'grouped',
      messages: Array.from({ length: 60 }, (_, i) => ({ value: `m${i}`, partition: i % 6 })),
    });
    await until('all 60 consumed', () => seen.size === 60);
    expect(new Set(seen.values())).toEqual(new Set(['a', 'b', 'c']));

    const leaving = consumers.pop()!;
    await leaving.disconnect();
    assignments.delete('c');
    await until('a and b take c partitions', () => covered(['a', 'b']), 30_000);
    await producer.send({
      topic: 'grouped',
      messages: Array.from({ length: 12 }, (_, i) => ({ value: `n${i}`, partition: i % 6 })),
    });
    await until('the 12 later records consumed by a and b', () =>
      [...Array(12).keys()].every((i) => ['a', 'b'].includes(seen.get(`n${i}`) ?? '')),
    );
    await producer.disconnect();
    await Promise.all(consumers.map((c) => c.disconnect()));
    const described = await http('GET', 'consumer-groups/three');
    expect(described.status).toBe(200);
  }, 60_000);

  it('commits offsets and resumes from them; seek moves the position; offsets are shared with HTTP', async () => {
    await createTopic('resume', 1);
    const producer = kafka.producer();
    await producer.connect();
    await producer.send({ topic: 'resume', messages: Array.from({ length: 10 }, (_, i) => ({ value: `r${i}` })) });

    const consume = async (count: number, seekTo?: string) => {
      const got: string[] = [];
      const c = kafka.consumer({ groupId: 'resumer', ...fast });
      await c.connect();
      await c.subscribe({ topic: 'resume', fromBeginning: true });
      await c.run({
        autoCommitThreshold: 1,
        eachMessage: async ({ message }) => void got.push(message.value!.toString()),
      });
      if (seekTo !== undefined) c.seek({ topic: 'resume', partition: 0, offset: seekTo });
      await until(`${count} records`, () => got.length >= count);
      await c.commitOffsets([]);
      await c.disconnect();
      return got;
    };
    expect(await consume(10)).toEqual(Array.from({ length: 10 }, (_, i) => `r${i}`));
    const offsets = await http('GET', 'consumer-groups/resumer/offsets');
    expect(offsets.body.data).toEqual([
      expect.objectContaining({ topic_name: 'resume', partition_id: 0, committed_offset: 10 }),
    ]);

    await producer.send({ topic: 'resume', messages: [{ value: 'r10' }, { value: 'r11' }] });
    expect(await consume(2)).toEqual(['r10', 'r11']);
    const replay = await consume(9, '3');
    expect(replay.slice(0, 9)).toEqual(['r3', 'r4', 'r5', 'r6', 'r7', 'r8', 'r9', 'r10', 'r11']);
    await producer.disconnect();

    // An offset committed over HTTP (group without members) is where a Kafka consumer starts.
    const committed = await http('POST', 'consumer-groups/resumer/offsets:commit', {
      offsets: [{ topic_name: 'resume', partition_id: 0, offset: 11 }],
    });
    expect(committed.status).toBe(200);
    expect(await consume(1)).toEqual(['r11']);
  }, 60_000);
});

describe('the HTTP API and the Kafka listener share the log', () => {
  it('records produced over HTTP are consumed over Kafka, and the reverse', async () => {
    await createTopic('shared', 1);
    const posted = await http('POST', 'topics/shared/records:batch', {
      entries: [
        { id: '1', partition_id: 0, key: { type: 'STRING', data: 'k1' }, value: { type: 'STRING', data: 'from-http' } },
        { id: '2', partition_id: 0, value: { type: 'JSON', data: { n: 1 } } },
      ],
    });
    expect(posted.body.failures).toEqual([]);
    const producer = kafka.producer();
    await producer.connect();
    await producer.send({ topic: 'shared', messages: [{ key: 'k2', value: 'from-kafka', headers: { h: 'v' } }] });
    await producer.disconnect();

    const got: { key: string | null; value: string; offset: string }[] = [];
    const c = kafka.consumer({ groupId: 'sharer', ...fast });
    await c.connect();
    await c.subscribe({ topic: 'shared', fromBeginning: true });
    await c.run({
      eachMessage: async ({ message }) =>
        void got.push({
          key: message.key?.toString() ?? null,
          value: message.value!.toString(),
          offset: message.offset,
        }),
    });
    await until('3 records', () => got.length === 3);
    await c.disconnect();
    expect(got).toEqual([
      { key: 'k1', value: 'from-http', offset: '0' },
      { key: null, value: '{"n":1}', offset: '1' },
      { key: 'k2', value: 'from-kafka', offset: '2' },
    ]);
    const fetched = await http('GET', 'topics/shared/partitions/0/records?offset=2&format=string');
    expect(fetched.body.records).toEqual([
      expect.objectContaining({
        offset: 2,
        key: { type: 'STRING', data: 'k2' },
        value: { type: 'STRING', data: 'from-kafka' },
      }),
    ]);
  });

  it('a long-poll fetch is answered as soon as an HTTP produce lands', async () => {
    await createTopic('longpoll', 1);
    const got: number[] = [];
    const c = kafka.consumer({ groupId: 'poller', ...fast, maxWaitTimeInMs: 5000 });
    await c.connect();
    await c.subscribe({ topic: 'longpoll', fromBeginning: true });
    await c.run({ eachMessage: async () => void got.push(Date.now()) });
    await new Promise((r) => setTimeout(r, 1500)); // the consumer is waiting in a fetch now
    const sent = Date.now();
    await http('POST', 'topics/longpoll/records', { partition_id: 0, value: { type: 'STRING', data: 'ping' } });
    await until('the record', () => got.length === 1);
    await c.disconnect();
    expect(got[0]! - sent).toBeLessThan(2000); // not the 5 s max wait
  }, 20_000);
});

describe('admin', () => {
  it('creates, describes, alters, grows, deletes topics; lists, describes and deletes groups', async () => {
    const admin = kafka.admin();
    await admin.connect();
    expect(
      await admin.createTopics({
        topics: [{ topic: 'adm', numPartitions: 2, configEntries: [{ name: 'retention.ms', value: '3600000' }] }],
      }),
    ).toBe(true);
    expect(await admin.createTopics({ topics: [{ topic: 'adm', numPartitions: 2 }] })).toBe(false); // already exists
    await expect(admin.createTopics({ topics: [{ topic: 'bad name!', numPartitions: 1 }] })).rejects.toMatchObject({
      errors: [expect.objectContaining({ type: 'INVALID_TOPIC_EXCEPTION' })],
    });
    expect(await admin.listTopics()).toContain('adm');
    const meta = await admin.fetchTopicMetadata({ topics: ['adm'] });
    expect(meta.topics[0]!.partitions.map((p) => p.partitionId).sort()).toEqual([0, 1]);

    const configs = await admin.describeConfigs({ resources: [{ type: 2, name: 'adm' }], includeSynonyms: false });
    const entries = configs.resources[0]!.configEntries;
    expect(entries.find((e) => e.configName === 'retention.ms')).toMatchObject({
      configValue: '3600000',
      isDefault: false,
    });
    expect(entries.find((e) => e.configName === 'cleanup.policy')).toMatchObject({
      configValue: 'delete',
      isDefault: true,
    });
    await admin.alterConfigs({
      validateOnly: false,
      resources: [{ type: 2, name: 'adm', configEntries: [{ name: 'cleanup.policy', value: 'compact' }] }],
    });
    expect((await s.services.topics.get('adm')).configs).toEqual({ 'cleanup.policy': 'compact' });

    await admin.createPartitions({ topicPartitions: [{ topic: 'adm', count: 4 }] });
    expect((await s.services.topics.get('adm')).partitionCount).toBe(4);

    const producer = kafka.producer();
    await producer.connect();
    await producer.send({
      topic: 'adm',
      messages: Array.from({ length: 5 }, (_, i) => ({ key: `k${i}`, value: 'v', partition: 0 })),
    });
    await producer.disconnect();
    expect((await admin.fetchTopicOffsets('adm')).find((p) => p.partition === 0)).toMatchObject({
      low: '0',
      high: '5',
    });
    await admin.deleteTopicRecords({ topic: 'adm', partitions: [{ partition: 0, offset: '3' }] });
    expect((await admin.fetchTopicOffsets('adm')).find((p) => p.partition === 0)).toMatchObject({
      low: '3',
      high: '5',
    });

    await admin.setOffsets({ groupId: 'adm-group', topic: 'adm', partitions: [{ partition: 0, offset: '4' }] });
    expect(await admin.fetchOffsets({ groupId: 'adm-group', topics: ['adm'] })).toEqual([
      { topic: 'adm', partitions: expect.arrayContaining([{ partition: 0, offset: '4', metadata: null }]) },
    ]);
    expect((await admin.listGroups()).groups.map((g) => g.groupId)).toContain('adm-group');
    const described = await admin.describeGroups(['adm-group']);
    expect(described.groups[0]).toMatchObject({ groupId: 'adm-group', members: [] });
    await admin.deleteGroups(['adm-group']);
    expect((await admin.listGroups()).groups.map((g) => g.groupId)).not.toContain('adm-group');

    await admin.deleteTopics({ topics: ['adm'] });
    expect(await admin.listTopics()).not.toContain('adm');
    await admin.disconnect();
  });
});
