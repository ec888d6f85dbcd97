/**
 * The on-failure destinations SQS and SNS (a queue's or a topic's ARN, on AWS): each give-up is one
 * message, Lambda's invocation record for Kafka event sources without the payload (failure-record.ts),
 * as Lambda sends to these: it points at the records (topic-partition, offsets, timestamps), which
 * stay in the log. Sent before the trigger's offset moves past them; a redelivered give-up sends
 * the same record again (the same `requestId`), so a consumer of the queue can tell a duplicate.
 */
import { invocationRecord, type FailureContext, type InvocationRecordMetadata } from './failure-record.js';
import type { FailedRecords } from './failure-topic.js';

/**
 * Sends one message to the queue or topic the ARN names (SQS SendMessage, SNS Publish):
 * src/storage/failure-message-sender.ts, handed in by the composition root.
 */
export type SendFailureMessage = (destinationArn: string, body: string) => Promise<void>;

/** SQS's and SNS's message size limit: 256 KiB. */
export const MAX_MESSAGE_BYTES = 256 * 1024;

/**
 * The message body: the metadata alone, a few hundred bytes for any batch. Only the target's name
 * (a webhook's URL) is the caller's; should it take the body over the limit it is cut, so that a
 * give-up is never refused for its size and never holds its partition.
 */
export function failureMessage(failed: FailedRecords, ctx: FailureContext): string {
  const { metadata } = invocationRecord(failed, ctx);
  const body = JSON.stringify(metadata);
  if (Buffer.byteLength(body) <= MAX_MESSAGE_BYTES) return body;
  const cut: InvocationRecordMetadata = {
    ...metadata,
    requestContext: { ...metadata.requestContext, functionArn: metadata.requestContext.functionArn.slice(0, 1000) },
  };
  return JSON.stringify(cut);
}

export async function sendFailedMessage(
  send: SendFailureMessage | undefined,
  destinationArn: string,
  failed: FailedRecords,
  ctx: FailureContext,
): Promise<void> {
  // A process composed without the SQS/SNS adapters fails the run: the batch is delivered (and given up on) again.
  if (!send) throw new Error('SQS and SNS failure destinations are not composed in this process');
  await send(destinationArn, failureMessage(failed, ctx));
}
