/**
 * The customer-managed KMS keys of triggers' encrypted on-failure destinations (SSE-KMS queues,
 * topics and buckets): sending to one is also a use of its key, made by the service on the
 * sender's behalf, so the sender needs the key as well as the destination. One rule for both the
 * log stack (the deliverers' roles, from triggerDestinationKeys) and KafkaLogTrigger (the key's
 * policy, for a destination of the user's app).
 */
import { Aws } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import type { TriggerDestinationKey } from './stack-config.js';

export type DestinationService = 's3' | 'sqs' | 'sns';

/**
 * What sending to an SSE-KMS destination takes of its customer-managed key: SQS and SNS encrypt each
 * message under a data key and check it (kms:GenerateDataKey, kms:Decrypt), S3 encrypts a one-part
 * PutObject (kms:GenerateDataKey). Through that service only (kms:ViaService): the key's own region
 * fixes the rest, so any region's endpoint of the service is named.
 */
export function destinationKeyStatements(keys: readonly TriggerDestinationKey[]): iam.PolicyStatement[] {
  return (['s3', 'sqs', 'sns'] as const).flatMap((service) => {
    const resources = [...new Set(keys.filter((k) => k.destinationArn.split(':')[2] === service).map((k) => k.keyArn))];
    if (resources.length === 0) return [];
    return [new iam.PolicyStatement({ ...destinationKeyUse(service), resources })];
  });
}

/** The KMS actions and condition of sending to a destination of `service` encrypted with a customer-managed key. */
export function destinationKeyUse(service: DestinationService): {
  actions: string[];
  conditions: Record<string, Record<string, string>>;
} {
  return {
    actions: service === 's3' ? ['kms:GenerateDataKey'] : ['kms:Decrypt', 'kms:GenerateDataKey'],
    conditions: { StringLike: { 'kms:ViaService': `${service}.*.${Aws.URL_SUFFIX}` } },
  };
}
