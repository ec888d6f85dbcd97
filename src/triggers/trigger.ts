/**
 * A trigger: a topic bound to a target, consumed as a consumer group of its own. This module is the
 * definition (what the API stores and answers) and its rules; the delivery is partition-delivery.ts.
 * The knobs carry Lambda's event source mapping names where Lambda has them (docs/triggers.md).
 */
import { validateTopicName } from '../topics/topics.js';
import { KafkaError } from '../wire/errors.js';

export const STARTING_POSITIONS = ['LATEST', 'TRIM_HORIZON', 'AT_TIMESTAMP'] as const;
export type StartingPosition = (typeof STARTING_POSITIONS)[number];

export const TRIGGER_STATES = ['ENABLED', 'PAUSED'] as const;
export type TriggerState = (typeof TRIGGER_STATES)[number];

/** An HTTP endpoint that is POSTed the Kafka event (kafka-event.ts) and answers 2xx when done. */
export interface WebhookTarget {
  type: 'WEBHOOK';
  url: string;
  /** How long one invocation may take before it counts as failed. */
  timeoutMs: number;
}

/**
 * A Lambda function invoked synchronously (RequestResponse) with the Kafka event. Named by its ARN,
 * as an event source mapping's FunctionArn, so the grant that lets deliveries invoke it can name it.
 */
export interface LambdaTarget {
  type: 'LAMBDA';
  functionArn: string;
  timeoutMs: number;
}

export type TriggerTarget = WebhookTarget | LambdaTarget;

/** A function's ARN, unqualified or with a version or alias (Lambda's own pattern, less partial ARNs and names). */
const FUNCTION_ARN =
  /^arn:aws[a-zA-Z-]*:lambda:[a-z]{2}(-gov)?-[a-z]+-\d:\d{12}:function:[a-zA-Z0-9_-]{1,64}(:(\$LATEST|[a-zA-Z0-9_-]+))?$/;

export interface TriggerDefinition {
  name: string;
  topic: string;
  /** The consumer group whose committed offsets are the trigger's positions. */
  groupId: string;
  target: TriggerTarget;
  /** Records per invocation at most (Lambda's BatchSize: 1-10,000, default 100). */
  batchSize: number;
  /** Where partitions without a committed offset start (Lambda's StartingPosition). */
  startingPosition: StartingPosition;
  /** AT_TIMESTAMP's epoch ms (Lambda's StartingPositionTimestamp). */
  startingTimestamp?: number;
  /**
   * The delivery knobs past batch size and starting position. Optional in the stored definition
   * (definitions stored before them read as the defaults): read them through `deliveryKnobs`.
   */
  maximumBatchingWindowMs?: number;
  maximumRetryAttempts?: number;
  maximumRecordAgeSeconds?: number;
  bisectBatchOnFunctionError?: boolean;
  functionResponseTypes?: FunctionResponseType[];
  /** Where records given up on go: `kafka://{topic}` (a topic of this log), or an S3, SQS or SNS ARN. */
  onFailureDestination?: string;
  filterCriteria?: FilterCriteria;
  ordering?: Ordering;
  keyLanes?: number;
  state: TriggerState;
  createdAt: number;
}

export const FUNCTION_RESPONSE_TYPES = ['ReportBatchItemFailures'] as const;
export type FunctionResponseType = (typeof FUNCTION_RESPONSE_TYPES)[number];
/**
 * PARTITION: one invocation in flight per partition (Lambda's). KEY: one per key lane of a
 * partition. UNORDERED: read through a share group, key_lanes invocations per partition at once
 * with no order (share-delivery.ts).
 */
export const ORDERINGS = ['PARTITION', 'KEY', 'UNORDERED'] as const;
export type Ordering = (typeof ORDERINGS)[number];
/** Lambda's FilterCriteria: a record is delivered when any pattern matches it. */
export interface FilterCriteria {
  filters: { pattern: string }[];
}

/** Every knob with its default filled in: what a delivery reads. */
export interface DeliveryKnobs {
  batchSize: number;
  maximumBatchingWindowMs: number;
  /** -1: until the record expires or is older than the maximum age (Lambda's default). */
  maximumRetryAttempts: number;
  /** -1: no maximum age. */
  maximumRecordAgeSeconds: number;
  bisectBatchOnFunctionError: boolean;
  reportBatchItemFailures: boolean;
  onFailureDestination?: FailureDestination;
  filterCriteria?: FilterCriteria;
  ordering: Ordering;
  keyLanes: number;
}

export const BATCH_SIZE = { min: 1, max: 10_000, default: 100 } as const;
/** Lambda's MaximumBatchingWindowInSeconds (0-300 s; 500 ms by default for Kafka), in ms here. */
export const BATCHING_WINDOW_MS = { min: 0, max: 300_000, default: 500 } as const;
/** Lambda's MaximumRetryAttempts: -1 (infinite, the default) to 10,000. */
export const RETRY_ATTEMPTS = { min: -1, max: 10_000, default: -1 } as const;
/** Lambda's MaximumRecordAgeInSeconds: -1 (infinite, the default), or 60 to 604,800. */
export const RECORD_AGE_SECONDS = { min: 60, max: 604_800, default: -1 } as const;
/** Lambda's FilterCriteria quota: 5 patterns per mapping, 4,096 characters each. */
export const FILTERS = { max: 5, patternChars: 4096 } as const;
/** Key lanes per partition in KEY ordering: invocations in flight per partition at most. */
export const KEY_LANES = { min: 1, max: 100, default: 10 } as const;
export const KAFKA_DESTINATION = 'kafka://';
export const TIMEOUT_MS = { min: 100, max: 900_000, default: 30_000 } as const;
/** The group a trigger consumes as when none is given. */
export const defaultGroupId = (name: string) => `trigger.${name}`;

const NAME = /^[a-zA-Z0-9._-]{1,128}$/;

/** A trigger's name: what its routes and keys carry. */
export function validateTriggerName(name: string): void {
  if (!NAME.test(name))
    throw new KafkaError('INVALID_REQUEST', `Invalid trigger name ${JSON.stringify(name)}: 1-128 of [a-zA-Z0-9._-]`);
}

export function validateTarget(target: TriggerTarget): void {
  inRange('timeout_ms', target.timeoutMs, TIMEOUT_MS);
  if (target.type === 'LAMBDA') {
    if (!FUNCTION_ARN.test(target.functionArn))
      throw new KafkaError(
        'INVALID_REQUEST',
        `function_arn must be a Lambda function's ARN (arn:aws:lambda:{region}:{account}:function:{name}[:{qualifier}]), got ${JSON.stringify(target.functionArn)}`,
      );
    return;
  }
  let url: URL;
  try {
    url = new URL(target.url);
  } catch {
    throw new KafkaError('INVALID_REQUEST', `The webhook URL ${JSON.stringify(target.url)} is not a URL`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new KafkaError('INVALID_REQUEST', `The webhook URL must be http or https, got ${url.protocol}`);
}

export function validateDefinition(d: TriggerDefinition): void {
  validateTriggerName(d.name);
  validateTarget(d.target);
  inRange('batch_size', d.batchSize, BATCH_SIZE);
  if (d.startingPosition === 'AT_TIMESTAMP' && d.startingTimestamp === undefined)
    throw new KafkaError('INVALID_REQUEST', 'starting_position AT_TIMESTAMP needs starting_position_timestamp');
  if (d.maximumBatchingWindowMs !== undefined)
    inRange('maximum_batching_window_ms', d.maximumBatchingWindowMs, BATCHING_WINDOW_MS);
  if (d.maximumRetryAttempts !== undefined) inRange('maximum_retry_attempts', d.maximumRetryAttempts, RETRY_ATTEMPTS);
  if (d.maximumRecordAgeSeconds !== undefined && d.maximumRecordAgeSeconds !== -1)
    inRange('maximum_record_age_seconds (or -1)', d.maximumRecordAgeSeconds, RECORD_AGE_SECONDS);
  // As Lambda refuses a Kafka destination that is the source topic: a failure there would loop.
  const destination = d.onFailureDestination === undefined ? undefined : failureDestination(d.onFailureDestination);
  if (destination?.kind === 'kafka' && destination.topic === d.topic)
    throw new KafkaError('INVALID_REQUEST', 'on_failure_destination must be another topic than the trigger reads');
  if (d.filterCriteria !== undefined) validateFilterCriteria(d.filterCriteria);
  if (d.keyLanes !== undefined) inRange('key_lanes', d.keyLanes, KEY_LANES);
}

/**
 * Where records given up on go: a topic of this log, or (on AWS) an S3 bucket, an SQS queue or an
 * SNS topic, as Lambda's destination ARN names them.
 */
export type FailureDestination =
  | { kind: 'kafka'; topic: string }
  | { kind: 's3'; bucket: string }
  | { kind: 'sqs' | 'sns'; arn: string };

const REGION = '[a-z]{2}(-gov)?-[a-z]+-\\d';
/** An S3 bucket's ARN (`arn:aws:s3:::{bucket}`), as Lambda's OnFailure.Destination takes it. */
const S3_BUCKET_ARN = /^arn:aws[a-zA-Z-]*:s3:::([a-z0-9][a-z0-9.-]{1,61}[a-z0-9])$/;
/** A queue's ARN (`arn:aws:sqs:{region}:{account}:{name}`; SQS's name rule: 1-80 of [a-zA-Z0-9_-], `.fifo` at the end for FIFO). */
const SQS_QUEUE_ARN = new RegExp(`^arn:aws[a-zA-Z-]*:sqs:${REGION}:\\d{12}:[a-zA-Z0-9_-]{1,80}(\\.fifo)?$`);
/** A topic's ARN (`arn:aws:sns:{region}:{account}:{name}`; SNS's name rule: 1-256 of [a-zA-Z0-9_-], `.fifo` for FIFO). */
const SNS_TOPIC_ARN = new RegExp(`^arn:aws[a-zA-Z-]*:sns:${REGION}:\\d{12}:[a-zA-Z0-9_-]{1,256}(\\.fifo)?$`);

/** The on-failure destination: `kafka://{topic}`, or an S3 bucket's, an SQS queue's or an SNS topic's ARN. */
export function failureDestination(destination: string): FailureDestination {
  if (destination.startsWith(KAFKA_DESTINATION)) {
    const topic = destination.slice(KAFKA_DESTINATION.length);
    validateTopicName(topic);
    return { kind: 'kafka', topic };
  }
  const bucket = S3_BUCKET_ARN.exec(destination)?.[1];
  if (bucket !== undefined) return { kind: 's3', bucket };
  for (const [kind, arn] of [
    ['sqs', SQS_QUEUE_ARN],
    ['sns', SNS_TOPIC_ARN],
  ] as const) {
    if (!arn.test(destination)) continue;
    // As Lambda: a FIFO queue or topic takes no destination record (it would need a group and a deduplication id).
    if (destination.endsWith('.fifo'))
      throw new KafkaError(
        'INVALID_REQUEST',
        `on_failure_destination cannot be a FIFO ${kind === 'sqs' ? 'queue' : 'topic'}`,
      );
    return { kind, arn: destination };
  }
  throw new KafkaError(
    'INVALID_REQUEST',
    `on_failure_destination must be ${KAFKA_DESTINATION}{topic}, or the ARN of an S3 bucket (arn:aws:s3:::{bucket}), an SQS queue (arn:aws:sqs:{region}:{account}:{queue}) or an SNS topic (arn:aws:sns:{region}:{account}:{topic}), got ${JSON.stringify(destination)}`,
  );
}

function validateFilterCriteria(f: FilterCriteria): void {
  if (f.filters.length > FILTERS.max)
    throw new KafkaError('INVALID_REQUEST', `filter_criteria takes at most ${FILTERS.max} filters`);
  for (const { pattern } of f.filters) {
    if (pattern.length > FILTERS.patternChars)
      throw new KafkaError('INVALID_REQUEST', `A filter pattern is at most ${FILTERS.patternChars} characters`);
    let parsed: unknown;
    try {
      parsed = JSON.parse(pattern);
    } catch {
      throw new KafkaError('INVALID_REQUEST', `The filter pattern ${JSON.stringify(pattern)} is not JSON`);
    }
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
      throw new KafkaError('INVALID_REQUEST', 'A filter pattern is a JSON object');
  }
}

/** The knobs a delivery runs with: the stored ones, the defaults for the rest. */
export function deliveryKnobs(d: TriggerDefinition): DeliveryKnobs {
  return {
    batchSize: d.batchSize,
    maximumBatchingWindowMs: d.maximumBatchingWindowMs ?? BATCHING_WINDOW_MS.default,
    maximumRetryAttempts: d.maximumRetryAttempts ?? RETRY_ATTEMPTS.default,
    maximumRecordAgeSeconds: d.maximumRecordAgeSeconds ?? RECORD_AGE_SECONDS.default,
    bisectBatchOnFunctionError: d.bisectBatchOnFunctionError ?? false,
    reportBatchItemFailures: (d.functionResponseTypes ?? []).includes('ReportBatchItemFailures'),
    ...(d.onFailureDestination !== undefined && { onFailureDestination: failureDestination(d.onFailureDestination) }),
    ...(d.filterCriteria !== undefined && { filterCriteria: d.filterCriteria }),
    ordering: d.ordering ?? 'PARTITION',
    keyLanes: d.keyLanes ?? KEY_LANES.default,
  };
}

function inRange(name: string, value: number, range: { min: number; max: number }): void {
  if (!Number.isInteger(value) || value < range.min || value > range.max)
    throw new KafkaError('INVALID_REQUEST', `${name} must be an integer in [${range.min}, ${range.max}], got ${value}`);
}

/**
 * How long a delivery lease lasts: one invocation's timeout and the reads and writes around it, so
 * that a holder that renewed before invoking still holds the lease when the invocation ends.
 */
export const leaseMs = (d: Pick<TriggerDefinition, 'target'>) => d.target.timeoutMs + 5_000;
