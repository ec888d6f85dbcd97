/**
 * What the listener does with frames it cannot serve: Kafka's error where the protocol has one,
 * else the connection closed; never a crash, never another connection disturbed.
 */
import { Kafka, logLevel } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodeMessage, Reader } from '../../src/kafka/protocol/codec.js';
import { ApiVersions, Metadata, Produce } from '../../src/kafka/protocol/messages/index.js';
import { encodeRecordBatch } from '../../src/wire/record-batch.js';
import { startKafkaServer, type TestKafkaServer } from './support/kafka-server.js';
import { decodeResponse, RawClient } from './support/raw-client.js';
import { readRecords } from '../support/read-records.js';

const MAX_FRAME = 64 * 1024;
let s: TestKafkaServer;
let bystander: RawClient;

beforeAll(async () => {
  s = await startKafkaServer({ maxFrameBytes: MAX_FRAME, idleTimeoutMs: 1500, maxUnreadBytes: 32 * 1024 });
  await s.services.topics.create({ name: 'bf', partitionCount: 2, replicationFactor: 1 });
});
afterAll(async () => {
  await s?.close();
});

/** A connection opened before each bad one must still be answered after it. */
async function bystanderAnswers() {
  const r = await bystander.request(ApiVersions, 3, { clientSoftwareName: 'b', clientSoftwareVersion: '1' });
  expect(r.body.errorCode).toBe(0);
}

async function expectClosedBy(bytes: Buffer | Buffer[]) {
  bystander = await RawClient.open(s.broker);
  const c = await RawClient.open(s.broker);
  for (const b of [bytes].flat()) c.write(b);
  expect(await c.waitClosed()).toBe(true);
  await bystanderAnswers();
  bystander.close();
}

describe('bad frames', () => {
  it('closes a connection whose frame is larger than the limit, before reading it', async () => {
    const header = Buffer.alloc(4);
    header.writeInt32BE(MAX_FRAME + 1);
    await expectClosedBy(header);
  });

  it('closes on a negative or too small frame size', async () => {
    await expectClosedBy(Buffer.from([0xff, 0xff, 0xff, 0xff]));
    await expectClosedBy(Buffer.from([0, 0, 0, 3, 1, 2, 3]));
  });

  it('closes on an unknown API key, and on an unsupported version of an API other than ApiVersions', async () => {
    const probe = await RawClient.open(s.broker);
    const frame = probe.frame(Metadata, 1, { topics: null });
    probe.close();
    const unknownKey = Buffer.from(frame);
    unknownKey.writeInt16BE(999, 4);
    await expectClosedBy(unknownKey);
    const badVersion = Buffer.from(frame);
    badVersion.writeInt16BE(99, 6);
    await expectClosedBy(badVersion);
  });

  it('answers ApiVersions of an unknown version in v0 with UNSUPPORTED_VERSION and the versions it has', async () => {
    const c = await RawClient.open(s.broker);
    const frame = c.frame(ApiVersions, 3, { clientSoftwareName: 'x', clientSoftwareVersion: '1' });
    frame.writeInt16BE(77, 6);
    c.write(frame);
    const answer = await c.readFrame();
    const r = new Reader(answer!);
    r.int32(); // correlation id (header v0)
    const body = decodeMessage(ApiVersions.response, 0, r);
    expect(body.errorCode).toBe(35);
    expect(body.apiKeys).toContainEqual({ apiKey: 18, minVersion: 0, maxVersion: 3 });
    expect(body.apiKeys).toContainEqual({ apiKey: 0, minVersion: 0, maxVersion: 9 }); // Produce v0-2 listed, as Kafka 4.0 does
    // The connection stays usable: the client downgrades and asks again.
    expect((await c.request(ApiVersions, 0, {})).body.errorCode).toBe(0);
    c.close();
  });

  it('closes on truncated and garbage bodies', async () => {
    const probe = await RawClient.open(s.broker);
    const good = probe.frame(Metadata, 1, { topics: [{ name: 'bf' }] });
    probe.close();
    // The size says what is there, but the body stops inside the topics array.
    const truncated = Buffer.from(good.subarray(0, good.byteLength - 3));
    truncated.writeInt32BE(truncated.byteLength - 4, 0);
    await expectClosedBy(truncated);
    // An array count of two billion in a short frame.
    const huge = Buffer.from(good);
    huge.writeInt32BE(0x7fffffff, good.byteLength - 2 - 'bf'.length - 4);
    await expectClosedBy(huge);
    // Random bytes after a plausible size.
    const garbage = Buffer.alloc(40);
    for (let i = 0; i < 40; i++) garbage[i] = (i * 73 + 11) & 0xff;
    garbage.writeInt32BE(36, 0);
    await expectClosedBy(garbage);
  });

  it('closes a connection that stalls inside a frame (slow client), serving the others meanwhile', async () => {
    bystander = await RawClient.open(s.broker);
    const slow = await RawClient.open(s.broker);
    const frame = slow.frame(Metadata, 1, { topics: null });
    slow.write(frame.subarray(0, 7));
    await bystanderAnswers();
    expect(await slow.waitClosed(6000)).toBe(true);
    bystander.close();
  });

  it('serves a client that pipelines requests without reading, in order, once it reads', async () => {
    const greedy = await RawClient.open(s.broker);
    greedy.socket.pause(); // reads nothing for now
    const frames = Array.from({ length: 400 }, (_, i) => greedy.frame(ApiVersions, 2, {}, i));
    greedy.write(Buffer.concat(frames));
    bystander = await RawClient.open(s.broker);
    await new Promise((r) => setTimeout(r, 200));
    await bystanderAnswers();
    greedy.socket.resume();
    for (let i = 0; i < 400; i++)
      expect(decodeResponse(ApiVersions, 2, (await greedy.readFrame())!).correlationId).toBe(i);
    greedy.close();
    bystander.close();
  });
});

describe('errors inside well-formed requests', () => {
  it('answers a produce per partition: an unknown partition and a corrupt batch fail alone', async () => {
    const c = await RawClient.open(s.broker);
    const batch = Buffer.from(
      encodeRecordBatch([{ key: null, value: Buffer.from('ok'), headers: [], timestamp: Date.now() }]),
    );
    const corrupt = Buffer.from(batch);
    corrupt[corrupt.byteLength - 1]! ^= 0xff;
    const r = await c.request(Produce, 7, {
      transactionalId: null,
      acks: -1,
      timeoutMs: 1000,
      topicData: [
        {
          name: 'bf',
          partitionData: [
            { index: 0, records: batch },
            { index: 1, records: corrupt },
            { index: 9, records: batch },
          ],
        },
        { name: 'nope', partitionData: [{ index: 0, records: batch }] },
      ],
    });
    const [bf, nope] = r.body.responses;
    expect(bf.partitionResponses.map((p: { errorCode: number }) => p.errorCode)).toEqual([0, 2, 3]); // NONE, CORRUPT_MESSAGE, UNKNOWN_TOPIC_OR_PARTITION
    expect(nope.partitionResponses[0].errorCode).toBe(3);
    c.close();
  });
});

describe('pipelined requests', () => {
  it("appends one partition's batches in the order sent and answers in order, running other partitions alongside", async () => {
    await s.services.topics.create({ name: 'pipe', partitionCount: 3, replicationFactor: 1 });
    const c = await RawClient.open(s.broker);
    const frames = Array.from({ length: 30 }, (_, i) =>
      c.frame(
        Produce,
        7,
        {
          transactionalId: null,
          acks: -1,
          timeoutMs: 1000,
          topicData: [
            {
              name: 'pipe',
              partitionData: [
                {
                  index: i % 3,
                  records: Buffer.from(
                    encodeRecordBatch([{ key: null, value: Buffer.from(`p${i}`), headers: [], timestamp: Date.now() }]),
                  ),
                },
              ],
            },
          ],
        },
        1000 + i,
      ),
    );
    c.write(Buffer.concat(frames));
    const answers = [];
    for (let i = 0; i < 30; i++) answers.push(decodeResponse(Produce, 7, (await c.readFrame())!));
    expect(answers.map((a) => a.correlationId)).toEqual(frames.map((_, i) => 1000 + i));
    expect(answers.map((a) => a.body.responses[0].partitionResponses[0].baseOffset)).toEqual(
      frames.map((_, i) => Math.floor(i / 3)),
    );
    const topic = await s.services.topics.get('pipe');
    for (let p = 0; p < 3; p++) {
      const values = (await readRecords(s.services.log, topic, p, 0, 1 << 20)).records.map((r) =>
        Buffer.from(r.value!).toString(),
      );
      expect(values).toEqual(Array.from({ length: 10 }, (_, k) => `p${k * 3 + p}`));
    }
    c.close();
  });
});

describe('SASL/PLAIN', () => {
  let secured: TestKafkaServer;
  beforeAll(async () => {
    secured = await startKafkaServer({ plainUsers: new Map([['alice', 'secret']]) });
  });
  afterAll(async () => {
    await secured?.close();
  });

  it('closes an unauthenticated connection that asks for anything but ApiVersions and SASL', async () => {
    const c = await RawClient.open(secured.broker);
    expect(
      (await c.request(ApiVersions, 3, { clientSoftwareName: 'x', clientSoftwareVersion: '1' })).body.errorCode,
    ).toBe(0);
    c.write(c.frame(Metadata, 1, { topics: null }));
    expect(await c.waitClosed()).toBe(true);
  });

  it('refuses a wrong password and serves kafkajs with the right one', async () => {
    const bad = new Kafka({
      brokers: [secured.broker],
      logLevel: logLevel.NOTHING,
      retry: { retries: 0 },
      sasl: { mechanism: 'plain', username: 'alice', password: 'wrong' },
    });
    const badAdmin = bad.admin();
    await expect(badAdmin.connect()).rejects.toThrow(/SASL|authentication/i);
    const good = new Kafka({
      brokers: [secured.broker],
      logLevel: logLevel.NOTHING,
      sasl: { mechanism: 'plain', username: 'alice', password: 'secret' },
    });
    const admin = good.admin();
    await admin.connect();
    await admin.createTopics({ topics: [{ topic: 'sasl-topic', numPartitions: 1 }] });
    expect(await admin.listTopics()).toContain('sasl-topic');
    await admin.disconnect();
  });
});
