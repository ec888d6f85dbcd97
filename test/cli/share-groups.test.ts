/**
 * `kafka-log share-groups`: configs set and reset, the groups listed, a group described with its
 * share-partitions' SPSO, SPEO, in-flight records and lag, as records are received and acknowledged.
 */
import { randomUUID } from 'node:crypto';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { main } from '../../src/cli/main.js';
import { Kafka } from '../../src/client/index.js';
import { ShareGroupHeartbeat } from '../../src/kafka/protocol/messages/index.js';
import { RawClient } from '../kafka/support/raw-client.js';
import { freePort, startServer, stopServer, tempDir, type LocalServer } from '../support/local-server.js';

describe('kafka-log share-groups', () => {
  let dir: Awaited<ReturnType<typeof tempDir>>;
  let server: LocalServer;
  let kafka: Kafka;
  let kafkaPort: number;

  const cli = async (args: string[]) => {
    const out: string[] = [];
    const err: string[] = [];
    const code = await main(args, {
      out: (l) => out.push(l),
      err: (l) => err.push(l),
      stdin: Readable.from([]),
      env: { KAFKA_LOG_URL: server.origin },
      signal: new AbortController().signal,
    });
    return { code, out, err };
  };

  beforeAll(async () => {
    dir = await tempDir('share-cli-');
    kafkaPort = await freePort();
    server = await startServer(dir.path, 0, { KAFKA_HOST: '127.0.0.1' }, kafkaPort);
    kafka = new Kafka({ url: `${server.origin}/v3/clusters/local` });
    await kafka.admin().createTopics({ topics: [{ topic: 'tasks', numPartitions: 1 }] });
    const producer = kafka.producer();
    await producer.send({ topic: 'tasks', messages: ['a', 'b', 'c', 'd', 'e'].map((value) => ({ value })) });
    await producer.disconnect();
  }, 60_000);
  afterAll(async () => {
    await stopServer(server);
    await dir.remove();
  });

  it('sets configs, lists and describes share groups with SPSO, SPEO, in-flight records and lag', async () => {
    expect(
      await cli(['share-groups', 'config', '--group', 'workers', '--set', 'share.auto.offset.reset=earliest']),
    ).toEqual({ code: 0, out: ['Completed updating config for share group workers.'], err: [] });
    const bad = await cli(['share-groups', 'config', '--group', 'workers', '--set', 'share.delivery.count.limit=1']);
    expect(bad.code).toBe(1);
    expect(bad.err[0]).toMatch(/INVALID_CONFIG/);

    const consumer = kafka.shareConsumer({ groupId: 'workers', maxPollRecords: 3, acknowledgementMode: 'explicit' });
    consumer.subscribe(['tasks']);
    const got = await consumer.poll(1000);
    expect(got.map((r) => r.value!.toString())).toEqual(['a', 'b', 'c']);
    consumer.acknowledge(got[0]!, 'accept');
    consumer.acknowledge(got[1]!, 'release');
    consumer.acknowledge(got[2]!, 'renew');
    await consumer.commitSync();

    expect((await cli(['share-groups', 'list'])).out).toEqual(['workers']);
    expect((await cli(['share-groups', 'describe', '--group', 'workers'])).out).toEqual([
      '',
      'GROUP    TOPIC  PARTITION  START-OFFSET  END-OFFSET  ACQUIRED  AVAILABLE  LAG',
      'workers  tasks  0          1             3           1         1          4',
    ]);
    expect((await cli(['share-groups', 'describe'])).code).toBe(2);
    // Beside consumer groups, by type (Kafka's ListGroups with types).
    expect((await cli(['groups', 'list', '--group-type', 'share'])).out).toEqual([
      'GROUP    TYPE   STATE',
      'workers  Share  STABLE',
    ]);
  });

  it('sets and deletes several configs in one change: all of them, or none when one is bad', async () => {
    const overrides = async () => {
      const res = await fetch(`${server.origin}/v3/clusters/local/share-groups/several/configs`);
      const { data } = (await res.json()) as { data: { name: string; value: string; is_default: boolean }[] };
      return Object.fromEntries(data.filter((c) => !c.is_default).map((c) => [c.name, c.value]));
    };
    const config = (...args: string[]) => cli(['share-groups', 'config', '--group', 'several', ...args]);
    expect((await config('--set', 'share.auto.offset.reset=earliest')).code).toBe(0);
    const both = await config(
      '--set',
      'share.delivery.count.limit=3',
      '--set',
      'share.isolation.level=read_committed',
      '--delete',
      'share.auto.offset.reset',
    );
    expect(both.code).toBe(0);
    expect(await overrides()).toEqual({ 'share.delivery.count.limit': '3', 'share.isolation.level': 'read_committed' });
    const bad = await config('--set', 'share.record.lock.duration.ms=20000', '--set', 'share.delivery.count.limit=1');
    expect(bad.code).toBe(1);
    expect(bad.err[0]).toMatch(/INVALID_CONFIG/);
    expect(await overrides()).toEqual({ 'share.delivery.count.limit': '3', 'share.isolation.level': 'read_committed' });
  });

  it('describes the Kafka-protocol members and their assignments (--describe --members)', async () => {
    // The first test's group has HTTP receivers only: no members.
    expect((await cli(['share-groups', 'describe', '--group', 'workers', '--members'])).out).toEqual([
      '',
      "Share group 'workers' has no active members.",
    ]);
    const raw = await RawClient.open(`127.0.0.1:${kafkaPort}`);
    try {
      const memberId = randomUUID();
      const joined = await raw.request(ShareGroupHeartbeat, 1, {
        groupId: 'members',
        memberId,
        memberEpoch: 0,
        rackId: null,
        subscribedTopicNames: ['tasks'],
      });
      expect(joined.body.errorCode).toBe(0);
      const [d] = await kafka.admin().describeShareGroups(['members']);
      expect(d!.members).toHaveLength(1);
      expect(d!.members[0]).toMatchObject({ memberId, clientId: 'raw', subscribedTopics: ['tasks'] });
      // Every member of a share group is assigned every partition of the topics it subscribes to.
      expect(d!.members[0]!.assignment).toEqual([{ topic: 'tasks', partitions: [0] }]);
      const host = d!.members[0]!.clientHost;
      const out = (await cli(['share-groups', 'describe', '--group', 'members', '--members'])).out;
      expect(out.map((l) => l.split(/\s{2,}/))).toEqual([
        [''],
        ['GROUP', 'CONSUMER-ID', 'HOST', 'CLIENT-ID', '#PARTITIONS', 'ASSIGNMENT'],
        ['members', memberId, host, 'raw', '1', 'tasks:0'],
      ]);
    } finally {
      raw.close();
    }
  });

  it('resets and deletes share group offsets (--reset-offsets, --delete-offsets), refused while records are locked', async () => {
    const admin = kafka.admin();
    await admin.alterShareGroupConfigs('resets', { 'share.auto.offset.reset': 'earliest' });
    const consumer = kafka.shareConsumer({ groupId: 'resets', maxPollRecords: 2, acknowledgementMode: 'explicit' });
    consumer.subscribe(['tasks']);
    const got = await consumer.poll(1000);
    expect(got).toHaveLength(2);
    const busy = await cli([
      'share-groups',
      '--reset-offsets',
      '--group',
      'resets',
      '--topic',
      'tasks',
      '--to-latest',
      '--execute',
    ]);
    expect(busy.code).toBe(1);
    expect(busy.err[0]).toMatch(/NON_EMPTY_GROUP/);
    for (const r of got) consumer.acknowledge(r, 'release');
    await consumer.close();

    const dry = await cli([
      'share-groups',
      'reset-offsets',
      '--group',
      'resets',
      '--topic',
      'tasks:0',
      '--to-offset',
      '3',
    ]);
    expect(dry.err[0]).toMatch(/No action will be performed/);
    expect(dry.out).toEqual([
      '',
      'GROUP   TOPIC  PARTITION  NEW-OFFSET  ERROR',
      'resets  tasks  0          3           -',
    ]);
    expect((await admin.describeShareGroups(['resets']))[0]!.partitions[0]).toMatchObject({ startOffset: 0 });
    const done = await cli([
      'share-groups',
      'reset-offsets',
      '--group',
      'resets',
      '--all-topics',
      '--to-latest',
      '--execute',
    ]);
    expect(done.out.at(-1)).toMatch(/^resets\s+tasks\s+0\s+5\s+-$/);
    expect((await admin.describeShareGroups(['resets']))[0]!.partitions[0]).toMatchObject({ startOffset: 5, lag: 0 });

    // Java's Admin shapes: alter to offsets, delete a topic's state.
    expect(await admin.alterShareGroupOffsets('resets', [{ topic: 'tasks', partition: 0, offset: 4 }])).toEqual([
      { topic: 'tasks', partition: 0, currentOffset: 5, newOffset: 4, error: null },
    ]);
    const deleted = await cli(['share-groups', '--delete-offsets', '--group', 'resets', '--topic', 'tasks']);
    expect(deleted.out).toEqual(['', 'TOPIC  STATUS', 'tasks  Successful']);
    expect((await admin.describeShareGroups(['resets']))[0]!.partitions).toEqual([]);
  });

  it("deletes an empty share group (the admin client's deleteShareGroups), refused while a lock is held", async () => {
    await kafka.admin().alterShareGroupConfigs('gone', { 'share.auto.offset.reset': 'earliest' });
    const consumer = kafka.shareConsumer({ groupId: 'gone', maxPollRecords: 2, acknowledgementMode: 'explicit' });
    consumer.subscribe(['tasks']);
    const got = await consumer.poll(1000);
    expect(got).toHaveLength(2);
    const busy = await cli(['share-groups', 'delete', '--group', 'gone']);
    expect(busy.code).toBe(1);
    expect(busy.err[0]).toMatch(/NON_EMPTY_GROUP/);
    for (const r of got) consumer.acknowledge(r, 'release');
    await consumer.commitSync();
    await consumer.close();
    expect(await cli(['share-groups', '--delete', '--group', 'gone'])).toEqual({
      code: 0,
      out: ["Deletion of requested share groups ('gone') was successful."],
      err: [],
    });
    expect((await cli(['share-groups', 'list'])).out).not.toContain('gone');
    await expect(kafka.admin().deleteShareGroups(['gone'])).rejects.toThrow(/GROUP_ID_NOT_FOUND|does not exist/);
  });
});
