import { TOPIC_CONFIG_DEFS, type TopicConfigName } from './topic-configs.js';

/**
 * What DescribeConfigs answers for a BROKER resource (over the listener and Confluent v3's
 * `/brokers/{id}/configs`): the values this product applies, under Kafka's broker config names,
 * so tools that read `log.retention.ms`, `message.max.bytes` or `auto.create.topics.enable` from
 * the broker get what holds here. Every one is read-only (there is no dynamic broker config):
 * STATIC_BROKER_CONFIG for what the server's configuration sets, DEFAULT_CONFIG for the topic
 * defaults, which are fixed here (a topic overrides them with its own configs).
 */
export interface BrokerConfig {
  name: string;
  value: string;
  source: 'STATIC_BROKER_CONFIG' | 'DEFAULT_CONFIG';
}

/** The server's settings a broker config reports; the composition root reads them from each module's resolved config. */
export interface BrokerSettings {
  numPartitions: number;
  defaultReplicationFactor: number;
  autoCreateTopicsEnable: boolean;
  /** socket.request.max.bytes: the listener's largest frame. */
  socketRequestMaxBytes: number;
  retentionCheckIntervalMs: number;
  groupInitialRebalanceDelayMs: number;
  groupMinSessionTimeoutMs: number;
  groupMaxSessionTimeoutMs: number;
  groupConsumerMaxSize: number;
  groupMaxSize: number;
  transactionMaxTimeoutMs: number;
  transactionalIdExpirationMs: number;
}

/**
 * Kafka's broker-level synonyms of the topic configs this product applies
 * (ServerTopicConfigSynonyms); the topic configs with no effect here (docs/topic-configs.md) have
 * no broker value to report.
 */
const TOPIC_DEFAULT_SYNONYMS: Partial<Record<TopicConfigName, string>> = {
  'cleanup.policy': 'log.cleanup.policy',
  'retention.ms': 'log.retention.ms',
  'retention.bytes': 'log.retention.bytes',
  'segment.bytes': 'log.segment.bytes',
  'segment.ms': 'log.roll.ms',
  'max.message.bytes': 'message.max.bytes',
  'min.insync.replicas': 'min.insync.replicas',
  'unclean.leader.election.enable': 'unclean.leader.election.enable',
  'delete.retention.ms': 'log.cleaner.delete.retention.ms',
  'min.compaction.lag.ms': 'log.cleaner.min.compaction.lag.ms',
  'max.compaction.lag.ms': 'log.cleaner.max.compaction.lag.ms',
  'min.cleanable.dirty.ratio': 'log.cleaner.min.cleanable.ratio',
  'file.delete.delay.ms': 'log.segment.delete.delay.ms',
  'message.timestamp.type': 'log.message.timestamp.type',
  'message.timestamp.before.max.ms': 'log.message.timestamp.before.max.ms',
  'message.timestamp.after.max.ms': 'log.message.timestamp.after.max.ms',
  'compression.type': 'compression.type',
};

export function brokerConfigs(s: BrokerSettings): BrokerConfig[] {
  const configured = (name: string, value: number | boolean): BrokerConfig => ({
    name,
    value: String(value),
    source: 'STATIC_BROKER_CONFIG',
  });
  const topicDefaults = Object.entries(TOPIC_DEFAULT_SYNONYMS).map(
    ([topicName, name]): BrokerConfig => ({
      name: name!,
      value: TOPIC_CONFIG_DEFS[topicName as TopicConfigName].default,
      source: 'DEFAULT_CONFIG',
    }),
  );
  return [
    configured('num.partitions', s.numPartitions),
    configured('default.replication.factor', s.defaultReplicationFactor),
    configured('auto.create.topics.enable', s.autoCreateTopicsEnable),
    configured('socket.request.max.bytes', s.socketRequestMaxBytes),
    configured('log.retention.check.interval.ms', s.retentionCheckIntervalMs),
    configured('group.initial.rebalance.delay.ms', s.groupInitialRebalanceDelayMs),
    configured('group.min.session.timeout.ms', s.groupMinSessionTimeoutMs),
    configured('group.max.session.timeout.ms', s.groupMaxSessionTimeoutMs),
    configured('group.consumer.max.size', s.groupConsumerMaxSize),
    configured('group.max.size', s.groupMaxSize),
    configured('transaction.max.timeout.ms', s.transactionMaxTimeoutMs),
    configured('transactional.id.expiration.ms', s.transactionalIdExpirationMs),
    ...topicDefaults,
  ].sort((a, b) => (a.name < b.name ? -1 : 1));
}
