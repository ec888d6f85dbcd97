/**
 * Errors as data plus one small class (after kafkajs): every failure the product reports carries a
 * Kafka error name, its numeric code, whether a client may retry, and how the HTTP layer shows it
 * (status and Confluent REST Proxy five-digit code). Domain code throws `KafkaError`; http/ maps it.
 */

export interface ErrorSpec {
  /** Kafka's protocol error code (org.apache.kafka.common.protocol.Errors). */
  code: number;
  retriable: boolean;
  /** HTTP status the REST layer answers with. */
  status: number;
  /** Confluent REST Proxy style five-digit error code. */
  restCode: number;
}

const spec = (code: number, retriable: boolean, status: number, restCode = status * 100): ErrorSpec => ({
  code,
  retriable,
  status,
  restCode,
});

/** The Kafka error names this product uses, with their codes and REST mapping. */
export const ERRORS = {
  UNKNOWN_SERVER_ERROR: spec(-1, false, 500, 50001),
  OFFSET_OUT_OF_RANGE: spec(1, false, 416, 41601),
  CORRUPT_MESSAGE: spec(2, true, 500, 50002),
  UNKNOWN_TOPIC_OR_PARTITION: spec(3, true, 404, 40403),
  INVALID_FETCH_SIZE: spec(4, false, 400, 40002),
  LEADER_NOT_AVAILABLE: spec(5, true, 503, 50301),
  NOT_LEADER_OR_FOLLOWER: spec(6, true, 503, 50302),
  REQUEST_TIMED_OUT: spec(7, true, 504, 50401),
  MESSAGE_TOO_LARGE: spec(10, false, 413, 41301),
  OFFSET_METADATA_TOO_LARGE: spec(12, false, 400, 40002),
  COORDINATOR_NOT_AVAILABLE: spec(15, true, 503, 50303),
  INVALID_TOPIC_EXCEPTION: spec(17, false, 400, 40002),
  RECORD_LIST_TOO_LARGE: spec(18, false, 413, 41302),
  NOT_ENOUGH_REPLICAS: spec(19, true, 503, 50304),
  NOT_ENOUGH_REPLICAS_AFTER_APPEND: spec(20, true, 503, 50305),
  INVALID_REQUIRED_ACKS: spec(21, false, 400, 40002),
  ILLEGAL_GENERATION: spec(22, false, 409, 40901),
  INVALID_GROUP_ID: spec(24, false, 400, 40002),
  UNKNOWN_MEMBER_ID: spec(25, false, 404, 40404),
  INVALID_SESSION_TIMEOUT: spec(26, false, 400, 40002),
  REBALANCE_IN_PROGRESS: spec(27, false, 409, 40902),
  INVALID_TIMESTAMP: spec(32, false, 400, 40002),
  TOPIC_ALREADY_EXISTS: spec(36, false, 400, 40002),
  INVALID_PARTITIONS: spec(37, false, 400, 40002),
  INVALID_REPLICATION_FACTOR: spec(38, false, 400, 40002),
  INVALID_CONFIG: spec(40, false, 400, 40002),
  INVALID_REQUEST: spec(42, false, 400, 40002),
  OUT_OF_ORDER_SEQUENCE_NUMBER: spec(45, false, 409, 40903),
  DUPLICATE_SEQUENCE_NUMBER: spec(46, false, 409, 40904),
  INVALID_PRODUCER_EPOCH: spec(47, false, 409, 40905),
  KAFKA_STORAGE_ERROR: spec(56, true, 503, 50306),
  UNKNOWN_PRODUCER_ID: spec(59, false, 404, 40405),
  NON_EMPTY_GROUP: spec(68, false, 409, 40906),
  GROUP_ID_NOT_FOUND: spec(69, false, 404, 40406),
  FENCED_LEADER_EPOCH: spec(74, true, 409, 40907),
  UNKNOWN_LEADER_EPOCH: spec(75, true, 409, 40908),
  OFFSET_NOT_AVAILABLE: spec(78, true, 503, 50307),
  UNSUPPORTED_COMPRESSION_TYPE: spec(76, false, 400, 40002),
  INVALID_RECORD: spec(87, false, 400, 40002),
  FENCED_MEMBER_EPOCH: spec(110, false, 409, 40909),
  UNSUPPORTED_ASSIGNOR: spec(112, false, 400, 40002),
  // Errors of the Kafka protocol listener (src/kafka).
  NOT_COORDINATOR: spec(16, true, 503, 50308),
  INCONSISTENT_GROUP_PROTOCOL: spec(23, false, 409, 40910),
  UNSUPPORTED_SASL_MECHANISM: spec(33, false, 400, 40002),
  ILLEGAL_SASL_STATE: spec(34, false, 400, 40002),
  UNSUPPORTED_VERSION: spec(35, false, 400, 40002),
  INVALID_REPLICA_ASSIGNMENT: spec(39, false, 400, 40002),
  SASL_AUTHENTICATION_FAILED: spec(58, false, 401, 40101),
  MEMBER_ID_REQUIRED: spec(79, false, 409, 40911),
  GROUP_SUBSCRIBED_TO_TOPIC: spec(86, false, 409, 40912),
  FETCH_SESSION_ID_NOT_FOUND: spec(70, true, 400, 40002),
  /** Not a Kafka protocol error: the consumer's NoOffsetForPartitionException (auto.offset.reset=none). */
  NO_OFFSET_FOR_PARTITION: spec(-1, false, 416, 41602),
  /** Not a Kafka protocol error: REST Proxy v2's "consumer instance already exists" (HTTP 409). */
  CONSUMER_ALREADY_EXISTS: spec(-1, false, 409, 40902),
  /** Not a Kafka protocol error: the REST layer's own "bad request body" (HTTP 400). */
  BAD_REQUEST: spec(42, false, 400, 40001),
  /** Not a Kafka protocol error: the REST layer's unknown route or resource (HTTP 404). */
  NOT_FOUND: spec(-1, false, 404, 40401),
  /** Not a Kafka protocol error: a body in a media type the endpoint does not take (HTTP 415). */
  UNSUPPORTED_MEDIA_TYPE: spec(-1, false, 415, 41500),
  /** Not a Kafka protocol error: the request body exceeds the configured size (HTTP 413). */
  PAYLOAD_TOO_LARGE: spec(18, false, 413, 41300),
} as const satisfies Record<string, ErrorSpec>;

export type KafkaErrorName = keyof typeof ERRORS;

export class KafkaError extends Error {
  readonly errorName: KafkaErrorName;
  readonly code: number;
  readonly retriable: boolean;
  readonly status: number;
  readonly restCode: number;

  /**
   * `status` overrides the table's HTTP status where the same Kafka error can be the caller's fault
   * or ours: CORRUPT_MESSAGE is a 500 when a stored batch fails its CRC, a 400 when a produced one does.
   */
  constructor(errorName: KafkaErrorName, message: string, options?: { cause?: unknown; status?: 400 }) {
    super(message, options);
    const s: ErrorSpec = ERRORS[errorName];
    this.name = 'KafkaError';
    this.errorName = errorName;
    this.code = s.code;
    this.retriable = s.retriable;
    this.status = options?.status ?? s.status;
    this.restCode = options?.status ? options.status * 100 + (s.restCode % 100) : s.restCode;
  }
}

export const isKafkaError = (e: unknown, name?: KafkaErrorName): e is KafkaError =>
  e instanceof KafkaError && (name === undefined || e.errorName === name);
