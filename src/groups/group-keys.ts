/**
 * Keys of the group items (DESIGN.md data layout). Everything of one group shares pk `group#{id}`:
 * sk `meta` (the group item), `off#{topic}#{p}` (committed offsets), `inst#{name}` (REST Proxy v2
 * consumer instances). The registry item pk `cluster`, sk `group#{id}` makes listing groups one query
 * (the same scheme as topics): it is written before the group item is created and removed after the
 * group item is deleted, so every existing group is listed; a dangling registry item is skipped.
 */
import { KafkaError } from '../errors.js';

export const groupPk = (groupId: string) => `group#${groupId}`;
export const META_SK = 'meta';
export const OFFSET_PREFIX = 'off#';
export const offsetSk = (topic: string, partition: number) => `${OFFSET_PREFIX}${topic}#${partition}`;
export const INSTANCE_PREFIX = 'inst#';
export const instanceSk = (name: string) => `${INSTANCE_PREFIX}${name}`;
export const REGISTRY_PK = 'cluster';
export const REGISTRY_PREFIX = 'group#';
export const registrySk = (groupId: string) => `${REGISTRY_PREFIX}${groupId}`;

/** Kafka only rejects an empty group id; a bound on length keeps keys within DynamoDB's limits. */
export function validateGroupId(groupId: string): void {
  if (groupId.length === 0 || groupId.length > 255) {
    throw new KafkaError('INVALID_GROUP_ID', 'The group id must be between 1 and 255 characters');
  }
}
