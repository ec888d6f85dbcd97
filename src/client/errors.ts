/**
 * The client's typed errors (after kafkajs): one base class carrying Kafka's error name, its code and
 * whether the operation may be retried, and a few subclasses for where the failure happened. Names
 * and codes come from the shared table (src/wire/errors.ts), so a name the server sends in its
 * `error` field means the same thing here.
 */
import { ERRORS } from '../wire/errors.js';

/** Kafka error names the server never sends but the client reports (codes from Kafka's protocol). */
const CLIENT_ERRORS: Record<string, { code: number; retriable: boolean }> = {
  NETWORK_EXCEPTION: { code: 13, retriable: true },
  REQUEST_TIMED_OUT: { code: 7, retriable: true },
  CLUSTER_AUTHORIZATION_FAILED: { code: 31, retriable: false },
  SASL_AUTHENTICATION_FAILED: { code: 58, retriable: false },
  THROTTLING_QUOTA_EXCEEDED: { code: 89, retriable: true },
  PRODUCER_FENCED: { code: 90, retriable: false },
  INVALID_CONFIG: { code: 40, retriable: false },
  ILLEGAL_STATE: { code: -1, retriable: false },
  NO_OFFSET_FOR_PARTITION: { code: -1, retriable: false },
  BUFFER_EXHAUSTED: { code: -1, retriable: false },
};

export interface ErrorInfo {
  code: number;
  retriable: boolean;
}

/** Code and retriability of a Kafka error name; unknown names are treated as not retriable. */
export function errorInfo(type: string): ErrorInfo {
  const known = (ERRORS as Record<string, { code: number; retriable: boolean }>)[type] ?? CLIENT_ERRORS[type];
  return known ? { code: known.code, retriable: known.retriable } : { code: -1, retriable: false };
}

export interface KafkaClientErrorOptions {
  retriable?: boolean;
  /** Kafka's throttle_time_ms: how long the server asked the client to wait (a quota's 429). */
  throttleTimeMs?: number;
  status?: number;
  topic?: string;
  partition?: number;
  cause?: unknown;
}

/** Every error the client throws. `type` is Kafka's error name (e.g. `UNKNOWN_TOPIC_OR_PARTITION`). */
export class KafkaClientError extends Error {
  readonly type: string;
  readonly code: number;
  readonly retriable: boolean;
  /** The HTTP status when the server answered. */
  readonly status: number | undefined;
  readonly topic: string | undefined;
  readonly partition: number | undefined;
  readonly throttleTimeMs: number | undefined;

  constructor(type: string, message: string, options: KafkaClientErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    const info = errorInfo(type);
    this.name = 'KafkaClientError';
    this.type = type;
    this.code = info.code;
    this.retriable = options.retriable ?? info.retriable;
    this.status = options.status;
    this.topic = options.topic;
    this.partition = options.partition;
    this.throttleTimeMs = options.throttleTimeMs;
  }
}

/** The server answered with an error envelope (`{error_code, message, error}`). */
export class KafkaProtocolError extends KafkaClientError {
  /** Confluent REST v3's five-digit code. */
  readonly errorCode: number | undefined;
  constructor(type: string, message: string, options: KafkaClientErrorOptions & { errorCode?: number } = {}) {
    super(type, message, options);
    this.name = 'KafkaProtocolError';
    this.errorCode = options.errorCode;
  }
}

/** The request never got an answer (connection refused, reset, DNS). Always retriable. */
export class KafkaConnectionError extends KafkaClientError {
  constructor(message: string, options: KafkaClientErrorOptions = {}) {
    super('NETWORK_EXCEPTION', message, { ...options, retriable: true });
    this.name = 'KafkaConnectionError';
  }
}

/** No answer within request.timeout.ms (or a wait such as max.block.ms ran out). */
export class KafkaTimeoutError extends KafkaClientError {
  constructor(message: string, options: KafkaClientErrorOptions = {}) {
    super('REQUEST_TIMED_OUT', message, options);
    this.name = 'KafkaTimeoutError';
  }
}

/** A bad client configuration or a call made in the wrong state; never retriable. */
export class KafkaConfigError extends KafkaClientError {
  constructor(message: string) {
    super('INVALID_CONFIG', message, { retriable: false });
    this.name = 'KafkaConfigError';
  }
}

export const isRetriable = (e: unknown): boolean => e instanceof KafkaClientError && e.retriable;

/** Any failure as a typed error: a KafkaClientError as it is, anything else as UNKNOWN_SERVER_ERROR. */
export const asClientError = (e: unknown): KafkaClientError =>
  e instanceof KafkaClientError ? e : new KafkaClientError('UNKNOWN_SERVER_ERROR', String(e), { cause: e });

/** The Kafka error name an HTTP status stands for when the body names none (e.g. an API Gateway 403). */
function typeForStatus(status: number): string {
  if (status === 401) return 'SASL_AUTHENTICATION_FAILED';
  if (status === 403) return 'CLUSTER_AUTHORIZATION_FAILED';
  if (status === 404) return 'NOT_FOUND';
  if (status === 408) return 'REQUEST_TIMED_OUT';
  if (status === 413) return 'PAYLOAD_TOO_LARGE';
  if (status === 429) return 'THROTTLING_QUOTA_EXCEEDED';
  if (status === 502 || status === 503) return 'NETWORK_EXCEPTION';
  if (status === 504) return 'REQUEST_TIMED_OUT';
  if (status >= 500) return 'UNKNOWN_SERVER_ERROR';
  return 'INVALID_REQUEST';
}

/** Builds the error for one error envelope (a whole response's, or one batch entry's). */
export function errorFromBody(
  status: number,
  body: unknown,
  context: { topic?: string; partition?: number; throttleTimeMs?: number } = {},
): KafkaProtocolError {
  const b = (typeof body === 'object' && body !== null ? body : {}) as {
    error?: unknown;
    message?: unknown;
    error_code?: unknown;
    Message?: unknown;
  };
  const type = typeof b.error === 'string' && b.error !== '' ? b.error : typeForStatus(status);
  const message =
    typeof b.message === 'string' ? b.message : typeof b.Message === 'string' ? b.Message : `HTTP ${status}`;
  // A name we know keeps its own retriability; otherwise the status decides (a gateway's 502/503/504/429).
  const known = type in ERRORS || type in CLIENT_ERRORS;
  return new KafkaProtocolError(type, message, {
    status,
    errorCode: typeof b.error_code === 'number' ? b.error_code : undefined,
    retriable: known ? undefined : [408, 429, 502, 503, 504].includes(status),
    ...context,
  });
}
