/**
 * A trigger: a topic bound to a target, consumed as a consumer group of its own. This module is the
 * definition (what the API stores and answers) and its rules; the delivery is partition-delivery.ts.
 * The knobs carry Lambda's event source mapping names where Lambda has them (docs/triggers.md).
 */
import { KafkaError } from '../wire/errors.js';

export const STARTING_POSITIONS = ['LATEST', 'TRIM_HORIZON', 'AT_TIMESTAMP'] as const;
export type StartingPosition = (typeof STARTING_POSITIONS)[number];

export const TRIGGER_STATES = ['ENABLED', 'PAUSED'] as const;
export type TriggerState = (typeof TRIGGER_STATES)[number];

export const TARGET_TYPES = ['WEBHOOK'] as const;

/** An HTTP endpoint that is POSTed the Kafka event (kafka-event.ts) and answers 2xx when done. */
export interface WebhookTarget {
  type: 'WEBHOOK';
  url: string;
  /** How long one invocation may take before it counts as failed. */
  timeoutMs: number;
}

export type TriggerTarget = WebhookTarget;

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
  state: TriggerState;
  createdAt: number;
}

export const BATCH_SIZE = { min: 1, max: 10_000, default: 100 } as const;
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
  let url: URL;
  try {
    url = new URL(target.url);
  } catch {
    throw new KafkaError('INVALID_REQUEST', `The webhook URL ${JSON.stringify(target.url)} is not a URL`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new KafkaError('INVALID_REQUEST', `The webhook URL must be http or https, got ${url.protocol}`);
  inRange('timeout_ms', target.timeoutMs, TIMEOUT_MS);
}

export function validateDefinition(d: TriggerDefinition): void {
  validateTriggerName(d.name);
  validateTarget(d.target);
  inRange('batch_size', d.batchSize, BATCH_SIZE);
  if (d.startingPosition === 'AT_TIMESTAMP' && d.startingTimestamp === undefined)
    throw new KafkaError('INVALID_REQUEST', 'starting_position AT_TIMESTAMP needs starting_position_timestamp');
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
