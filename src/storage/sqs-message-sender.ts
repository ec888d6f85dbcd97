/**
 * SQS SendMessage to a queue named by its ARN (triggers' on-failure destinations). The region is
 * the ARN's, and the queue's URL is made from it (https://sqs.{region}.amazonaws.com/{account}/{name},
 * as SQS names queues), or from `endpoint` when another stands in for SQS. The SDK checks the MD5
 * of the body SQS answers with.
 */
import { SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import {
  arnParts,
  clientsByRegion,
  destinationClientOptions,
  type MessageSenderOptions,
} from './destination-clients.js';

export function sqsMessageSender(
  options: MessageSenderOptions = {},
): (queueArn: string, body: string) => Promise<void> {
  const clientFor = clientsByRegion((region) => new SQSClient(destinationClientOptions(region, options)));
  return async (queueArn, body) => {
    const { partition, region, account, name } = arnParts(queueArn);
    const origin = options.endpoint ?? `https://sqs.${region}.amazonaws.com${partition === 'aws-cn' ? '.cn' : ''}`;
    await clientFor(region).send(
      new SendMessageCommand({ QueueUrl: `${origin.replace(/\/$/, '')}/${account}/${name}`, MessageBody: body }),
    );
  };
}
