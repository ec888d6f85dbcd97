import { readFileSync } from 'node:fs';
import * as z from 'zod';
import {
  type EnvValues,
  integer,
  nonEmpty,
  oneOf,
  optionalInteger,
  optionalNonEmpty,
  optionalOneOf,
  optionalText,
  readEnv,
  text,
} from './env-reader.js';

/**
 * The server's own configuration, resolved once (from the environment and flags) in the entry
 * points and passed down; nothing below the composition root reads process.env.
 */
/** S3 Express One Zone's CreateSession modes: a ReadOnly session can GET, HEAD and LIST only. */
export type S3ExpressSessionMode = 'ReadWrite' | 'ReadOnly';

export interface ServerConfig {
  clusterId: string;
  backend:
    | { kind: 'memory'; replicaStores: number }
    | { kind: 'local'; dataDir: string; replicaStores: number; fsync: boolean }
    | {
        kind: 'aws';
        region: string;
        s3Endpoint?: string;
        dynamoDbEndpoint?: string;
        buckets: string[];
        table: string;
        /** The mode of the S3 Express sessions this process opens (s3-object-store.ts's createS3Client). */
        s3ExpressSessionMode?: S3ExpressSessionMode;
      };
  defaults: { partitions: number; replicationFactor: number };
  limits: {
    maxRequestBytes: number;
    maxFetchBytes: number;
    maxFetchWaitMs: number;
    maxResponseBytes?: number;
    /** Request objects held for acks=0 appends and acks=1 follower copies; past it, answers wait. */
    /** Unset: the partition log's default (src/log/partition-log.ts DEFAULT_MAX_BACKGROUND_BYTES). */
    maxBackgroundBytes?: number;
  };
  /** The local server's in-process scheduler (0: off) and the maintenance knobs (src/maintenance). */
  scheduler: {
    intervalMs: number;
    /** timerSlotMs is no environment variable: a test or an embedder may set it (src/maintenance). */
    options: { orphanGraceMs?: number; roundIntervalMs?: number; timerSlotMs?: number };
  };
  /** Count storage operations and answer GET /debug/counters with them (the benchmark's BENCH_COUNTERS=1). */
  countOperations: boolean;
  /** The Kafka protocol listener (src/kafka); port 0 turns it off. */
  kafka: {
    port: number;
    host: string;
    advertisedHost?: string;
    advertisedPort?: number;
    maxFrameBytes: number;
    autoCreateTopics: boolean;
    /** TLS on the listener (SSL, or SASL_SSL with SASL mechanisms enabled); absent: plain TCP. */
    tls?: ListenerTls;
    limits: KafkaLimits;
  };
  /** The self-hosted HTTP server's bounds (src/server.ts; on Lambda, API Gateway's apply). */
  http: HttpLimits;
  /**
   * How the self-hosted server publishes its metrics (src/metrics.ts): every `intervalMs` one
   * CloudWatch EMF line on stdout (the Fargate listener's log driver carries it to CloudWatch); 0: none.
   */
  metrics: { intervalMs: number; namespace: string; service: string };
  /** The transaction coordinator's bounds (Kafka's transaction.max.timeout.ms, transactional.id.expiration.ms). */
  transactions: { maxTimeoutMs?: number; idExpirationMs?: number };
  /** The topic cache (src/topics/topics.ts): how long a topic read is served; the same in every process. */
  topics: { metadataMaxAgeMs?: number };
  /** How long a process reuses a topic's push subscription list where the store has no change stamps (src/push/subscriptions.ts). */
  push: { subscriptionCacheMs?: number };
  /**
   * Kafka's group.initial.rebalance.delay.ms: the first join of an Empty classic group waits this long for others;
   * group.consumer.max.size and group.max.size: the most members of a KIP-848 group and of a classic group.
   */
  groups: { initialRebalanceDelayMs: number; consumerMaxSize?: number; classicMaxSize?: number };
  /**
   * Where triggers' Lambda targets are invoked (default: Lambda's endpoint of the function ARN's
   * region), and their S3, SQS and SNS failure destinations written (default: those services' own).
   */
  triggers: { lambdaEndpoint?: string; s3Endpoint?: string; sqsEndpoint?: string; snsEndpoint?: string };
  security: SecurityConfig;
}

/** The listener's TLS, with Kafka's ssl.* settings (PEM text, as ssl.keystore.type=PEM takes it). */
export interface ListenerTls {
  /** ssl.keystore.certificate.chain: the server's certificate, then its intermediates. */
  certificateChain: string;
  /** ssl.keystore.key (unencrypted PEM, or encrypted with ssl.key.password). */
  key: string;
  keyPassword?: string;
  /** ssl.truststore.certificates: the CAs a client certificate must chain to (default: Node's public roots). */
  trustedCertificates?: string;
  /** ssl.client.auth */
  clientAuth: 'none' | 'requested' | 'required';
  /** ssl.principal.mapping.rules (default DEFAULT); the listener refuses to start with a bad rule. */
  principalMappingRules: string;
}

/**
 * The Kafka listener's bounds across connections, with Kafka's names (docs/security.md says which
 * attack each stops). The defaults fit a small task: about 1 GB for the pool, the connections'
 * own buffers and the process.
 */
export interface KafkaLimits {
  /** sasl.server.max.receive.size: the largest frame before SASL authentication (default 512 KiB, as Kafka). */
  saslServerMaxReceiveSize: number;
  /** queued.max.request.bytes: the pool of request bytes read and not answered, shared by all connections. */
  queuedMaxRequestBytes: number;
  /** max.connections */
  maxConnections: number;
  /** max.connections.per.ip */
  maxConnectionsPerIp: number;
  /** max.connections.per.ip.overrides: address -> limit. */
  maxConnectionsPerIpOverrides: ReadonlyMap<string, number>;
  /** max.connection.creation.rate: new connections a second. */
  maxConnectionCreationRate: number;
  /** connection.failed.authentication.delay.ms */
  failedAuthenticationDelayMs: number;
}

/** The self-hosted HTTP server's bounds against slow and greedy clients. */
export interface HttpLimits {
  /** Request-body bytes in flight across all requests (the pool); a request waits for room, then is answered 503. */
  queuedMaxRequestBytes: number;
  /** How long a request waits for pool room before its 503 (with Retry-After). */
  poolWaitMs: number;
  /** node's server.headersTimeout: the whole header must arrive within this. */
  headersTimeoutMs: number;
  /** node's server.requestTimeout: the whole request, body included, must arrive within this. */
  requestTimeoutMs: number;
  /** node's server.maxConnections: connections beyond are dropped. */
  maxConnections: number;
}

/** Principals, ACLs and quotas (docs/security.md). */
export interface SecurityConfig {
  /** Whether ACLs are enforced (Kafka's authorizer.class.name set): off locally unless configured, on in deployed stages. */
  authorization: boolean;
  /** Kafka's super.users. */
  superUsers: string[];
  /** Kafka's allow.everyone.if.no.acl.found. */
  allowEveryoneIfNoAclFound: boolean;
  /** The JWT claim naming a principal behind a JWT authorizer (default sub). */
  principalClaim: string;
  /** Local mode: bearer token -> principal (`User:alice`). */
  tokens: Record<string, string>;
  /** The Kafka listener's SASL/PLAIN users (user -> password; principal `User:<user>`). */
  plainUsers: Record<string, string>;
  /**
   * Kafka's sasl.enabled.mechanisms on the listener: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512. Empty: no
   * SASL (PLAINTEXT or SSL). Default: PLAIN when there are PLAIN users, else none.
   */
  saslMechanisms: SaslMechanism[];
  /** How long a process keeps the ACLs and quotas it read (default 5000 ms). */
  cacheMs: number;
}

export const SASL_MECHANISMS = ['PLAIN', 'SCRAM-SHA-256', 'SCRAM-SHA-512'] as const;
export type SaslMechanism = (typeof SASL_MECHANISMS)[number];
const CLIENT_AUTH = ['none', 'requested', 'required'] as const;

/** A list as Kafka writes one (comma-separated), or a JSON list. */
const listOf = (v: string | string[]) => (Array.isArray(v) ? v : v.split(',')).map((s) => s.trim()).filter(Boolean);

/**
 * The auth config file (AUTH_CONFIG / --auth-config), JSON with Kafka's property names. Built when
 * a file is read (the self-hosted server's), not at import: no Lambda function reads one.
 */
const authFileSchema = () =>
  z
    .object({
      authorization: z.boolean().optional(),
      'super.users': z.union([z.string(), z.array(z.string())]).optional(),
      'allow.everyone.if.no.acl.found': z.boolean().optional(),
      'principal.claim': z.string().min(1).optional(),
      tokens: z
        .record(z.string().min(1), z.string().regex(/^[A-Za-z][A-Za-z0-9_-]*:.+$/, 'a principal is Type:name'))
        .optional(),
      'acl.cache.ms': z.number().int().nonnegative().optional(),
      /** As the user_<name>="<password>" entries of Kafka's PlainLoginModule JAAS config. */
      'sasl.plain.users': z.record(z.string().min(1), z.string().min(1)).optional(),
      'sasl.enabled.mechanisms': z.union([z.string(), z.array(z.string())]).optional(),
      /** PEM text, as Kafka's ssl.keystore.type=PEM takes them inline. */
      'ssl.keystore.certificate.chain': z.string().min(1).optional(),
      'ssl.keystore.key': z.string().min(1).optional(),
      'ssl.key.password': z.string().optional(),
      'ssl.truststore.certificates': z.string().min(1).optional(),
      'ssl.client.auth': z.enum(CLIENT_AUTH).optional(),
      'ssl.principal.mapping.rules': z.string().optional(),
    })
    .strict();

const superUserList = (v: string | string[] | undefined): string[] | undefined =>
  v === undefined ? undefined : (Array.isArray(v) ? v : v.split(';')).map((s) => s.trim()).filter(Boolean);

type AuthFile = z.infer<ReturnType<typeof authFileSchema>>;

function readAuthFile(path: string): AuthFile {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    throw new Error(`Cannot read the auth config ${path}: ${(e as Error).message}`);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new Error(`The auth config ${path} is not valid JSON`);
  }
  const parsed = authFileSchema().safeParse(json);
  if (!parsed.success)
    throw new Error(
      `The auth config ${path} is invalid: ${parsed.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ')}`,
    );
  return parsed.data;
}

/** The environment variables (the README's configuration table), read without a schema library (env-reader.ts says why). */
const ENV_SPEC = {
  CLUSTER_ID: nonEmpty('local'),
  STORAGE_BACKEND: oneOf(['memory', 'local', 'aws'], 'local'),
  DATA_DIR: text('.data'),
  REPLICA_STORES: integer(1, 1),
  FSYNC: oneOf(['true', 'false'], 'false'),
  AWS_REGION: text('us-east-1'),
  /** The SDK's standard endpoint variables, so LocalStack or the test emulators can stand in. */
  AWS_ENDPOINT_URL: optionalText,
  AWS_ENDPOINT_URL_S3: optionalText,
  AWS_ENDPOINT_URL_DYNAMODB: optionalText,
  AWS_ENDPOINT_URL_LAMBDA: optionalText,
  AWS_ENDPOINT_URL_SQS: optionalText,
  AWS_ENDPOINT_URL_SNS: optionalText,
  /** Comma-separated replica bucket names, in replica-id order. */
  BUCKETS: optionalText,
  /** ReadOnly for a process that only reads objects (the stack sets it where the role allows no more). */
  S3_EXPRESS_SESSION_MODE: oneOf(['ReadWrite', 'ReadOnly'], 'ReadWrite'),
  TABLE_NAME: optionalText,
  DEFAULT_PARTITIONS: integer(1, 1),
  DEFAULT_REPLICATION_FACTOR: integer(1, 1),
  MAX_REQUEST_BYTES: integer(1, 8 * 1024 * 1024),
  MAX_FETCH_BYTES: integer(1, 8 * 1024 * 1024),
  /** Bytes of request objects the process may hold for work that outlives answers (acks=0, acks=1 copies). */
  MAX_BACKGROUND_BYTES: optionalInteger(1),
  /** Upper bound of a fetch's max_wait_ms (long poll), below the fetch function's 29 s timeout. */
  MAX_FETCH_WAIT_MS: integer(0, 25_000),
  /** What the platform lets one answer be, envelope included (Lambda: 6,000,000); unset, no bound but max_bytes. */
  MAX_RESPONSE_BYTES: optionalInteger(1),
  /** How often `npm start` runs the scheduler in-process; 0 turns it off. */
  SCHEDULER_INTERVAL_MS: integer(0, 30_000),
  /** How old an unreferenced object must be before it is deleted (> twice the longest request). */
  ORPHAN_GRACE_MS: optionalInteger(0),
  /** Kafka's log.retention.check.interval.ms: how often a round of partition maintenance starts (default 5 min). */
  LOG_RETENTION_CHECK_INTERVAL_MS: optionalInteger(0),
  /** Kafka's transaction.max.timeout.ms (default 15 min): the largest transaction.timeout.ms a producer may ask for. */
  TRANSACTION_MAX_TIMEOUT_MS: optionalInteger(1),
  /** Kafka's transactional.id.expiration.ms (default 7 days). */
  TRANSACTIONAL_ID_EXPIRATION_MS: optionalInteger(1),
  /**
   * How long a process serves a topic from its cache (default 1000); a deleted topic's name stays
   * taken this long plus 2 s. Every process on the same storage must use the same value.
   */
  TOPIC_METADATA_MAX_AGE_MS: optionalInteger(0),
  /**
   * How long a process reuses a topic's push subscription list on DynamoDB (default 1000): a
   * consumer armed through another process is told of a commit at most this late (0: a query per commit).
   */
  PUSH_SUBSCRIPTION_CACHE_MS: optionalInteger(0),
  /** Kafka's group.initial.rebalance.delay.ms (default 3000; 0: the first member's join completes at once). */
  GROUP_INITIAL_REBALANCE_DELAY_MS: integer(0, 3000),
  /** Kafka's group.consumer.max.size: the most members of a KIP-848 group (default 200). */
  GROUP_CONSUMER_MAX_SIZE: optionalInteger(1),
  /** Kafka's group.max.size: the most members of a classic group (default 2147483647). */
  GROUP_MAX_SIZE: optionalInteger(1),
  /** `npm run bench` sets 1 to read request counts from GET /debug/counters. */
  BENCH_COUNTERS: oneOf(['0', '1', 'false', 'true'], '0'),
  /** The Kafka protocol listener's port (0: off) and host (by default the HTTP host). */
  KAFKA_PORT: integer(0, 9092, 65535),
  KAFKA_HOST: optionalText,
  HOST: text('127.0.0.1'),
  /** What Metadata tells clients to connect to: host or host:port (behind a load balancer, its name). */
  KAFKA_ADVERTISED_HOST: optionalText,
  /** Kafka's socket.request.max.bytes: a larger frame closes the connection. */
  KAFKA_MAX_FRAME_BYTES: integer(1, 100 * 1024 * 1024),
  /** Kafka's auto.create.topics.enable. */
  KAFKA_AUTO_CREATE_TOPICS: oneOf(['true', 'false'], 'true'),
  /** Kafka's sasl.server.max.receive.size (its default). */
  KAFKA_SASL_SERVER_MAX_RECEIVE_SIZE: integer(1, 512 * 1024),
  /** Kafka's queued.max.request.bytes (Kafka: unbounded). */
  KAFKA_QUEUED_MAX_REQUEST_BYTES: integer(1, 256 * 1024 * 1024),
  /** Kafka's max.connections (Kafka: unbounded). */
  KAFKA_MAX_CONNECTIONS: integer(1, 1000),
  /** Kafka's max.connections.per.ip (Kafka: unbounded); 0 with overrides admits only the addresses they name. */
  KAFKA_MAX_CONNECTIONS_PER_IP: integer(0, 100),
  /** Kafka's max.connections.per.ip.overrides: `address:limit,...`. */
  KAFKA_MAX_CONNECTIONS_PER_IP_OVERRIDES: text(''),
  /** Kafka's max.connection.creation.rate, a second (Kafka: unbounded). */
  KAFKA_MAX_CONNECTION_CREATION_RATE: integer(1, 100),
  /** Kafka's connection.failed.authentication.delay.ms (its default). */
  KAFKA_CONNECTION_FAILED_AUTHENTICATION_DELAY_MS: integer(0, 100),
  /** The self-hosted HTTP server's request-body pool, its wait, its timeouts and its connection cap. */
  HTTP_QUEUED_MAX_REQUEST_BYTES: integer(1, 128 * 1024 * 1024),
  HTTP_POOL_WAIT_MS: integer(0, 5000),
  HTTP_HEADERS_TIMEOUT_MS: integer(1, 10_000),
  HTTP_REQUEST_TIMEOUT_MS: integer(1, 60_000),
  HTTP_MAX_CONNECTIONS: integer(1, 1000),
  /** How often the self-hosted server writes its metrics as an EMF line (0: never), under the functions' namespace and Service. */
  METRICS_INTERVAL_MS: integer(0, 0),
  METRICS_NAMESPACE: nonEmpty('S3KafkaLog'),
  SERVICE_NAME: nonEmpty('s3-kafka-log'),
  /** A JSON auth config file: tokens, super.users, authorization (docs/security.md). */
  AUTH_CONFIG: optionalText,
  /** These override the file's. */
  AUTHORIZATION: optionalOneOf(['true', 'false']),
  SUPER_USERS: optionalText,
  ALLOW_EVERYONE_IF_NO_ACL_FOUND: optionalOneOf(['true', 'false']),
  PRINCIPAL_CLAIM: optionalNonEmpty,
  ACL_CACHE_MS: optionalInteger(0),
  /** Kafka's sasl.enabled.mechanisms (comma-separated): PLAIN, SCRAM-SHA-256, SCRAM-SHA-512. */
  KAFKA_SASL_ENABLED_MECHANISMS: optionalText,
  /** The listener's TLS: PEM text (a container's secrets arrive so), or the files holding it. */
  KAFKA_SSL_CERTIFICATE: optionalText,
  KAFKA_SSL_CERTIFICATE_FILE: optionalText,
  KAFKA_SSL_KEY: optionalText,
  KAFKA_SSL_KEY_FILE: optionalText,
  KAFKA_SSL_KEY_PASSWORD: optionalText,
  KAFKA_SSL_TRUSTSTORE_CERTIFICATES: optionalText,
  KAFKA_SSL_TRUSTSTORE_FILE: optionalText,
  /** Kafka's ssl.client.auth: none, requested or required (mutual TLS). */
  KAFKA_SSL_CLIENT_AUTH: optionalOneOf(CLIENT_AUTH),
  /** Kafka's ssl.principal.mapping.rules. */
  KAFKA_SSL_PRINCIPAL_MAPPING_RULES: optionalText,
};

/** What triggers' S3 failure destinations are written with: the endpoint, when one stands in for S3 (path-style then). */
export function failureBucketOptions(config: ServerConfig): { endpoint?: string; forcePathStyle?: boolean } {
  return config.triggers.s3Endpoint ? { endpoint: config.triggers.s3Endpoint, forcePathStyle: true } : {};
}

/** What triggers' SQS and SNS failure destinations are sent with: the endpoints, when others stand in for them. */
export function failureMessageOptions(config: ServerConfig): { sqsEndpoint?: string; snsEndpoint?: string } {
  const { sqsEndpoint, snsEndpoint } = config.triggers;
  return { ...(sqsEndpoint && { sqsEndpoint }), ...(snsEndpoint && { snsEndpoint }) };
}

/** What a triggers' Lambda invoker is built with: the endpoint, when one stands in for Lambda's. */
export function lambdaOptions(config: ServerConfig): { endpoint?: string } {
  return config.triggers.lambdaEndpoint ? { endpoint: config.triggers.lambdaEndpoint } : {};
}

/** The self-hosted server's configuration: the environment, and the auth config file AUTH_CONFIG names. */
export function serverConfigFromEnv(env: Record<string, string | undefined>): ServerConfig {
  return configFromEnv(env, readAuthFile);
}

/**
 * A Lambda function's configuration: the environment only. The stack gives no function a file to
 * read, and the auth file's schema (zod) stays out of their bundles.
 */
export function functionConfigFromEnv(env: Record<string, string | undefined>): ServerConfig {
  return configFromEnv(env, () => {
    throw new Error(
      'AUTH_CONFIG is read by the self-hosted server only: a function takes its settings from the environment',
    );
  });
}

function configFromEnv(env: Record<string, string | undefined>, readAuth: (path: string) => AuthFile): ServerConfig {
  // One line per bad variable, named as the README's configuration table names it.
  const e = readEnv(env, ENV_SPEC);
  const file: AuthFile = e.AUTH_CONFIG ? readAuth(e.AUTH_CONFIG) : {};
  let backend: ServerConfig['backend'];
  if (e.STORAGE_BACKEND === 'aws') {
    const buckets = (e.BUCKETS ?? '')
      .split(',')
      .map((b) => b.trim())
      .filter(Boolean);
    if (buckets.length === 0 || !e.TABLE_NAME) throw new Error('STORAGE_BACKEND=aws needs BUCKETS and TABLE_NAME');
    backend = {
      kind: 'aws',
      region: e.AWS_REGION,
      s3Endpoint: e.AWS_ENDPOINT_URL_S3 ?? e.AWS_ENDPOINT_URL,
      dynamoDbEndpoint: e.AWS_ENDPOINT_URL_DYNAMODB ?? e.AWS_ENDPOINT_URL,
      buckets,
      table: e.TABLE_NAME,
      s3ExpressSessionMode: e.S3_EXPRESS_SESSION_MODE,
    };
  } else if (e.STORAGE_BACKEND === 'memory') backend = { kind: 'memory', replicaStores: e.REPLICA_STORES };
  else backend = { kind: 'local', dataDir: e.DATA_DIR, replicaStores: e.REPLICA_STORES, fsync: e.FSYNC === 'true' };
  return {
    clusterId: e.CLUSTER_ID,
    backend,
    defaults: { partitions: e.DEFAULT_PARTITIONS, replicationFactor: e.DEFAULT_REPLICATION_FACTOR },
    limits: {
      maxRequestBytes: e.MAX_REQUEST_BYTES,
      maxFetchBytes: e.MAX_FETCH_BYTES,
      maxFetchWaitMs: e.MAX_FETCH_WAIT_MS,
      ...(e.MAX_BACKGROUND_BYTES !== undefined ? { maxBackgroundBytes: e.MAX_BACKGROUND_BYTES } : {}),
      ...(e.MAX_RESPONSE_BYTES !== undefined ? { maxResponseBytes: e.MAX_RESPONSE_BYTES } : {}),
    },
    scheduler: {
      intervalMs: e.SCHEDULER_INTERVAL_MS,
      options: {
        ...(e.ORPHAN_GRACE_MS !== undefined ? { orphanGraceMs: e.ORPHAN_GRACE_MS } : {}),
        ...(e.LOG_RETENTION_CHECK_INTERVAL_MS !== undefined
          ? { roundIntervalMs: e.LOG_RETENTION_CHECK_INTERVAL_MS }
          : {}),
      },
    },
    countOperations: e.BENCH_COUNTERS === '1' || e.BENCH_COUNTERS === 'true',
    kafka: {
      port: e.KAFKA_PORT,
      host: e.KAFKA_HOST ?? e.HOST,
      ...advertised(e.KAFKA_ADVERTISED_HOST),
      maxFrameBytes: e.KAFKA_MAX_FRAME_BYTES,
      autoCreateTopics: e.KAFKA_AUTO_CREATE_TOPICS === 'true',
      ...listenerTls(e, file),
      limits: {
        saslServerMaxReceiveSize: e.KAFKA_SASL_SERVER_MAX_RECEIVE_SIZE,
        queuedMaxRequestBytes: e.KAFKA_QUEUED_MAX_REQUEST_BYTES,
        maxConnections: e.KAFKA_MAX_CONNECTIONS,
        maxConnectionsPerIp: e.KAFKA_MAX_CONNECTIONS_PER_IP,
        maxConnectionsPerIpOverrides: parsePerIpOverrides(e.KAFKA_MAX_CONNECTIONS_PER_IP_OVERRIDES),
        maxConnectionCreationRate: e.KAFKA_MAX_CONNECTION_CREATION_RATE,
        failedAuthenticationDelayMs: e.KAFKA_CONNECTION_FAILED_AUTHENTICATION_DELAY_MS,
      },
    },
    http: {
      queuedMaxRequestBytes: e.HTTP_QUEUED_MAX_REQUEST_BYTES,
      poolWaitMs: e.HTTP_POOL_WAIT_MS,
      headersTimeoutMs: e.HTTP_HEADERS_TIMEOUT_MS,
      requestTimeoutMs: e.HTTP_REQUEST_TIMEOUT_MS,
      maxConnections: e.HTTP_MAX_CONNECTIONS,
    },
    metrics: { intervalMs: e.METRICS_INTERVAL_MS, namespace: e.METRICS_NAMESPACE, service: e.SERVICE_NAME },
    transactions: {
      ...(e.TRANSACTION_MAX_TIMEOUT_MS !== undefined ? { maxTimeoutMs: e.TRANSACTION_MAX_TIMEOUT_MS } : {}),
      ...(e.TRANSACTIONAL_ID_EXPIRATION_MS !== undefined ? { idExpirationMs: e.TRANSACTIONAL_ID_EXPIRATION_MS } : {}),
    },
    topics: e.TOPIC_METADATA_MAX_AGE_MS !== undefined ? { metadataMaxAgeMs: e.TOPIC_METADATA_MAX_AGE_MS } : {},
    push: e.PUSH_SUBSCRIPTION_CACHE_MS !== undefined ? { subscriptionCacheMs: e.PUSH_SUBSCRIPTION_CACHE_MS } : {},
    groups: {
      initialRebalanceDelayMs: e.GROUP_INITIAL_REBALANCE_DELAY_MS,
      ...(e.GROUP_CONSUMER_MAX_SIZE !== undefined ? { consumerMaxSize: e.GROUP_CONSUMER_MAX_SIZE } : {}),
      ...(e.GROUP_MAX_SIZE !== undefined ? { classicMaxSize: e.GROUP_MAX_SIZE } : {}),
    },
    triggers: {
      ...((e.AWS_ENDPOINT_URL_LAMBDA ?? e.AWS_ENDPOINT_URL) !== undefined && {
        lambdaEndpoint: e.AWS_ENDPOINT_URL_LAMBDA ?? e.AWS_ENDPOINT_URL,
      }),
      ...((e.AWS_ENDPOINT_URL_S3 ?? e.AWS_ENDPOINT_URL) !== undefined && {
        s3Endpoint: e.AWS_ENDPOINT_URL_S3 ?? e.AWS_ENDPOINT_URL,
      }),
      ...((e.AWS_ENDPOINT_URL_SQS ?? e.AWS_ENDPOINT_URL) !== undefined && {
        sqsEndpoint: e.AWS_ENDPOINT_URL_SQS ?? e.AWS_ENDPOINT_URL,
      }),
      ...((e.AWS_ENDPOINT_URL_SNS ?? e.AWS_ENDPOINT_URL) !== undefined && {
        snsEndpoint: e.AWS_ENDPOINT_URL_SNS ?? e.AWS_ENDPOINT_URL,
      }),
    },
    security: securityConfig(e, file),
  };
}

function securityConfig(e: EnvValues<typeof ENV_SPEC>, file: AuthFile): SecurityConfig {
  const bool = (v: 'true' | 'false' | undefined) => (v === undefined ? undefined : v === 'true');
  return {
    authorization: bool(e.AUTHORIZATION) ?? file.authorization ?? false,
    superUsers: superUserList(e.SUPER_USERS) ?? superUserList(file['super.users']) ?? [],
    allowEveryoneIfNoAclFound:
      bool(e.ALLOW_EVERYONE_IF_NO_ACL_FOUND) ?? file['allow.everyone.if.no.acl.found'] ?? false,
    principalClaim: e.PRINCIPAL_CLAIM ?? file['principal.claim'] ?? 'sub',
    tokens: file.tokens ?? {},
    plainUsers: file['sasl.plain.users'] ?? {},
    saslMechanisms: saslMechanisms(e, file),
    cacheMs: e.ACL_CACHE_MS ?? file['acl.cache.ms'] ?? 5000,
  };
}

function saslMechanisms(e: EnvValues<typeof ENV_SPEC>, file: AuthFile): SaslMechanism[] {
  const raw = e.KAFKA_SASL_ENABLED_MECHANISMS ?? file['sasl.enabled.mechanisms'];
  const plainUsers = Object.keys(file['sasl.plain.users'] ?? {}).length > 0;
  if (raw === undefined) return plainUsers ? ['PLAIN'] : [];
  const list = listOf(raw);
  for (const m of list)
    if (!(SASL_MECHANISMS as readonly string[]).includes(m))
      throw new Error(`sasl.enabled.mechanisms: ${m} is not one of ${SASL_MECHANISMS.join(', ')}`);
  if (list.includes('PLAIN') && !plainUsers)
    throw new Error('sasl.enabled.mechanisms has PLAIN, but the auth config has no sasl.plain.users');
  return [...new Set(list)] as SaslMechanism[];
}

/** PEM from the environment's text or file, else the auth config's text. */
function pem(text: string | undefined, file: string | undefined, fromAuthFile: string | undefined, what: string) {
  if (text) return text;
  if (file) {
    try {
      return readFileSync(file, 'utf8');
    } catch (err) {
      throw new Error(`Cannot read the ${what} ${file}: ${(err as Error).message}`);
    }
  }
  return fromAuthFile;
}

function listenerTls(e: EnvValues<typeof ENV_SPEC>, file: AuthFile): { tls?: ListenerTls } {
  const certificateChain = pem(
    e.KAFKA_SSL_CERTIFICATE,
    e.KAFKA_SSL_CERTIFICATE_FILE,
    file['ssl.keystore.certificate.chain'],
    'certificate',
  );
  const key = pem(e.KAFKA_SSL_KEY, e.KAFKA_SSL_KEY_FILE, file['ssl.keystore.key'], 'private key');
  const trusted = pem(
    e.KAFKA_SSL_TRUSTSTORE_CERTIFICATES,
    e.KAFKA_SSL_TRUSTSTORE_FILE,
    file['ssl.truststore.certificates'],
    'truststore',
  );
  const clientAuth = e.KAFKA_SSL_CLIENT_AUTH ?? file['ssl.client.auth'] ?? 'none';
  if (!certificateChain && !key) {
    if (clientAuth !== 'none' || trusted)
      throw new Error("ssl.client.auth and the truststore need the listener's certificate and key");
    return {};
  }
  if (!certificateChain || !key) throw new Error('TLS on the Kafka listener needs both a certificate and its key');
  const keyPassword = e.KAFKA_SSL_KEY_PASSWORD ?? file['ssl.key.password'];
  const principalMappingRules = e.KAFKA_SSL_PRINCIPAL_MAPPING_RULES ?? file['ssl.principal.mapping.rules'] ?? 'DEFAULT';
  return {
    tls: {
      certificateChain,
      key,
      ...(keyPassword ? { keyPassword } : {}),
      ...(trusted ? { trustedCertificates: trusted } : {}),
      clientAuth,
      principalMappingRules,
    },
  };
}

/**
 * max.connections.per.ip.overrides as Kafka writes it: `address:limit` pairs separated by commas
 * (`10.0.0.5:200,::1:50`; the limit follows the last colon, so IPv6 addresses need no brackets).
 * Kafka also takes host names; here only addresses, as connections arrive by address.
 */
export function parsePerIpOverrides(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const entry of text.split(',').map((s) => s.trim())) {
    if (!entry) continue;
    const at = entry.lastIndexOf(':');
    const limit = Number(entry.slice(at + 1));
    const ip = entry.slice(0, at).replace(/^\[|\]$/g, '');
    if (at <= 0 || entry.slice(at + 1) === '' || !Number.isSafeInteger(limit) || limit < 0)
      throw new Error(`max.connections.per.ip.overrides: "${entry}" is not address:limit`);
    out.set(ip, limit);
  }
  return out;
}

/** `host` or `host:port` (a bracketed IPv6 address may carry a port too). */
function advertised(raw: string | undefined): { advertisedHost?: string; advertisedPort?: number } {
  if (!raw) return {};
  const m = /^(\[[^\]]+\]|[^:]+)(?::(\d+))?$/.exec(raw.trim());
  if (!m) throw new Error(`KAFKA_ADVERTISED_HOST must be host or host:port (got ${raw})`);
  return { advertisedHost: m[1]!.replace(/^\[|\]$/g, ''), ...(m[2] ? { advertisedPort: Number(m[2]) } : {}) };
}
