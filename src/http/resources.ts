import { RELEASE } from '../wire/release.js';
import type { BrokerConfig } from '../config/broker-configs.js';
import { TOPIC_CONFIG_DEFS, type TopicConfigName } from '../config/topic-configs.js';
import { lastStableOffset, type PartitionState } from '../partition/partition-state.js';
import type { Topic } from '../topics/topics.js';

/** Builders of Confluent REST Proxy v3 resource shapes (`kind`, `metadata.self`, related links). */
export class Resources {
  constructor(
    readonly origin: string,
    readonly clusterId: string,
  ) {}

  get base(): string {
    return `${this.origin}/v3/clusters/${this.clusterId}`;
  }

  private crn(path: string): string {
    return `crn:///kafka=${this.clusterId}${path}`;
  }

  cluster() {
    const b = this.base;
    return {
      kind: 'KafkaCluster',
      metadata: { self: b, resource_name: this.crn('') },
      cluster_id: this.clusterId,
      controller: { related: `${b}/brokers/0` },
      brokers: { related: `${b}/brokers` },
      broker_configs: { related: `${b}/broker-configs` },
      consumer_groups: { related: `${b}/consumer-groups` },
      topics: { related: `${b}/topics` },
      partition_reassignments: { related: `${b}/topics/-/partitions/-/reassignment` },
      acls: { related: `${b}/acls` },
      // Extension: the release the answering process runs, and its feature level resource.
      version: RELEASE,
      features: { related: `${b}/features` },
    };
  }

  /**
   * v3's KafkaReassignment of a partition. Replicas are placed once, when the partition is created,
   * so none is ever being added or removed; the resource exists so the partition's link leads
   * somewhere, and the reassignment lists stay empty.
   */
  reassignment(t: Topic, p: number) {
    const partition = `${this.base}/topics/${t.name}/partitions/${p}`;
    return {
      kind: 'KafkaReassignment',
      metadata: {
        self: `${partition}/reassignment`,
        resource_name: this.crn(`/topic=${t.name}/partition=${p}/reassignment`),
      },
      cluster_id: this.clusterId,
      topic_name: t.name,
      partition_id: p,
      adding_replicas: [] as number[],
      removing_replicas: [] as number[],
      replicas: { related: `${partition}/replicas` },
    };
  }

  /**
   * A broker is a replica store: replica ids, leader ids and ISR members are store indexes, so
   * broker i is store i. There is no host or port: every function serves every partition.
   */
  broker(id: number) {
    const self = `${this.base}/brokers/${id}`;
    return {
      kind: 'KafkaBroker',
      metadata: { self, resource_name: this.crn(`/broker=${id}`) },
      cluster_id: this.clusterId,
      broker_id: id,
      host: null,
      port: null,
      rack: null,
      configs: { related: `${self}/configs` },
      partition_replicas: { related: `${self}/partition-replicas` },
    };
  }

  /** A broker config (read-only: the server's configuration, or a fixed topic default). */
  brokerConfig(id: number, { name, value, source }: BrokerConfig) {
    return {
      kind: 'KafkaBrokerConfig',
      metadata: {
        self: `${this.base}/brokers/${id}/configs/${name}`,
        resource_name: this.crn(`/broker=${id}/config=${name}`),
      },
      cluster_id: this.clusterId,
      broker_id: id,
      name,
      value,
      is_default: source === 'DEFAULT_CONFIG',
      is_read_only: true,
      is_sensitive: false,
      source,
      synonyms: [{ name, value, source }],
    };
  }

  replica(t: Topic, p: number, s: PartitionState, brokerId: number) {
    const self = `${this.base}/topics/${t.name}/partitions/${p}/replicas/${brokerId}`;
    return {
      kind: 'KafkaReplica',
      metadata: { self, resource_name: this.crn(`/topic=${t.name}/partition=${p}/replica=${brokerId}`) },
      cluster_id: this.clusterId,
      topic_name: t.name,
      partition_id: p,
      broker_id: brokerId,
      is_leader: s.leader === brokerId,
      is_in_sync: s.isr.includes(brokerId),
      broker: { related: `${this.base}/brokers/${brokerId}` },
    };
  }

  /** A v3 collection; `next` is the URL of the following page of a paged list. */
  list<K extends string, T>(kind: K, self: string, data: T[], next: string | null = null) {
    return { kind, metadata: { self, next }, data };
  }

  topic(t: Topic) {
    const self = `${this.base}/topics/${t.name}`;
    return {
      kind: 'KafkaTopic',
      metadata: { self, resource_name: this.crn(`/topic=${t.name}`) },
      cluster_id: this.clusterId,
      topic_name: t.name,
      topic_id: t.id,
      is_internal: false,
      replication_factor: t.replicationFactor,
      partitions_count: t.partitionCount,
      partitions: { related: `${self}/partitions` },
      configs: { related: `${self}/configs` },
      partition_reassignments: { related: `${self}/partitions/-/reassignment` },
      authorized_operations: [],
    };
  }

  topicConfig(t: Topic, name: TopicConfigName) {
    const override = t.configs[name];
    const value = override ?? TOPIC_CONFIG_DEFS[name].default;
    return {
      kind: 'KafkaTopicConfig',
      metadata: {
        self: `${this.base}/topics/${t.name}/configs/${name}`,
        resource_name: this.crn(`/topic=${t.name}/config=${name}`),
      },
      cluster_id: this.clusterId,
      topic_name: t.name,
      name,
      value,
      is_default: override === undefined,
      is_read_only: false,
      is_sensitive: false,
      source: override === undefined ? 'DEFAULT_CONFIG' : 'DYNAMIC_TOPIC_CONFIG',
      synonyms: [
        ...(override === undefined ? [] : [{ name, value: override, source: 'DYNAMIC_TOPIC_CONFIG' }]),
        { name, value: TOPIC_CONFIG_DEFS[name].default, source: 'DEFAULT_CONFIG' },
      ],
    };
  }

  /** v3's KafkaPartition plus the log's own numbers (extension fields, snake_case like v3). */
  partition(t: Topic, p: number, s: PartitionState) {
    const self = `${this.base}/topics/${t.name}/partitions/${p}`;
    return {
      kind: 'KafkaPartition',
      metadata: { self, resource_name: this.crn(`/topic=${t.name}/partition=${p}`) },
      cluster_id: this.clusterId,
      topic_name: t.name,
      partition_id: p,
      leader: { related: `${self}/replicas/${s.leader}` },
      replicas: { related: `${self}/replicas` },
      reassignment: { related: `${self}/reassignment` },
      leader_id: s.leader,
      leader_epoch: s.leaderEpoch,
      replica_ids: s.replicas,
      isr: s.isr,
      replica_log_end_offsets: s.replicas.map((r) => ({ replica_id: r, log_end_offset: s.replicaLeo[String(r)] ?? 0 })),
      log_start_offset: s.logStartOffset,
      high_watermark: s.highWatermark,
      last_stable_offset: lastStableOffset(s),
      log_end_offset: s.replicaLeo[String(s.leader)] ?? 0,
      size_in_bytes: s.sizeInBytes,
    };
  }
}
