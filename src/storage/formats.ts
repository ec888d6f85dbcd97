/**
 * Every stored format, its version, and the rule a reader applies (docs/formats.md is the prose of
 * this table). Each format has a version; the format v0.1.0 wrote is version 1 and carries no
 * marker, so nothing stored before versions existed changes, and items and objects keep their size:
 *
 *  - an item (DynamoDB, SQLite or memory) carries a later version as the field `fv` of its value;
 *  - an object (request object, segment) carries it in its key, as the suffix `.v{n}`;
 *  - a SQLite file of the local backend (its metadata and its pack index) in `PRAGMA user_version`.
 *
 * A reader that meets a version above the one it knows refuses the item or object with
 * `UnknownFormatError`, naming the format and the version it would need, instead of misreading
 * it; it reads every version from 1 up to the one it knows. A writer writes the version the
 * cluster's feature level allows (src/storage/feature-level.ts), never more.
 */
import type { CompressionType } from '../wire/compression/index.js';
import { KafkaError } from '../wire/errors.js';

/** The field of an item's value that holds its format version when it is above 1. */
export const ITEM_FORMAT_FIELD = 'fv';

/**
 * The formats, each with the newest version this code reads and writes. A version above 1 is
 * listed with the feature level that must be reached before it is written (see `FEATURE_LEVELS`).
 */
export const FORMATS = {
  // Objects.
  // 2: the key has a shard before the time (`data/{topicId}/{shard}/{ms}-{hex}.v2`), from level 3.
  'request-object': { version: 2, what: 'request object (data/{topicId}/...)' },
  segment: { version: 1, what: 'segment (segments/{topicId}/{partition}/...)' },
  'pack-index': { version: 1, what: 'local pack index (objects.sqlite)' },
  'metadata-file': { version: 1, what: 'local metadata file (metadata.sqlite)' },
  // Items.
  // 2: with `shardGroups`, the commit log's shards grouped by first leader, from level 11.
  topic: { version: 2, what: 'topic item with its configs (cluster / topic#)' },
  'group-registry': { version: 1, what: 'group registry item (cluster / group#, cgroup#)' },
  'producer-id-block': { version: 1, what: 'producer-id sequence (cluster / producer-id-seq)' },
  'scheduler-lease': { version: 1, what: 'scheduler lease (cluster / scheduler)' },
  'timer-cursor': { version: 1, what: 'timer cursor (cluster / timer-cursor#)' },
  'feature-level': { version: 1, what: 'cluster feature level (cluster / feature-level)' },
  'process-registration': { version: 1, what: 'process registration (cluster / process#)' },
  'topic-purge': { version: 1, what: 'deleted topic still to purge (cluster / purge#)' },
  // 2: the producer table is a cache of the recent producers; the others are `producer-entry` items.
  'partition-state': { version: 2, what: 'partition state (part# / state)' },
  // 2: a packed item holding a fold's commits of a topic with a commit log, from level 10.
  'offset-index': { version: 2, what: 'offset index entry (part# / idx#)' },
  'cleaner-checkpoint': { version: 1, what: 'cleaner checkpoint (part# / cleaner)' },
  'aborted-index': { version: 1, what: 'aborted-transaction entry (part# / abort#)' },
  'producer-entry': { version: 1, what: "producer outside the partition state's cache (part# / pid#)" },
  'commit-log': { version: 1, what: "a shard's commit log entry and fold mark (clog# / e#, folded)" },
  producer: { version: 1, what: 'idempotent producer (pid# / meta)' },
  // 3: with `sc`, the changes that decide the summary items' pending changes, from level 7.
  group: { version: 3, what: 'consumer group (group# / meta)' },
  'group-member': { version: 1, what: 'consumer group member (group# / mbr#)' },
  'group-summary': { version: 1, what: "consumer group members' subscriptions and targets, a shard (group# / sum#)" },
  'classic-group': { version: 1, what: 'classic group with its members (group# / classic)' },
  offsets: { version: 1, what: 'committed offset (group# / off#)' },
  'consumer-instance': { version: 1, what: 'v2 consumer instance (group# / inst#)' },
  'share-group': { version: 1, what: "share group's configs (share# / config)" },
  'share-partition': { version: 1, what: 'share-partition: SPSO, SPEO, in-flight records (share# / sp#)' },
  'share-member': { version: 1, what: 'share group member of the Kafka protocol (share# / smbr#)' },
  'durable-timer': { version: 1, what: 'durable timer (timer#)' },
  // 2: the partitions, groups and offsets are items of their own (`transaction-entry`), from level 8.
  transaction: { version: 2, what: 'transaction state (txn# / state)' },
  'transaction-entry': { version: 1, what: "a transaction's partition, group or pending offset (txn# / p#, g#, o#)" },
  'transaction-registry': { version: 1, what: 'transactional-id registry (txn-ids)' },
  'pending-offsets': { version: 1, what: 'pending transactional offsets marker (txn-offsets#)' },
  acl: { version: 1, what: 'ACL (acl)' },
  quota: { version: 1, what: 'client quota (quota)' },
  'scram-credential': { version: 1, what: 'SCRAM credential (scram)' },
  'push-subscription': { version: 1, what: 'push subscription (push#)' },
  'sweep-checkpoint': { version: 1, what: 'object sweep checkpoint (maint#)' },
  trigger: { version: 1, what: 'trigger definition (triggers)' },
  'trigger-lease': { version: 1, what: "trigger partition's delivery lease (trigger#)" },
  other: { version: 1, what: 'item' },
} as const satisfies Record<string, { version: number; what: string }>;

export type FormatName = keyof typeof FORMATS;

/**
 * The cluster feature levels (Kafka's metadata.version): what each level lets writers use. Level 1
 * is v0.1.0's formats. A new format version that older code cannot read is added here with a new
 * level, and written only once the cluster's level reaches it.
 */
export interface FeatureLevel {
  level: number;
  formats: Partial<Record<FormatName, number>>;
  /** What writers may do from this level on (docs/formats.md). */
  what?: string;
  /** Record batch codecs first allowed at this level (before it, a produce with them is refused). */
  codecs?: readonly CompressionType[];
}

export const FEATURE_LEVELS: readonly FeatureLevel[] = [
  { level: 1, what: "v0.1.0's formats: record batches uncompressed or gzip", formats: {} },
  // v0.1.0 answers UNSUPPORTED_COMPRESSION_TYPE for these (its fetch as JSON, its compaction).
  { level: 2, what: 'record batches may use snappy, lz4 and zstd', formats: {}, codecs: ['snappy', 'lz4', 'zstd'] },
  // Keys a release before it refuses by their `.v2` (v0.1.0, which checks no version, would read
  // them, and its sweep would date them by LastModified).
  { level: 3, what: "request objects' keys spread over 16 prefixes per topic", formats: { 'request-object': 2 } },
  // A KIP-848 group's members in items of their own (src/groups/group-items.ts); before it, one item.
  { level: 4, what: 'consumer groups keep each member in an item of its own', formats: { group: 2 } },
  // A release before it would take a producer missing from the cache for a new one.
  {
    level: 5,
    what: 'the partition state keeps the recent producers; the others are items of their own',
    formats: { 'partition-state': 2 },
  },
  // A release before it reads an index entry at the last commit's offset as that commit's.
  {
    level: 6,
    what: "an index entry is written beside its commit's state write, not after it",
    formats: {},
  },
  // A release before it would change a group's members without its summary items (group-items.ts).
  {
    level: 7,
    what: "a consumer group keeps its members' subscriptions and targets in summary items: a join reads those",
    formats: { group: 3 },
  },
  // A release before it reads a transaction's partitions and offsets from its state item only.
  {
    level: 8,
    what: 'a transaction keeps its partitions, groups and pending offsets in items of their own',
    formats: { transaction: 2 },
  },
  // A release before it reads a topic's partition states without its commit log's entries.
  {
    level: 9,
    what: 'a new topic commits through one log per shard of partitions: one write per request, not two per partition',
    formats: {},
  },
  // A release before it reads one commit per index item.
  {
    level: 10,
    what: "a commit log's fold writes one packed index item per partition, not one per commit",
    formats: { 'offset-index': 2 },
  },
  // A release before it would take such a topic's shards for floor(p / 128): it refuses the topic
  // item (version 2) instead.
  {
    level: 11,
    what: "a new topic's commit log shards group the partitions by their first leader's store",
    formats: { topic: 2 },
  },
];

/**
 * From this level a topic is created with a commit log (partition/shard-log.ts, docs/architecture.md
 * "One conditional write per request"); topics created before keep their commit per partition.
 */
export const COMMIT_LOG_LEVEL = 9;

/**
 * From this level a topic is created with its commit log's shards grouped by the partitions' first
 * leader (`ShardLayout` in partition/shard-log.ts); topics created before keep floor(p / 128).
 */
export const LEADER_SHARDS_LEVEL = 11;

/**
 * From this level a commit log's fold writes a partition's commits as one packed index item
 * (partition/index-item.ts) instead of an item per commit.
 */
export const PACKED_INDEX_LEVEL = 10;

/**
 * From this level a commit writes its index entry beside the partition state's conditional write
 * (docs/architecture.md, "The commit protocol", step 4): readers then take an entry at the last
 * commit's offset only if it is that commit, which the releases before it do not know to do.
 */
export const INDEX_BESIDE_COMMIT_LEVEL = 6;

/** The newest feature level this code knows (and can run at). */
export const SUPPORTED_FEATURE_LEVEL = Math.max(...FEATURE_LEVELS.map((l) => l.level));

/**
 * The version a writer uses for `format` at the cluster's feature level: the newest the level
 * allows, 1 when no level names it. `levels` is the table (a parameter for the tests).
 */
export function writeVersion(
  format: FormatName,
  level: number,
  levels: readonly FeatureLevel[] = FEATURE_LEVELS,
): number {
  let version = 1;
  for (const l of levels) if (l.level <= level) version = Math.max(version, l.formats[format] ?? 1);
  return version;
}

/** The feature level from which record batches may use `codec` (1 for none and gzip). */
export function codecFeatureLevel(codec: CompressionType, levels: readonly FeatureLevel[] = FEATURE_LEVELS): number {
  return levels.find((l) => l.codecs?.includes(codec))?.level ?? 1;
}

/**
 * Refuses a record batch codec the cluster's feature level does not allow yet (as Kafka refused
 * zstd before its inter-broker protocol allowed it): code a rollback may bring back cannot read it.
 */
export function requireCodecAllowed(codec: CompressionType, level: number): void {
  const needed = codecFeatureLevel(codec);
  if (level >= needed) return;
  throw new KafkaError(
    'UNSUPPORTED_COMPRESSION_TYPE',
    `Compression ${codec} needs the cluster's feature level ${needed} (it is ${level}), so that a rollback to a release that cannot read it stays safe. Once every process runs a release that supports it, raise it with \`kafka-log features upgrade --feature-level ${needed}\` or POST /v3/clusters/{cluster_id}/features:raise (the scheduler raises it an hour after every process agrees); docs/deploy.md`,
  );
}

/**
 * A stored item or object in a format version newer than this code reads. Retriable: during a
 * deploy another process may run code that reads it; after a rollback past the feature level it
 * stays refused until the newer release runs again (docs/deploy.md).
 */
export class UnknownFormatError extends KafkaError {
  constructor(
    readonly format: FormatName,
    readonly found: number,
    readonly where: string,
    readonly known: number = FORMATS[format].version,
  ) {
    super(
      'KAFKA_STORAGE_ERROR',
      `The stored ${FORMATS[format].what} at ${where} is format version ${found}; this code reads ${format} up to version ${known}. Run a release that reads ${format} version ${found} (docs/formats.md)`,
    );
  }
}

/** Refuses a version above what this code reads for `format`. */
export function requireReadable(format: FormatName, found: number, where: string): void {
  if (found > FORMATS[format].version) throw new UnknownFormatError(format, found, where);
}

const CLUSTER_SK_FORMATS: [string, FormatName][] = [
  ['topic#', 'topic'],
  ['group#', 'group-registry'],
  ['cgroup#', 'group-registry'],
  ['sgroup#', 'group-registry'],
  ['producer-id-seq', 'producer-id-block'],
  ['scheduler', 'scheduler-lease'],
  ['timer-cursor#', 'timer-cursor'],
  ['feature-level', 'feature-level'],
  ['process#', 'process-registration'],
  ['purge#', 'topic-purge'],
];
const PARTITION_SK_FORMATS: [string, FormatName][] = [
  ['state', 'partition-state'],
  ['idx#', 'offset-index'],
  ['cleaner', 'cleaner-checkpoint'],
  ['abort#', 'aborted-index'],
  ['pid#', 'producer-entry'],
];
const GROUP_SK_FORMATS: [string, FormatName][] = [
  ['meta', 'group'],
  ['mbr#', 'group-member'],
  ['sum#', 'group-summary'],
  ['classic', 'classic-group'],
  ['off#', 'offsets'],
  ['inst#', 'consumer-instance'],
];
const SHARE_SK_FORMATS: [string, FormatName][] = [
  ['config', 'share-group'],
  ['sp#', 'share-partition'],
  ['smbr#', 'share-member'],
];
const TXN_SK_FORMATS: [string, FormatName][] = [
  ['state', 'transaction'],
  ['p#', 'transaction-entry'],
  ['g#', 'transaction-entry'],
  ['o#', 'transaction-entry'],
];
const PK_FORMATS: [string, FormatName][] = [
  ['pid#', 'producer'],
  ['timer#', 'durable-timer'],
  ['txn#', 'transaction'],
  ['txn-ids', 'transaction-registry'],
  ['txn-offsets#', 'pending-offsets'],
  ['acl', 'acl'],
  ['quota', 'quota'],
  ['scram', 'scram-credential'],
  ['push#', 'push-subscription'],
  ['maint#', 'sweep-checkpoint'],
  ['triggers', 'trigger'],
  ['trigger#', 'trigger-lease'],
  ['clog#', 'commit-log'],
];

const bySk = (table: [string, FormatName][], sk: string): FormatName =>
  table.find(([prefix]) => sk.startsWith(prefix))?.[1] ?? 'other';

/** Which format an item of (pk, sk) is (src/storage/key-layout.ts has the layout). */
export function itemFormat(pk: string, sk: string): FormatName {
  if (pk === 'cluster') return bySk(CLUSTER_SK_FORMATS, sk);
  if (pk.startsWith('part#')) return bySk(PARTITION_SK_FORMATS, sk);
  if (pk.startsWith('group#')) return bySk(GROUP_SK_FORMATS, sk);
  if (pk.startsWith('share#')) return bySk(SHARE_SK_FORMATS, sk);
  if (pk.startsWith('txn#')) return bySk(TXN_SK_FORMATS, sk);
  return PK_FORMATS.find(([prefix]) => pk === prefix || pk.startsWith(prefix))?.[1] ?? 'other';
}

/** An item's format version: its value's `fv`, 1 when absent (every item v0.1.0 wrote). */
export function itemFormatVersion(value: unknown): number {
  if (value === null || typeof value !== 'object') return 1;
  const v = (value as Record<string, unknown>)[ITEM_FORMAT_FIELD];
  return typeof v === 'number' ? v : 1;
}

/** Refuses an item in a format newer than this code reads; answers it unchanged otherwise. */
export function checkItem<T extends { pk: string; sk: string; value: unknown }>(item: T): T {
  const found = itemFormatVersion(item.value);
  if (found > 1) requireReadable(itemFormat(item.pk, item.sk), found, `${item.pk} / ${item.sk}`);
  return item;
}

const OBJECT_VERSION_SUFFIX = /\.v(\d+)$/;

/** An object key's format version: its `.v{n}` suffix, 1 without one (every object v0.1.0 wrote). */
export function objectFormatVersion(key: string): number {
  const m = OBJECT_VERSION_SUFFIX.exec(key);
  return m ? Number(m[1]) : 1;
}

/** The key of an object written in format `version` (version 1 keys have no suffix). */
export function withObjectFormat(key: string, version: number): string {
  return version > 1 ? `${key}.v${version}` : key;
}

/** Refuses an object key of a format newer than this code reads. */
export function checkObjectKey(key: string): void {
  const found = objectFormatVersion(key);
  if (found > 1) requireReadable(key.startsWith('segments/') ? 'segment' : 'request-object', found, key);
}
