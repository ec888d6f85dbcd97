/**
 * Where records a delivery gave up on go, by the trigger's on-failure destination: a topic of this
 * log (failure-topic.ts), an S3 bucket (failure-bucket.ts), or an SQS queue or SNS topic
 * (failure-message.ts). Each write comes before the offset commit and fails the run when it fails,
 * so no record is skipped without reaching it.
 */
import type { Clock } from '../clock.js';
import type { PartitionLog } from '../log/partition-log.js';
import type { TopicRegistry } from '../topics/topics.js';
import { writeFailed, type PutFailureObject } from './failure-bucket.js';
import { sendFailedMessage, type SendFailureMessage } from './failure-message.js';
import type { FailureContext } from './failure-record.js';
import { produceFailed, type FailedRecords } from './failure-topic.js';
import type { FailureDestination, TriggerTarget } from './trigger.js';

export interface FailureDeps {
  topics: TopicRegistry;
  log: PartitionLog;
  clock: Clock;
  bootstrapServers: string;
  putFailureObject?: PutFailureObject;
  sendFailureMessage?: SendFailureMessage;
}

export async function sendFailed(
  deps: FailureDeps,
  destination: FailureDestination,
  target: TriggerTarget,
  failed: FailedRecords,
): Promise<void> {
  if (destination.kind === 'kafka') return produceFailed(deps, destination.topic, failed);
  const topic = await deps.topics.get(failed.topic);
  const ctx: FailureContext = {
    target: target.type === 'LAMBDA' ? target.functionArn : target.url,
    bootstrapServers: deps.bootstrapServers,
    logAppendTime: topic.config.logAppendTime,
    now: deps.clock.now(),
  };
  if (destination.kind === 's3') return writeFailed(deps.putFailureObject, destination.bucket, failed, ctx);
  return sendFailedMessage(deps.sendFailureMessage, destination.arn, failed, ctx);
}
