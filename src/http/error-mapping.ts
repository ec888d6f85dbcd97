import type { ZodError } from 'zod';
import { KafkaError, type KafkaErrorName } from '../wire/errors.js';

/** How the REST layer shows each Kafka error: HTTP status and Confluent REST Proxy five-digit code. */
const HTTP_ERRORS: Record<KafkaErrorName, { status: number; restCode: number }> = {
  UNKNOWN_SERVER_ERROR: { status: 500, restCode: 50001 },
  OFFSET_OUT_OF_RANGE: { status: 416, restCode: 41601 },
  CORRUPT_MESSAGE: { status: 500, restCode: 50002 },
  UNKNOWN_TOPIC_OR_PARTITION: { status: 404, restCode: 40403 },
  INVALID_FETCH_SIZE: { status: 400, restCode: 40002 },
  LEADER_NOT_AVAILABLE: { status: 503, restCode: 50301 },
  NOT_LEADER_OR_FOLLOWER: { status: 503, restCode: 50302 },
  REQUEST_TIMED_OUT: { status: 504, restCode: 50401 },
  MESSAGE_TOO_LARGE: { status: 413, restCode: 41301 },
  OFFSET_METADATA_TOO_LARGE: { status: 400, restCode: 40002 },
  COORDINATOR_NOT_AVAILABLE: { status: 503, restCode: 50303 },
  INVALID_TOPIC_EXCEPTION: { status: 400, restCode: 40002 },
  RECORD_LIST_TOO_LARGE: { status: 413, restCode: 41302 },
  NOT_ENOUGH_REPLICAS: { status: 503, restCode: 50304 },
  NOT_ENOUGH_REPLICAS_AFTER_APPEND: { status: 503, restCode: 50305 },
  INVALID_REQUIRED_ACKS: { status: 400, restCode: 40002 },
  ILLEGAL_GENERATION: { status: 409, restCode: 40901 },
  INVALID_GROUP_ID: { status: 400, restCode: 40002 },
  UNKNOWN_MEMBER_ID: { status: 404, restCode: 40404 },
  INVALID_SESSION_TIMEOUT: { status: 400, restCode: 40002 },
  REBALANCE_IN_PROGRESS: { status: 409, restCode: 40902 },
  TOPIC_AUTHORIZATION_FAILED: { status: 403, restCode: 40301 },
  GROUP_AUTHORIZATION_FAILED: { status: 403, restCode: 40301 },
  CLUSTER_AUTHORIZATION_FAILED: { status: 403, restCode: 40301 },
  INVALID_TIMESTAMP: { status: 400, restCode: 40002 },
  TOPIC_ALREADY_EXISTS: { status: 400, restCode: 40002 },
  INVALID_PARTITIONS: { status: 400, restCode: 40002 },
  INVALID_REPLICATION_FACTOR: { status: 400, restCode: 40002 },
  INVALID_REPLICA_ASSIGNMENT: { status: 400, restCode: 40002 },
  INVALID_CONFIG: { status: 400, restCode: 40002 },
  INVALID_REQUEST: { status: 400, restCode: 40002 },
  OUT_OF_ORDER_SEQUENCE_NUMBER: { status: 409, restCode: 40903 },
  DUPLICATE_SEQUENCE_NUMBER: { status: 409, restCode: 40904 },
  INVALID_PRODUCER_EPOCH: { status: 409, restCode: 40905 },
  INVALID_TXN_STATE: { status: 409, restCode: 40910 },
  INVALID_PRODUCER_ID_MAPPING: { status: 409, restCode: 40911 },
  INVALID_TRANSACTION_TIMEOUT: { status: 400, restCode: 40002 },
  CONCURRENT_TRANSACTIONS: { status: 409, restCode: 40912 },
  UNSTABLE_OFFSET_COMMIT: { status: 409, restCode: 40914 },
  TRANSACTIONAL_ID_AUTHORIZATION_FAILED: { status: 403, restCode: 40301 },
  KAFKA_STORAGE_ERROR: { status: 503, restCode: 50306 },
  SASL_AUTHENTICATION_FAILED: { status: 401, restCode: 40101 },
  UNKNOWN_PRODUCER_ID: { status: 404, restCode: 40405 },
  NON_EMPTY_GROUP: { status: 409, restCode: 40906 },
  GROUP_ID_NOT_FOUND: { status: 404, restCode: 40406 },
  FENCED_LEADER_EPOCH: { status: 409, restCode: 40907 },
  PRODUCER_FENCED: { status: 409, restCode: 40913 },
  TRANSACTIONAL_ID_NOT_FOUND: { status: 404, restCode: 40407 },
  UNKNOWN_LEADER_EPOCH: { status: 409, restCode: 40908 },
  OFFSET_NOT_AVAILABLE: { status: 503, restCode: 50307 },
  UNSUPPORTED_COMPRESSION_TYPE: { status: 400, restCode: 40002 },
  INVALID_RECORD: { status: 400, restCode: 40002 },
  THROTTLING_QUOTA_EXCEEDED: { status: 429, restCode: 42901 },
  FENCED_MEMBER_EPOCH: { status: 409, restCode: 40909 },
  UNSUPPORTED_ASSIGNOR: { status: 400, restCode: 40002 },
  NOT_COORDINATOR: { status: 503, restCode: 50308 },
  INCONSISTENT_GROUP_PROTOCOL: { status: 409, restCode: 40910 },
  UNSUPPORTED_SASL_MECHANISM: { status: 400, restCode: 40002 },
  ILLEGAL_SASL_STATE: { status: 400, restCode: 40002 },
  UNSUPPORTED_VERSION: { status: 400, restCode: 40002 },
  FETCH_SESSION_ID_NOT_FOUND: { status: 400, restCode: 40002 },
  MEMBER_ID_REQUIRED: { status: 409, restCode: 40911 },
  GROUP_MAX_SIZE_REACHED: { status: 409, restCode: 40915 },
  GROUP_SUBSCRIBED_TO_TOPIC: { status: 409, restCode: 40912 },
  OPERATION_NOT_ATTEMPTED: { status: 400, restCode: 40002 },
  UNKNOWN_TOPIC_ID: { status: 404, restCode: 40403 },
  FENCED_INSTANCE_ID: { status: 409, restCode: 40909 },
  STALE_MEMBER_EPOCH: { status: 409, restCode: 40909 },
  INVALID_RECORD_STATE: { status: 409, restCode: 40915 },
  SHARE_SESSION_NOT_FOUND: { status: 404, restCode: 40408 },
  INVALID_SHARE_SESSION_EPOCH: { status: 409, restCode: 40916 },
  SHARE_SESSION_LIMIT_REACHED: { status: 503, restCode: 50309 },
  RESOURCE_NOT_FOUND: { status: 404, restCode: 40401 },
  DUPLICATE_RESOURCE: { status: 400, restCode: 40002 },
  UNACCEPTABLE_CREDENTIAL: { status: 400, restCode: 40002 },
  NO_OFFSET_FOR_PARTITION: { status: 416, restCode: 41602 },
  CONSUMER_ALREADY_EXISTS: { status: 409, restCode: 40902 },
  BAD_REQUEST: { status: 400, restCode: 40001 },
  NOT_FOUND: { status: 404, restCode: 40401 },
  UNSUPPORTED_MEDIA_TYPE: { status: 415, restCode: 41500 },
  PAYLOAD_TOO_LARGE: { status: 413, restCode: 41300 },
};

/** The HTTP status and REST code of a KafkaError; a caller's fault is a 400 with the same last two digits. */
export function httpErrorOf(e: KafkaError): { status: number; restCode: number } {
  const h = HTTP_ERRORS[e.errorName];
  return e.fromCaller ? { status: 400, restCode: 40000 + (h.restCode % 100) } : h;
}

/** Confluent v3's error envelope plus the Kafka error name. */
export interface ErrorBody {
  error_code: number;
  message: string;
  error: string;
}

/**
 * A request that failed its zod schema, recognised by what zod's errors are (an Error named
 * ZodError, or $ZodError from zod's core, with their issues) rather than by `instanceof`: the
 * class would put zod in every bundle, the push function's too, which parses nothing with it.
 */
function isZodError(e: unknown): e is Pick<ZodError, 'issues'> {
  return (
    e instanceof Error &&
    (e.name === 'ZodError' || e.name === '$ZodError') &&
    Array.isArray((e as Partial<ZodError>).issues)
  );
}

/**
 * Maps anything thrown while serving a request to a status and an envelope. Only KafkaErrors and
 * input errors speak to the caller in their own words; anything else is our fault (500) and its
 * details stay in the log, never in the response.
 */
export function toErrorResponse(e: unknown): { status: number; body: ErrorBody } {
  if (e instanceof KafkaError) {
    const { status, restCode } = httpErrorOf(e);
    return { status, body: { error_code: restCode, message: e.message, error: e.errorName } };
  }
  if (isZodError(e)) {
    const issue = e.issues[0];
    const where = issue && issue.path.length > 0 ? ` at ${issue.path.join('.')}` : '';
    return {
      status: 400,
      body: {
        error_code: 40001,
        message: `Invalid request${where}: ${issue?.message ?? 'bad input'}`,
        error: 'BAD_REQUEST',
      },
    };
  }
  return { status: 500, body: { error_code: 50001, message: 'Internal server error', error: 'UNKNOWN_SERVER_ERROR' } };
}
