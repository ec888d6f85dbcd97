/**
 * Errors as data plus one small class (after kafkajs): every failure the product reports carries a
 * Kafka error name, its numeric code and whether a client may retry. Shared by the server and the
 * client; how the REST layer shows an error (HTTP status, five-digit code) lives in http/error-mapping.ts.
 * Domain code throws `KafkaError`; http/ maps it.
 */

export interface ErrorSpec {
  /** Kafka's protocol error code (org.apache.kafka.common.protocol.Errors). */
  code: number;
  retriable: boolean;
}

/** The Kafka error names this product uses, with their codes. */
export const ERRORS = {
  UNKNOWN_SERVER_ERROR: { code: -1, retriable: false },
  OFFSET_OUT_OF_RANGE: { code: 1, retriable: false },
  CORRUPT_MESSAGE: { code: 2, retriable: true },
  UNKNOWN_TOPIC_OR_PARTITION: { code: 3, retriable: true },
  INVALID_FETCH_SIZE: { code: 4, retriable: false },
  LEADER_NOT_AVAILABLE: { code: 5, retriable: true },
  NOT_LEADER_OR_FOLLOWER: { code: 6, retriable: true },
  REQUEST_TIMED_OUT: { code: 7, retriable: true },
  MESSAGE_TOO_LARGE: { code: 10, retriable: false },
  OFFSET_METADATA_TOO_LARGE: { code: 12, retriable: false },
  COORDINATOR_NOT_AVAILABLE: { code: 15, retriable: true },
  INVALID_TOPIC_EXCEPTION: { code: 17, retriable: false },
  RECORD_LIST_TOO_LARGE: { code: 18, retriable: false },
  NOT_ENOUGH_REPLICAS: { code: 19, retriable: true },
  NOT_ENOUGH_REPLICAS_AFTER_APPEND: { code: 20, retriable: true },
  INVALID_REQUIRED_ACKS: { code: 21, retriable: false },
  ILLEGAL_GENERATION: { code: 22, retriable: false },
  INVALID_GROUP_ID: { code: 24, retriable: false },
  UNKNOWN_MEMBER_ID: { code: 25, retriable: false },
  INVALID_SESSION_TIMEOUT: { code: 26, retriable: false },
  REBALANCE_IN_PROGRESS: { code: 27, retriable: false },
  TOPIC_AUTHORIZATION_FAILED: { code: 29, retriable: false },
  GROUP_AUTHORIZATION_FAILED: { code: 30, retriable: false },
  CLUSTER_AUTHORIZATION_FAILED: { code: 31, retriable: false },
  INVALID_TIMESTAMP: { code: 32, retriable: false },
  TOPIC_ALREADY_EXISTS: { code: 36, retriable: false },
  INVALID_PARTITIONS: { code: 37, retriable: false },
  INVALID_REPLICATION_FACTOR: { code: 38, retriable: false },
  INVALID_REPLICA_ASSIGNMENT: { code: 39, retriable: false },
  INVALID_CONFIG: { code: 40, retriable: false },
  INVALID_REQUEST: { code: 42, retriable: false },
  OUT_OF_ORDER_SEQUENCE_NUMBER: { code: 45, retriable: false },
  DUPLICATE_SEQUENCE_NUMBER: { code: 46, retriable: false },
  INVALID_PRODUCER_EPOCH: { code: 47, retriable: false },
  INVALID_TXN_STATE: { code: 48, retriable: false },
  INVALID_PRODUCER_ID_MAPPING: { code: 49, retriable: false },
  INVALID_TRANSACTION_TIMEOUT: { code: 50, retriable: false },
  CONCURRENT_TRANSACTIONS: { code: 51, retriable: true },
  TRANSACTIONAL_ID_AUTHORIZATION_FAILED: { code: 53, retriable: false },
  KAFKA_STORAGE_ERROR: { code: 56, retriable: true },
  SASL_AUTHENTICATION_FAILED: { code: 58, retriable: false },
  UNKNOWN_PRODUCER_ID: { code: 59, retriable: false },
  NON_EMPTY_GROUP: { code: 68, retriable: false },
  GROUP_ID_NOT_FOUND: { code: 69, retriable: false },
  FENCED_LEADER_EPOCH: { code: 74, retriable: true },
  PRODUCER_FENCED: { code: 90, retriable: false },
  TRANSACTIONAL_ID_NOT_FOUND: { code: 105, retriable: false },
  UNKNOWN_LEADER_EPOCH: { code: 75, retriable: true },
  OFFSET_NOT_AVAILABLE: { code: 78, retriable: true },
  UNSUPPORTED_COMPRESSION_TYPE: { code: 76, retriable: false },
  INVALID_RECORD: { code: 87, retriable: false },
  UNSTABLE_OFFSET_COMMIT: { code: 88, retriable: true },
  THROTTLING_QUOTA_EXCEEDED: { code: 89, retriable: true },
  FENCED_MEMBER_EPOCH: { code: 110, retriable: false },
  UNSUPPORTED_ASSIGNOR: { code: 112, retriable: false },
  INVALID_RECORD_STATE: { code: 121, retriable: false },
  SHARE_SESSION_NOT_FOUND: { code: 122, retriable: true },
  INVALID_SHARE_SESSION_EPOCH: { code: 123, retriable: true },
  SHARE_SESSION_LIMIT_REACHED: { code: 133, retriable: true },
  // Errors of the Kafka protocol listener (src/kafka).
  NOT_COORDINATOR: { code: 16, retriable: true },
  INCONSISTENT_GROUP_PROTOCOL: { code: 23, retriable: false },
  UNSUPPORTED_SASL_MECHANISM: { code: 33, retriable: false },
  ILLEGAL_SASL_STATE: { code: 34, retriable: false },
  UNSUPPORTED_VERSION: { code: 35, retriable: false },
  FETCH_SESSION_ID_NOT_FOUND: { code: 70, retriable: true },
  MEMBER_ID_REQUIRED: { code: 79, retriable: false },
  GROUP_MAX_SIZE_REACHED: { code: 81, retriable: false },
  GROUP_SUBSCRIBED_TO_TOPIC: { code: 86, retriable: false },
  OPERATION_NOT_ATTEMPTED: { code: 55, retriable: false },
  UNKNOWN_TOPIC_ID: { code: 100, retriable: true },
  FENCED_INSTANCE_ID: { code: 82, retriable: false },
  STALE_MEMBER_EPOCH: { code: 113, retriable: false },
  RESOURCE_NOT_FOUND: { code: 91, retriable: false },
  DUPLICATE_RESOURCE: { code: 92, retriable: false },
  UNACCEPTABLE_CREDENTIAL: { code: 93, retriable: false },
  /** Not a Kafka protocol error: the consumer's NoOffsetForPartitionException (auto.offset.reset=none). */
  NO_OFFSET_FOR_PARTITION: { code: -1, retriable: false },
  /** Not a Kafka protocol error: REST Proxy v2's "consumer instance already exists" (HTTP 409). */
  CONSUMER_ALREADY_EXISTS: { code: -1, retriable: false },
  /** Not a Kafka protocol error: the REST layer's own "bad request body" (HTTP 400). */
  BAD_REQUEST: { code: 42, retriable: false },
  /** Not a Kafka protocol error: the REST layer's unknown route or resource (HTTP 404). */
  NOT_FOUND: { code: -1, retriable: false },
  /** Not a Kafka protocol error: a body in a media type the endpoint does not take (HTTP 415). */
  UNSUPPORTED_MEDIA_TYPE: { code: -1, retriable: false },
  /** Not a Kafka protocol error: the request body exceeds the configured size (HTTP 413). */
  PAYLOAD_TOO_LARGE: { code: 18, retriable: false },
} as const satisfies Record<string, ErrorSpec>;

export type KafkaErrorName = keyof typeof ERRORS;

export class KafkaError extends Error {
  readonly errorName: KafkaErrorName;
  readonly code: number;
  readonly retriable: boolean;
  /**
   * Set where the same Kafka error can be the caller's fault or ours: CORRUPT_MESSAGE is the
   * server's when a stored batch fails its CRC, the caller's when a produced one does.
   */
  readonly fromCaller: boolean;

  constructor(errorName: KafkaErrorName, message: string, options?: { cause?: unknown; fromCaller?: true }) {
    super(message, options);
    const s: ErrorSpec = ERRORS[errorName];
    this.name = 'KafkaError';
    this.errorName = errorName;
    this.code = s.code;
    this.retriable = s.retriable;
    this.fromCaller = options?.fromCaller ?? false;
  }
}

export const isKafkaError = (e: unknown, name?: KafkaErrorName): e is KafkaError =>
  e instanceof KafkaError && (name === undefined || e.errorName === name);
