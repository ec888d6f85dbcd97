/**
 * A trigger with a Lambda function target, delivered through the Lambda adapter (the SDK's Invoke,
 * loaded lazily by the composition root) to a peer speaking Lambda's Invoke API on the wire: the
 * function named by its ARN is invoked RequestResponse with the Kafka event; a FunctionError is
 * retried as a failed webhook is; a partial batch response is honoured.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { TEST_CREDENTIALS } from '../support/emulators.js';
import { testApp } from '../support/test-app.js';
import { startLambdaPeer, type LambdaPeer } from './lambda-peer.js';
import { eventually, recordValue } from './webhook-sink.js';

const ARN = 'arn:aws:lambda:eu-west-1:123456789012:function:orders-consumer';

describe('triggers with a Lambda function target', () => {
  let peer: LambdaPeer;
  let t: ReturnType<typeof testApp>;

  beforeEach(async () => {
    vi.stubEnv('AWS_ACCESS_KEY_ID', TEST_CREDENTIALS.accessKeyId);
    vi.stubEnv('AWS_SECRET_ACCESS_KEY', TEST_CREDENTIALS.secretAccessKey);
    peer = await startLambdaPeer();
    t = testApp({ runTriggers: true, lambdaTargets: true, env: { AWS_ENDPOINT_URL_LAMBDA: peer.endpoint } });
  });
  afterEach(async () => {
    await t.services.triggers.runner.close();
    await peer.close();
    vi.unstubAllEnvs();
  });

  async function setup(topic: string, knobs: Record<string, unknown> = {}) {
    expect((await t.call('POST', 'topics', { topic_name: topic, partitions_count: 1 })).status).toBe(201);
    const created = await t.call('POST', 'triggers', {
      trigger_name: `${topic}-fn`,
      topic_name: topic,
      target: { type: 'LAMBDA', function_arn: ARN, timeout_ms: 2000 },
      maximum_batching_window_ms: 0,
      ...knobs,
    });
    expect(created.status).toBe(201);
    return created.body;
  }
  const produce = async (topic: string, value: string) =>
    expect(
      (await t.call('POST', `topics/${topic}/records`, { partition_id: 0, value: { type: 'STRING', data: value } }))
        .status,
    ).toBe(200);

  it('invokes the function by its ARN, RequestResponse, with the Kafka event, and commits after success', async () => {
    const created = await setup('orders');
    expect(created.target).toEqual({ type: 'LAMBDA', function_arn: ARN, timeout_ms: 2000 });
    await produce('orders', 'a');
    await produce('orders', 'b');
    await eventually(() => peer.delivered.length >= 2);
    expect(peer.calls[0]).toMatchObject({ functionName: ARN, invocationType: 'RequestResponse' });
    expect(peer.calls[0]!.event.eventSource).toBe('SelfManagedKafka');
    expect(Object.keys(peer.calls[0]!.event.records)).toEqual(['orders-0']);
    expect(peer.delivered.map(recordValue)).toEqual(['a', 'b']);
    await eventually(async () => (await t.call('GET', 'triggers/orders-fn')).body.lag === 0);
    expect((await t.call('GET', 'triggers/orders-fn')).body.partitions[0].committed_offset).toBe(2);
  });

  it('retries an invocation that ends in a FunctionError or a throttle, holding the offset', async () => {
    await setup('flaky');
    peer.answer = (_, n) => (n === 0 ? { functionError: 'Unhandled' } : n === 1 ? { status: 429 } : {});
    await produce('flaky', 'x');
    await eventually(() => peer.delivered.length >= 1);
    expect(peer.calls.length).toBe(3);
    expect(peer.calls.map((c) => c.event.records['flaky-0']![0]!.offset)).toEqual([0, 0, 0]);
    await eventually(async () => (await t.call('GET', 'triggers/flaky-fn')).body.lag === 0);
  });

  it("honours the function's partial batch response", async () => {
    await setup('partial', { function_response_types: ['ReportBatchItemFailures'], batch_size: 10 });
    peer.answer = (_, n) =>
      n === 0 ? { body: { batchItemFailures: [{ itemIdentifier: { partition: 'partial-0', offset: 1 } }] } } : {};
    // Three records in one batch: the first invocation sees them together.
    await t.services.triggers.admin.pause('partial-fn');
    for (const v of ['r0', 'r1', 'r2']) await produce('partial', v);
    await t.services.triggers.admin.resume('partial-fn');
    await eventually(() => peer.calls.length >= 2 && peer.delivered.length >= 5);
    expect(peer.calls.map((c) => c.event.records['partial-0']!.map((r) => r.offset))).toEqual([
      [0, 1, 2],
      [1, 2],
    ]);
    await eventually(async () => (await t.call('GET', 'triggers/partial-fn')).body.lag === 0);
  });

  it('refuses a target that is not a function ARN', async () => {
    expect((await t.call('POST', 'topics', { topic_name: 'bad', partitions_count: 1 })).status).toBe(201);
    for (const function_arn of ['orders-consumer', 'arn:aws:lambda:eu-west-1:123456789012:layer:x', ''])
      expect(
        (
          await t.call('POST', 'triggers', {
            trigger_name: 'bad-fn',
            topic_name: 'bad',
            target: { type: 'LAMBDA', function_arn },
          })
        ).status,
        function_arn,
      ).toBe(400);
  });
});
