/**
 * The instrumentation seam: the code that knows a fact reports it here (records and bytes a produce
 * appended, records and bytes a fetch answered, commit retries, ISR shrinks), and whoever hosts the
 * process listens: the Lambda entries publish CloudWatch EMF (functions/observability.ts), the
 * local server and tests listen to nothing. Storage operation counts are the storage decorators'
 * (src/storage/counting-stores.ts, functions/instrumented-storage.ts).
 */
export type MetricName =
  /** Record-batch bytes a produce request stored (once, however many replicas took the object). */
  | 'ProduceBytes'
  | 'ProduceRecords'
  /** Record-batch bytes a fetch answered with (what it read from its objects). */
  | 'FetchBytes'
  | 'FetchRecords'
  /** Commits that lost the conditional write of the partition state to another writer and retried. */
  | 'CommitRetries'
  /** Replicas removed from an ISR. */
  | 'IsrShrinks';

export interface Metrics {
  add(name: MetricName, value: number): void;
}

export const noMetrics: Metrics = { add: () => {} };
