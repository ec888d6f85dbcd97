import { randomUUID } from 'node:crypto';
import type { Clock } from '../clock.js';
import {
  isTopicConfigName,
  resolveTopicConfig,
  validateTopicConfig,
  validateTopicConfigSet,
  type TopicConfig,
} from '../config/topic-configs.js';
import { KafkaError } from '../wire/errors.js';
import { holdsWrite, optimisticUpdate } from '../storage/optimistic-update.js';
import type { MetadataStore, MetaItem } from '../storage/ports.js';
import { CLUSTER_PK, TOPIC_PREFIX, topicSk } from '../storage/key-layout.js';
import { COMMIT_LOG_LEVEL, LEADER_SHARDS_LEVEL } from '../storage/formats.js';
import { FeatureLevels } from '../storage/feature-level.js';
import { recordTopicPurge } from './topic-purges.js';

/**
 * Topic metadata. All topics live under one partition key so that listing them is one query and
 * creating one is one conditional write (`ifAbsent` on the name); see docs/design-decisions.md.
 */
export interface TopicMeta {
  /** Unique per incarnation: a deleted and re-created topic gets a new id, and old data is ignored. */
  id: string;
  name: string;
  partitionCount: number;
  replicationFactor: number;
  /** Overrides only, Kafka names, string values. */
  configs: Record<string, string>;
  createdAt: number;
  /**
   * The topic commits through a log per shard of partitions (partition/shard-log.ts): set when it
   * was created at feature level COMMIT_LOG_LEVEL or above, for good; older topics keep the commit
   * per partition.
   */
  clog?: true;
  /**
   * The commit log's shards group the partitions by this many (partition/shard-log.ts, `ShardLayout`):
   * the store count when the topic was created at feature level LEADER_SHARDS_LEVEL or above, so
   * partition p's group is its first leader's store. Fixed for the topic's life: partitions added
   * later, and leaders moved by elections, keep the rule. Absent: one group (floor(p / 128)).
   */
  shardGroups?: number;
  /** The item's format version (formats.ts): 2 with `shardGroups`, which a release before it must not misread. */
  fv?: 2;
}

/** UNKNOWN_TOPIC_OR_PARTITION unless `partition` is one of the topic's partitions. */
export function requirePartition(topic: Pick<TopicMeta, 'name' | 'partitionCount'>, partition: number): void {
  const unknown = unknownPartition(topic, partition);
  if (unknown) throw unknown;
}

/** The error `requirePartition` throws, for a caller that answers it per partition; else undefined. */
export function unknownPartition(
  topic: Pick<TopicMeta, 'name' | 'partitionCount'>,
  partition: number,
): KafkaError | undefined {
  if (Number.isInteger(partition) && partition >= 0 && partition < topic.partitionCount) return undefined;
  return new KafkaError('UNKNOWN_TOPIC_OR_PARTITION', `Partition ${partition} of topic ${topic.name} does not exist`);
}

export interface Topic extends TopicMeta {
  config: TopicConfig;
  version: number;
}

const PK = CLUSTER_PK;
const sk = topicSk;
export const MAX_PARTITIONS = 10_000;

const LEGAL = /^[a-zA-Z0-9._-]+$/;

/** Kafka's topic name rules (org.apache.kafka.common.internals.Topic.validate). */
export function validateTopicName(name: unknown): asserts name is string {
  const bad = (why: string) =>
    new KafkaError('INVALID_TOPIC_EXCEPTION', `Invalid topic name ${JSON.stringify(name)}: ${why}`);
  if (typeof name !== 'string' || name.length === 0) throw bad('the name is empty');
  if (name === '.' || name === '..') throw bad('"." and ".." are not allowed');
  if (name.length > 249) throw bad('longer than 249 characters');
  if (!LEGAL.test(name)) throw bad("only ASCII alphanumerics, '.', '_' and '-' are allowed");
}

function validatePartitions(count: unknown): asserts count is number {
  if (!Number.isInteger(count) || (count as number) < 1 || (count as number) > MAX_PARTITIONS) {
    throw new KafkaError(
      'INVALID_PARTITIONS',
      `Number of partitions must be an integer between 1 and ${MAX_PARTITIONS}`,
    );
  }
}

/**
 * What a delete leaves of a topic item: the name stays taken for `deletionHoldMs`, as Kafka
 * answers TOPIC_ALREADY_EXISTS while a topic is marked for deletion. That hold is what makes the
 * topic cache safe: no new incarnation of the name can exist while another process may still
 * serve the old one from its cache.
 */
interface TopicTombstone {
  deleted: true;
  id: string;
  name: string;
  deletedAt: number;
}

type StoredTopic = TopicMeta | TopicTombstone;

const isTombstone = (v: StoredTopic): v is TopicTombstone => (v as TopicTombstone).deleted === true;

/** Whether the stored topic item is this incarnation (its id), read now, past any cache, and not a deletion's tombstone. */
export async function isCurrentTopic(metadata: MetadataStore, topic: Pick<TopicMeta, 'id' | 'name'>): Promise<boolean> {
  const item = await metadata.get<StoredTopic>(PK, sk(topic.name));
  return item !== undefined && !isTombstone(item.value) && item.value.id === topic.id;
}

/** Shared by every caller of a cached topic, so frozen: nobody may change what the others read. */
const toTopic = (item: MetaItem<StoredTopic>): Topic => {
  const meta = item.value as TopicMeta;
  return Object.freeze({
    ...meta,
    configs: Object.freeze({ ...meta.configs }),
    config: Object.freeze(resolveTopicConfig(meta.configs)),
    version: item.version,
  });
};

/**
 * Kafka brokers serve produce and fetch from metadata propagated to them, not from a read per
 * request. This cache keeps a topic that long after reading it; within the process every change
 * through the registry replaces or drops the entry at once, so only changes made by other
 * processes (other Lambdas) are seen up to this late: a config change or added partitions.
 */
export const TOPIC_METADATA_MAX_AGE_MS = 1000;
/**
 * How long a deleted topic's name stays taken: the cache age plus a margin for clock skew
 * between processes, so a cached topic always expires before the name can get a new id.
 */
/** The clock skew between processes the hold allows for. */
const CLOCK_SKEW_MARGIN_MS = 2000;
export const TOPIC_DELETION_HOLD_MS = TOPIC_METADATA_MAX_AGE_MS + CLOCK_SKEW_MARGIN_MS;

export interface TopicRegistryOptions {
  /** How long a topic read is served from the cache (0: read every time). */
  maxAgeMs?: number;
  /** How long a deleted topic's name stays taken (must exceed every process's `maxAgeMs`, with clock skew; default `maxAgeMs` + 2 s). */
  deletionHoldMs?: number;
  /** Awaited before a topic is created: the cluster's feature level starts a new cluster (FeatureLevels.initialize). */
  beforeCreate?: () => Promise<void>;
  /** The cluster's feature level, which says whether a new topic gets a commit log (default: read from the store). */
  featureLevel?: () => Promise<number>;
}

export interface CreateTopicRequest {
  name: string;
  partitionCount: number;
  replicationFactor: number;
  configs?: Record<string, string>;
  validateOnly?: boolean;
}

export class TopicRegistry {
  private readonly maxAgeMs: number;
  private readonly deletionHoldMs: number;
  private readonly beforeCreate: (() => Promise<void>) | undefined;
  private readonly featureLevel: () => Promise<number>;
  /** Topics read, by name, with when they were read (this clock's time). */
  private readonly cache = new Map<string, { topic: Topic; readAt: number }>();

  constructor(
    private readonly metadata: MetadataStore,
    private readonly clock: Clock,
    /** How many replica stores exist: replication.factor cannot exceed it. */
    readonly replicaStores: number,
    options: TopicRegistryOptions = {},
  ) {
    this.maxAgeMs = options.maxAgeMs ?? TOPIC_METADATA_MAX_AGE_MS;
    this.deletionHoldMs = options.deletionHoldMs ?? this.maxAgeMs + CLOCK_SKEW_MARGIN_MS;
    this.beforeCreate = options.beforeCreate;
    const levels = new FeatureLevels(metadata);
    this.featureLevel = options.featureLevel ?? (() => levels.current(clock.now()));
  }

  async create(req: CreateTopicRequest): Promise<Topic> {
    validateTopicName(req.name);
    validatePartitions(req.partitionCount);
    const rf = req.replicationFactor;
    if (!Number.isInteger(rf) || rf < 1 || rf > this.replicaStores) {
      throw new KafkaError(
        'INVALID_REPLICATION_FACTOR',
        `Replication factor must be between 1 and the number of replica stores (${this.replicaStores})`,
      );
    }
    const configs = { ...(req.configs ?? {}) };
    for (const [k, v] of Object.entries(configs)) validateTopicConfig(k, v);
    validateTopicConfigSet(configs);
    const minIsr = Number(configs['min.insync.replicas'] ?? 1);
    if (minIsr > rf) {
      throw new KafkaError(
        'INVALID_CONFIG',
        `min.insync.replicas (${minIsr}) cannot exceed the replication factor (${rf})`,
      );
    }
    const meta: TopicMeta = {
      id: randomUUID(),
      name: req.name,
      partitionCount: req.partitionCount,
      replicationFactor: rf,
      configs,
      createdAt: this.clock.now(),
    };
    // A name is free when it has no item, or a tombstone older than the deletion hold.
    const requireFree = (item: MetaItem<StoredTopic> | undefined): void => {
      if (!item) return;
      if (!isTombstone(item.value)) throw exists(req.name);
      if (this.clock.now() - item.value.deletedAt < this.deletionHoldMs) throw markedForDeletion(req.name);
    };
    if (req.validateOnly) {
      requireFree(await this.metadata.get<StoredTopic>(PK, sk(req.name)));
      return { ...meta, config: resolveTopicConfig(configs), version: 0 };
    }
    await this.beforeCreate?.();
    const level = await this.featureLevel();
    if (level >= COMMIT_LOG_LEVEL) meta.clog = true;
    if (level >= LEADER_SHARDS_LEVEL) Object.assign(meta, { shardGroups: this.replicaStores, fv: 2 });
    // The topic id is the token: a create whose answer was lost finds its own incarnation. The first
    // write assumes no item (IF absent); over an old tombstone the second writes IF its version.
    const { result } = await optimisticUpdate<StoredTopic, Topic>({
      metadata: this.metadata,
      pk: PK,
      sk: sk(req.name),
      known: { item: undefined },
      attempts: 3,
      giveUp: { errorName: 'TOPIC_ALREADY_EXISTS', message: `Topic '${req.name}' already exists.` },
      decide: (item) => {
        requireFree(item);
        return { write: meta, answer: toTopic };
      },
      recognise: (found) => (found?.value.id === meta.id && !isTombstone(found.value) ? toTopic(found) : undefined),
    });
    this.remember(result);
    return result;
  }

  /** The topic, from the cache when it was read less than `maxAgeMs` ago (see TOPIC_METADATA_MAX_AGE_MS). */
  async get(name: string): Promise<Topic> {
    const cached = this.cache.get(name);
    if (cached && this.clock.now() - cached.readAt < this.maxAgeMs) return cached.topic;
    const readAt = this.clock.now();
    const item = await this.metadata.get<StoredTopic>(PK, sk(name));
    if (!item || isTombstone(item.value)) {
      this.cache.delete(name);
      throw unknownTopic(name);
    }
    const topic = toTopic(item);
    this.remember(topic, readAt);
    return topic;
  }

  /**
   * Topics by id (Kafka's topic ids: Fetch v13+ names topics only so), from the cache as `get`
   * serves them; any id not cached reads the listing once (which refreshes the cache). An id no
   * topic has is absent from the answer. Ids are compared in lower case.
   */
  async getByIds(ids: readonly string[]): Promise<Map<string, Topic>> {
    const now = this.clock.now();
    const out = new Map<string, Topic>();
    const wanted = new Set(ids.map((id) => id.toLowerCase()));
    for (const c of this.cache.values()) {
      const id = c.topic.id.toLowerCase();
      if (wanted.has(id) && now - c.readAt < this.maxAgeMs) out.set(id, c.topic);
    }
    if (out.size < wanted.size)
      for (const t of await this.list()) if (wanted.has(t.id.toLowerCase())) out.set(t.id.toLowerCase(), t);
    return out;
  }

  /** Every topic, read now (listings are admin traffic: not cached, but they refresh the cache). */
  async list(): Promise<Topic[]> {
    const readAt = this.clock.now();
    const items = await this.metadata.query<StoredTopic>(PK, { beginsWith: TOPIC_PREFIX });
    const topics: Topic[] = [];
    for (const item of items) {
      if (!isTombstone(item.value)) {
        const topic = toTopic(item);
        this.remember(topic, readAt);
        topics.push(topic);
      } else if (readAt - item.value.deletedAt >= this.deletionHoldMs) {
        // A tombstone past its hold is no longer needed; a create may take the name meanwhile (then the condition fails).
        await this.metadata.delete(item.pk, item.sk, { ifVersion: item.version }).catch(() => {});
      }
    }
    return topics;
  }

  /** Applies set (value) and delete (null) operations to the overrides, all or nothing. */
  async alterConfigs(name: string, changes: Record<string, string | null>, validateOnly = false): Promise<Topic> {
    for (const [k, v] of Object.entries(changes)) {
      if (v === null) {
        if (!isTopicConfigName(k)) throw new KafkaError('INVALID_CONFIG', `Unknown topic config name: ${k}`);
      } else validateTopicConfig(k, v);
    }
    return this.update(name, validateOnly, (t) => {
      const configs = { ...t.configs };
      for (const [k, v] of Object.entries(changes)) {
        if (v === null) delete configs[k];
        else configs[k] = v;
      }
      validateTopicConfigSet(configs);
      const minIsr = Number(configs['min.insync.replicas'] ?? 1);
      if (minIsr > t.replicationFactor) {
        throw new KafkaError(
          'INVALID_CONFIG',
          `min.insync.replicas (${minIsr}) cannot exceed the replication factor (${t.replicationFactor})`,
        );
      }
      return { ...t, configs };
    });
  }

  /** Kafka only grows partition counts: fewer or equal is INVALID_PARTITIONS. */
  async addPartitions(name: string, newCount: number, validateOnly = false): Promise<Topic> {
    validatePartitions(newCount);
    return this.update(name, validateOnly, (t) => {
      if (newCount <= t.partitionCount) {
        throw new KafkaError(
          'INVALID_PARTITIONS',
          `Topic currently has ${t.partitionCount} partitions, which is higher than or equal to the requested ${newCount}.`,
        );
      }
      return { ...t, partitionCount: newCount };
    });
  }

  /**
   * Replaces the topic item with its tombstone (the one write that makes the topic gone; the name
   * stays taken for the deletion hold), after recording the purge of its data, which the
   * scheduler's background work does: the answer does not wait for it, however large the topic.
   */
  async delete(name: string): Promise<Topic> {
    let deleted: Topic | undefined;
    this.cache.delete(name);
    const { result } = await optimisticUpdate<StoredTopic, Topic>({
      metadata: this.metadata,
      pk: PK,
      sk: sk(name),
      giveUp: {
        errorName: 'COORDINATOR_NOT_AVAILABLE',
        message: `Too many concurrent changes to topic ${name}; retry`,
      },
      decide: async (item) => {
        if (!item || isTombstone(item.value)) throw unknownTopic(name);
        const topic = toTopic(item);
        deleted = topic;
        // Recorded before the tombstone, so no deleted topic is without its purge (topic-purges.ts).
        const deletedAt = this.clock.now();
        await recordTopicPurge(this.metadata, {
          id: topic.id,
          name,
          partitionCount: topic.partitionCount,
          ...(topic.shardGroups !== undefined && { shardGroups: topic.shardGroups }),
          deletedAt,
        });
        const tombstone: TopicTombstone = { deleted: true, id: topic.id, name, deletedAt };
        return { write: tombstone, answer: () => topic };
      },
      // Our own tombstone after a lost answer: the delete applied.
      recognise: (found) => (found && isTombstone(found.value) && found.value.id === deleted?.id ? deleted : undefined),
    });
    this.cache.delete(name);
    return result;
  }

  /** Read-modify-write of the topic item with an optimistic version check, retried on conflict. */
  private async update(name: string, validateOnly: boolean, change: (t: TopicMeta) => TopicMeta): Promise<Topic> {
    const { result } = await optimisticUpdate<StoredTopic, Topic>({
      metadata: this.metadata,
      pk: PK,
      sk: sk(name),
      giveUp: {
        errorName: 'COORDINATOR_NOT_AVAILABLE',
        message: `Too many concurrent changes to topic ${name}; retry`,
      },
      decide: (item) => {
        if (!item || isTombstone(item.value)) throw unknownTopic(name);
        const next = change(item.value);
        if (validateOnly) return { done: { ...next, config: resolveTopicConfig(next.configs), version: item.version } };
        return { write: next, answer: toTopic };
      },
      recognise: (found, attempted) => (holdsWrite(found, attempted) ? toTopic(found) : undefined),
    });
    if (!validateOnly) this.remember(result);
    return result;
  }

  private remember(topic: Topic, readAt = this.clock.now()): void {
    if (this.maxAgeMs <= 0) return;
    const held = this.cache.get(topic.name);
    // A slower read must not replace a newer version of the same incarnation.
    if (held && held.topic.id === topic.id && held.topic.version > topic.version) return;
    this.cache.set(topic.name, { topic, readAt });
  }
}

const unknownTopic = (name: string) =>
  new KafkaError('UNKNOWN_TOPIC_OR_PARTITION', `This server does not host this topic: ${name}`);
const exists = (name: string) => new KafkaError('TOPIC_ALREADY_EXISTS', `Topic '${name}' already exists.`);
const markedForDeletion = (name: string) =>
  new KafkaError('TOPIC_ALREADY_EXISTS', `Topic '${name}' is marked for deletion; retry in a few seconds.`);
