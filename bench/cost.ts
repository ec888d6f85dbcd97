import type { OperationCounts } from '../src/storage/counting-stores.js';

/**
 * The AWS deployment's request-priced parts, us-east-1 list prices (on-demand, no free tier):
 * what one GB produced or consumed costs in requests, from the counts the bench measured. Storage
 * (S3 $0.023/GB-month, DynamoDB $0.25/GB-month) and data transfer are not per-request and are left out.
 * Sources, read on 2026-12-03, are in docs/cost-model.md ("Prices used"); "not confirmed" marks a
 * price the search could not find on a published page that day (the figure is the 2025 list price).
 */
export const PRICES = {
  /** S3 Standard PUT, COPY, POST, LIST per request ($0.005 per 1,000; not confirmed). */
  s3Put: 0.005 / 1000,
  /** S3 Standard GET, SELECT, HEAD per request ($0.0004 per 1,000; third-party only). DELETE is free. */
  s3Get: 0.0004 / 1000,
  /** DynamoDB on-demand write request unit ($0.625 per million, since the November 2024 cut). */
  ddbWrite: 0.625 / 1e6,
  /** DynamoDB on-demand read request unit ($0.125 per million; a strongly consistent read of 4 KB is one unit). */
  ddbRead: 0.125 / 1e6,
  /** Lambda invocation ($0.20 per million). */
  lambdaRequest: 0.2 / 1e6,
  /** Lambda arm64 compute per GB-second (not confirmed: the pricing page renders it client-side). */
  lambdaGbSecondArm: 0.0000133334,
  /** API Gateway HTTP API request ($1.00 per million, first 300 million a month), metered per 512 KB (not confirmed). */
  apiRequest: 1.0 / 1e6,
} as const;

/**
 * Prices of what the per-request table leaves out (docs/cost-model.md models them per GiB):
 * an S3 Express One Zone replica store, CloudWatch, and data transfer out to the internet.
 */
export const OTHER_PRICES = {
  /** S3 Express One Zone, after the April 2025 cut (S3 FAQ): PUT and GET per request. */
  s3ExpressPut: 0.00113 / 1000,
  s3ExpressGet: 0.00003 / 1000,
  /** S3 Express One Zone per GB (2^30 bytes) uploaded and retrieved, on every byte of every request. */
  s3ExpressUploadPerGb: 0.0032,
  s3ExpressRetrievalPerGb: 0.0006,
  s3ExpressStoragePerGbMonth: 0.11,
  /** CloudWatch custom metric per month, prorated by the hours with data (not confirmed). */
  cloudWatchMetricMonth: 0.3,
  /** CloudWatch Logs ingestion per GB (third-party only). */
  cloudWatchLogsIngestPerGb: 0.5,
  /** Data transfer out to the internet per GB, first 10 TB a month (third-party only). */
  dataTransferOutPerGb: 0.09,
} as const;

export const GIB = 2 ** 30;
const API_METER_BYTES = 512 * 1024;

/** Operation counts and request costs normalised to one GiB of record values. */
export interface CostPerGib {
  /** Object store operations per GiB. */
  s3Puts: number;
  s3Gets: number;
  s3Lists: number;
  s3Heads: number;
  /** Metadata operations per GiB. */
  metaGets: number;
  metaQueries: number;
  metaPuts: number;
  metaDeletes: number;
  conditionFailed: number;
  ddbReadUnits: number;
  ddbWriteUnits: number;
  /** One Lambda invocation per HTTP request. */
  lambdaInvocations: number;
  /** HTTP API requests as metered: ceil(bytes / 512 KB) each. */
  apiRequests: number;
  /** Lambda GB-seconds if each invocation ran for the CPU time it took here at 1,769 MB (one vCPU): a lower bound. */
  lambdaGbSecondsLowerBound: number;
  dollars: {
    s3: number;
    dynamodb: number;
    lambdaRequests: number;
    lambdaComputeLowerBound: number;
    apiGateway: number;
    total: number;
  };
}

export function diffCounts(after: OperationCounts, before: OperationCounts): OperationCounts {
  const sub = <T extends object>(a: T, b: T): T =>
    Object.fromEntries(
      Object.entries(a).map(([k, v]) => [k, (v as number) - ((b as Record<string, number>)[k] ?? 0)]),
    ) as T;
  return {
    objects: sub(after.objects, before.objects),
    perStore: after.perStore.map((s, i) => sub(s, before.perStore[i]!)),
    metadata: sub(after.metadata, before.metadata),
  };
}

/** Two processes' counts together. */
export function addCounts(a: OperationCounts, b: OperationCounts): OperationCounts {
  const add = <T extends object>(x: T, y: T): T =>
    Object.fromEntries(
      Object.entries(x).map(([k, v]) => [k, (v as number) + ((y as Record<string, number>)[k] ?? 0)]),
    ) as T;
  return {
    objects: add(a.objects, b.objects),
    perStore: a.perStore.map((s, i) => add(s, b.perStore[i]!)),
    metadata: add(a.metadata, b.metadata),
  };
}

/**
 * @param valueBytes record value bytes produced or consumed while the counts were taken
 * @param requests HTTP requests in the same time, each `requestBytes` long on the metered side
 * @param serverCpuSeconds server CPU time in the same time
 */
export function costPerGib(
  counts: OperationCounts,
  valueBytes: number,
  requests: number,
  meteredBytesPerRequest: number,
  serverCpuSeconds: number,
): CostPerGib {
  const per = GIB / Math.max(1, valueBytes);
  const o = counts.objects;
  const m = counts.metadata;
  const apiRequests = requests * Math.max(1, Math.ceil(meteredBytesPerRequest / API_METER_BYTES)) * per;
  const lambdaGbSeconds = serverCpuSeconds * (1769 / 1024) * per;
  const s3 = ((o.put + o.list) * PRICES.s3Put + (o.get + o.head) * PRICES.s3Get) * per;
  const dynamodb = (m.writeUnits * PRICES.ddbWrite + m.readUnits * PRICES.ddbRead) * per;
  const lambdaRequests = requests * per * PRICES.lambdaRequest;
  const lambdaCompute = lambdaGbSeconds * PRICES.lambdaGbSecondArm;
  const apiGateway = apiRequests * PRICES.apiRequest;
  return {
    s3Puts: o.put * per,
    s3Gets: o.get * per,
    s3Lists: o.list * per,
    s3Heads: o.head * per,
    metaGets: m.get * per,
    metaQueries: m.query * per,
    metaPuts: m.put * per,
    metaDeletes: m.delete * per,
    conditionFailed: m.conditionFailed * per,
    ddbReadUnits: m.readUnits * per,
    ddbWriteUnits: m.writeUnits * per,
    lambdaInvocations: requests * per,
    apiRequests,
    lambdaGbSecondsLowerBound: lambdaGbSeconds,
    dollars: {
      s3,
      dynamodb,
      lambdaRequests,
      lambdaComputeLowerBound: lambdaCompute,
      apiGateway,
      total: s3 + dynamodb + lambdaRequests + lambdaCompute + apiGateway,
    },
  };
}

/** The idle-consumer side's prices (us-east-1 list, no free tier; sources in docs/cost-model.md, none confirmed on 2026-12-03 but MSK's from a third party). */
export const IDLE_PRICES = {
  /** API Gateway WebSocket message, either way, metered per 32 KB ($1.00 per million, first billion). */
  webSocketMessage: 1.0 / 1e6,
  /** API Gateway WebSocket connection minute ($0.25 per million). */
  webSocketConnectionMinute: 0.25 / 1e6,
  /** Kinesis Data Streams: provisioned shard-hour, on-demand stream-hour, enhanced fan-out consumer-shard-hour. */
  kinesisShardHour: 0.015,
  kinesisOnDemandStreamHour: 0.04,
  kinesisEfoConsumerShardHour: 0.015,
  /** MSK Serverless cluster-hour and partition-hour (third-party figures). */
  mskServerlessClusterHour: 0.75,
  mskServerlessPartitionHour: 0.0015,
} as const;

export const SECONDS_PER_MONTH = 30 * 24 * 3600;

/** What one idle consumer member makes happen per month, as counted over an idle window and scaled. */
export interface IdleMonth {
  /** Lambda invocations per function, with the GB-seconds they are billed for. */
  invocations: Record<string, { count: number; gbSeconds: number }>;
  httpApiRequests: number;
  webSocketMessages: number;
  webSocketConnectionMinutes: number;
  readUnits: number;
  writeUnits: number;
  /** CloudWatch Logs ingested: the functions' lines and Lambda's own per invocation. */
  logBytes?: number;
}

export interface IdleCostRow {
  item: string;
  perMonth: string;
  dollars: number;
}

/** Dollars per month of an idle member, item by item (the "idle with consumers" table). */
export function idleMemberCost(m: IdleMonth): { rows: IdleCostRow[]; total: number } {
  const fmt = (n: number) => (n >= 100 ? Math.round(n).toLocaleString('en-US') : n.toFixed(2));
  const rows: IdleCostRow[] = [];
  for (const [fn, { count, gbSeconds }] of Object.entries(m.invocations)) {
    rows.push({ item: `Lambda ${fn}: invocations`, perMonth: fmt(count), dollars: count * PRICES.lambdaRequest });
    rows.push({
      item: `Lambda ${fn}: duration (GB-s)`,
      perMonth: fmt(gbSeconds),
      dollars: gbSeconds * PRICES.lambdaGbSecondArm,
    });
  }
  rows.push({
    item: 'HTTP API requests',
    perMonth: fmt(m.httpApiRequests),
    dollars: m.httpApiRequests * PRICES.apiRequest,
  });
  rows.push({
    item: 'WebSocket messages',
    perMonth: fmt(m.webSocketMessages),
    dollars: m.webSocketMessages * IDLE_PRICES.webSocketMessage,
  });
  rows.push({
    item: 'WebSocket connection minutes',
    perMonth: fmt(m.webSocketConnectionMinutes),
    dollars: m.webSocketConnectionMinutes * IDLE_PRICES.webSocketConnectionMinute,
  });
  rows.push({ item: 'DynamoDB read units', perMonth: fmt(m.readUnits), dollars: m.readUnits * PRICES.ddbRead });
  rows.push({ item: 'DynamoDB write units', perMonth: fmt(m.writeUnits), dollars: m.writeUnits * PRICES.ddbWrite });
  if (m.logBytes !== undefined)
    rows.push({
      item: 'CloudWatch Logs ingestion (MB)',
      perMonth: fmt(m.logBytes / 1e6),
      dollars: (m.logBytes / 1e9) * OTHER_PRICES.cloudWatchLogsIngestPerGb,
    });
  return { rows, total: rows.reduce((a, r) => a + r.dollars, 0) };
}

/** The same idle month elsewhere: one stream or cluster with `partitions` shards/partitions and one consumer. */
export function idleAlternatives(partitions: number): IdleCostRow[] {
  const hours = SECONDS_PER_MONTH / 3600;
  return [
    {
      item: `Kinesis provisioned, ${partitions} shards`,
      perMonth: `${partitions * hours} shard-hours`,
      dollars: partitions * hours * IDLE_PRICES.kinesisShardHour,
    },
    {
      item: `  + enhanced fan-out consumer`,
      perMonth: `${partitions * hours} consumer-shard-hours`,
      dollars: partitions * hours * IDLE_PRICES.kinesisEfoConsumerShardHour,
    },
    {
      item: 'Kinesis on-demand stream',
      perMonth: `${hours} stream-hours`,
      dollars: hours * IDLE_PRICES.kinesisOnDemandStreamHour,
    },
    {
      item: `MSK Serverless, ${partitions} partitions`,
      perMonth: `${hours} cluster-hours + ${partitions * hours} partition-hours`,
      dollars: hours * (IDLE_PRICES.mskServerlessClusterHour + partitions * IDLE_PRICES.mskServerlessPartitionHour),
    },
  ];
}
