import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { createSecurity } from './authz/index.js';
import { systemClock, type Clock } from './clock.js';
import { brokerConfigs } from './config/broker-configs.js';
import type { ServerConfig } from './config/server-config.js';
import { createGroups, type GroupServices } from './groups/index.js';
import { DEFAULT_GROUP_LIMITS } from './groups/group-state.js';
import type { AppServices } from './services.js';
import { PartitionLog } from './log/partition-log.js';
import { Partitioner } from './log/partitioner.js';
import { TopicRegistry } from './topics/topics.js';
import {
  runMaintenance,
  startSchedulerLoop,
  type SchedulerDeps,
  type SchedulerLoop,
  type SchedulerReport,
} from './maintenance/scheduler.js';
import { ProducerIds } from './producer/producer-ids.js';
import { FormatCheckedMetadataStore, FormatCheckedObjectStore } from './storage/format-checked-stores.js';
import { DeferredMetadataStore, type ClosableMetadataStore } from './storage/deferred-metadata-store.js';
import { createDynamoDbClient, DynamoDbMetadataStore } from './storage/dynamodb-metadata-store.js';
import { LocalObjectStore } from './storage/local-object-store.js';
import { MemoryMetadataStore } from './storage/memory-metadata-store.js';
import { MemoryObjectStore } from './storage/memory-object-store.js';
import type { MetadataStore, ObjectStore } from './storage/ports.js';
import { countOperations } from './storage/counting-stores.js';
import { createS3Client, S3ObjectStore } from './storage/s3-object-store.js';
import { SDK_TIMEOUTS, type SdkWorkload } from './storage/sdk-timeouts.js';
import { httpConnectionPoster } from './push/http-connection-poster.js';
import type { ConnectionPoster } from './push/ports.js';
import { PushNotifier } from './push/push-notifier.js';
import { Subscriptions } from './push/subscriptions.js';
import { partitionWatchKey } from './timer/delayed-fetch.js';
import { Purgatory } from './timer/purgatory.js';
import { createTransactionCoordinator } from './transactions/index.js';
import { DEFAULT_TRANSACTION_CONFIG } from './transactions/transaction-config.js';
import { SystemTimer } from './timer/system-timer.js';
import { ShareGroups, type ShareGroupDeps } from './share/share-groups.js';
import { createTriggers, type LambdaInvoke, type PutFailureObject, type SendFailureMessage } from './triggers/index.js';
import { ReplicaManager } from './replication/replica-manager.js';
import { noLogger, noMetrics, type Logger, type Metrics } from './metrics.js';
import { FeatureLevels } from './storage/feature-level.js';
import { maintenanceOptions } from './maintenance/maintenance-options.js';
import { processHandle } from './storage/process-handle.js';

export interface Storage {
  metadata: MetadataStore;
  stores: ObjectStore[];
  close(): void;
}

/**
 * The only place that picks storage engines from configuration. `workload` picks the AWS SDK
 * clients' timeouts (src/storage/sdk-timeouts.ts): the scheduler's reads are larger.
 *
 * The embedded backend's SQLite adapter is imported only when that backend is picked: its
 * better-sqlite3 is a native module, which the Lambda bundles leave out (infra/log-functions.ts
 * keeps the adapter external), and which the memory and aws backends never need. Here the local
 * backend's metadata store opens in the background and its first calls wait for it; use
 * `openStorage` to have it open (or fail) before anything else runs.
 */
export function createStorage(backend: ServerConfig['backend'], workload: SdkWorkload = 'request'): Storage {
  return checkFormats(engines(backend, workload));
}

/**
 * Every storage this process opens refuses items and objects in formats newer than it reads
 * (src/storage/formats.ts), the same for every backend.
 */
function checkFormats(storage: Storage): Storage {
  return {
    metadata: new FormatCheckedMetadataStore(storage.metadata),
    stores: storage.stores.map((s) => new FormatCheckedObjectStore(s)),
    close: () => storage.close(),
  };
}

function engines(backend: ServerConfig['backend'], workload: SdkWorkload): Storage {
  switch (backend.kind) {
    case 'memory':
      return {
        metadata: new MemoryMetadataStore(),
        stores: Array.from({ length: backend.replicaStores }, (_, i) => new MemoryObjectStore(`memory-${i}`)),
        close: () => {},
      };
    case 'local':
      return localStorage(backend, new DeferredMetadataStore(openSqlite(backend)));
    case 'aws': {
      const timeouts = SDK_TIMEOUTS[workload];
      const s3 = createS3Client({
        timeouts: timeouts.s3,
        region: backend.region,
        endpoint: backend.s3Endpoint,
        forcePathStyle: backend.s3Endpoint !== undefined,
        expressSessionMode: backend.s3ExpressSessionMode,
      });
      const ddb = createDynamoDbClient({
        timeouts: timeouts.dynamodb,
        region: backend.region,
        endpoint: backend.dynamoDbEndpoint,
      });
      return {
        metadata: new DynamoDbMetadataStore({ table: backend.table, client: ddb }),
        stores: backend.buckets.map(
          (bucket) => new S3ObjectStore({ bucket, client: s3, readAttempts: timeouts.s3.maxAttempts }),
        ),
        close: () => {
          s3.destroy();
          ddb.destroy();
        },
      };
    }
  }
}

/** `createStorage`, with the local backend's SQLite database open (or its error thrown) on return. */
export async function openStorage(backend: ServerConfig['backend']): Promise<Storage> {
  return backend.kind === 'local'
    ? checkFormats(localStorage(backend, await openSqlite(backend)))
    : createStorage(backend);
}

type LocalBackend = Extract<ServerConfig['backend'], { kind: 'local' }>;

function localStorage(backend: LocalBackend, metadata: ClosableMetadataStore): Storage {
  const stores = Array.from(
    { length: backend.replicaStores },
    (_, i) => new LocalObjectStore(join(backend.dataDir, `store-${i}`), { fsync: backend.fsync }),
  );
  return {
    metadata,
    stores,
    close: () => {
      metadata.close();
      // Seals each store's open pack (so its deleted objects can be reclaimed) and closes its index.
      for (const store of stores) void store.close().catch(() => {});
    },
  };
}

async function openSqlite(backend: LocalBackend): Promise<ClosableMetadataStore> {
  mkdirSync(backend.dataDir, { recursive: true });
  const { SqliteMetadataStore } = await import('./storage/sqlite-metadata-store.js');
  return new SqliteMetadataStore(join(backend.dataDir, 'metadata.sqlite'), { fsync: backend.fsync });
}

/**
 * The services a function composes only where its routes use them, passed in rather than imported
 * here so that esbuild leaves out of a function's bundle the ones it does not pass (produce and
 * fetch serve no consumer group, share group or trigger: functions/produce-routes.ts, fetch-routes.ts).
 */
export interface ServiceParts {
  groups: typeof createGroups;
  transactions: typeof createTransactionCoordinator;
  share: (deps: ShareGroupDeps) => ShareGroups;
  triggers: typeof createTriggers;
}

const createShareGroups = (deps: ShareGroupDeps) => new ShareGroups(deps);

/** Every service: the local server, the listener, the admin, push, heartbeat and scheduled functions. */
export const ALL_PARTS: ServiceParts = {
  groups: createGroups,
  transactions: createTransactionCoordinator,
  share: createShareGroups,
  triggers: createTriggers,
};

/**
 * A service a function's routes never use: any use answers an error (a composition mistake, never
 * a client's request, as none of its routes reach it).
 */
function notServed<T extends object>(what: string): () => T {
  return () =>
    new Proxy({} as T, {
      get: (_, key) => {
        throw new Error(`${what} are not composed in this function (${String(key)})`);
      },
    });
}

const groupsNotServed = notServed<GroupServices>('consumer groups');
const transactionsNotServed = notServed<ReturnType<typeof createTransactionCoordinator>>('transactions');
const shareNotServed = notServed<ShareGroups>('share groups');
const triggersNotServed = notServed<ReturnType<typeof createTriggers>>('triggers');

/**
 * The produce function: no consumer or share group, no trigger (the scheduler delivers them);
 * transactional produces are verified by the coordinator.
 */
export const PRODUCE_PARTS: ServiceParts = {
  groups: groupsNotServed,
  transactions: createTransactionCoordinator,
  share: shareNotServed,
  triggers: triggersNotServed,
};
/** The fetch function: it neither produces, nor ends transactions, nor serves groups or triggers. */
export const FETCH_PARTS: ServiceParts = {
  groups: groupsNotServed,
  transactions: transactionsNotServed,
  share: shareNotServed,
  triggers: triggersNotServed,
};

/**
 * Wires the domain over a storage and returns what the HTTP app needs; `metrics` listens to what
 * the log and the routes report (the Lambda entries publish it as EMF). With `countOperations`
 * (config.countOperations, from BENCH_COUNTERS=1, which `npm run bench` sets; `options` overrides
 * it) the stores are wrapped in counters that GET /debug/counters answers with. `poster`: where push
 * notifications go (default: by the connection's endpoint, API Gateway's or a local server's).
 * Every service is built (ALL_PARTS); `composeServices` builds only the parts a function passes.
 */
export function createServices(
  config: ServerConfig,
  storage: Storage,
  clock: Clock = systemClock,
  options: ServiceOptions = {},
): AppServices {
  return composeServices(config, storage, clock, options, ALL_PARTS);
}

export interface ServiceOptions {
  countOperations?: boolean;
  /**
   * Deliver triggers in this process, woken by its commits and by `runner.deliverDue` (the local
   * server, `npm start`, and the scheduled function). Elsewhere nothing delivers.
   */
  runTriggers?: boolean;
  metrics?: Metrics;
  /** Where the services' log lines go (the host's: JSON lines on stdout for the local server); default: nowhere. */
  logger?: Logger;
  poster?: ConnectionPoster;
  /**
   * How triggers invoke Lambda functions (src/storage/lazy-lambda-invoker.ts, where deliveries
   * run). Without it a Lambda target's invocations fail (and are retried): the composition root
   * names no Lambda adapter, so no other bundle holds the Lambda client.
   */
  lambda?: LambdaInvoke;
  /** Triggers' S3 on-failure destinations (src/storage/failure-bucket-writer.ts, where deliveries run). */
  putFailureObject?: PutFailureObject;
  /** Triggers' SQS and SNS on-failure destinations (src/storage/failure-message-sender.ts, where deliveries run). */
  sendFailureMessage?: SendFailureMessage;
}

/** `createServices` with the given parts only (a Lambda function's bundle holds no other). */
export function composeServices(
  config: ServerConfig,
  storage: Storage,
  clock: Clock,
  options: ServiceOptions,
  parts: ServiceParts,
): AppServices {
  const metrics = options.metrics ?? noMetrics;
  const logger = options.logger ?? noLogger;
  // This composition's own handle on the metadata store: what a process remembers between requests
  // is kept per handle (src/partition/process-cache.ts), so compositions over one store remember apart.
  const own = { metadata: processHandle(storage.metadata), stores: storage.stores };
  const counted =
    (options.countOperations ?? config.countOperations) ? countOperations(own.metadata, own.stores) : undefined;
  const { metadata, stores } = counted ?? own;
  const maxAgeMs = config.topics?.metadataMaxAgeMs;
  const features = new FeatureLevels(metadata);
  const topics = new TopicRegistry(metadata, clock, stores.length, {
    ...(maxAgeMs !== undefined ? { maxAgeMs } : {}),
    beforeCreate: () => features.initialize(clock.now()),
  });
  // The coordinators' and the commit log's timers are in the wheel the scheduler scans: its slot width, from one place.
  const maintenance = maintenanceOptions(config.scheduler.options);
  const { timerSlotMs } = maintenance;
  const log = new PartitionLog({
    metadata,
    stores,
    clock,
    timerSlotMs,
    featureLevel: () => features.current(clock.now()),
    metrics,
    logger,
    ...(config.limits.maxBackgroundBytes !== undefined ? { maxBackgroundBytes: config.limits.maxBackgroundBytes } : {}),
    leadership: new ReplicaManager({ metadata, stores, clock, metrics, logger, timerSlotMs }),
  });
  // One timing wheel per process drives the delayed operations; appends complete waiting fetches.
  const timer = new SystemTimer();
  timer.startRealTime();
  const producerIds = new ProducerIds(metadata);
  const groups = parts.groups(
    {
      metadata,
      clock,
      topics,
      log,
      timer,
      featureLevel: () => features.current(clock.now()),
      timerSlotMs: maintenance.timerSlotMs,
    },
    { limits: config.groups },
  );
  const fetchPurgatory = new Purgatory({ timer, name: 'Fetch', onError: () => {} });
  log.onAppend((topic, partition) => void fetchPurgatory.checkAndComplete(partitionWatchKey(topic, partition)));
  // Push: commits tell the consumers armed on the partition (API Gateway WebSocket, or a local server's socket).
  const subscriptions = new Subscriptions(metadata, clock, config.push.subscriptionCacheMs);
  const notifier = new PushNotifier(
    subscriptions,
    options.poster ?? endpointPoster(config),
    (e) => logger.warn('push notification failed', { error: String(e) }),
    () => clock.now(),
  );
  log.onAppendStart((topic) => notifier.appending(topic));
  log.onAppend((topic, partition, run) => notifier.committed(topic, partition, run));
  const share = parts.share({ metadata, clock, topics, log, producerIds });
  const triggers = parts.triggers(
    { metadata, clock, topics, log, groups, share },
    {
      bootstrapServers: bootstrapServers(config),
      deliver: options.runTriggers ?? false,
      ...(options.lambda && { lambda: options.lambda }),
      ...(options.putFailureObject && { putFailureObject: options.putFailureObject }),
      ...(options.sendFailureMessage && { sendFailureMessage: options.sendFailureMessage }),
      metrics,
      onError: (msg, fields) => logger.warn(msg, fields),
    },
  );
  if (options.runTriggers) log.onAppend((topic, partition) => triggers.runner.committed(topic, partition));
  const transactions = parts.transactions({
    metadata,
    clock,
    topics,
    log,
    config: config.transactions,
    timerSlotMs: maintenance.timerSlotMs,
    checkMember: (g, m, gen, offsets) => groups.offsets.checkMember(g, m, gen, offsets),
    featureLevel: () => features.current(clock.now()),
  });
  return {
    clusterId: config.clusterId,
    clock,
    topics,
    log,
    groups,
    transactions,
    share,
    partitioner: new Partitioner(),
    producerIds,
    defaults: config.defaults,
    limits: config.limits,
    fetchPurgatory,
    metrics,
    push: { subscriptions, notifier },
    triggers,
    security: createSecurity(config.security, metadata, clock),
    features,
    brokerConfigs: brokerConfigs({
      numPartitions: config.defaults.partitions,
      defaultReplicationFactor: config.defaults.replicationFactor,
      autoCreateTopicsEnable: config.kafka.autoCreateTopics,
      socketRequestMaxBytes: config.kafka.maxFrameBytes,
      retentionCheckIntervalMs: maintenance.roundIntervalMs,
      // The coordinator's limits, from the configuration (not from `groups`, which may not be composed here).
      groupInitialRebalanceDelayMs: config.groups.initialRebalanceDelayMs,
      groupMinSessionTimeoutMs: DEFAULT_GROUP_LIMITS.minSessionTimeoutMs,
      groupMaxSessionTimeoutMs: DEFAULT_GROUP_LIMITS.maxSessionTimeoutMs,
      groupConsumerMaxSize: config.groups.consumerMaxSize ?? DEFAULT_GROUP_LIMITS.consumerMaxSize,
      groupMaxSize: config.groups.classicMaxSize ?? DEFAULT_GROUP_LIMITS.classicMaxSize,
      // From the configuration, not from `transactions`, which may not be composed here.
      transactionMaxTimeoutMs: config.transactions.maxTimeoutMs ?? DEFAULT_TRANSACTION_CONFIG.maxTimeoutMs,
      transactionalIdExpirationMs: config.transactions.idExpirationMs ?? DEFAULT_TRANSACTION_CONFIG.idExpirationMs,
    }),
    metadataHandle: own.metadata,
    ...(counted ? { operationCounts: counted.snapshot } : {}),
  };
}

/** What a trigger's event names as `bootstrapServers`: the Kafka listener as clients reach it ('' without one). */
function bootstrapServers(config: ServerConfig): string {
  const { kafka } = config;
  return kafka.port > 0 ? `${kafka.advertisedHost ?? kafka.host}:${kafka.advertisedPort ?? kafka.port}` : '';
}

/**
 * Finishes the work that earlier answers left running: acks=0 appends, acks=1 follower copies, and
 * the push notifications of what they commit. On Lambda the execution environment is frozen once
 * the handler returns, and work left running then happens minutes later or never (followers drop
 * out of the ISR): the Lambda entries call this before they return. The local server does not, so
 * its acks=0 and acks=1 answers come before that work, as Kafka's do.
 */
export async function settleBackgroundWork(services: Pick<AppServices, 'log' | 'push'>): Promise<void> {
  await services.log.idle();
  await services.push.notifier.settle();
}

/**
 * Posts to a push connection where its endpoint says: API Gateway's management API for a WebSocket
 * stage (https), a local server's `@connections` route otherwise. The SDK client is made on first use.
 */
function endpointPoster(config: ServerConfig): ConnectionPoster {
  const local = httpConnectionPoster();
  // Imported on first use: functions that never commit (fetch) never evaluate the SDK client.
  let aws: Promise<ConnectionPoster> | undefined;
  return {
    post: async (endpoint, connectionId, message) => {
      if (!/^https:\/\/[^/]+\.execute-api\./.test(endpoint)) return local.post(endpoint, connectionId, message);
      aws ??= import('./storage/api-gateway-connection-poster.js').then((m) =>
        m.apiGatewayConnectionPoster(config.backend.kind === 'aws' ? config.backend.region : undefined),
      );
      return (await aws).post(endpoint, connectionId, message);
    },
  };
}

/**
 * One maintenance pass over this process's services (their partition log, topic registry, group
 * coordinator and transaction coordinator): what the local server's loop and the scheduled
 * function both run.
 */
export function runMaintenancePass(
  storage: Storage,
  services: AppServices,
  pass: Pick<SchedulerDeps, 'deadline' | 'options' | 'logger'>,
): Promise<SchedulerReport> {
  return runMaintenance({
    storage: { metadata: services.metadataHandle, stores: storage.stores },
    clock: services.clock,
    partitionLog: services.log,
    topics: services.topics,
    timerHandlers: { ...services.transactions.timerHandlers(), ...services.groups.coordinator.timerHandlers() },
    ...pass,
  });
}

/** The local server's in-process scheduler (SCHEDULER_INTERVAL_MS): the scheduled function's pass, in a loop. */
export function startInProcessScheduler(
  config: ServerConfig,
  storage: Storage,
  services: AppServices,
  logger: Logger = noLogger,
): SchedulerLoop | undefined {
  const { intervalMs, options } = config.scheduler;
  if (intervalMs <= 0) return undefined;
  return startSchedulerLoop({
    intervalMs,
    clock: services.clock,
    logger,
    run: (deadline) => runMaintenancePass(storage, services, { deadline, options, logger }),
  });
}
