/**
 * The on-failure destination S3 (a bucket named by its ARN, on AWS): records a delivery gave up on
 * are written as one JSON object per give-up, Lambda's invocation record for Kafka event sources
 * (failure-record.ts) with the whole invocation payload, the Kafka event of the records, as an
 * escaped JSON string, as Lambda writes to an S3 destination. The object is written before the
 * trigger's offset moves past the records.
 *
 * The key is the give-up's id (`failureId`): a run that wrote it and died before its commit
 * writes the same key again on redelivery, so a give-up is one object however often it is retried
 * (a later give-up of the same offsets, after a reset of the group, replaces it).
 */
import { failureId, invocationRecord, type FailureContext } from './failure-record.js';
import type { FailedRecords } from './failure-topic.js';

/** Puts one object in a bucket: src/storage/failure-bucket-writer.ts, handed in by the composition root. */
export type PutFailureObject = (bucket: string, key: string, body: Uint8Array) => Promise<void>;

export const failureObjectKey = (failed: FailedRecords): string => `${failureId(failed)}.json`;

export function failureObject(failed: FailedRecords, ctx: FailureContext) {
  const { metadata, payloadJson } = invocationRecord(failed, ctx, failureObjectKey(failed));
  return { ...metadata, payload: payloadJson.toString('utf8') };
}

export async function writeFailed(
  put: PutFailureObject | undefined,
  bucket: string,
  failed: FailedRecords,
  ctx: FailureContext,
): Promise<void> {
  // A process composed without the S3 adapter fails the run: the batch is delivered (and given up on) again.
  if (!put) throw new Error('S3 failure destinations are not composed in this process');
  const body = new TextEncoder().encode(JSON.stringify(failureObject(failed, ctx)));
  await put(bucket, failureObjectKey(failed), body);
}
