import { parseIsoDuration } from '../clock.js';
import { KafkaError } from '../wire/errors.js';

export { parseIsoDuration };

/**
 * A share group's settings, by Kafka's names (ShareGroupConfigs and the group-level GroupConfig
 * overrides). The broker-wide values are Kafka's defaults; a group overrides the ones Kafka lets a
 * group override (`share.*`), stored with the group (share-groups.ts).
 */
export interface ShareGroupConfig {
  /** share.auto.offset.reset: where a share-partition starts when the group first reads it. */
  autoOffsetReset: AutoOffsetReset;
  /** share.record.lock.duration.ms (group.share.record.lock.duration.ms): how long an acquired record stays locked. */
  recordLockDurationMs: number;
  /** share.delivery.count.limit (group.share.delivery.count.limit): deliveries before a record is archived. */
  deliveryCountLimit: number;
  /** group.share.partition.max.record.locks: in-flight records per share-partition (broker-wide only). */
  maxRecordLocks: number;
  /** errors.deadletterqueue.topic.name (KIP-1191): where records done with are copied; '' for none. */
  deadLetterTopic: string;
  /** errors.deadletterqueue.copy.record.enable: the copy holds the record's key, value and headers, not only the context headers. */
  deadLetterCopyRecord: boolean;
  /**
   * share.isolation.level: read_uncommitted delivers every record below the high watermark;
   * read_committed only those below the last stable offset, never an aborted transaction's.
   */
  isolationLevel: ShareIsolationLevel;
}

export type ShareIsolationLevel = 'read_uncommitted' | 'read_committed';

/** Kafka's errors.deadletterqueue.topic.name.prefix default: a dead-letter topic's name starts with it. */
export const DEAD_LETTER_TOPIC_PREFIX = 'dlq.';

/** earliest, latest, or by_duration:PnDTnHnMn.nS (the first record at or after now minus the duration). */
export type AutoOffsetReset = 'earliest' | 'latest' | `by_duration:${string}`;

export const SHARE_GROUP_DEFAULTS: ShareGroupConfig = {
  autoOffsetReset: 'latest',
  recordLockDurationMs: 30_000,
  deliveryCountLimit: 5,
  maxRecordLocks: 200,
  deadLetterTopic: '',
  deadLetterCopyRecord: false,
  isolationLevel: 'read_uncommitted',
};

/** Kafka's bounds on the group-level lock duration (group.share.min/max.record.lock.duration.ms) and the count limit. */
const LOCK_DURATION_BOUNDS = { min: 15_000, max: 60_000 };
const DELIVERY_COUNT_BOUNDS = { min: 2, max: 10 };

/** The group-level configs a share group takes, with the field each sets and its parser. */
export const SHARE_GROUP_CONFIG_NAMES = {
  'share.auto.offset.reset': 'autoOffsetReset',
  'share.record.lock.duration.ms': 'recordLockDurationMs',
  'share.delivery.count.limit': 'deliveryCountLimit',
  'errors.deadletterqueue.topic.name': 'deadLetterTopic',
  'errors.deadletterqueue.copy.record.enable': 'deadLetterCopyRecord',
  'share.isolation.level': 'isolationLevel',
} as const satisfies Record<string, keyof ShareGroupConfig>;

export type ShareGroupConfigName = keyof typeof SHARE_GROUP_CONFIG_NAMES;

export const isShareGroupConfigName = (name: string): name is ShareGroupConfigName =>
  Object.hasOwn(SHARE_GROUP_CONFIG_NAMES, name);

/** A change of one group-level config: a value to set, or null to go back to the default. */
export interface ShareConfigChange {
  name: string;
  value: string | null;
}

/** A group-level override as stored: checked as Kafka checks it (INVALID_CONFIG otherwise). */
export function parseShareGroupConfig(name: string, value: string): Partial<ShareGroupConfig> {
  if (!isShareGroupConfigName(name)) throw new KafkaError('INVALID_CONFIG', `Unknown share group config ${name}`);
  if (name === 'share.auto.offset.reset') {
    const ok =
      value === 'earliest' ||
      value === 'latest' ||
      (value.startsWith('by_duration:') && parseIsoDuration(value.slice('by_duration:'.length)) !== undefined);
    if (!ok)
      throw new KafkaError(
        'INVALID_CONFIG',
        `${name} must be earliest, latest or by_duration:PnDTnHnMn.nS (got ${JSON.stringify(value)})`,
      );
    return { autoOffsetReset: value as AutoOffsetReset };
  }
  if (name === 'errors.deadletterqueue.topic.name') {
    if (
      value !== '' &&
      (!value.startsWith(DEAD_LETTER_TOPIC_PREFIX) || value.length === DEAD_LETTER_TOPIC_PREFIX.length)
    )
      throw new KafkaError('INVALID_CONFIG', `${name} must start with ${DEAD_LETTER_TOPIC_PREFIX} (or be empty)`);
    return { deadLetterTopic: value };
  }
  if (name === 'errors.deadletterqueue.copy.record.enable') {
    if (value !== 'true' && value !== 'false') throw new KafkaError('INVALID_CONFIG', `${name} must be true or false`);
    return { deadLetterCopyRecord: value === 'true' };
  }
  if (name === 'share.isolation.level') {
    if (value !== 'read_uncommitted' && value !== 'read_committed')
      throw new KafkaError('INVALID_CONFIG', `${name} must be read_uncommitted or read_committed`);
    return { isolationLevel: value };
  }
  const bounds = name === 'share.record.lock.duration.ms' ? LOCK_DURATION_BOUNDS : DELIVERY_COUNT_BOUNDS;
  const n = Number(value);
  if (!/^\d+$/.test(value) || n < bounds.min || n > bounds.max)
    throw new KafkaError('INVALID_CONFIG', `${name} must be an integer in [${bounds.min}, ${bounds.max}]`);
  return { [SHARE_GROUP_CONFIG_NAMES[name]]: n };
}

/** The configs as Kafka names and strings (DescribeConfigs' shape), overrides marked. */
export function showShareGroupConfig(
  overrides: Partial<ShareGroupConfig>,
): { name: ShareGroupConfigName; value: string; isDefault: boolean }[] {
  return (Object.keys(SHARE_GROUP_CONFIG_NAMES) as ShareGroupConfigName[]).map((name) => {
    const field = SHARE_GROUP_CONFIG_NAMES[name];
    const value = overrides[field] ?? SHARE_GROUP_DEFAULTS[field];
    return { name, value: String(value), isDefault: overrides[field] === undefined };
  });
}
