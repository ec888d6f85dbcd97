/** Topic ids on the wire: Kafka's 16-byte uuids, the registry's UUID strings (Topic.id). */
import type { Topic } from '../../topics/topics.js';

export const ZERO_UUID = Buffer.alloc(16);

export const topicIdBytes = (id: string): Buffer => {
  const hex = id.replace(/-/g, '');
  return /^[0-9a-f]{32}$/i.test(hex) ? Buffer.from(hex, 'hex') : ZERO_UUID;
};

export const topicIdString = (bytes: Uint8Array): string => {
  const h = Buffer.from(bytes).toString('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
};

/** The registry's topics by id, for requests that name topics by id. */
export const byTopicId = (topics: Topic[]): Map<string, Topic> => new Map(topics.map((t) => [t.id.toLowerCase(), t]));
