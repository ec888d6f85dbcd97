/**
 * The on-failure destination S3 (a bucket named by its ARN, on AWS): records a delivery gave up on
 * are written as one JSON object per give-up, Lambda's invocation record for Kafka event sources
 * with the whole invocation payload (the Kafka event of the records), as Lambda writes to an S3
 * destination. The object is written before the trigger's offset moves past the records.
 *
 * The key is the trigger, the partition, the day of the first record and the offsets given up on:
 * a run that wrote it and died before its commit writes the same key again on redelivery, so a
 * give-up is one object however often it is retried (a later give-up of the same offsets, after a
 * reset of the group, replaces it).
 */
import type { FailedRecords } from './failure-topic.js';
import { kafkaEventJson, partitionKey } from './kafka-event.js';

/** Puts one object in a bucket: src/storage/failure-bucket-writer.ts, handed in by the composition root. */
export type PutFailureObject = (bucket: string, key: string, body: Uint8Array) => Promise<void>;

/** Lambda's `condition` for each reason. */
export const FAILURE_CONDITIONS = {
  RetriesExhausted: 'RetryAttemptsExhausted',
  RecordAgeExceeded: 'RecordAgeExceeded',
  PayloadTooLarge: 'MaximumPayloadSizeExceeded',
} as const;

export interface FailureContext {
  /** What was invoked: the function's ARN, or the webhook's URL. */
  target: string;
  bootstrapServers: string;
  logAppendTime: boolean;
  now: number;
}

export function failureObjectKey(failed: FailedRecords): string {
  const first = failed.records[0]!;
  const last = failed.records[failed.records.length - 1]!;
  const day = new Date(first.timestamp).toISOString().slice(0, 10).replaceAll('-', '/');
  return `${failed.trigger}/${partitionKey(failed.topic, failed.partition)}/${day}/${first.offset}-${last.offset}.json`;
}

export function failureRecord(failed: FailedRecords, ctx: FailureContext) {
  const first = failed.records[0]!;
  const last = failed.records[failed.records.length - 1]!;
  const payloadJson = kafkaEventJson(ctx.bootstrapServers, { ...failed, logAppendTime: ctx.logAppendTime });
  return {
    requestContext: {
      requestId: failureObjectKey(failed),
      functionArn: ctx.target,
      condition: FAILURE_CONDITIONS[failed.reason],
      approximateInvokeCount: failed.attempts,
    },
    // Lambda's function error type is not known here (a webhook has none): the last error's text.
    responseContext: failed.error === undefined ? null : { functionError: failed.error.slice(0, 1000) },
    version: '1.0',
    timestamp: new Date(ctx.now).toISOString(),
    KafkaBatchInfo: {
      batchSize: failed.records.length,
      bootstrapServers: ctx.bootstrapServers,
      payloadSize: payloadJson.byteLength,
      recordsInfo: {
        [partitionKey(failed.topic, failed.partition)]: {
          // Strings, as Lambda writes them.
          firstRecordOffset: String(first.offset),
          lastRecordOffset: String(last.offset),
          firstRecordTimestamp: new Date(first.timestamp).toISOString(),
          lastRecordTimestamp: new Date(last.timestamp).toISOString(),
        },
      },
    },
    payload: JSON.parse(payloadJson.toString('utf8')) as unknown,
  };
}

export async function writeFailed(
  put: PutFailureObject | undefined,
  bucket: string,
  failed: FailedRecords,
  ctx: FailureContext,
): Promise<void> {
  // A process composed without the S3 adapter fails the run: the batch is delivered (and given up on) again.
  if (!put) throw new Error('S3 failure destinations are not composed in this process');
  const body = new TextEncoder().encode(JSON.stringify(failureRecord(failed, ctx)));
  await put(bucket, failureObjectKey(failed), body);
}
