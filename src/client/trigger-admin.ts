/**
 * The admin calls of triggers (a topic bound to a target, delivered as a consumer group of its own;
 * docs/triggers.md) over the server's /triggers extension of v3.
 */
import { enc, type Transport } from './transport.js';

export type TriggerStartingPosition = 'LATEST' | 'TRIM_HORIZON' | 'AT_TIMESTAMP';

export interface TriggerTargetConfig {
  type: 'WEBHOOK';
  url: string;
  /** How long one invocation may take before it counts as failed (server default 30000). */
  timeoutMs?: number;
}

export interface TriggerConfig {
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

export interface TriggerInfo extends Required<Omit<TriggerConfig, 'startingPositionTimestamp' | 'target'>> {
  target: Required<TriggerTargetConfig>;
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

interface WireTrigger {
  trigger_name: string;
  topic_name: string;
  group_id: string;
  target: { type: 'WEBHOOK'; url: string; timeout_ms: number };
  batch_size: number;
  starting_position: TriggerStartingPosition;
  starting_position_timestamp?: number;
  state: 'ENABLED' | 'PAUSED';
  created_at: string;
}

interface WireTriggerDescription extends WireTrigger {
  lag: number;
  partitions: {
    partition_id: number;
    committed_offset: number | null;
    log_start_offset: number;
    high_watermark: number;
    lag: number;
    delivering_until: string | null;
  }[];
}

type Call = <T>(fn: () => Promise<T>) => Promise<T>;

const info = (w: WireTrigger): TriggerInfo => ({
  name: w.trigger_name,
  topic: w.topic_name,
  groupId: w.group_id,
  target: { type: w.target.type, url: w.target.url, timeoutMs: w.target.timeout_ms },
  batchSize: w.batch_size,
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
      type: config.target.type,
      url: config.target.url,
      ...(config.target.timeoutMs !== undefined && { timeout_ms: config.target.timeoutMs }),
    },
    ...(config.batchSize !== undefined && { batch_size: config.batchSize }),
    ...(config.startingPosition !== undefined && { starting_position: config.startingPosition }),
    ...(config.startingPositionTimestamp !== undefined && {
      starting_position_timestamp: config.startingPositionTimestamp,
    }),
  };
  const res = await call(() => transport.request<WireTrigger>('POST', '/triggers', { body }));
  return info(res.body);
}

export async function listTriggers(transport: Transport, call: Call): Promise<TriggerInfo[]> {
  const res = await call(() => transport.request<{ data: WireTrigger[] }>('GET', '/triggers'));
  return res.body.data.map(info).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

export async function describeTrigger(transport: Transport, call: Call, name: string): Promise<TriggerDescription> {
  const res = await call(() => transport.request<WireTriggerDescription>('GET', `/triggers/${enc(name)}`));
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
  const res = await call(() => transport.request<WireTrigger>('POST', `/triggers/${enc(name)}/${action}`));
  return info(res.body);
}

/** Removes a trigger; its consumer group and offsets stay (deleteGroups removes them). */
export async function deleteTrigger(transport: Transport, call: Call, name: string): Promise<void> {
  await call(() => transport.request('DELETE', `/triggers/${enc(name)}`));
}
