import { KafkaError } from '../wire/errors.js';

/**
 * Topic-level configs under Kafka's names, with Kafka's defaults. Values travel as strings (as in
 * Kafka's admin API and Confluent's REST API); `resolveTopicConfig` gives the typed view.
 */
type Kind = 'long' | 'int' | 'double' | 'boolean' | 'string';

interface ConfigDef {
  kind: Kind;
  default: string;
  min?: number;
  max?: number;
  /** Allowed values for string configs (comma-separated lists are checked item by item). */
  allowed?: readonly string[];
  list?: boolean;
}

const LONG_MAX = '9223372036854775807';

export const TOPIC_CONFIG_DEFS = {
  'cleanup.policy': { kind: 'string', default: 'delete', allowed: ['delete', 'compact'], list: true },
  'retention.ms': { kind: 'long', default: '604800000', min: -1 },
  'retention.bytes': { kind: 'long', default: '-1', min: -1 },
  'segment.bytes': { kind: 'int', default: '1073741824', min: 14 },
  'segment.ms': { kind: 'long', default: '604800000', min: 1 },
  'max.message.bytes': { kind: 'int', default: '1048588', min: 0 },
  'min.insync.replicas': { kind: 'int', default: '1', min: 1 },
  'unclean.leader.election.enable': { kind: 'boolean', default: 'false' },
  'delete.retention.ms': { kind: 'long', default: '86400000', min: 0 },
  'min.compaction.lag.ms': { kind: 'long', default: '0', min: 0 },
  'max.compaction.lag.ms': { kind: 'long', default: LONG_MAX, min: 1 },
  'min.cleanable.dirty.ratio': { kind: 'double', default: '0.5', min: 0, max: 1 },
  'file.delete.delay.ms': { kind: 'long', default: '60000', min: 0 },
  'message.timestamp.type': { kind: 'string', default: 'CreateTime', allowed: ['CreateTime', 'LogAppendTime'] },
  // How far a CreateTime timestamp may lie before or after the broker's clock (Kafka 3.6+; 4.0's
  // defaults): a timestamp from the future would keep its records from ever expiring by retention.ms.
  // Kafka's compression of stored batches: 'producer' keeps what the producer sent; gzip is the
  // only codec this product writes (snappy, lz4 and zstd need what Node 20 lacks).
  'compression.type': { kind: 'string', default: 'producer', allowed: ['producer', 'uncompressed', 'gzip'] },
  'message.timestamp.before.max.ms': { kind: 'long', default: LONG_MAX, min: 0 },
  'message.timestamp.after.max.ms': { kind: 'long', default: '3600000', min: 0 },
} as const satisfies Record<string, ConfigDef>;

export type TopicConfigName = keyof typeof TOPIC_CONFIG_DEFS;

export interface TopicConfig {
  cleanupPolicy: { delete: boolean; compact: boolean };
  retentionMs: number;
  retentionBytes: number;
  segmentBytes: number;
  segmentMs: number;
  maxMessageBytes: number;
  minInsyncReplicas: number;
  uncleanLeaderElectionEnable: boolean;
  deleteRetentionMs: number;
  minCompactionLagMs: number;
  maxCompactionLagMs: number;
  minCleanableDirtyRatio: number;
  fileDeleteDelayMs: number;
  logAppendTime: boolean;
  timestampBeforeMaxMs: number;
  timestampAfterMaxMs: number;
  compressionType: 'producer' | 'uncompressed' | 'gzip';
}

export const isTopicConfigName = (name: string): name is TopicConfigName => Object.hasOwn(TOPIC_CONFIG_DEFS, name);

/** Validates one config; throws INVALID_CONFIG naming the config and the reason. */
export function validateTopicConfig(name: string, value: string): void {
  if (!isTopicConfigName(name)) throw new KafkaError('INVALID_CONFIG', `Unknown topic config name: ${name}`);
  const def: ConfigDef = TOPIC_CONFIG_DEFS[name];
  const bad = (why: string) =>
    new KafkaError('INVALID_CONFIG', `Invalid value ${JSON.stringify(value)} for configuration ${name}: ${why}`);
  if (typeof value !== 'string') throw bad('value must be a string');
  switch (def.kind) {
    case 'boolean':
      if (value !== 'true' && value !== 'false') throw bad('expected true or false');
      return;
    case 'string': {
      const items = def.list ? value.split(',').map((s) => s.trim()) : [value];
      if (items.length === 0 || items.some((i) => !def.allowed?.includes(i)))
        throw bad(`expected one of ${def.allowed?.join(', ')}`);
      return;
    }
    default: {
      const re = def.kind === 'double' ? /^-?\d+(\.\d+)?$/ : /^-?\d+$/;
      if (!re.test(value.trim())) throw bad(`expected a${def.kind === 'int' ? 'n' : ''} ${def.kind}`);
      const n = Number(value);
      if (def.min !== undefined && n < def.min) throw bad(`value must be at least ${def.min}`);
      if (def.max !== undefined && n > def.max) throw bad(`value must be at most ${def.max}`);
      if (def.kind === 'int' && n > 2147483647) throw bad('value must fit in an int');
    }
  }
}

/** Typed view of a topic's overrides merged over the defaults. */
export function resolveTopicConfig(overrides: Record<string, string>): TopicConfig {
  const get = (name: TopicConfigName): string => overrides[name] ?? TOPIC_CONFIG_DEFS[name].default;
  const num = (name: TopicConfigName) => Math.min(Number(get(name)), Number.MAX_SAFE_INTEGER);
  const policy = get('cleanup.policy')
    .split(',')
    .map((s) => s.trim());
  return {
    cleanupPolicy: { delete: policy.includes('delete'), compact: policy.includes('compact') },
    retentionMs: num('retention.ms'),
    retentionBytes: num('retention.bytes'),
    segmentBytes: num('segment.bytes'),
    segmentMs: num('segment.ms'),
    maxMessageBytes: num('max.message.bytes'),
    minInsyncReplicas: num('min.insync.replicas'),
    uncleanLeaderElectionEnable: get('unclean.leader.election.enable') === 'true',
    deleteRetentionMs: num('delete.retention.ms'),
    minCompactionLagMs: num('min.compaction.lag.ms'),
    maxCompactionLagMs: num('max.compaction.lag.ms'),
    minCleanableDirtyRatio: num('min.cleanable.dirty.ratio'),
    fileDeleteDelayMs: num('file.delete.delay.ms'),
    logAppendTime: get('message.timestamp.type') === 'LogAppendTime',
    timestampBeforeMaxMs: num('message.timestamp.before.max.ms'),
    timestampAfterMaxMs: num('message.timestamp.after.max.ms'),
    compressionType: get('compression.type') as TopicConfig['compressionType'],
  };
}
