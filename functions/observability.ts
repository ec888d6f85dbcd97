/**
 * Logs and metrics for the Lambda entry points, kept out of src/ so the product needs no logging
 * framework: one JSON log line per event with the request id, and CloudWatch metrics as Embedded
 * Metric Format (EMF) lines, which CloudWatch Logs turns into metrics without any API call.
 *
 * An invocation runs inside a `Scope` (AsyncLocalStorage), so anything below it (the storage
 * decorators in instrumented-storage.ts, the app's error logger) adds to the right request's
 * counters and logs with its request id without being handed either.
 *
 * Only non-zero metrics are written: an idle deployment publishes no custom metrics at all, and
 * CloudWatch bills custom metrics only for the hours in which they receive data.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { randomUUID } from 'node:crypto';
import type { MiddlewareHandler } from 'hono';

/** The metrics this project publishes, with their CloudWatch units. infra/monitoring.ts graphs them. */
export const METRIC_UNITS = {
  /** Record-batch bytes a produce request stored (once, however many replicas took the object). */
  ProduceBytes: 'Bytes',
  ProduceRecords: 'Count',
  /** Record-batch bytes a fetch read from the object store (Kafka's fetch size accounting). */
  FetchBytes: 'Bytes',
  FetchRecords: 'Count',
  /** Conditional writes of a partition state item that lost a race: each one is a commit retry. */
  CommitRetries: 'Count',
  /** Every conditional write that failed, whatever the item. */
  ConditionFailures: 'Count',
  /** Replicas removed from an ISR (reported through `addMetric` by whoever observes it). */
  IsrShrinks: 'Count',
  /** Object store requests, by S3 price tier: PUT/COPY/POST/LIST, and GET/HEAD. */
  S3WriteRequests: 'Count',
  S3ReadRequests: 'Count',
  DynamoDbReadRequests: 'Count',
  DynamoDbWriteRequests: 'Count',
  /** Work items the scheduler completed in one run (timers fired, segments deleted, ...). */
  SchedulerWork: 'Count',
  SchedulerFailures: 'Count',
} as const;

export type MetricName = keyof typeof METRIC_UNITS;

/** Counters that are not published as metrics but feed the ones that are. */
export type CounterName = MetricName | 'ObjectBytesWritten' | 'ObjectBytesRead';

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

/** One invocation: its request ids, counters and the object keys already counted. */
export class Scope {
  readonly counters = new Map<CounterName, number>();
  private readonly seenKeys = new Set<string>();

  constructor(
    readonly requestId: string,
    readonly fields: Record<string, unknown> = {},
  ) {}

  add(name: CounterName, value = 1): void {
    this.counters.set(name, (this.counters.get(name) ?? 0) + value);
  }

  get(name: CounterName): number {
    return this.counters.get(name) ?? 0;
  }

  /** True the first time a key is seen in this scope (an object written to several replicas). */
  firstSight(key: string): boolean {
    if (this.seenKeys.has(key)) return false;
    this.seenKeys.add(key);
    return true;
  }
}

const scopes = new AsyncLocalStorage<Scope>();

export function currentScope(): Scope | undefined {
  return scopes.getStore();
}

/** Adds to a metric of the current invocation; a no-op outside one. */
export function addMetric(name: CounterName, value = 1): void {
  scopes.getStore()?.add(name, value);
}

export type LogLevel = 'debug' | 'info' | 'warn' | 'error';

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

/**
 * The EMF document for a scope's non-zero metrics, or undefined when there are none. One
 * dimension set ([Service]); the request id and function ride along as searchable properties.
 */
export function emfLine(t: Telemetry, scope: Scope): string | undefined {
  const values: Record<string, number> = {};
  const metrics: { Name: string; Unit: string }[] = [];
  for (const [name, unit] of Object.entries(METRIC_UNITS)) {
    const value = scope.get(name as MetricName);
    if (value === 0) continue;
    values[name] = value;
    metrics.push({ Name: name, Unit: unit });
  }
  if (metrics.length === 0) return undefined;
  return JSON.stringify({
    _aws: {
      Timestamp: t.now(),
      CloudWatchMetrics: [{ Namespace: t.namespace, Dimensions: [['Service']], Metrics: metrics }],
    },
    Service: t.service,
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
  }
}

/** The parts of the Lambda event and context the middleware reads (hono/aws-lambda puts them in c.env). */
interface LambdaBindings {
  lambdaContext?: { awsRequestId?: string };
  requestContext?: { requestId?: string };
}

/** Which metrics a request feeds, from its method and path (mirrors the API's produce and fetch routes). */
export type RequestKind = 'produce' | 'fetch' | 'other';

const PRODUCE_PATH = /^\/v3\/clusters\/[^/]+\/topics\/[^/]+\/records(:batch)?$/;
const FETCH_PATH = /^\/v3\/clusters\/[^/]+\/topics\/[^/]+\/partitions\/[^/]+\/records$/;

export function requestKind(method: string, path: string): RequestKind {
  if (method === 'POST' && PRODUCE_PATH.test(path)) return 'produce';
  if (method === 'GET' && FETCH_PATH.test(path)) return 'fetch';
  return 'other';
}

/**
 * Hono middleware: a scope per request (request id = the Lambda request id, else an incoming
 * `x-request-id`, else a new one), echoed as `x-request-id`; one access log line; produce and fetch
 * metrics from the response; then the EMF line. Mount it before the app (see http-entry.ts).
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
      const kind = requestKind(c.req.method, c.req.path);
      if (kind !== 'other' && c.res.status < 300) await countRecords(kind, c.res.clone(), scope);
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

/**
 * Records and bytes of a successful produce or fetch. The record counts come from the response
 * body (src/ has no metrics hook yet; see docs/deploy.md), the bytes from the storage decorators.
 */
async function countRecords(kind: Exclude<RequestKind, 'other'>, res: Response, scope: Scope): Promise<void> {
  let body: unknown;
  try {
    body = await res.json();
  } catch {
    return;
  }
  if (kind === 'produce') {
    const batch = (body as { successes?: unknown[] }).successes;
    scope.add('ProduceRecords', Array.isArray(batch) ? batch.length : 1);
    scope.add('ProduceBytes', scope.get('ObjectBytesWritten'));
  } else {
    const records = (body as { records?: unknown[] }).records;
    scope.add('FetchRecords', Array.isArray(records) ? records.length : 0);
    scope.add('FetchBytes', scope.get('ObjectBytesRead'));
  }
}
