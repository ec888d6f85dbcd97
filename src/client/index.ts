/**
 * The TypeScript client: a producer, a consumer and an admin client that behave like Kafka's, over
 * the server's HTTP API. It imports no server code but pure shared modules (the murmur2
 * partitioner, the error table), so it runs in Node and in a Lambda alike.
 */
export { Kafka } from './kafka.js';
export { RECORD_BATCH_MEDIA_TYPE, type ConnectionConfig, type WireFormat } from './transport.js';
export { LAMBDA_MAX_REQUEST_BYTES } from './request-size.js';
export { COMPRESSION_TYPES, type CompressionType } from '../wire/compression/index.js';
export type { AuthConfig, AwsCredentials } from './auth.js';
export {
  Producer,
  PRODUCER_DEFAULTS,
  type ProducerConfig,
  type ProducerRecordBatch,
  type RecordMetadata,
  type ProducerIdAndEpoch,
} from './producer/producer.js';
export {
  Consumer,
  CONSUMER_DEFAULTS,
  type ConsumerConfig,
  type ConsumerRunConfig,
  type EachMessagePayload,
  type EachBatchPayload,
  type RebalanceListener,
  type TopicPartition,
  type TopicPartitionOffset,
} from './consumer/consumer.js';
export {
  Admin,
  type AdminConfig,
  type ITopicConfig,
  type TopicDescription,
  type PartitionDescription,
  type ConfigEntry,
  type OffsetSpec,
  type PartitionOffsets,
  type AclEntry,
  type AclFilter,
  type AclOperation,
  type AclResourceType,
  type ClientQuotaEntry,
  type FeatureLevelDescription,
  type QuotaEntityPart,
  type QuotaKey,
  type ScramCredentialAlteration,
  type ScramMechanism,
  type UserScramCredentials,
} from './admin.js';
export type {
  GroupDescription,
  GroupListing,
  GroupOffsetLag,
  ResetOffsetsOptions,
  ResetPlanEntry,
} from './group-admin.js';
export type { Message, ConsumerRecord, MessageHeaders, Bytes } from './codec.js';
export {
  ShareConsumer,
  type AcknowledgeType,
  type AcknowledgementResults,
  type ShareConsumerConfig,
  type ShareRecord,
} from './share-consumer.js';
export type {
  GroupListingWithType,
  ShareGroupDescription,
  ShareMemberDescription,
  ShareOffsetChange,
  SharePartitionDescription,
  ShareResetOptions,
} from './share-group-admin.js';
export type { ResetScope, ResetStrategy, ShareResetStrategy } from './offset-reset.js';
export type {
  TriggerConfig,
  TriggerDescription,
  TriggerInfo,
  TriggerPartitionDescription,
  TriggerStartingPosition,
  TriggerTargetConfig,
  TriggerKnobs,
} from './trigger-admin.js';
export { DefaultPartitioner, type Partitioner } from './partitioner.js';
export {
  KafkaClientError,
  KafkaProtocolError,
  KafkaConnectionError,
  KafkaTimeoutError,
  KafkaConfigError,
  isRetriable,
} from './errors.js';
export { retry, backoffMs, type RetryOptions } from './retry.js';
export { RELEASE } from '../wire/release.js';
