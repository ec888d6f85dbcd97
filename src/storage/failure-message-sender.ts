/**
 * Triggers' SQS and SNS on-failure destinations: one message to the queue or topic a trigger names
 * by ARN (src/triggers/failure-message.ts builds it), through SendMessage (sqs-message-sender.ts)
 * or Publish (sns-message-publisher.ts) as the ARN's service says. Each adapter, and its SDK
 * client, is loaded on its first message: only deliverers build this (the local server, the
 * scheduled function), and one without such a destination never loads either client.
 */
import type { MessageSenderOptions } from './destination-clients.js';

export type SendFailureMessage = (destinationArn: string, body: string) => Promise<void>;

export interface FailureMessageOptions extends Omit<MessageSenderOptions, 'endpoint'> {
  /** Other endpoints than SQS's and SNS's own (tests: a local peer speaking their protocols). */
  sqsEndpoint?: string;
  snsEndpoint?: string;
}

export function failureMessageSender(options: FailureMessageOptions = {}): SendFailureMessage {
  const { sqsEndpoint, snsEndpoint, ...common } = options;
  let sqs: Promise<SendFailureMessage> | undefined;
  let sns: Promise<SendFailureMessage> | undefined;
  return async (arn, body) => {
    const service = arn.split(':')[2];
    if (service === 'sqs') {
      sqs ??= import('./sqs-message-sender.js').then((m) =>
        m.sqsMessageSender({ ...common, ...(sqsEndpoint && { endpoint: sqsEndpoint }) }),
      );
      return (await sqs)(arn, body);
    }
    if (service === 'sns') {
      sns ??= import('./sns-message-publisher.js').then((m) =>
        m.snsMessagePublisher({ ...common, ...(snsEndpoint && { endpoint: snsEndpoint }) }),
      );
      return (await sns)(arn, body);
    }
    throw new Error(`Not an SQS queue's or SNS topic's ARN: ${arn}`);
  };
}
