/**
 * The on-failure destination S3, through the S3 adapter against a real wire peer (s3rver): records
 * a failing target was retried on are written as one JSON object, Lambda's invocation record for
 * Kafka with the event as payload (an escaped JSON string), before the trigger's offset moves past them; a bucket that
 * refuses the write (missing) holds the partition, the offset unmoved, until the write succeeds.
 * And the destinations the API takes and refuses.
 */
import { CreateBucketCommand, GetObjectCommand, ListObjectsV2Command } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { failureBucketWriter } from '../../src/storage/failure-bucket-writer.js';
import { startS3rver, TEST_CREDENTIALS, TEST_REGION, type S3rverHandle } from '../support/emulators.js';
import { startFailingTarget, type FailingTarget } from './failing-target.js';
import { eventually } from './webhook-sink.js';

let s3: S3rverHandle;
let h: FailingTarget;
beforeAll(async () => {
  s3 = await startS3rver({ buckets: ['failures'] });
  // The S3 adapter writes the failure records.
  h = await startFailingTarget({
    putFailureObject: failureBucketWriter({
      endpoint: s3.endpoint,
      forcePathStyle: true,
      region: TEST_REGION,
      credentials: TEST_CREDENTIALS,
    }),
  });
});
afterAll(async () => {
  await h.close();
  await s3.stop();
});

async function objects(bucket: string) {
  const listed = await s3.client.send(new ListObjectsV2Command({ Bucket: bucket }));
  return Promise.all(
    (listed.Contents ?? []).map(async (o) => {
      const got = await s3.client.send(new GetObjectCommand({ Bucket: bucket, Key: o.Key! }));
      return { key: o.Key!, body: JSON.parse(await got.Body!.transformToString()) };
    }),
  );
}

describe('the S3 on-failure destination', () => {
  it("writes Lambda's invocation record with the event as payload, then moves the offset past the records", async () => {
    await h.failingTrigger('orders', 'arn:aws:s3:::failures');
    await eventually(async () => (await h.committed('orders-hook')) === 2);
    const [object, ...more] = await objects('failures');
    expect(more).toEqual([]);
    expect(object!.key).toMatch(/^orders-hook\/orders-0\/\d{4}\/\d{2}\/\d{2}\/0-1\.json$/);
    expect(object!.body).toMatchObject({
      version: '1.0',
      requestContext: { functionArn: h.sink.url, condition: 'RetryAttemptsExhausted', approximateInvokeCount: 2 },
      responseContext: { statusCode: 500, functionError: 'Unhandled' },
      KafkaBatchInfo: {
        batchSize: 2,
        recordsInfo: { 'orders-0': { firstRecordOffset: '0', lastRecordOffset: '1' } },
      },
    });
    // The invocation payload as an escaped JSON string, as Lambda writes it to S3.
    expect(typeof object!.body.payload).toBe('string');
    const payload = JSON.parse(object!.body.payload);
    expect(payload.eventSource).toBe('SelfManagedKafka');
    const records = payload.records['orders-0'];
    expect(
      records.map((r: { offset: number; value: string }) => [r.offset, Buffer.from(r.value, 'base64').toString()]),
    ).toEqual([
      [0, 'a'],
      [1, 'b'],
    ]);
    expect(object!.body.KafkaBatchInfo.payloadSize).toBe(Buffer.byteLength(object!.body.payload));
  });

  it('a bucket that refuses the write holds the partition: the offset moves only once the object is written', async () => {
    await h.failingTrigger('audit', 'arn:aws:s3:::late-failures');
    // Attempts, give-ups refused (NoSuchBucket), runs failed and taken up again: the offset stays.
    await eventually(() => h.sink.events.filter((e) => 'audit-0' in e.records).length >= 4, 20_000);
    expect(await h.committed('audit-hook')).toBe(0);
    await s3.client.send(new CreateBucketCommand({ Bucket: 'late-failures' }));
    await eventually(async () => (await h.committed('audit-hook')) === 2, 20_000);
    // Every refused write was the same give-up: one object.
    expect((await objects('late-failures')).map((o) => o.key)).toHaveLength(1);
  });

  it('takes kafka:// and S3 bucket ARNs; refuses malformed ones', async () => {
    expect((await h.call('POST', 'topics', { topic_name: 'src', partitions_count: 1 })).status).toBe(201);
    const create = (name: string, destination: string) =>
      h.call('POST', 'triggers', {
        trigger_name: name,
        topic_name: 'src',
        target: { type: 'WEBHOOK', url: h.sink.url },
        on_failure_destination: destination,
      });
    expect((await create('to-s3', 'arn:aws:s3:::any-bucket')).status).toBe(201);
    for (const bad of ['arn:aws:s3:::B', 's3://b']) {
      const refused = await create('refused', bad);
      expect(refused.status, bad).toBe(400);
      expect(refused.body.error).toBe('INVALID_REQUEST');
    }
  });
});
