/**
 * The admin calls of triggers (a topic bound to a target, delivered as a consumer group of its own;
 * docs/triggers.md) over the server's /triggers extension of v3.
 */
import type { TriggerDescriptionJson, TriggerJson, TriggerStartingPosition } from '../wire/trigger-json.js';
import { enc, type Transport } from './transport.js';

export type { TriggerStartingPosition };

/** An HTTP endpoint POSTed the event, or a Lambda function (by ARN) invoked with it. */
export type TriggerTargetConfig =
  | {
      type: 'WEBHOOK';
      url: string;
      /** How long one invocation may take before it counts as failed (server default 30000). */
      timeoutMs?: number;
    }
  | { type: 'LAMBDA'; functionArn: string; timeoutMs?: number };

/** The delivery knobs, Lambda's event source mapping's under the client's names (docs/triggers.md). */
export interface TriggerKnobs {
  /** MaximumBatchingWindowInSeconds, in ms (0-300000, server default 500). */
  maximumBatchingWindowMs?: number;
  /** MaximumRetryAttempts (-1 infinite, the default; 10 with an on-failure destination). */
  maximumRetryAttempts?: number;
  /** MaximumRecordAgeInSeconds (-1, the default, or 60-604800). */
  maximumRecordAgeSeconds?: number;
  bisectBatchOnFunctionError?: boolean;
  /** ['ReportBatchItemFailures'] for partial batch responses. */
  functionResponseTypes?: 'ReportBatchItemFailures'[];
  /** `kafka://{topic}`: where records given up on go. */
  onFailureDestination?: string;
  /** Lambda's FilterCriteria: patterns as JSON strings. */
  filterCriteria?: { filters: { pattern: string }[] };
}

export interface TriggerConfig extends TriggerKnobs {
  name: string;
  topic: string;
  /** The consumer group it consumes as (default trigger.{name}). */
  groupId?: string;
  target: TriggerTargetConfig;
  /** Records per invocation at most, Lambda's BatchSize (1-10,000, default 100). */
  batchSize?: number;
  /** Where partitions without a committed offset start (default LATEST). */
  startingPosition?: TriggerStartingPosition;
  /** AT_TIMESTAMP's epoch ms. */
  startingPositionTimestamp?: number;
}

export interface TriggerInfo
  extends Required<
    Omit<TriggerConfig, 'startingPositionTimestamp' | 'target' | 'onFailureDestination' | 'filterCriteria'>
  > {
  target: TriggerTargetConfig & { timeoutMs: number };
  onFailureDestination?: string;
  filterCriteria?: { filters: { pattern: string }[] };
  startingPositionTimestamp?: number;
  state: 'ENABLED' | 'PAUSED';
  createdAt: string;
}

export interface TriggerPartitionDescription {
  partition: number;
  /** The group's committed offset: the next record to deliver (null: none yet). */
  committedOffset: number | null;
  logStartOffset: number;
  highWatermark: number;
  lag: number;
  /** While a delivery holds the partition's lease: until when (ISO 8601). */
  deliveringUntil: string | null;
}

export interface TriggerDescription extends TriggerInfo {
  lag: number;
  partitions: TriggerPartitionDescription[];
}

type Call = <T>(fn: () => Promise<T>) => Promise<T>;

const info = (w: TriggerJson): TriggerInfo => ({
  name: w.trigger_name,
  topic: w.topic_name,
  groupId: w.group_id,
  target:
    w.target.type === 'LAMBDA'
      ? { type: 'LAMBDA', functionArn: w.target.function_arn, timeoutMs: w.target.timeout_ms }
      : { type: 'WEBHOOK', url: w.target.url, timeoutMs: w.target.timeout_ms },
  batchSize: w.batch_size,
  maximumBatchingWindowMs: w.maximum_batching_window_ms,
  maximumRetryAttempts: w.maximum_retry_attempts,
  maximumRecordAgeSeconds: w.maximum_record_age_seconds,
  bisectBatchOnFunctionError: w.bisect_batch_on_function_error,
  functionResponseTypes: w.function_response_types,
  ...(w.on_failure_destination !== undefined && { onFailureDestination: w.on_failure_destination }),
  ...(w.filter_criteria !== undefined && { filterCriteria: w.filter_criteria }),
  startingPosition: w.starting_position,
  ...(w.starting_position_timestamp !== undefined && { startingPositionTimestamp: w.starting_position_timestamp }),
  state: w.state,
  createdAt: w.created_at,
});

export async function createTrigger(transport: Transport, call: Call, config: TriggerConfig): Promise<TriggerInfo> {
  const body = {
    trigger_name: config.name,
    topic_name: config.topic,
    ...(config.groupId !== undefined && { group_id: config.groupId }),
    target: {
      ...(config.target.type === 'LAMBDA'
        ? { type: 'LAMBDA', function_arn: config.target.functionArn }
        : { type: 'WEBHOOK', url: config.target.url }),
      ...(config.target.timeoutMs !== undefined && { timeout_ms: config.target.timeoutMs }),
    },
    ...knobsBody(config),
    ...(config.batchSize !== undefined && { batch_size: config.batchSize }),
    ...(config.startingPosition !== undefined && { starting_position: config.startingPosition }),
    ...(config.startingPositionTimestamp !== undefined && {
      starting_position_timestamp: config.startingPositionTimestamp,
    }),
  };
  const res = await call(() => transport.request<TriggerJson>('POST', '/triggers', { body }));
  return info(res.body);
}

function knobsBody(k: TriggerKnobs) {
  const body = {
    maximum_batching_window_ms: k.maximumBatchingWindowMs,
    maximum_retry_attempts: k.maximumRetryAttempts,
    maximum_record_age_seconds: k.maximumRecordAgeSeconds,
    bisect_batch_on_function_error: k.bisectBatchOnFunctionError,
    function_response_types: k.functionResponseTypes,
    on_failure_destination: k.onFailureDestination,
    filter_criteria: k.filterCriteria,
  };
  return Object.fromEntries(Object.entries(body).filter(([, v]) => v !== undefined));
}

export async function listTriggers(transport: Transport, call: Call): Promise<TriggerInfo[]> {
  const res = await call(() => transport.request<{ data: TriggerJson[] }>('GET', '/triggers'));
  return res.body.data.map(info).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

export async function describeTrigger(transport: Transport, call: Call, name: string): Promise<TriggerDescription> {
  const res = await call(() => transport.request<TriggerDescriptionJson>('GET', `/triggers/${enc(name)}`));
  const w = res.body;
  return {
    ...info(w),
    lag: w.lag,
    partitions: w.partitions
      .map((p) => ({
        partition: p.partition_id,
        committedOffset: p.committed_offset,
        logStartOffset: p.log_start_offset,
        highWatermark: p.high_watermark,
        lag: p.lag,
        deliveringUntil: p.delivering_until,
      }))
      .sort((a, b) => a.partition - b.partition),
  };
}

/** Pauses (no new delivery starts; the positions stay) or resumes a trigger. */
export async function setTriggerState(
  transport: Transport,
  call: Call,
  name: string,
  action: 'pause' | 'resume',
): Promise<TriggerInfo> {
  const res = await call(() => transport.request<TriggerJson>('POST', `/triggers/${enc(name)}/${action}`));
  return info(res.body);
}

/** Removes a trigger; its consumer group and offsets stay (deleteGroups removes them). */
export async function deleteTrigger(transport: Transport, call: Call, name: string): Promise<void> {
  await call(() => transport.request('DELETE', `/triggers/${enc(name)}`));
}
