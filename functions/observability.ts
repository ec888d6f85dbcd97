/**
 * Logs and metrics for the Lambda entry points, kept out of src/ so the product needs no logging
 * framework: one JSON log line per event with the request id, and CloudWatch metrics as Embedded
 * Metric Format (EMF) lines, which CloudWatch Logs turns into metrics without any API call.
 *
 * An invocation runs inside a `Scope` (AsyncLocalStorage), so anything below it (the storage
 * decorators in instrumented-storage.ts, the metrics the log and the routes report through
 * `scopeMetrics`, the app's error logger) adds to the right request's counters and logs with its
 * request id without being handed either.
 *
 * Only non-zero metrics are written: an idle deployment publishes no custom metrics at all, and
 * CloudWatch bills custom metrics only for the hours in which they receive data.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { randomUUID } from 'node:crypto';
import type { MiddlewareHandler } from 'hono';
import { loggerOf, type Logger, type LogLevel, type Metrics } from '../src/metrics.js';

/** The metrics this project publishes, with their CloudWatch units. infra/monitoring.ts graphs them. */
export const METRIC_UNITS = {
  /** Record-batch bytes a produce request stored (once, however many replicas took the object). */
  ProduceBytes: 'Bytes',
  ProduceRecords: 'Count',
  /** Record-batch bytes a fetch answered with (Kafka's fetch size accounting). */
  FetchBytes: 'Bytes',
  FetchRecords: 'Count',
  /** Conditional writes of a partition state item that lost a race: each one is a commit retry. */
  CommitRetries: 'Count',
  /** Every conditional write that failed, whatever the item. */
  ConditionFailures: 'Count',
  /** Replicas removed from an ISR (reported by the log and the replica manager). */
  IsrShrinks: 'Count',
  /** Object store requests, by S3 price tier: PUT/COPY/POST/LIST, and GET/HEAD. */
  S3WriteRequests: 'Count',
  S3ReadRequests: 'Count',
  DynamoDbReadRequests: 'Count',
  DynamoDbWriteRequests: 'Count',
  /** Work items the scheduler completed in one run (timers fired, segments deleted, ...). */
  SchedulerWork: 'Count',
  SchedulerFailures: 'Count',
  /** Scheduler runs that stopped at their deadline with maintenance units left (the round goes on next run). */
  SchedulerIncompleteRuns: 'Count',
  /** Triggers delivered by the scheduler (src/triggers, docs/triggers.md "Metrics"). */
  TriggerInvocations: 'Count',
  TriggerErrors: 'Count',
  TriggerRecordsFiltered: 'Count',
  TriggerRecordsToFailureDestination: 'Count',
  /** A gauge: the highest lag a delivery left behind its commit during the invocation. */
  TriggerOffsetLag: 'Count',
} as const;

/** The gauges among them: published as the invocation's peak, not a sum. */
const GAUGES: ReadonlySet<MetricName> = new Set(['TriggerOffsetLag']);

export type MetricName = keyof typeof METRIC_UNITS;

/** What is known about the function a process runs as; one per cold start. */
export interface Telemetry {
  /** The EMF namespace, e.g. `S3KafkaLog`. */
  namespace: string;
  /** The one metric dimension (`Service`): the stack name, so stages do not mix. */
  service: string;
  /** `produce`, `fetch`, `admin` or `scheduler`: a log field, not a dimension. */
  functionName: string;
  /** Writes one line; defaults to stdout, unprefixed, as the Lambda runtime needs for EMF. */
  write(line: string): void;
  now(): number;
}

export function telemetryFromEnv(env: Record<string, string | undefined>, functionName: string): Telemetry {
  return {
    namespace: env.METRICS_NAMESPACE || 'S3KafkaLog',
    service: env.SERVICE_NAME || 's3-kafka-log',
    functionName,
    // Not console.log: in Lambda that prefixes a timestamp and level, and EMF must be the whole line.
    write: (line) => void process.stdout.write(`${line}\n`),
    now: () => Date.now(),
  };
}

/** One invocation: its request ids and counters (gauges at their peak), in all and per trigger. */
export class Scope {
  readonly counters = new Map<MetricName, number>();
  /** Each trigger's own values, published under its Trigger dimension (src/metrics.ts, MetricDimensions). */
  readonly byTrigger = new Map<string, Map<MetricName, number>>();

  constructor(
    readonly requestId: string,
    readonly fields: Record<string, unknown> = {},
  ) {}

  add(name: MetricName, value = 1, trigger?: string): void {
    const tally = (values: Map<MetricName, number>) => {
      const was = values.get(name) ?? 0;
      values.set(name, GAUGES.has(name) ? Math.max(was, value) : was + value);
    };
    tally(this.counters);
    if (trigger === undefined) return;
    let own = this.byTrigger.get(trigger);
    if (!own) {
      own = new Map();
      this.byTrigger.set(trigger, own);
    }
    tally(own);
  }

  get(name: MetricName): number {
    return this.counters.get(name) ?? 0;
  }
}

const scopes = new AsyncLocalStorage<Scope>();

export function currentScope(): Scope | undefined {
  return scopes.getStore();
}

/** Adds to a metric of the current invocation (a gauge: keeps the peak); a no-op outside one. */
export function addMetric(name: MetricName, value = 1, trigger?: string): void {
  scopes.getStore()?.add(name, value, trigger);
}

/** The product's instrumentation seam (src/metrics.ts), listened to by the current invocation's scope. */
export const scopeMetrics: Metrics = {
  // The listener's and the self-hosted server's metrics (connections, pools) never arise in a function.
  add: (name, value, dimensions) => {
    if (name in METRIC_UNITS) addMetric(name as MetricName, value, dimensions?.Trigger);
  },
  gauge: (name, value, dimensions) => {
    if (name in METRIC_UNITS) addMetric(name as MetricName, value, dimensions?.Trigger);
  },
};

export type { LogLevel };

/** A structured log line, carrying the current request id when there is one. */
export function log(t: Telemetry, level: LogLevel, msg: string, fields: Record<string, unknown> = {}): void {
  const scope = scopes.getStore();
  t.write(
    JSON.stringify({
      timestamp: new Date(t.now()).toISOString(),
      level,
      msg,
      service: t.service,
      function: t.functionName,
      ...(scope && { requestId: scope.requestId, ...scope.fields }),
      ...fields,
    }),
  );
}

/** The services' Logger seam (src/metrics.ts) on Lambda: JSON lines with the current invocation's request id. */
export function telemetryLogger(t: Telemetry): Logger {
  return loggerOf((level, msg, fields) => log(t, level, msg, fields));
}

/**
 * The EMF document for a scope's non-zero metrics, or undefined when there are none. One
 * dimension set ([Service]); the request id and function ride along as searchable properties.
 */
export function emfLine(t: Telemetry, scope: Scope): string | undefined {
  return emfDocument(t, scope, scope.counters);
}

/** One EMF document per trigger the scope has values of, dimensions [Service, Trigger]. */
export function triggerEmfLines(t: Telemetry, scope: Scope): string[] {
  return [...scope.byTrigger].flatMap(([trigger, values]) => emfDocument(t, scope, values, trigger) ?? []);
}

function emfDocument(
  t: Telemetry,
  scope: Scope,
  from: ReadonlyMap<MetricName, number>,
  trigger?: string,
): string | undefined {
  const values: Record<string, number> = {};
  const metrics: { Name: string; Unit: string }[] = [];
  for (const [name, unit] of Object.entries(METRIC_UNITS)) {
    const value = from.get(name as MetricName) ?? 0;
    if (value === 0) continue;
    values[name] = value;
    metrics.push({ Name: name, Unit: unit });
  }
  if (metrics.length === 0) return undefined;
  return JSON.stringify({
    _aws: {
      Timestamp: t.now(),
      CloudWatchMetrics: [
        {
          Namespace: t.namespace,
          Dimensions: [trigger === undefined ? ['Service'] : ['Service', 'Trigger']],
          Metrics: metrics,
        },
      ],
    },
    Service: t.service,
    ...(trigger !== undefined && { Trigger: trigger }),
    function: t.functionName,
    requestId: scope.requestId,
    ...values,
  });
}

/** Runs `fn` in a new scope and writes the scope's metrics afterwards, whether `fn` threw or not. */
export async function inScope<T>(t: Telemetry, scope: Scope, fn: () => Promise<T>): Promise<T> {
  try {
    return await scopes.run(scope, fn);
  } finally {
    const line = emfLine(t, scope);
    if (line) t.write(line);
    for (const own of triggerEmfLines(t, scope)) t.write(own);
  }
}

/** The parts of the Lambda event and context the middleware reads (hono/aws-lambda puts them in c.env). */
interface LambdaBindings {
  lambdaContext?: { awsRequestId?: string };
  requestContext?: { requestId?: string };
}

/**
 * Hono middleware: a scope per request (request id = the Lambda request id, else an incoming
 * `x-request-id`, else a new one), echoed as `x-request-id`; one access log line; then the EMF line
 * with what the request reported. Mount it before the app (see http-entry.ts).
 */
export function observe(t: Telemetry): MiddlewareHandler {
  return async (c, next) => {
    const bindings = (c.env ?? {}) as LambdaBindings;
    const requestId = bindings.lambdaContext?.awsRequestId ?? c.req.header('x-request-id') ?? randomUUID();
    const apiRequestId = bindings.requestContext?.requestId;
    const scope = new Scope(requestId, apiRequestId ? { apiRequestId } : {});
    await inScope(t, scope, async () => {
      const started = t.now();
      await next();
      c.res.headers.set('x-request-id', requestId);
      log(t, c.res.status >= 500 ? 'error' : 'info', 'request', {
        method: c.req.method,
        path: c.req.path,
        status: c.res.status,
        durationMs: t.now() - started,
      });
    });
  };
}
