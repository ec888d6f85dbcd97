/**
 * Produce v0-2 (message format v0/v1), as Kafka 4.0 treats them (KIP-896, KAFKA-18659): listed
 * in ApiVersions, so librdkafka compresses, and refused when used: here with UNSUPPORTED_VERSION
 * per partition, so the client can say why; with acks=0, which has no answer, by closing.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiVersions, Produce } from '../../src/kafka/protocol/messages/index.js';
import { startKafkaServer, type TestKafkaServer } from './support/kafka-server.js';
import { RawClient } from './support/raw-client.js';

let s: TestKafkaServer;
beforeAll(async () => {
  s = await startKafkaServer({});
  await s.services.topics.create({ name: 'old', partitionCount: 2, replicationFactor: 1 });
});
afterAll(async () => {
  await s?.close();
});

/** A magic 1 message set of one message, as a v0-2 producer sends it (its bytes are never read). */
const MESSAGE_SET_V1 = Buffer.from('0000000000000000000000160000000001000000000000000000ffffffff00000000', 'hex');

describe('Produce v0-2', () => {
  it('is listed in ApiVersions from v0, as Kafka 4.0 lists it', async () => {
    const c = await RawClient.open(s.broker);
    const r = await c.request(ApiVersions, 3, { clientSoftwareName: 'x', clientSoftwareVersion: '1' });
    expect(r.body.apiKeys).toContainEqual({ apiKey: 0, minVersion: 0, maxVersion: 9 });
    c.close();
  });

  it.each([0, 1, 2])('v%i is answered UNSUPPORTED_VERSION for every partition, and nothing is appended', async (v) => {
    const c = await RawClient.open(s.broker);
    const r = await c.request(Produce, v, {
      acks: -1,
      timeoutMs: 1000,
      topicData: [
        {
          name: 'old',
          partitionData: [
            { index: 0, records: MESSAGE_SET_V1 },
            { index: 1, records: MESSAGE_SET_V1 },
          ],
        },
        { name: 'missing', partitionData: [{ index: 0, records: MESSAGE_SET_V1 }] },
      ],
    });
    const answers = r.body.responses.flatMap((t: { name: string; partitionResponses: any[] }) =>
      t.partitionResponses.map((p) => [t.name, p.index, p.errorCode, p.baseOffset]),
    );
    expect(answers).toEqual([
      ['old', 0, 35, -1],
      ['old', 1, 35, -1],
      ['missing', 0, 35, -1],
    ]);
    if (v >= 2) expect(r.body.responses[0].partitionResponses[0].logAppendTimeMs).toBe(-1);
    // The connection stays usable: the client can go on with a version it has.
    expect((await c.request(ApiVersions, 2, {})).body.errorCode).toBe(0);
    c.close();
    const topic = await s.services.topics.get('old');
    expect((await s.services.log.state(topic, 0)).highWatermark).toBe(0);
  });

  it('with acks=0 closes the connection, since no answer can carry the error', async () => {
    const c = await RawClient.open(s.broker);
    c.write(
      c.frame(Produce, 2, {
        acks: 0,
        timeoutMs: 1000,
        topicData: [{ name: 'old', partitionData: [{ index: 0, records: MESSAGE_SET_V1 }] }],
      }),
    );
    expect(await c.waitClosed()).toBe(true);
    const topic = await s.services.topics.get('old');
    expect((await s.services.log.state(topic, 0)).highWatermark).toBe(0);
  });
});
