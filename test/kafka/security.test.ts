/**
 * SASL/PLAIN and ACLs on the Kafka listener: users from the auth config file (`sasl.plain.users`)
 * become the principals `User:<name>` that ACLs name, checked by the same authorizer as the HTTP
 * routes, for the operation Kafka checks per API. kafkajs and kcat (SASL_PLAINTEXT) connect
 * unmodified; a bare connection shows the exact error code of each API.
 */
import { execFile, spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Kafka, logLevel } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { validateBinding } from '../../src/authz/acl.js';
import * as m from '../../src/kafka/protocol/messages/index.js';
import { ERRORS } from '../../src/wire/errors.js';
import { startKafkaServer, type TestKafkaServer } from './support/kafka-server.js';
import { fetchPartition, fetchRequest, RawClient } from './support/raw-client.js';

process.env.KAFKAJS_NO_PARTITIONER_WARNING = '1';
const run = promisify(execFile);
const hasKcat = spawnSync('kcat', ['-V']).status === 0;

const USERS = { admin: 'admin-secret', alice: 'alice-secret', bob: 'bob-secret' };
const code = (name: keyof typeof ERRORS) => ERRORS[name].code;

let s: TestKafkaServer;
beforeAll(async () => {
  const dir = mkdtempSync(join(tmpdir(), 'kafka-sasl-'));
  const file = join(dir, 'auth.json');
  writeFileSync(file, JSON.stringify({ authorization: true, 'super.users': 'User:admin', 'sasl.plain.users': USERS }));
  s = await startKafkaServer({}, { AUTH_CONFIG: file, DEFAULT_PARTITIONS: '1' });
  for (const name of ['paid', 'secret'])
    await s.services.topics.create({ name, partitionCount: 2, replicationFactor: 1 });
  const allow = (principal: string, resourceType: string, resourceName: string, operation: string) =>
    validateBinding({ principal, resourceType, resourceName, operation, permission: 'ALLOW' });
  await s.services.security.acls.create([
    allow('User:alice', 'TOPIC', 'paid', 'WRITE'),
    allow('User:alice', 'TOPIC', 'paid', 'READ'),
    allow('User:alice', 'GROUP', 'billing', 'READ'),
    allow('User:alice', 'TRANSACTIONAL_ID', 'alice-tx', 'WRITE'),
    // Alice finds the coordinators of these (FindCoordinator checks DESCRIBE), and may not use them.
    allow('User:alice', 'GROUP', 'other', 'DESCRIBE'),
    allow('User:alice', 'TRANSACTIONAL_ID', 'not-alices', 'DESCRIBE'),
    allow('User:bob', 'TOPIC', 'paid', 'DESCRIBE'),
    allow('User:bob', 'GROUP', 'billing', 'DESCRIBE'),
  ]);
});
afterAll(async () => {
  await s?.close();
});

const client = (username: string, password = USERS[username as keyof typeof USERS]) =>
  new Kafka({
    brokers: [s.broker],
    clientId: `sasl-${username}`,
    logLevel: logLevel.NOTHING,
    retry: { retries: 2, initialRetryTime: 50 },
    sasl: { mechanism: 'plain', username, password },
  });

/** A bare connection authenticated as `user` (SaslHandshake v1, then SaslAuthenticate). */
async function rawAs(user: string, password = USERS[user as keyof typeof USERS]) {
  const c = await RawClient.open(s.broker);
  expect((await c.request(m.SaslHandshake, 1, { mechanism: 'PLAIN' })).body).toMatchObject({
    errorCode: 0,
    mechanisms: ['PLAIN'],
  });
  const auth = await c.request(m.SaslAuthenticate, 2, { authBytes: Buffer.from(`\u0000${user}\u0000${password}`) });
  return { c, auth: auth.body };
}

describe('SASL/PLAIN', () => {
  it('authenticates the configured users; a wrong password is SASL_AUTHENTICATION_FAILED and closes the connection', async () => {
    const good = await rawAs('alice');
    expect(good.auth.errorCode).toBe(0);
    good.c.close();
    const bad = await rawAs('alice', 'nope');
    expect(bad.auth).toMatchObject({ errorCode: code('SASL_AUTHENTICATION_FAILED') });
    expect(await bad.c.waitClosed()).toBe(true);
    const unknown = await rawAs('mallory', 'x');
    expect(unknown.auth.errorCode).toBe(code('SASL_AUTHENTICATION_FAILED'));

    const admin = client('alice', 'wrong').admin();
    await expect(admin.connect()).rejects.toMatchObject({ name: 'KafkaJSSASLAuthenticationError' });
  });

  it('takes the bare token of SaslHandshake v0 (before KIP-152): an empty frame when right, closed when wrong', async () => {
    for (const [password, ok] of [
      [USERS.alice, true],
      ['wrong', false],
    ] as const) {
      const c = await RawClient.open(s.broker);
      expect((await c.request(m.SaslHandshake, 0, { mechanism: 'PLAIN' })).body.errorCode).toBe(0);
      const token = Buffer.from(`\u0000alice\u0000${password}`);
      const frame = Buffer.alloc(4 + token.byteLength);
      frame.writeInt32BE(token.byteLength, 0);
      token.copy(frame, 4);
      c.write(frame);
      if (ok) {
        expect((await c.readFrame())?.byteLength).toBe(0);
        const meta = (await c.request(m.Metadata, 9, { topics: [{ name: 'paid' }] })).body;
        expect(meta.topics[0].errorCode).toBe(0);
      } else expect(await c.waitClosed()).toBe(true);
      c.close();
    }
  });

  it('serves an unauthenticated connection ApiVersions and SaslHandshake only', async () => {
    const c = await RawClient.open(s.broker);
    expect(
      (await c.request(m.ApiVersions, 3, { clientSoftwareName: 't', clientSoftwareVersion: '1' })).body.errorCode,
    ).toBe(0);
    expect((await c.request(m.SaslHandshake, 1, { mechanism: 'SCRAM-SHA-256' })).body).toMatchObject({
      errorCode: code('UNSUPPORTED_SASL_MECHANISM'),
      mechanisms: ['PLAIN'],
    });
    c.write(c.frame(m.Metadata, 4, { topics: null }));
    expect(await c.waitClosed()).toBe(true);

    // SaslAuthenticate without a handshake is ILLEGAL_SASL_STATE, and the end of the connection.
    const d = await RawClient.open(s.broker);
    expect(
      (await d.request(m.SaslAuthenticate, 1, { authBytes: Buffer.from('\u0000alice\u0000alice-secret') })).body
        .errorCode,
    ).toBe(code('ILLEGAL_SASL_STATE'));
    expect(await d.waitClosed()).toBe(true);
  });
});

describe('ACLs on the listener', () => {
  it('kafkajs: alice produces and consumes what her ACLs allow; bob is refused with Kafka errors', async () => {
    const alice = client('alice');
    const producer = alice.producer({ idempotent: true, maxInFlightRequests: 1, retry: { retries: 2 } }); // WRITE on a topic is enough (KIP-679)
    await producer.connect();
    await producer.send({
      topic: 'paid',
      messages: [
        { partition: 0, value: 'a1' },
        { partition: 1, value: 'a2' },
      ],
    });
    await producer.disconnect();
    const consumer = alice.consumer({
      groupId: 'billing',
      sessionTimeout: 6000,
      heartbeatInterval: 300,
      maxWaitTimeInMs: 100,
    });
    await consumer.connect();
    await consumer.subscribe({ topic: 'paid', fromBeginning: true });
    const seen: string[] = [];
    await consumer.run({ eachMessage: async ({ message }) => void seen.push(message.value!.toString()) });
    const end = Date.now() + 15_000;
    while (seen.length < 2 && Date.now() < end) await new Promise((r) => setTimeout(r, 50));
    await consumer.disconnect();
    expect(seen.sort()).toEqual(['a1', 'a2']);

    const bob = client('bob');
    const admin = bob.admin();
    await admin.connect();
    expect((await admin.listTopics()).sort()).toEqual(['paid']); // DESCRIBE filters the listing
    await expect(admin.createTopics({ topics: [{ topic: 'bobs' }] })).rejects.toMatchObject({
      errors: [expect.objectContaining({ type: 'TOPIC_AUTHORIZATION_FAILED' })],
    });
    await admin.disconnect();
    const bobProducer = bob.producer();
    await bobProducer.connect();
    await expect(bobProducer.send({ topic: 'paid', messages: [{ value: 'b' }] })).rejects.toMatchObject({
      type: 'TOPIC_AUTHORIZATION_FAILED',
    });
    await bobProducer.disconnect();
    const bobIdempotent = bob.producer({ idempotent: true, maxInFlightRequests: 1, retry: { retries: 2 } });
    // InitProducerId without IDEMPOTENT_WRITE on the cluster or WRITE on any topic.
    await expect(bobIdempotent.connect()).rejects.toMatchObject({ type: 'CLUSTER_AUTHORIZATION_FAILED' });
  }, 40_000);

  it('kafkajs: a transaction needs WRITE on its id, and its offsets READ on the group', async () => {
    const alice = client('alice');
    const producer = alice.producer({
      transactionalId: 'alice-tx',
      idempotent: true,
      maxInFlightRequests: 1,
      retry: { retries: 2 },
    });
    await producer.connect();
    const t = await producer.transaction();
    await t.send({ topic: 'paid', messages: [{ partition: 0, value: 'in-tx' }] });
    await t.sendOffsets({
      consumerGroupId: 'billing',
      topics: [{ topic: 'paid', partitions: [{ partition: 1, offset: '1' }] }],
    });
    await expect(
      t.sendOffsets({
        consumerGroupId: 'other',
        topics: [{ topic: 'paid', partitions: [{ partition: 1, offset: '1' }] }],
      }),
    ).rejects.toMatchObject({ type: 'GROUP_AUTHORIZATION_FAILED' });
    await t.abort();
    await producer.disconnect();
    const other = alice.producer({
      transactionalId: 'not-alices',
      idempotent: true,
      maxInFlightRequests: 1,
      retry: { retries: 2 },
    });
    await other.connect();
    await expect(other.transaction()).rejects.toMatchObject({ type: 'TRANSACTIONAL_ID_AUTHORIZATION_FAILED' });
    await other.disconnect();
  }, 30_000);

  it('Fetch by topic id: READ on the topic the id names; an unknown id is UNKNOWN_TOPIC_ID', async () => {
    const { c } = await rawAs('alice');
    const ids = new Map<string, Buffer>();
    for (const name of ['paid', 'secret'])
      ids.set(name, Buffer.from((await s.services.topics.get(name)).id.replace(/-/g, ''), 'hex'));
    const fetched = (
      await c.request(
        m.Fetch,
        13,
        fetchRequest(
          [ids.get('paid')!, ids.get('secret')!, Buffer.alloc(16, 9)].map((topicId) => ({
            topicId,
            partitions: [fetchPartition(0, 0, 1024)],
          })),
        ),
      )
    ).body;
    expect(fetched.responses.map((t: any) => t.partitions[0].errorCode)).toEqual([
      0,
      code('TOPIC_AUTHORIZATION_FAILED'),
      code('UNKNOWN_TOPIC_ID'),
    ]);
    c.close();
  });

  it("OffsetFetch v8: each group's DESCRIBE checked apart, each topic's too", async () => {
    const { c } = await rawAs('bob');
    const groups = (
      await c.request(m.OffsetFetch, 8, {
        groups: ['billing', 'other'].map((groupId) => ({
          groupId,
          topics: [
            { name: 'paid', partitionIndexes: [0] },
            { name: 'secret', partitionIndexes: [0] },
          ],
        })),
        requireStable: false,
      })
    ).body.groups;
    expect(groups.map((g: any) => [g.groupId, g.errorCode])).toEqual([
      ['billing', 0],
      ['other', code('GROUP_AUTHORIZATION_FAILED')],
    ]);
    expect(groups[0].topics.map((t: any) => t.partitions[0].errorCode)).toEqual([
      0,
      code('TOPIC_AUTHORIZATION_FAILED'),
    ]);
    c.close();
  });

  it('answers each API with the error Kafka gives for the resource it checks', async () => {
    const { c } = await rawAs('bob');
    const fetchBody = {
      maxWaitMs: 0,
      minBytes: 0,
      isolationLevel: 0,
      sessionId: 0,
      topics: ['paid', 'secret'].map((topic) => ({
        topic,
        partitions: [{ partition: 0, fetchOffset: 0, partitionMaxBytes: 1 << 20 }],
      })),
    };
    const fetched = (await c.request(m.Fetch, 11, fetchBody)).body;
    expect(fetched.responses.map((t: any) => [t.topic, t.partitions[0].errorCode])).toEqual([
      ['paid', code('TOPIC_AUTHORIZATION_FAILED')],
      ['secret', code('TOPIC_AUTHORIZATION_FAILED')],
    ]);
    const listed = (
      await c.request(m.ListOffsets, 5, {
        replicaId: -1,
        topics: ['paid', 'secret'].map((name) => ({ name, partitions: [{ partitionIndex: 0, timestamp: -1 }] })),
      })
    ).body;
    expect(listed.topics.map((t: any) => t.partitions[0].errorCode)).toEqual([0, code('TOPIC_AUTHORIZATION_FAILED')]);
    const meta = (await c.request(m.Metadata, 9, { topics: [{ name: 'paid' }, { name: 'secret' }, { name: 'nope' }] }))
      .body;
    expect(meta.topics.map((t: any) => [t.name, t.errorCode])).toEqual([
      ['paid', 0],
      ['secret', code('TOPIC_AUTHORIZATION_FAILED')],
      ['nope', code('TOPIC_AUTHORIZATION_FAILED')], // whether it exists or not
    ]);
    const join = (
      await c.request(m.JoinGroup, 5, {
        groupId: 'billing',
        sessionTimeoutMs: 6000,
        rebalanceTimeoutMs: 6000,
        memberId: '',
        groupInstanceId: null,
        protocolType: 'consumer',
        protocols: [{ name: 'range', metadata: Buffer.alloc(0) }],
      })
    ).body;
    expect(join.errorCode).toBe(code('GROUP_AUTHORIZATION_FAILED')); // DESCRIBE is not READ
    const described = (await c.request(m.DescribeGroups, 5, { groups: ['billing', 'other'] })).body;
    expect(described.groups.map((g: any) => g.errorCode)).toEqual([0, code('GROUP_AUTHORIZATION_FAILED')]);
    const commit = (
      await c.request(m.OffsetCommit, 8, {
        groupId: 'billing',
        generationIdOrMemberEpoch: -1,
        memberId: '',
        groupInstanceId: null,
        topics: [{ name: 'paid', partitions: [{ partitionIndex: 0, committedOffset: 1, committedMetadata: null }] }],
      })
    ).body;
    expect(commit.topics[0].partitions[0].errorCode).toBe(code('GROUP_AUTHORIZATION_FAILED'));
    const coordinators = (await c.request(m.FindCoordinator, 4, { keyType: 0, coordinatorKeys: ['billing', 'other'] }))
      .body;
    expect(coordinators.coordinators.map((k: any) => k.errorCode)).toEqual([0, code('GROUP_AUTHORIZATION_FAILED')]);
    const txnCoordinator = (await c.request(m.FindCoordinator, 4, { keyType: 1, coordinatorKeys: ['tx'] })).body;
    expect(txnCoordinator.coordinators[0].errorCode).toBe(code('TRANSACTIONAL_ID_AUTHORIZATION_FAILED'));
    const init = (await c.request(m.InitProducerId, 4, { transactionalId: 'tx', transactionTimeoutMs: 60_000 })).body;
    expect(init.errorCode).toBe(code('TRANSACTIONAL_ID_AUTHORIZATION_FAILED'));
    const configs = (
      await c.request(m.DescribeConfigs, 2, {
        resources: [
          { resourceType: 2, resourceName: 'paid', configurationKeys: null },
          { resourceType: 4, resourceName: '0', configurationKeys: null },
        ],
        includeSynonyms: false,
      })
    ).body;
    expect(configs.results.map((r: any) => r.errorCode)).toEqual([
      code('TOPIC_AUTHORIZATION_FAILED'),
      code('CLUSTER_AUTHORIZATION_FAILED'),
    ]);
    const deleted = (await c.request(m.DeleteTopics, 4, { topicNames: ['paid'], timeoutMs: 1000 })).body;
    expect(deleted.responses[0].errorCode).toBe(code('TOPIC_AUTHORIZATION_FAILED'));
    const groups = (await c.request(m.ListGroups, 4, { statesFilter: [] })).body;
    expect(groups.groups.map((g: any) => g.groupId)).toEqual(['billing']); // alice's group; only DESCRIBE-able ones
    c.close();

    // Alice's transaction APIs: her id, but a topic she may not write and a group she may not read.
    const { c: a } = await rawAs('alice');
    const aliceInit = (
      await a.request(m.InitProducerId, 4, { transactionalId: 'alice-tx', transactionTimeoutMs: 60_000 })
    ).body;
    expect(aliceInit.errorCode).toBe(0);
    const producer = { producerId: aliceInit.producerId, producerEpoch: aliceInit.producerEpoch };
    const added = (
      await a.request(m.AddPartitionsToTxn, 3, {
        v3AndBelowTransactionalId: 'alice-tx',
        v3AndBelowProducerId: producer.producerId,
        v3AndBelowProducerEpoch: producer.producerEpoch,
        v3AndBelowTopics: [
          { name: 'paid', partitions: [0] },
          { name: 'secret', partitions: [0] },
        ],
      })
    ).body;
    expect(
      added.resultsByTopicV3AndBelow.map((t: any) => [t.name, t.resultsByPartition[0].partitionErrorCode]),
    ).toEqual([
      ['paid', code('OPERATION_NOT_ATTEMPTED')],
      ['secret', code('TOPIC_AUTHORIZATION_FAILED')],
    ]);
    const offsets = (
      await a.request(m.AddOffsetsToTxn, 3, { transactionalId: 'alice-tx', ...producer, groupId: 'other' })
    ).body;
    expect(offsets.errorCode).toBe(code('GROUP_AUTHORIZATION_FAILED'));
    const txnCommit = (
      await a.request(m.TxnOffsetCommit, 3, {
        transactionalId: 'alice-tx',
        groupId: 'billing',
        ...producer,
        topics: [{ name: 'secret', partitions: [{ partitionIndex: 0, committedOffset: 1, committedMetadata: null }] }],
      })
    ).body;
    expect(txnCommit.topics[0].partitions[0].errorCode).toBe(code('TOPIC_AUTHORIZATION_FAILED'));
    const notHers = (await a.request(m.EndTxn, 3, { transactionalId: 'not-alices', ...producer, committed: true }))
      .body;
    expect(notHers.errorCode).toBe(code('TRANSACTIONAL_ID_AUTHORIZATION_FAILED'));
    a.close();
    expect((await s.services.transactions.describe('alice-tx')).partitions).toEqual([]); // nothing joined

    expect(s.logs.some((l) => l.audit === 'denied' && l.principal === 'User:bob' && l.operation === 'READ')).toBe(true);
    expect(await s.services.topics.get('paid')).toBeDefined(); // nothing was changed by a refused request
  });
});

describe.skipIf(!hasKcat)(
  hasKcat ? 'kcat over SASL_PLAINTEXT' : 'kcat (Debian package kcat) is not installed: skipped',
  () => {
    const sasl = (user: string, password: string) => [
      '-X',
      'security.protocol=SASL_PLAINTEXT',
      '-X',
      'sasl.mechanisms=PLAIN',
      '-X',
      `sasl.username=${user}`,
      '-X',
      `sasl.password=${password}`,
    ];
    it('produces and consumes as alice; a wrong password gets no metadata', async () => {
      const p = run('kcat', ['-b', s.broker, ...sasl('alice', USERS.alice), '-P', '-t', 'paid', '-p', '1'], {
        timeout: 20_000,
      });
      p.child.stdin!.end('from-kcat\n');
      await p;
      const { stdout } = await run(
        'kcat',
        ['-b', s.broker, ...sasl('alice', USERS.alice), '-C', '-t', 'paid', '-p', '1', '-e', '-f', '%s\\n'],
        { timeout: 20_000 },
      );
      expect(stdout.trim().split('\n')).toContain('from-kcat');
      const bad = await run('kcat', ['-b', s.broker, ...sasl('alice', 'wrong'), '-L', '-m', '3'], {
        timeout: 20_000,
      }).then(
        () => 'listed',
        (e: { stderr?: string }) => e.stderr ?? 'failed',
      );
      expect(bad).toMatch(/SASL authentication error|Authentication failed/i);
    }, 40_000);
  },
);
