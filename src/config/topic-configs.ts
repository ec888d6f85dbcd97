import { KafkaError } from '../wire/errors.js';
import type { CompressionType } from '../wire/compression/index.js';

/**
 * Every topic-level config Kafka has, under Kafka's names, with Kafka's types, defaults and valid
 * ranges (Kafka 4.x's LogConfig, and the three 3.x configs 4.0 removed, for manifests written for
 * 3.x clusters). Values travel as strings (as in Kafka's admin API and Confluent's REST API);
 * `resolveTopicConfig` gives the typed view of the ones this product applies. Kafka-compatible
 * services accept every valid config and describe it with its source; those with no effect here
 * (flush.*, preallocate, the index, tiered storage, replication throttles, ...) are listed in
 * docs/topic-configs.md. An unknown name is refused INVALID_CONFIG, as Kafka refuses it.
 */
type Kind = 'long' | 'int' | 'double' | 'boolean' | 'string' | 'list';

interface ConfigDef {
  kind: Kind;
  default: string;
  min?: number;
  max?: number;
  /** Allowed values for string and list configs (a list is checked item by item). */
  allowed?: readonly string[];
  /** Kafka's own validator beyond type and range: why a value is refused, or undefined. */
  check?: (value: string) => string | undefined;
  /** A 3.x config Kafka 4.0 removed: accepted and stored, described only where set. */
  removedInKafka4?: true;
}

const LONG_MAX = '9223372036854775807';
const INT_MIN = -2147483648;
const INT_MAX = 2147483647;

/** Kafka's ThrottledReplicaListValidator: `*`, or `partition:broker` pairs. */
const throttledReplicas = (value: string) =>
  value.trim() === '*' || value.split(',').every((r) => /^(\d+:\d+)?$/.test(r.trim()))
    ? undefined
    : "must be the literal '*' or a list of replicas in the form [partitionId]:[brokerId],[partitionId]:[brokerId],...";

/** gzip's levels, as Kafka's: 1 (fastest) to 9 (smallest), or -1 for zlib's default. */
const gzipLevel = (value: string) =>
  Number(value) === -1 || (Number(value) >= 1 && Number(value) <= 9)
    ? undefined
    : 'value must be between 1 and 9 or -1';

export const TOPIC_CONFIG_DEFS = {
  'cleanup.policy': { kind: 'list', default: 'delete', allowed: ['delete', 'compact'] },
  'retention.ms': { kind: 'long', default: '604800000', min: -1 },
  'retention.bytes': { kind: 'long', default: '-1' },
  'segment.bytes': { kind: 'int', default: '1073741824', min: 1024 * 1024 },
  'segment.ms': { kind: 'long', default: '604800000', min: 1 },
  'segment.jitter.ms': { kind: 'long', default: '0', min: 0 },
  'segment.index.bytes': { kind: 'int', default: '10485760', min: 4 },
  'index.interval.bytes': { kind: 'int', default: '4096', min: 0 },
  'flush.messages': { kind: 'long', default: LONG_MAX, min: 1 },
  'flush.ms': { kind: 'long', default: LONG_MAX, min: 0 },
  preallocate: { kind: 'boolean', default: 'false' },
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
  // Kafka's compression of stored batches: 'producer' keeps what the producer sent; any other
  // value re-encodes batches that differ (src/wire/compression/).
  'compression.type': {
    kind: 'string',
    default: 'producer',
    allowed: ['producer', 'uncompressed', 'gzip', 'snappy', 'lz4', 'zstd'],
  },
  'message.timestamp.before.max.ms': { kind: 'long', default: LONG_MAX, min: 0 },
  'message.timestamp.after.max.ms': { kind: 'long', default: '3600000', min: 0 },
  // KIP-390's levels of the codec compression.type names (Kafka's CompressionType ranges).
  'compression.gzip.level': { kind: 'int', default: '-1', check: gzipLevel },
  'compression.lz4.level': { kind: 'int', default: '9', min: 1, max: 17 },
  'compression.zstd.level': { kind: 'int', default: '3', min: -131072, max: 22 },
  'leader.replication.throttled.replicas': { kind: 'list', default: '', check: throttledReplicas },
  'follower.replication.throttled.replicas': { kind: 'list', default: '', check: throttledReplicas },
  // Tiered storage (KIP-405): -2 derives the local bound from retention.ms / retention.bytes.
  'remote.storage.enable': { kind: 'boolean', default: 'false' },
  'local.retention.ms': { kind: 'long', default: '-2', min: -2 },
  'local.retention.bytes': { kind: 'long', default: '-2', min: -2 },
  'remote.log.copy.disable': { kind: 'boolean', default: 'false' },
  'remote.log.delete.on.disable': { kind: 'boolean', default: 'false' },
  'remote.copy.lag.ms': { kind: 'long', default: '0', min: -1 },
  'remote.copy.lag.bytes': { kind: 'long', default: '0', min: -1 },
  // Removed in Kafka 4.0; 3.x's defaults. A set message.timestamp.difference.max.ms bounds both
  // directions where before/after are not set, as 3.6-3.9 did.
  'message.timestamp.difference.max.ms': { kind: 'long', default: LONG_MAX, min: 0, removedInKafka4: true },
  'message.format.version': {
    kind: 'string',
    default: '3.0-IV1',
    check: (v) =>
      /^\d+\.\d+(\.\d+)?(-IV\d+)?$/.test(v.trim()) ? undefined : 'expected a version such as 2.8 or 3.0-IV1',
    removedInKafka4: true,
  },
  'message.downconversion.enable': { kind: 'boolean', default: 'true', removedInKafka4: true },
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
  compressionType: 'producer' | 'uncompressed' | Exclude<CompressionType, 'none'>;
  /** compression.gzip.level or compression.zstd.level, for that codec; undefined: the codec's default. */
  compressionLevel: number | undefined;
}

export const isTopicConfigName = (name: string): name is TopicConfigName => Object.hasOwn(TOPIC_CONFIG_DEFS, name);

/** The configs a topic is described with: every current Kafka config, and a removed one where set. */
export function describedTopicConfigNames(overrides: Record<string, string>): TopicConfigName[] {
  return (Object.keys(TOPIC_CONFIG_DEFS) as TopicConfigName[]).filter(
    (n) => !(TOPIC_CONFIG_DEFS[n] as ConfigDef).removedInKafka4 || Object.hasOwn(overrides, n),
  );
}

/** Validates one config as Kafka's ConfigDef parses it; throws INVALID_CONFIG naming the config and the reason. */
export function validateTopicConfig(name: string, value: string): void {
  if (!isTopicConfigName(name)) throw new KafkaError('INVALID_CONFIG', `Unknown topic config name: ${name}`);
  const def: ConfigDef = TOPIC_CONFIG_DEFS[name];
  const bad = (why: string) =>
    new KafkaError('INVALID_CONFIG', `Invalid value ${JSON.stringify(value)} for configuration ${name}: ${why}`);
  if (typeof value !== 'string') throw bad('value must be a string');
  const trimmed = value.trim();
  switch (def.kind) {
    case 'boolean':
      if (!/^(true|false)$/i.test(trimmed)) throw bad('expected true or false');
      break;
    case 'string':
    case 'list': {
      const items = def.kind === 'list' ? trimmed.split(',').map((s) => s.trim()) : [trimmed];
      if (def.allowed && (items.length === 0 || items.some((i) => !def.allowed!.includes(i))))
        throw bad(`expected ${def.kind === 'list' ? 'a list of ' : 'one of '}${def.allowed.join(', ')}`);
      break;
    }
    case 'double': {
      const n = Number(trimmed);
      if (trimmed === '' || !Number.isFinite(n)) throw bad('expected a double');
      if (def.min !== undefined && n < def.min) throw bad(`value must be at least ${def.min}`);
      if (def.max !== undefined && n > def.max) throw bad(`value must be at most ${def.max}`);
      break;
    }
    default: {
      if (!/^[-+]?\d+$/.test(trimmed)) throw bad(`expected a${def.kind === 'int' ? 'n' : ''} ${def.kind}`);
      const n = BigInt(trimmed);
      const [lo, hi] =
        def.kind === 'int' ? [BigInt(INT_MIN), BigInt(INT_MAX)] : [-BigInt(LONG_MAX) - 1n, BigInt(LONG_MAX)];
      if (n < lo || n > hi) throw bad(`value must fit in a${def.kind === 'int' ? 'n' : ''} ${def.kind}`);
      if (def.min !== undefined && n < BigInt(def.min)) throw bad(`value must be at least ${def.min}`);
      if (def.max !== undefined && n > BigInt(def.max)) throw bad(`value must be at most ${def.max}`);
    }
  }
  const why = def.check?.(value);
  if (why) throw bad(why);
}

/** Kafka's checks across a topic's configs (LogConfig.validateValues), on the overrides merged over the defaults. */
export function validateTopicConfigSet(overrides: Record<string, string>): void {
  const c = resolveTopicConfig(overrides);
  if (c.minCompactionLagMs > c.maxCompactionLagMs)
    throw new KafkaError(
      'INVALID_CONFIG',
      `conflict topic config setting min.compaction.lag.ms (${c.minCompactionLagMs}) > max.compaction.lag.ms (${c.maxCompactionLagMs})`,
    );
}

/** Typed view of a topic's overrides merged over the defaults. */
export function resolveTopicConfig(overrides: Record<string, string>): TopicConfig {
  const get = (name: TopicConfigName): string => (overrides[name] ?? TOPIC_CONFIG_DEFS[name].default).trim();
  const num = (name: TopicConfigName) => Math.min(Number(get(name)), Number.MAX_SAFE_INTEGER);
  const bool = (name: TopicConfigName) => get(name).toLowerCase() === 'true';
  // Kafka 3.6-3.9: a set message.timestamp.difference.max.ms stands in for before/after where those are not set.
  const timestampBound = (name: 'message.timestamp.before.max.ms' | 'message.timestamp.after.max.ms') =>
    overrides[name] === undefined && overrides['message.timestamp.difference.max.ms'] !== undefined
      ? num('message.timestamp.difference.max.ms')
      : num(name);
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
    uncleanLeaderElectionEnable: bool('unclean.leader.election.enable'),
    deleteRetentionMs: num('delete.retention.ms'),
    minCompactionLagMs: num('min.compaction.lag.ms'),
    maxCompactionLagMs: num('max.compaction.lag.ms'),
    minCleanableDirtyRatio: num('min.cleanable.dirty.ratio'),
    fileDeleteDelayMs: num('file.delete.delay.ms'),
    logAppendTime: get('message.timestamp.type') === 'LogAppendTime',
    timestampBeforeMaxMs: timestampBound('message.timestamp.before.max.ms'),
    timestampAfterMaxMs: timestampBound('message.timestamp.after.max.ms'),
    compressionType: get('compression.type') as TopicConfig['compressionType'],
    // lz4's level (its high-compression mode) is not applied: the lz4 compressor has its fast mode only.
    compressionLevel:
      get('compression.type') === 'zstd'
        ? num('compression.zstd.level')
        : get('compression.type') === 'gzip' && num('compression.gzip.level') !== -1
          ? num('compression.gzip.level')
          : undefined,
  };
}
