/**
 * What the SQS and SNS destination adapters share (sqs-message-sender.ts, sns-message-publisher.ts):
 * the ARN's parts, a client per region (a destination may be in another region than the process),
 * and the clients' options.
 */
import { DESTINATION_MESSAGE_TIMEOUTS, sdkClientTimeouts } from './sdk-timeouts.js';

export interface MessageSenderOptions {
  /** Another endpoint than the service's own (tests: a local peer speaking its protocol). */
  endpoint?: string;
  /** Fixed credentials (tests); otherwise the SDK's default chain (the function's role). */
  credentials?: { accessKeyId: string; secretAccessKey: string };
}

/** A queue's or topic's ARN: arn:{partition}:{service}:{region}:{account}:{name}. */
export function arnParts(arn: string): { partition: string; region: string; account: string; name: string } {
  const [, partition = '', , region = '', account = '', name = ''] = arn.split(':');
  return { partition, region, account, name };
}

export function clientsByRegion<C>(make: (region: string) => C): (region: string) => C {
  const clients = new Map<string, C>();
  return (region) => {
    let client = clients.get(region);
    if (!client) {
      client = make(region);
      clients.set(region, client);
    }
    return client;
  };
}

export const destinationClientOptions = (region: string, options: MessageSenderOptions) => ({
  ...sdkClientTimeouts(DESTINATION_MESSAGE_TIMEOUTS),
  region,
  ...(options.endpoint && { endpoint: options.endpoint }),
  ...(options.credentials && { credentials: options.credentials }),
});
