/**
 * A trigger as the HTTP API shows it (`GET /triggers`, `GET /triggers/{trigger}` with its lag per
 * partition): the JSON the client and the web console read, in one place. The server's schema
 * (src/http/trigger-routes.ts) is what it answers.
 */
export type TriggerTargetJson =
  | { type: 'WEBHOOK'; url: string; timeout_ms: number }
  | { type: 'LAMBDA'; function_arn: string; timeout_ms: number };

export type TriggerStartingPosition = 'LATEST' | 'TRIM_HORIZON' | 'AT_TIMESTAMP';

export interface TriggerJson {
  trigger_name: string;
  topic_name: string;
  group_id: string;
  target: TriggerTargetJson;
  batch_size: number;
  maximum_batching_window_ms: number;
  maximum_retry_attempts: number;
  maximum_record_age_seconds: number;
  bisect_batch_on_function_error: boolean;
  function_response_types: 'ReportBatchItemFailures'[];
  on_failure_destination?: string;
  filter_criteria?: { filters: { pattern: string }[] };
  starting_position: TriggerStartingPosition;
  starting_position_timestamp?: number;
  /** PARTITION, KEY (one invocation per key lane) or UNORDERED (through a share group). */
  ordering: 'PARTITION' | 'KEY' | 'UNORDERED';
  /** KEY and UNORDERED: invocations in flight per partition at most. */
  key_lanes?: number;
  state: 'ENABLED' | 'PAUSED';
  created_at: string;
}

export interface TriggerDescriptionJson extends TriggerJson {
  lag: number;
  partitions: {
    partition_id: number;
    committed_offset: number | null;
    log_start_offset: number;
    high_watermark: number;
    lag: number;
    /** While a delivery holds the partition's lease: until when. */
    delivering_until: string | null;
  }[];
}
