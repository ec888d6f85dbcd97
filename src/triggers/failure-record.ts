/**
 * Lambda's invocation record for Kafka event sources: what Lambda sends an on-failure destination
 * (an SQS queue, an SNS topic, an S3 bucket) about records it gave up on. The metadata points at
 * the records (topic-partition, first and last offset and timestamp); only an S3 destination also
 * gets the whole invocation payload (failure-bucket.ts), SQS and SNS the metadata alone
 * (failure-message.ts), as Lambda does.
 */
import type { FailedRecords } from './failure-topic.js';
import { kafkaEventJson, partitionKey } from './kafka-event.js';

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

/**
 * The give-up's id: trigger, partition, the day of the first record and the offsets given up on.
 * A give-up redelivered after a crash before its commit has the same id (and S3 object key).
 */
export function failureId(failed: FailedRecords): string {
  const first = failed.records[0]!;
  const last = failed.records[failed.records.length - 1]!;
  const day = new Date(first.timestamp).toISOString().slice(0, 10).replaceAll('-', '/');
  return `${failed.trigger}/${partitionKey(failed.topic, failed.partition)}/${day}/${first.offset}-${last.offset}`;
}

/** The record's metadata, and the invocation payload's JSON (what the target was, or would have been, sent). */
export function invocationRecord(failed: FailedRecords, ctx: FailureContext, requestId = failureId(failed)) {
  const first = failed.records[0]!;
  const last = failed.records[failed.records.length - 1]!;
  const payloadJson = kafkaEventJson(ctx.bootstrapServers, { ...failed, logAppendTime: ctx.logAppendTime });
  const metadata = {
    requestContext: {
      requestId,
      functionArn: ctx.target,
      condition: FAILURE_CONDITIONS[failed.reason],
      approximateInvokeCount: failed.attempts,
    },
    // How the target answered the last invocation; none when it did not (a timeout, a refused
    // connection) or was never invoked (records too old or too large).
    responseContext: failed.answer ?? null,
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
  };
  return { metadata, payloadJson };
}

export type InvocationRecordMetadata = ReturnType<typeof invocationRecord>['metadata'];
