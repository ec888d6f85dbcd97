import { randomUUID } from 'node:crypto';
import type { Clock } from '../clock.js';
import {
  isTopicConfigName,
  resolveTopicConfig,
  validateTopicConfig,
  type TopicConfig,
} from '../config/topic-configs.js';
import { KafkaError } from '../wire/errors.js';
import { holdsWrite, optimisticUpdate } from '../storage/optimistic-update.js';
import type { MetadataStore, MetaItem } from '../storage/ports.js';
import { CLUSTER_PK, TOPIC_PREFIX, topicSk } from '../storage/key-layout.js';

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

const toTopic = (item: MetaItem<TopicMeta>): Topic => ({
  ...item.value,
  config: resolveTopicConfig(item.value.configs),
  version: item.version,
});

export interface CreateTopicRequest {
  name: string;
  partitionCount: number;
  replicationFactor: number;
  configs?: Record<string, string>;
  validateOnly?: boolean;
}

export class TopicRegistry {
  constructor(
    private readonly metadata: MetadataStore,
    private readonly clock: Clock,
    /** How many replica stores exist: replication.factor cannot exceed it. */
    readonly replicaStores: number,
  ) {}

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
    if (req.validateOnly) {
      if (await this.metadata.get(PK, sk(req.name))) throw exists(req.name);
      return { ...meta, config: resolveTopicConfig(configs), version: 0 };
    }
    // The topic id is the token: a create whose answer was lost finds its own incarnation.
    const { result } = await optimisticUpdate<TopicMeta, Topic>({
      metadata: this.metadata,
      pk: PK,
      sk: sk(req.name),
      known: { item: undefined },
      attempts: 1,
      giveUp: { errorName: 'TOPIC_ALREADY_EXISTS', message: `Topic '${req.name}' already exists.` },
      decide: () => ({ write: meta, answer: toTopic }),
      recognise: (found) => (found?.value.id === meta.id ? toTopic(found) : undefined),
    });
    return result;
  }

  async get(name: string): Promise<Topic> {
    const item = await this.metadata.get<TopicMeta>(PK, sk(name));
    if (!item) throw unknownTopic(name);
    return toTopic(item);
  }

  async list(): Promise<Topic[]> {
    return (await this.metadata.query<TopicMeta>(PK, { beginsWith: TOPIC_PREFIX })).map(toTopic);
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

  /** Removes the topic item (the one write that makes the topic gone); data cleanup is the caller's. */
  async delete(name: string): Promise<Topic> {
    let deleted: Topic | undefined;
    const { result } = await optimisticUpdate<TopicMeta, Topic>({
      metadata: this.metadata,
      pk: PK,
      sk: sk(name),
      giveUp: {
        errorName: 'COORDINATOR_NOT_AVAILABLE',
        message: `Too many concurrent changes to topic ${name}; retry`,
      },
      decide: (item) => {
        if (!item) throw unknownTopic(name);
        const topic = toTopic(item);
        deleted = topic;
        return { remove: true, answer: () => topic };
      },
      // Gone after our delete: it applied (a repeat found nothing to delete).
      recognise: (found) => (found === undefined ? deleted : undefined),
    });
    return result;
  }

  /** Read-modify-write of the topic item with an optimistic version check, retried on conflict. */
  private async update(name: string, validateOnly: boolean, change: (t: TopicMeta) => TopicMeta): Promise<Topic> {
    const { result } = await optimisticUpdate<TopicMeta, Topic>({
      metadata: this.metadata,
      pk: PK,
      sk: sk(name),
      giveUp: {
        errorName: 'COORDINATOR_NOT_AVAILABLE',
        message: `Too many concurrent changes to topic ${name}; retry`,
      },
      decide: (item) => {
        if (!item) throw unknownTopic(name);
        const next = change(item.value);
        if (validateOnly) return { done: { ...next, config: resolveTopicConfig(next.configs), version: item.version } };
        return { write: next, answer: toTopic };
      },
      recognise: (found, attempted) => (holdsWrite(found, attempted) ? toTopic(found) : undefined),
    });
    return result;
  }
}

const unknownTopic = (name: string) =>
  new KafkaError('UNKNOWN_TOPIC_OR_PARTITION', `This server does not host this topic: ${name}`);
const exists = (name: string) => new KafkaError('TOPIC_ALREADY_EXISTS', `Topic '${name}' already exists.`);
