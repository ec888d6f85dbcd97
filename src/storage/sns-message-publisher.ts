/** SNS Publish to a topic named by its ARN (triggers' on-failure destinations); the region is the ARN's. */
import { PublishCommand, SNSClient } from '@aws-sdk/client-sns';
import {
  arnParts,
  clientsByRegion,
  destinationClientOptions,
  type MessageSenderOptions,
} from './destination-clients.js';

export function snsMessagePublisher(
  options: MessageSenderOptions = {},
): (topicArn: string, body: string) => Promise<void> {
  const clientFor = clientsByRegion((region) => new SNSClient(destinationClientOptions(region, options)));
  return async (topicArn, body) => {
    await clientFor(arnParts(topicArn).region).send(new PublishCommand({ TopicArn: topicArn, Message: body }));
  };
}
