/**
 * The REST API flavour carries every body the client sends and accepts intact (issue 31, finding
 * 5). API Gateway's REST API passes a body as text unless its media type is one of the API's
 * binaryMediaTypes, and hands back a function's base64 answer as bytes only when the request
 * accepts a binary type (test/support/api-gateway.ts's restApiFetch does the same). The client
 * runs against the functions' Lambda handlers behind that emulation, with the binaryMediaTypes
 * read from the synthesized REST template: Kafka's ProduceRequest (the default produce of several
 * partitions), record batches and Kafka's FetchResponse (a consumer's fetch), with values that are
 * not UTF-8. Every non-JSON media type the client sent or accepted must be binary in the template.
 */
import { handle } from 'hono/aws-lambda';
import { afterAll, describe, expect, it } from 'vitest';
import { Kafka, type Consumer } from '../../src/client/index.js';
import { createServices, createStorage } from '../../src/compose.js';
import { serverConfigFromEnv } from '../../src/config/server-config.js';
import { createApp } from '../../src/http/app.js';
import { isBinaryMediaType, REST_API_HOST, restApiFetch } from '../support/api-gateway.js';
import { synthStack } from '../infra/synth.js';

/** The REST API's binaryMediaTypes as the template declares them (CloudFormation writes `/` as `~1`). */
function templateBinaryMediaTypes(): string[] {
  const s = synthStack({ apiFlavor: 'rest' }, { bundle: false, cfnValidation: false });
  try {
    const [api] = Object.values(s.template.findResources('AWS::ApiGateway::RestApi'));
    return (api!.Properties.BinaryMediaTypes as string[]).map((t) => t.replace(/~1/g, '/'));
  } finally {
    s.cleanup();
  }
}

/** Values that are not UTF-8: text transport would replace bytes of them. */
const nonUtf8Value = (i: number) => Buffer.from([0xff, 0xfe, 0x80, i, 0xc3]);

const consumers: Consumer[] = [];
afterAll(async () => {
  for (const c of consumers) await c.close();
});

async function roundTrip(binaryMediaTypes: readonly string[]) {
  const config = serverConfigFromEnv({ STORAGE_BACKEND: 'memory', CLUSTER_ID: 'c' });
  const storage = createStorage(config.backend);
  const fn = () => handle(createApp(createServices(config, storage), { logError: () => {} })) as never;
  const media = new Set<string>();
  const kafka = new Kafka({
    url: `https://${REST_API_HOST}`,
    clusterId: 'c',
    fetch: restApiFetch({ produce: fn(), fetch: fn(), admin: fn() }, binaryMediaTypes, (m) => {
      for (const t of [m.contentType, ...(m.accept ?? '').split(','), m.answered])
        if (t?.trim()) media.add(t.split(';')[0]!.trim().toLowerCase());
    }),
  });
  await kafka.admin().createTopics({ topics: [{ topic: 'bin', numPartitions: 2 }] });
  const producer = kafka.producer();
  const sent = await producer
    .send({
      topic: 'bin',
      messages: Array.from({ length: 6 }, (_, i) => ({ value: nonUtf8Value(i), partition: i % 2 })),
    })
    .then(
      () => 'ok',
      (e: Error) => e.message,
    );
  await producer.close();
  const received: Buffer[] = [];
  const consumer = kafka.consumer({ groupId: 'g', autoOffsetReset: 'earliest' });
  consumers.push(consumer);
  await consumer.subscribe({ topics: ['bin'] });
  await consumer.run({ eachMessage: async ({ message }) => void received.push(Buffer.from(message.value!)) });
  for (let i = 0; i < 150 && received.length < 6; i++) await new Promise((r) => setTimeout(r, 20));
  await consumer.close();
  return { sent, received: received.map((b) => b.toString('hex')).sort(), media };
}

const expected = Array.from({ length: 6 }, (_, i) => nonUtf8Value(i).toString('hex')).sort();

describe('REST API flavour: binary media types', () => {
  const binaryMediaTypes = templateBinaryMediaTypes();

  it("every body the client sends and accepts arrives intact through the template's binaryMediaTypes", async () => {
    const r = await roundTrip(binaryMediaTypes);
    expect(r.sent).toBe('ok');
    expect(r.received).toEqual(expected);
    // What the client really sent and accepted, JSON aside, is binary in the template.
    const binary = [...r.media].filter((t) => !t.endsWith('json'));
    expect(binary).toEqual(
      expect.arrayContaining(['application/vnd.kafka.produce-request', 'application/vnd.kafka.fetch-response']),
    );
    expect(binary.filter((t) => !isBinaryMediaType(binaryMediaTypes, t))).toEqual([]);
  }, 60_000);

  it('control: with record batches and octet-stream alone (the list before), the default produce is corrupted', async () => {
    const r = await roundTrip(['application/vnd.kafka.record-batch.v2', 'application/octet-stream']);
    expect(r.sent !== 'ok' || r.received.join() !== expected.join()).toBe(true);
  }, 60_000);
});
