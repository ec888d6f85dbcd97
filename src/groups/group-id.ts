import { KafkaError } from '../wire/errors.js';

/** Kafka only rejects an empty group id; a bound on length keeps keys within DynamoDB's limits. */
export function validateGroupId(groupId: string): void {
  if (groupId.length === 0 || groupId.length > 255) {
    throw new KafkaError('INVALID_GROUP_ID', 'The group id must be between 1 and 255 characters');
  }
}
