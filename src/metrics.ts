/**
 * The instrumentation seams, Metrics and Logger: the code that knows a fact reports it here (records and bytes a produce
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
  | 'IsrShrinks'
  /** Kafka listener connections refused (all causes), and by cause: the limit each met (src/limits). */
  | 'KafkaConnectionsRefused'
  | 'KafkaConnectionsRefusedMaxConnections'
  | 'KafkaConnectionsRefusedMaxConnectionsPerIp'
  | 'KafkaConnectionsRefusedCreationRate'
  /** Connections closed for a frame above sasl.server.max.receive.size before they authenticated. */
  | 'KafkaConnectionsRefusedSaslReceiveSize'
  /** SASL authentications that failed (answered after connection.failed.authentication.delay.ms). */
  | 'KafkaFailedAuthentications'
  /** Self-hosted HTTP: connections over its cap, requests answered 503 for want of body memory, slow senders cut off. */
  | 'HttpConnectionsRefused'
  | 'HttpRequestsRefused'
  | 'HttpRequestTimeouts'
  /** Triggers (src/triggers): invocations of targets, the failed ones, records a filter kept from them, records given up on that reached the failure destination. */
  | 'TriggerInvocations'
  | 'TriggerErrors'
  | 'TriggerRecordsFiltered'
  | 'TriggerRecordsToFailureDestination';

/** Levels rather than counts: what a host publishes is the latest value and the highest since the last. */
export type GaugeName =
  /** Kafka listener connections open. */
  | 'KafkaConnections'
  /** Bytes of the Kafka listener's memory pool (queued.max.request.bytes) held by requests. */
  | 'KafkaMemoryPoolUsedBytes'
  /** Bytes of the self-hosted HTTP server's request-body pool held by requests. */
  | 'HttpMemoryPoolUsedBytes'
  /** A trigger partition's records past its committed offset, after a delivery's commit (Lambda's OffsetLag). */
  | 'TriggerOffsetLag';

/**
 * A metric's own dimension beside the process's Service: a trigger's name, so that each trigger
 * has its series (as Lambda's event source mapping metrics per mapping). A value reported with it
 * counts in the Service-wide total too.
 */
export interface MetricDimensions {
  Trigger: string;
}

export interface Metrics {
  add(name: MetricName, value: number, dimensions?: MetricDimensions): void;
  gauge(name: GaugeName, value: number, dimensions?: MetricDimensions): void;
}

export const noMetrics: Metrics = { add: () => {}, gauge: () => {} };

export type LogLevel = 'debug' | 'info' | 'warn' | 'error';

/**
 * The logging seam, beside Metrics: the code that knows what happened (a leader elected, an ISR
 * shrunk, background work failed) says so as one structured line, a message and its fields. The
 * host decides where lines go: the Lambda entries write JSON lines carrying the invocation's
 * request id (functions/observability.ts), the local server JSON lines on stdout (src/compose.ts);
 * tests may listen or not.
 */
export interface Logger {
  debug(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
}

/** A Logger over one function that takes each line with its level. */
export function loggerOf(write: (level: LogLevel, msg: string, fields: Record<string, unknown>) => void): Logger {
  return {
    debug: (msg, fields = {}) => write('debug', msg, fields),
    info: (msg, fields = {}) => write('info', msg, fields),
    warn: (msg, fields = {}) => write('warn', msg, fields),
    error: (msg, fields = {}) => write('error', msg, fields),
  };
}

export const noLogger: Logger = loggerOf(() => {});

export type MetricValues = Partial<Record<MetricName | GaugeName, number>>;

/** Counters summed, gauges at their peak, over an interval. */
class Tally {
  readonly counters = new Map<MetricName, number>();
  readonly gauges = new Map<GaugeName, { latest: number; max: number }>();

  add(name: MetricName, value: number): void {
    this.counters.set(name, (this.counters.get(name) ?? 0) + value);
  }

  gauge(name: GaugeName, value: number): void {
    const g = this.gauges.get(name);
    if (g) {
      g.latest = value;
      g.max = Math.max(g.max, value);
    } else this.gauges.set(name, { latest: value, max: value });
  }

  drain(): MetricValues {
    const out: MetricValues = {};
    for (const [name, value] of this.counters) if (value !== 0) out[name] = value;
    this.counters.clear();
    for (const [name, g] of this.gauges) {
      if (g.max !== 0) out[name] = g.max;
      g.max = g.latest;
    }
    return out;
  }
}

/**
 * Metrics of a long-running process (the self-hosted server, the Fargate listener): counters are
 * summed and each gauge keeps the highest value it reached until {@link drain}, which the host
 * calls on a timer to publish (the peak is what a limit is judged by); a trigger's own series
 * likewise until {@link drainByTrigger}.
 */
export class IntervalMetrics implements Metrics {
  readonly #total = new Tally();
  readonly #byTrigger = new Map<string, Tally>();

  add(name: MetricName, value: number, dimensions?: MetricDimensions): void {
    this.#total.add(name, value);
    if (dimensions) this.#tallyOf(dimensions.Trigger).add(name, value);
  }

  gauge(name: GaugeName, value: number, dimensions?: MetricDimensions): void {
    this.#total.gauge(name, value);
    if (dimensions) this.#tallyOf(dimensions.Trigger).gauge(name, value);
  }

  #tallyOf(trigger: string): Tally {
    let tally = this.#byTrigger.get(trigger);
    if (!tally) {
      tally = new Tally();
      this.#byTrigger.set(trigger, tally);
    }
    return tally;
  }

  /** The non-zero counters since the last drain and each gauge's peak; the gauges start again from their latest value. */
  drain(): MetricValues {
    return this.#total.drain();
  }

  /**
   * Each trigger's values reported since the last drain. A trigger's gauges do not carry over: a
   * trigger that reported nothing in the interval (idle, or deleted) publishes nothing.
   */
  drainByTrigger(): Map<string, MetricValues> {
    const out = new Map<string, MetricValues>();
    for (const [trigger, tally] of this.#byTrigger) {
      const values = tally.drain();
      if (Object.keys(values).length > 0) out.set(trigger, values);
    }
    this.#byTrigger.clear();
    return out;
  }
}
