/**
 * The on-failure destinations SQS and SNS, through the adapters (the SDK's SQS and SNS clients)
 * against a local peer that checks their SigV4-signed requests and answers as SQS (JSON protocol)
 * and SNS (Query protocol) do (aws-message-peer.ts; no SQS or SNS emulator runs in-process):
 * records a failing target was retried on are sent as one message, Lambda's invocation record for
 * Kafka without the payload, before the trigger's offset moves past them; a queue that does not
 * exist holds the partition until it does. And the destinations the API takes and refuses.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { failureMessageSender } from '../../src/storage/failure-message-sender.js';
import { failureMessage, MAX_MESSAGE_BYTES } from '../../src/triggers/failure-message.js';
import { PEER_CREDENTIALS, startAwsMessagePeer, type AwsMessagePeer } from './aws-message-peer.js';
import { startFailingTarget, type FailingTarget } from './failing-target.js';
import { eventually } from './webhook-sink.js';

const QUEUE = 'arn:aws:sqs:eu-west-1:123456789012:orders-failures';
const TOPIC = 'arn:aws:sns:eu-west-1:123456789012:orders-failures';

let peer: AwsMessagePeer;
let h: FailingTarget;
beforeAll(async () => {
  peer = await startAwsMessagePeer();
  peer.destinations.add(QUEUE).add(TOPIC);
  // The SDK's clients pointed at the peer.
  h = await startFailingTarget({
    sendFailureMessage: failureMessageSender({
      sqsEndpoint: peer.endpoint,
      snsEndpoint: peer.endpoint,
      credentials: PEER_CREDENTIALS,
    }),
  });
});
afterAll(async () => {
  await h.close();
  await peer.close();
});

const messagesTo = (arn: string) => peer.received.filter((m) => m.arn === arn).map((m) => JSON.parse(m.body));

describe('the SQS and SNS on-failure destinations', () => {
  for (const [service, destination, topic] of [
    ['SQS SendMessage', QUEUE, 'orders'],
    ['SNS Publish', TOPIC, 'payments'],
  ] as const)
    it(`send Lambda's invocation record without the payload (${service}), then move the offset past the records`, async () => {
      await h.failingTrigger(topic, destination);
      await eventually(async () => (await h.committed(`${topic}-hook`)) === 2);
      const [message, ...more] = messagesTo(destination);
      expect(more).toEqual([]);
      expect(message).toEqual({
        requestContext: {
          requestId: expect.stringMatching(new RegExp(`^${topic}-hook/${topic}-0/\\d{4}/\\d{2}/\\d{2}/0-1$`)),
          functionArn: h.sink.url,
          condition: 'RetryAttemptsExhausted',
          approximateInvokeCount: 2,
        },
        responseContext: { statusCode: 500, functionError: 'Unhandled' },
        version: '1.0',
        timestamp: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T/),
        KafkaBatchInfo: {
          batchSize: 2,
          bootstrapServers: expect.any(String),
          payloadSize: expect.any(Number),
          recordsInfo: {
            [`${topic}-0`]: {
              firstRecordOffset: '0',
              lastRecordOffset: '1',
              firstRecordTimestamp: expect.any(String),
              lastRecordTimestamp: expect.any(String),
            },
          },
        },
      });
      // The event the target was sent: two records, base64, as in the invocation.
      expect(message.KafkaBatchInfo.payloadSize).toBeGreaterThan(200);
    });

  it('a queue that does not exist holds the partition: the offset moves only once the message is sent', async () => {
    const late = 'arn:aws:sqs:eu-west-1:123456789012:late-failures';
    await h.failingTrigger('audit', late);
    await eventually(() => peer.refused.filter((c) => c === 'QueueDoesNotExist').length >= 2, 20_000);
    expect(await h.committed('audit-hook')).toBe(0);
    peer.destinations.add(late);
    await eventually(async () => (await h.committed('audit-hook')) === 2, 20_000);
    // Every refused send was the same give-up: the one message sent has its records.
    expect(messagesTo(late).map((m) => m.KafkaBatchInfo.recordsInfo['audit-0'].lastRecordOffset)).toEqual(['1']);
  });

  it('the requests are signed for the destination: a wrong key is refused, and the send fails', async () => {
    const wrong = failureMessageSender({
      sqsEndpoint: peer.endpoint,
      snsEndpoint: peer.endpoint,
      credentials: { accessKeyId: PEER_CREDENTIALS.accessKeyId, secretAccessKey: 'not-the-key' },
    });
    const before = peer.received.length;
    await expect(wrong(QUEUE, '{}')).rejects.toThrow(/signature/i);
    await expect(wrong(TOPIC, '{}')).rejects.toThrow(/signature/i);
    expect(peer.received.length).toBe(before);
  });

  it('a message stays within 256 KiB whatever the target and the error: the record is cut, never refused', () => {
    const failed = {
      trigger: 't',
      topic: 'orders',
      partition: 0,
      records: [{ offset: 7, timestamp: 0, key: null, value: new Uint8Array(1_000_000), headers: [] }],
      reason: 'RetriesExhausted' as const,
      error: 'x'.repeat(5_000),
      attempts: 3,
    };
    const ctx = { target: `http://h/${'p'.repeat(300_000)}`, bootstrapServers: 'b:9092', logAppendTime: false, now: 0 };
    const body = failureMessage(failed, ctx);
    expect(Buffer.byteLength(body)).toBeLessThanOrEqual(MAX_MESSAGE_BYTES);
    const record = JSON.parse(body);
    expect(record.KafkaBatchInfo.recordsInfo['orders-0'].firstRecordOffset).toBe('7');
    expect(record.KafkaBatchInfo.payloadSize).toBeGreaterThan(1_000_000);
    // Within the limit, nothing is cut.
    const small = JSON.parse(failureMessage(failed, { ...ctx, target: 'http://h/hook' }));
    expect(small.requestContext.functionArn).toBe('http://h/hook');
  });

  it('takes SQS queue and SNS topic ARNs; refuses FIFO ones (as Lambda) and malformed ones', async () => {
    expect((await h.call('POST', 'topics', { topic_name: 'src', partitions_count: 1 })).status).toBe(201);
    const create = (name: string, destination: string) =>
      h.call('POST', 'triggers', {
        trigger_name: name,
        topic_name: 'src',
        target: { type: 'WEBHOOK', url: h.sink.url },
        on_failure_destination: destination,
      });
    expect((await create('to-sqs', QUEUE)).status).toBe(201);
    expect((await create('to-sns', TOPIC)).status).toBe(201);
    for (const bad of [
      'arn:aws:sqs:eu-west-1:123456789012:q.fifo',
      'arn:aws:sns:eu-west-1:123456789012:t.fifo',
      'arn:aws:sqs:eu-west-1:1234:q',
      'arn:aws:sqs:eu-west-1:123456789012:bad/name',
      'arn:aws:sns:eu-west-1:123456789012',
      'https://sqs.eu-west-1.amazonaws.com/123456789012/q',
    ]) {
      const refused = await create('refused', bad);
      expect(refused.status, bad).toBe(400);
      expect(refused.body.error).toBe('INVALID_REQUEST');
    }
  });
});
