/**
 * The admin client (Kafka's Admin / kafkajs's admin): topics, configs, partitions, offsets, records
 * and consumer groups over the server's Confluent v3 paths and their v3-style extensions.
 */
import { pbkdf2Sync, randomBytes } from 'node:crypto';
import { errorFromBody, KafkaClientError } from './errors.js';
import {
  alterShareGroupConfigs as alterShareConfigs,
  alterShareGroupOffsets as alterShareOffsets,
  deleteShareGroupOffsets as deleteShareOffsets,
  deleteShareGroups as deleteShareGroupIds,
  describeShareGroup,
  listGroupsWithTypes as listTypedGroups,
  listShareGroups as listShareGroupIds,
  type GroupListingWithType,
  resetShareGroupOffsets as resetShareOffsets,
  type ShareGroupDescription,
  type ShareOffsetChange,
  type ShareResetOptions,
} from './share-group-admin.js';
import { TransactionAdmin } from './transaction-admin.js';
import {
  createTrigger,
  deleteTrigger,
  describeTrigger,
  listTriggers,
  setTriggerState,
  type TriggerConfig,
  type TriggerDescription,
  type TriggerInfo,
} from './trigger-admin.js';
import { retry } from './retry.js';
import { enc, type Transport } from './transport.js';
import { allPages, type Page } from './pages.js';

export interface AdminConfig {
  /** Retries of a retriable failure (default 5), with exponential back-off and jitter. */
  retries?: number;
  retryBackoffMs?: number;
  retryBackoffMaxMs?: number;
}

export interface ITopicConfig {
  topic: string;
  numPartitions?: number;
  replicationFactor?: number;
  configEntries?: { name: string; value: string }[];
}

export interface PartitionDescription {
  partition: number;
  leader: number;
  leaderEpoch: number;
  replicas: number[];
  isr: number[];
  logStartOffset: number;
  highWatermark: number;
  logEndOffset: number;
}

export interface TopicDescription {
  name: string;
  topicId: string;
  partitionCount: number;
  replicationFactor: number;
  partitions: PartitionDescription[];
}

export interface ConfigEntry {
  name: string;
  value: string | null;
  isDefault: boolean;
  isReadOnly: boolean;
  isSensitive: boolean;
  source: string;
}

export type OffsetSpec = 'earliest' | 'latest' | { timestamp: number };

export interface PartitionOffsets {
  partition: number;
  /** The high watermark (kafkajs's `offset`). */
  offset: number;
  high: number;
  low: number;
}

interface WireTopic {
  topic_name: string;
  topic_id: string;
  partitions_count: number;
  replication_factor: number;
}

interface WirePartition {
  partition_id: number;
  leader_id: number;
  leader_epoch: number;
  replica_ids: number[];
  isr: number[];
  log_start_offset: number;
  high_watermark: number;
  log_end_offset: number;
}

interface WireConfig {
  name: string;
  value: string | null;
  is_default: boolean;
  is_read_only: boolean;
  is_sensitive: boolean;
  source: string;
}

const toPartition = (p: WirePartition): PartitionDescription => ({
  partition: p.partition_id,
  leader: p.leader_id,
  leaderEpoch: p.leader_epoch,
  replicas: p.replica_ids,
  isr: p.isr,
  logStartOffset: p.log_start_offset,
  highWatermark: p.high_watermark,
  logEndOffset: p.log_end_offset,
});

export type AclResourceType = 'TOPIC' | 'GROUP' | 'CLUSTER' | 'TRANSACTIONAL_ID';
export type AclOperation =
  | 'ALL'
  | 'READ'
  | 'WRITE'
  | 'CREATE'
  | 'DELETE'
  | 'ALTER'
  | 'DESCRIBE'
  | 'CLUSTER_ACTION'
  | 'DESCRIBE_CONFIGS'
  | 'ALTER_CONFIGS'
  | 'IDEMPOTENT_WRITE';

/** One ACL (kafkajs's field names; Kafka's enum names as strings). */
export interface AclEntry {
  resourceType: AclResourceType;
  resourceName: string;
  resourcePatternType: 'LITERAL' | 'PREFIXED';
  principal: string;
  host: string;
  operation: AclOperation;
  permissionType: 'ALLOW' | 'DENY';
}

/** An ACL filter: a field left out matches anything; MATCH finds the patterns that apply to a name. */
export interface AclFilter {
  resourceType?: AclResourceType | 'ANY';
  resourceName?: string;
  resourcePatternType?: 'LITERAL' | 'PREFIXED' | 'ANY' | 'MATCH';
  principal?: string;
  host?: string;
  operation?: AclOperation | 'ANY';
  permissionType?: 'ALLOW' | 'DENY' | 'ANY';
}

export type QuotaKey = 'producer_byte_rate' | 'consumer_byte_rate' | 'request_percentage';

/** A client quota entity component (kafkajs/Kafka Admin's ClientQuotaEntity): a null name is the default. */
export interface QuotaEntityPart {
  entityType: 'user' | 'client-id';
  entityName: string | null;
}

export type ScramMechanism = 'SCRAM-SHA-256' | 'SCRAM-SHA-512';

/** Kafka's UserScramCredentialUpsertion (with the password, salted here) or UserScramCredentialDeletion. */
export type ScramCredentialAlteration =
  | {
      user: string;
      mechanism: ScramMechanism;
      password: string /** default 4096, as kafka-configs.sh */;
      iterations?: number;
    }
  | { user: string; mechanism: ScramMechanism; delete: true };

export interface UserScramCredentials {
  user: string;
  credentials: { mechanism: ScramMechanism; iterations: number }[];
  /** RESOURCE_NOT_FOUND for a named user without credentials. */
  error?: KafkaClientError;
}

const SCRAM_HASH: Record<ScramMechanism, { hash: string; bytes: number }> = {
  'SCRAM-SHA-256': { hash: 'sha256', bytes: 32 },
  'SCRAM-SHA-512': { hash: 'sha512', bytes: 64 },
};

type WireUserError = { error?: unknown };
const userError = (e: WireUserError) => (e.error ? { error: errorFromBody(400, e.error) } : {});

export interface ClientQuotaEntry {
  entity: QuotaEntityPart[];
  values: Partial<Record<QuotaKey, number>>;
}

interface WireAcl {
  resource_type: AclResourceType;
  resource_name: string;
  pattern_type: 'LITERAL' | 'PREFIXED';
  principal: string;
  host: string;
  operation: AclOperation;
  permission: 'ALLOW' | 'DENY';
}

const toWireAcl = (a: AclEntry) => ({
  resource_type: a.resourceType,
  resource_name: a.resourceName,
  pattern_type: a.resourcePatternType,
  principal: a.principal,
  host: a.host,
  operation: a.operation,
  permission: a.permissionType,
});

const fromWireAcl = (a: WireAcl): AclEntry => ({
  resourceType: a.resource_type,
  resourceName: a.resource_name,
  resourcePatternType: a.pattern_type,
  principal: a.principal,
  host: a.host,
  operation: a.operation,
  permissionType: a.permission,
});

const aclQuery = (f: AclFilter) => ({
  resource_type: f.resourceType,
  resource_name: f.resourceName,
  pattern_type: f.resourcePatternType,
  principal: f.principal,
  host: f.host,
  operation: f.operation,
  permission: f.permissionType,
});

export interface FeatureLevelDescription {
  release: string;
  featureLevel: number;
  supportedFeatureLevel: number;
  finalizableFeatureLevel: number;
  processes: { role: string; release: string; supportedFeatureLevel: number; lastSeen: string }[];
}

interface WireFeatures {
  release: string;
  feature_level: number;
  supported_feature_level: number;
  finalizable_feature_level: number;
  processes: { role: string; release: string; supported_feature_level: number; last_seen: string }[];
}

const features = (w: WireFeatures): FeatureLevelDescription => ({
  release: w.release,
  featureLevel: w.feature_level,
  supportedFeatureLevel: w.supported_feature_level,
  finalizableFeatureLevel: w.finalizable_feature_level,
  processes: w.processes.map((p) => ({
    role: p.role,
    release: p.release,
    supportedFeatureLevel: p.supported_feature_level,
    lastSeen: p.last_seen,
  })),
});

export class Admin extends TransactionAdmin {
  constructor(transport: Transport, config: AdminConfig = {}) {
    super(transport, (fn) =>
      retry(fn, {
        retries: config.retries ?? 5,
        initialBackoffMs: config.retryBackoffMs ?? 100,
        maxBackoffMs: config.retryBackoffMaxMs ?? 1000,
      }),
    );
  }

  /** Kafka's ListGroups with group types: consumer and share groups side by side (`types` filters). */
  listGroupsWithTypes(types?: ('classic' | 'consumer' | 'share')[]): Promise<GroupListingWithType[]> {
    return listTypedGroups(this.transport, this.call, types);
  }

  /** Share groups (KIP-932), by id. */
  listShareGroups(): Promise<string[]> {
    return listShareGroupIds(this.transport, this.call);
  }

  /** Share groups' share-partitions: SPSO, SPEO, in-flight records by state, lag. */
  describeShareGroups(groupIds: string[]): Promise<ShareGroupDescription[]> {
    return Promise.all(groupIds.map((g) => describeShareGroup(this.transport, this.call, g)));
  }

  /** Sets (a string) or resets (null) a share group's configs, all of them or none. */
  alterShareGroupConfigs(groupId: string, configs: Record<string, string | null>): Promise<void> {
    return alterShareConfigs(this.transport, this.call, groupId, configs);
  }

  /** kafka-share-groups.sh --reset-offsets: the plan (dry run, the default) or the reset written. */
  resetShareGroupOffsets(options: ShareResetOptions): Promise<ShareOffsetChange[]> {
    return resetShareOffsets(this.transport, this.call, options);
  }

  /** Java's alterShareGroupOffsets: each share-partition starts afresh at its offset (the group must be empty). */
  alterShareGroupOffsets(
    groupId: string,
    offsets: { topic: string; partition: number; offset: number }[],
  ): Promise<ShareOffsetChange[]> {
    return alterShareOffsets(this.transport, this.call, groupId, offsets);
  }

  /** Java's deleteShareGroupOffsets: the group's state for the topics removed; per topic, null or the error. */
  deleteShareGroupOffsets(groupId: string, topics: string[]): Promise<Map<string, string | null>> {
    return deleteShareOffsets(this.transport, this.call, groupId, topics);
  }

  /** Java's deleteShareGroups: empty share groups and their state (NON_EMPTY_GROUP, GROUP_ID_NOT_FOUND otherwise). */
  deleteShareGroups(groupIds: string[]): Promise<void> {
    return deleteShareGroupIds(this.transport, this.call, groupIds);
  }

  /** Binds a topic to a target, delivered as a consumer group of its own (docs/triggers.md). */
  createTrigger(config: TriggerConfig): Promise<TriggerInfo> {
    return createTrigger(this.transport, this.call, config);
  }

  /** Triggers, by name. */
  listTriggers(): Promise<TriggerInfo[]> {
    return listTriggers(this.transport, this.call);
  }

  /** Triggers with each partition's committed offset, lag and delivery lease. */
  describeTriggers(names: string[]): Promise<TriggerDescription[]> {
    return Promise.all(names.map((n) => describeTrigger(this.transport, this.call, n)));
  }

  /** Stops starting deliveries; positions stay where they are. */
  pauseTrigger(name: string): Promise<TriggerInfo> {
    return setTriggerState(this.transport, this.call, name, 'pause');
  }

  resumeTrigger(name: string): Promise<TriggerInfo> {
    return setTriggerState(this.transport, this.call, name, 'resume');
  }

  /** Removes a trigger; its consumer group and offsets stay. */
  deleteTrigger(name: string): Promise<void> {
    return deleteTrigger(this.transport, this.call, name);
  }

  /** kafkajs compatibility: nothing to open over HTTP. */
  async connect(): Promise<void> {}
  async disconnect(): Promise<void> {}

  /** Creates topics; resolves to false if any already existed (the others are still created). */
  async createTopics(options: { topics: ITopicConfig[]; validateOnly?: boolean }): Promise<boolean> {
    let allCreated = true;
    for (const t of options.topics) {
      try {
        await this.call(() =>
          this.transport.request('POST', '/topics', {
            body: {
              topic_name: t.topic,
              ...(t.numPartitions !== undefined && t.numPartitions !== -1 ? { partitions_count: t.numPartitions } : {}),
              ...(t.replicationFactor !== undefined && t.replicationFactor !== -1
                ? { replication_factor: t.replicationFactor }
                : {}),
              configs: (t.configEntries ?? []).map((c) => ({ name: c.name, value: c.value })),
              validate_only: options.validateOnly ?? false,
            },
            topic: t.topic,
          }),
        );
      } catch (e) {
        if (e instanceof KafkaClientError && e.type === 'TOPIC_ALREADY_EXISTS') allCreated = false;
        else throw e;
      }
    }
    return allCreated;
  }

  async listTopics(): Promise<string[]> {
    const res = await this.call(() => this.transport.request<{ data: WireTopic[] }>('GET', '/topics'));
    return res.body.data.map((t) => t.topic_name).sort();
  }

  async describeTopic(topic: string): Promise<TopicDescription> {
    const [t, parts] = await Promise.all([
      this.call(() => this.transport.request<WireTopic>('GET', `/topics/${enc(topic)}`, { topic })),
      allPages<WirePartition>(`/topics/${enc(topic)}/partitions`, async (at) => {
        const res = await this.call(() => this.transport.request<Page<WirePartition>>('GET', at, { topic }));
        return res.body;
      }),
    ]);
    return {
      name: t.body.topic_name,
      topicId: t.body.topic_id,
      partitionCount: t.body.partitions_count,
      replicationFactor: t.body.replication_factor,
      partitions: parts.map(toPartition).sort((a, b) => a.partition - b.partition),
    };
  }

  /** kafkajs's fetchTopicMetadata: every topic when none are named. */
  async fetchTopicMetadata(options: { topics?: string[] } = {}): Promise<{ topics: TopicDescription[] }> {
    const names = options.topics ?? (await this.listTopics());
    return { topics: await Promise.all(names.map((n) => this.describeTopic(n))) };
  }

  async deleteTopics(options: { topics: string[] }): Promise<void> {
    for (const t of options.topics)
      await this.call(() => this.transport.request('DELETE', `/topics/${enc(t)}`, { topic: t }));
  }

  /** Grows topics to `count` partitions (Kafka never shrinks a topic). */
  async createPartitions(options: { topicPartitions: { topic: string; count: number }[] }): Promise<void> {
    for (const { topic, count } of options.topicPartitions) {
      await this.call(() =>
        this.transport.request('PATCH', `/topics/${enc(topic)}`, { body: { partitions_count: count }, topic }),
      );
    }
  }

  async describeTopicConfigs(topic: string): Promise<ConfigEntry[]> {
    const res = await this.call(() =>
      this.transport.request<{ data: WireConfig[] }>('GET', `/topics/${enc(topic)}/configs`, { topic }),
    );
    return res.body.data.map((c) => ({
      name: c.name,
      value: c.value,
      isDefault: c.is_default,
      isReadOnly: c.is_read_only,
      isSensitive: c.is_sensitive,
      source: c.source,
    }));
  }

  /** Sets and deletes (reverts to default) topic configs in one all-or-nothing change. */
  async alterTopicConfigs(
    topic: string,
    changes: { set?: Record<string, string>; delete?: string[] },
    validateOnly = false,
  ): Promise<void> {
    const data = [
      ...Object.entries(changes.set ?? {}).map(([name, value]) => ({ name, value, operation: 'SET' as const })),
      ...(changes.delete ?? []).map((name) => ({ name, operation: 'DELETE' as const })),
    ];
    if (data.length === 0) return;
    await this.call(() =>
      this.transport.request('POST', `/topics/${enc(topic)}/configs:alter`, {
        body: { data, validate_only: validateOnly },
        topic,
      }),
    );
  }

  /** Kafka's ListOffsets for one partition. */
  async listOffset(
    topic: string,
    partition: number,
    spec: OffsetSpec,
  ): Promise<{ offset: number; timestamp: number | null }> {
    const query =
      typeof spec === 'string' ? { offset_type: spec } : { offset_type: 'timestamp', timestamp: spec.timestamp };
    const res = await this.call(() =>
      this.transport.request<{ offset: number; timestamp: string | null }>(
        'GET',
        `/topics/${enc(topic)}/partitions/${partition}/offset`,
        { query, topic, partition },
      ),
    );
    return { offset: res.body.offset, timestamp: res.body.timestamp === null ? null : Date.parse(res.body.timestamp) };
  }

  /** kafkajs's fetchTopicOffsets: log start offset and high watermark of every partition. */
  async fetchTopicOffsets(topic: string): Promise<PartitionOffsets[]> {
    const d = await this.describeTopic(topic);
    return d.partitions.map((p) => ({
      partition: p.partition,
      offset: p.highWatermark,
      high: p.highWatermark,
      low: p.logStartOffset,
    }));
  }

  /** The first offset whose timestamp is >= `timestamp` per partition (the high watermark if none). */
  async fetchTopicOffsetsByTimestamp(
    topic: string,
    timestamp: number,
  ): Promise<{ partition: number; offset: number }[]> {
    const d = await this.describeTopic(topic);
    return Promise.all(
      d.partitions.map(async (p) => {
        const r = await this.listOffset(topic, p.partition, { timestamp });
        return { partition: p.partition, offset: r.offset >= 0 ? r.offset : p.highWatermark };
      }),
    );
  }

  /**
   * Kafka's DeleteRecords: moves each partition's log start offset up to `offset` (-1 means the high
   * watermark). Resolves to the new low watermarks.
   */
  async deleteTopicRecords(options: {
    topic: string;
    partitions: { partition: number; offset: number }[];
  }): Promise<{ partition: number; lowWatermark: number }[]> {
    const { topic } = options;
    return Promise.all(
      options.partitions.map(async ({ partition, offset }) => {
        const res = await this.call(() =>
          this.transport.request<{ low_watermark?: number; log_start_offset?: number }>(
            'POST',
            `/topics/${enc(topic)}/partitions/${partition}/records:delete`,
            {
              body: { before_offset: offset },
              topic,
              partition,
            },
          ),
        );
        return { partition, lowWatermark: res.body.low_watermark ?? res.body.log_start_offset ?? offset };
      }),
    );
  }

  /** Kafka's CreateAcls: all or nothing; an ACL that exists already is left as it is. */
  async createAcls(options: { acl: AclEntry[] }): Promise<void> {
    if (options.acl.length === 0) return;
    await this.call(() =>
      this.transport.request('POST', '/acls:batch', { body: { data: options.acl.map(toWireAcl) } }),
    );
  }

  /**
   * Kafka's DescribeFeatures for metadata.version: the cluster's feature level, what the answering
   * process supports, what every running process supports, and their releases.
   */
  async describeFeatures(): Promise<FeatureLevelDescription> {
    const res = await this.call(() => this.transport.request<WireFeatures>('GET', '/features'));
    return features(res.body);
  }

  /** Kafka's UpdateFeatures (upgrade only): raises the cluster's feature level. */
  async raiseFeatureLevel(level: number): Promise<FeatureLevelDescription> {
    const res = await this.call(() =>
      this.transport.request<WireFeatures>('POST', '/features:raise', { body: { feature_level: level } }),
    );
    return features(res.body);
  }

  /** Kafka's DescribeAcls: the ACLs the filter matches. */
  async describeAcls(filter: AclFilter = {}): Promise<AclEntry[]> {
    const res = await this.call(() =>
      this.transport.request<{ data: WireAcl[] }>('GET', '/acls', { query: aclQuery(filter) }),
    );
    return res.body.data.map(fromWireAcl);
  }

  /** Kafka's DeleteAcls: deletes what each filter matches (a filter needs resourceType; ANY for all) and returns it. */
  async deleteAcls(options: { filters: AclFilter[] }): Promise<AclEntry[]> {
    const deleted: AclEntry[] = [];
    for (const f of options.filters) {
      const res = await this.call(() =>
        this.transport.request<{ data: WireAcl[] }>('DELETE', '/acls', {
          query: aclQuery({ ...f, resourceType: f.resourceType ?? 'ANY' }),
        }),
      );
      deleted.push(...res.body.data.map(fromWireAcl));
    }
    return deleted;
  }

  /** Kafka's DescribeClientQuotas; `user` / `clientId` filter (null: the default entity). */
  async describeClientQuotas(
    filter: { user?: string | null; clientId?: string | null } = {},
  ): Promise<ClientQuotaEntry[]> {
    const name = (v: string | null | undefined) => (v === null ? '<default>' : v);
    const res = await this.call(() =>
      this.transport.request<{
        data: {
          entity: { entity_type: 'user' | 'client-id'; entity_name: string | null }[];
          values: ClientQuotaEntry['values'];
        }[];
      }>('GET', '/client-quotas', {
        query: { user: name(filter.user), client_id: name(filter.clientId) },
      }),
    );
    return res.body.data.map((q) => ({
      entity: q.entity.map((e) => ({ entityType: e.entity_type, entityName: e.entity_name })),
      values: q.values,
    }));
  }

  /** Kafka's AlterClientQuotas: set (value) or remove quota keys per entity, all checked before any applies. */
  async alterClientQuotas(
    entries: { entity: QuotaEntityPart[]; ops: { key: QuotaKey; value?: number; remove?: boolean }[] }[],
    validateOnly = false,
  ): Promise<void> {
    const data = entries.map((e) => ({
      entity: e.entity.map((p) => ({ entity_type: p.entityType, entity_name: p.entityName })),
      ops: e.ops,
    }));
    await this.call(() =>
      this.transport.request('POST', '/client-quotas:alter', { body: { data, validate_only: validateOnly } }),
    );
  }

  /** Kafka's DescribeUserScramCredentials: every user with a credential, or the named ones. */
  async describeUserScramCredentials(users?: string[]): Promise<UserScramCredentials[]> {
    const res = await this.call(() =>
      this.transport.request<{ data: (UserScramCredentials & WireUserError)[] }>('GET', '/user-scram-credentials', {
        query: { user: users },
      }),
    );
    return res.body.data.map((d) => ({ user: d.user, credentials: d.credentials, ...userError(d) }));
  }

  /**
   * Kafka's AlterUserScramCredentials. As Kafka's admin client, the password is salted and
   * hashed here (PBKDF2, a fresh salt): the server never sees it. Answered per user, as Kafka
   * does (a user altered twice in one call is DUPLICATE_RESOURCE: one call per mechanism).
   */
  async alterUserScramCredentials(
    alterations: ScramCredentialAlteration[],
  ): Promise<{ user: string; error?: KafkaClientError }[]> {
    const deletions = alterations.flatMap((a) => ('delete' in a ? [{ user: a.user, mechanism: a.mechanism }] : []));
    const upsertions = alterations.flatMap((a) => {
      if ('delete' in a) return [];
      const iterations = a.iterations ?? 4096;
      const salt = randomBytes(32);
      const h = SCRAM_HASH[a.mechanism] ?? SCRAM_HASH['SCRAM-SHA-512']; // an unknown mechanism is the server's to refuse
      const salted = pbkdf2Sync(Buffer.from(a.password, 'utf8'), salt, iterations, h.bytes, h.hash);
      return [
        {
          user: a.user,
          mechanism: a.mechanism,
          iterations,
          salt: salt.toString('base64'),
          salted_password: salted.toString('base64'),
        },
      ];
    });
    const res = await this.call(() =>
      this.transport.request<{ data: ({ user: string } & WireUserError)[] }>('POST', '/user-scram-credentials:alter', {
        body: { deletions, upsertions },
      }),
    );
    return res.body.data.map((d) => ({ user: d.user, ...userError(d) }));
  }
}
