/**
 * The Lambda functions: produce, fetch and admin (the HTTP app, split by route), push (the
 * WebSocket API's subscribe route), heartbeat (group heartbeats, on a function URL), the scheduler, and in API-key mode the authorizer (in JWT mode,
 * the push API's JWT authorizer: WebSocket APIs have no built-in one). Each is a NodejsFunction bundled by the local esbuild (no
 * Docker), arm64, on the newest Node runtime, with its own role and log group.
 *
 * Bundles are self-contained ESM (the AWS SDK is bundled too, so the SDK version is the one the
 * tests ran, not whatever the runtime ships). The embedded backend's SQLite adapters (metadata,
 * which src/compose.ts imports only when that backend is picked, and the local object store's pack
 * index, imported when such a store is first used) stay out: their better-sqlite3 is a
 * native module, useless in Lambda. Picking the local backend there fails with module not found.
 */
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Duration, type RemovalPolicy } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import { NodejsFunction, OutputFormat, type BundlingOptions } from 'aws-cdk-lib/aws-lambda-nodejs';
import * as logs from 'aws-cdk-lib/aws-logs';
import { ZSTD_FALLBACK_PACKAGES } from '../src/wire/compression/zstd.js';
import { Construct } from 'constructs';

export const REPO_ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
export const RUNTIME = lambda.Runtime.NODEJS_24_X;

/**
 * On Lambda the SDK's default credential chain is the environment's and the container endpoint's
 * providers only (src/storage/lambda-credentials.ts says why): esbuild resolves the chain's
 * package to that module in every bundle.
 */
export const CREDENTIAL_PROVIDER_ALIAS = {
  '@aws-sdk/credential-provider-node': join(REPO_ROOT, 'src', 'storage', 'lambda-credentials.ts'),
} as const;

/** The esbuild settings of every bundle (the bundle tests import what these produce). */
export const BUNDLING: BundlingOptions = {
  forceDockerBundling: false,
  format: OutputFormat.ESM,
  target: 'node24',
  mainFields: ['module', 'main'],
  minify: true,
  sourceMap: true,
  sourcesContent: false,
  bundleAwsSDK: true,
  // Everything is bundled but the SQLite adapters (src/compose.ts and src/storage/local-object-store.ts
  // import them dynamically, by these paths) and the zstd fallback for Node without zlib's zstd,
  // which the Node 24 runtime never loads (src/wire/compression/zstd.ts). snappy and lz4 are pure
  // JavaScript, bundled like the rest: the same bytes run on x86_64 and arm64.
  externalModules: ['*/storage/sqlite-metadata-store.js', '*/sqlite-pack-index.js', ...ZSTD_FALLBACK_PACKAGES],
  esbuildArgs: Object.fromEntries(
    Object.entries(CREDENTIAL_PROVIDER_ALIAS).map(([pkg, file]) => [`--alias:${pkg}`, file]),
  ),
  // CommonJS dependencies inside an ESM bundle still call require() for Node built-ins.
  banner:
    "import { createRequire as __bundleCreateRequire } from 'node:module'; const require = __bundleCreateRequire(import.meta.url);",
};

export type LogFunctionName = 'produce' | 'fetch' | 'admin' | 'push' | 'heartbeat' | 'scheduler';
export type BundleName = LogFunctionName | 'apiKeyAuthorizer' | 'jwtAuthorizer';

/** Each function's entry point in functions/: its own, so its bundle holds only what it serves. */
export const FUNCTION_ENTRIES: Readonly<Record<BundleName, string>> = {
  produce: 'produce.ts',
  fetch: 'fetch.ts',
  admin: 'admin.ts',
  push: 'push.ts',
  heartbeat: 'heartbeat.ts',
  scheduler: 'scheduler.ts',
  apiKeyAuthorizer: 'api-key-authorizer.ts',
  jwtAuthorizer: 'jwt-authorizer.ts',
};

/**
 * The functions that load their source map at start (`--enable-source-maps`): their error stacks
 * name the TypeScript files and lines. Loading the map costs every cold start of a function
 * 10-40 ms (parsing it) and makes every stack that is read slower; the per-request functions
 * (produce, fetch, push, heartbeat, the authorizers) skip it, and their stacks point into the
 * minified bundle, which the map beside it in the asset resolves (docs/deploy.md).
 */
export function sourceMapsEnabled(name: BundleName): boolean {
  return name === 'admin' || name === 'scheduler';
}

const sourceMapOptions = (name: BundleName): Record<string, string> =>
  sourceMapsEnabled(name) ? { NODE_OPTIONS: '--enable-source-maps' } : {};

interface FunctionSpec {
  description: string;
  memorySize: number;
  timeout: Duration;
}

/**
 * Sizing. Produce and fetch encode, CRC and move up to MAX_REQUEST_BYTES / MAX_FETCH_BYTES (4 MiB /
 * 1 MiB on Lambda, log-stack.ts) per request and wait on S3 and DynamoDB: 1 GiB buys the CPU for that. API Gateway gives an
 * integration 30 s at most, so the HTTP functions stop at 29 s. The scheduler works in batches and
 * stops taking new work 15 s before its own timeout. Push only arms subscriptions (a few small
 * DynamoDB calls, no records): the smallest size that starts quickly. Nothing waits in a function
 * while a consumer with a push connection is idle (its fetches ask for no server wait).
 */
export const FUNCTION_SPECS: Readonly<Record<LogFunctionName, FunctionSpec>> = {
  produce: {
    description: 'Produce: POST .../topics/{topic}/records[:batch]',
    memorySize: 1024,
    timeout: Duration.seconds(29),
  },
  fetch: {
    description: 'Fetch: GET .../partitions/{partition}/records',
    memorySize: 1024,
    timeout: Duration.seconds(29),
  },
  admin: { description: 'Admin: topics, configs, partitions, offsets', memorySize: 512, timeout: Duration.seconds(29) },
  push: {
    description: 'Push: the WebSocket API subscribe route (arms partitions)',
    memorySize: 256,
    timeout: Duration.seconds(10),
  },
  // Group heartbeats behind a function URL (no API Gateway request charge): one item read, a write
  // every third of the session, no records. The smallest size: an idle member sends 518,400 a month.
  // Its bundle holds the group routes only, without a source map loaded: 64 MB RSS after import
  // (75 MB with the whole app; `npm run bench:bundles`), so 128 MB leaves half of it free.
  heartbeat: {
    description: 'Heartbeat: POST .../consumer-groups/{group}/consumers:heartbeat (function URL)',
    memorySize: 128,
    timeout: Duration.seconds(10),
  },
  scheduler: {
    description: 'Scheduled maintenance: timers, retention, compaction, orphan GC',
    memorySize: 1024,
    timeout: Duration.minutes(5),
  },
};

/**
 * The heartbeat function's own settings. Its ACL and quota sets are read at most every 30 s (5 s
 * elsewhere): at 5 s heartbeats the 5 s cache missed on every one, a Query each. So a changed ACL
 * reaches a member's heartbeats up to 30 s later; its fetches and commits, in the other functions,
 * within 5 s as before (docs/security.md).
 */
export const HEARTBEAT_ENVIRONMENT = { ACL_CACHE_MS: '30000' };

export interface LogFunctionsProps {
  /** Environment of every data function (storage, cluster id, metrics names). */
  environment: Record<string, string>;
  logRetention: logs.RetentionDays;
  removalPolicy: RemovalPolicy;
  /** SHA-256 digests of the accepted API keys; the authorizer exists only when given. */
  apiKeyDigests?: string[];
  /** For auth mode jwt: the push API's authorizer checks tokens of this issuer and audiences, named by this claim. */
  jwt?: { issuer: string; audiences: string[]; principalClaim: string };
  /** Reserved concurrency per function, where set. */
  reservedConcurrency?: Partial<Record<LogFunctionName, number>>;
}

export class LogFunctions extends Construct {
  readonly byName: Readonly<Record<LogFunctionName, NodejsFunction>>;
  readonly authorizer?: NodejsFunction;

  constructor(scope: Construct, id: string, props: LogFunctionsProps) {
    super(scope, id);
    const make = (
      name: string,
      bundle: BundleName,
      spec: FunctionSpec,
      environment: Record<string, string>,
      extra: Partial<lambda.FunctionProps> = {},
    ) => {
      const logGroup = new logs.LogGroup(this, `${name}Logs`, {
        retention: props.logRetention,
        removalPolicy: props.removalPolicy,
      });
      const role = new iam.Role(this, `${name}Role`, {
        assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com'),
        description: `${name} function: its log group and the data actions of infra/data-access.ts`,
      });
      logGroup.grantWrite(role);
      return new NodejsFunction(this, name, {
        entry: join(REPO_ROOT, 'functions', FUNCTION_ENTRIES[bundle]),
        handler: 'handler',
        projectRoot: REPO_ROOT,
        depsLockFilePath: join(REPO_ROOT, 'package-lock.json'),
        runtime: RUNTIME,
        architecture: lambda.Architecture.ARM_64,
        bundling: BUNDLING,
        role,
        logGroup,
        description: spec.description,
        memorySize: spec.memorySize,
        timeout: spec.timeout,
        environment: { ...environment, ...sourceMapOptions(bundle) },
        ...extra,
      });
    };
    const fn = (name: LogFunctionName, extra?: Partial<lambda.FunctionProps>) =>
      make(name[0]!.toUpperCase() + name.slice(1), name, FUNCTION_SPECS[name], props.environment, {
        ...extra,
        ...(props.reservedConcurrency?.[name] !== undefined && {
          reservedConcurrentExecutions: props.reservedConcurrency[name],
        }),
      });
    this.byName = {
      produce: fn('produce'),
      fetch: fn('fetch'),
      admin: fn('admin'),
      push: fn('push'),
      // Only warnings and errors reach CloudWatch Logs (Lambda's own filter: application and system
      // logs at WARN): a heartbeat's access line, EMF line and START/REPORT lines are ~0.8 KB, as
      // much a month ($0.22 per idle member) as the rest of its heartbeats' cost.
      heartbeat: fn('heartbeat', {
        environment: { ...props.environment, ...HEARTBEAT_ENVIRONMENT, ...sourceMapOptions('heartbeat') },
        loggingFormat: lambda.LoggingFormat.JSON,
        applicationLogLevelV2: lambda.ApplicationLogLevel.WARN,
        systemLogLevelV2: lambda.SystemLogLevel.WARN,
      }),
      // The next tick comes soon enough: no retries of a failed run, and no stale runs queued.
      scheduler: fn('scheduler', { retryAttempts: 0 }),
    };
    if (props.apiKeyDigests) {
      this.authorizer = make(
        'ApiKeyAuthorizer',
        'apiKeyAuthorizer',
        {
          description: 'API-key authorizer (x-api-key against SHA-256 digests)',
          memorySize: 256,
          timeout: Duration.seconds(5),
        },
        { API_KEY_SHA256: props.apiKeyDigests.join(',') },
      );
    }
    if (props.jwt) {
      this.authorizer = make(
        'JwtAuthorizer',
        'jwtAuthorizer',
        {
          description: "Push API JWT authorizer (issuer, audience, signature by the issuer's JWKS)",
          memorySize: 256,
          timeout: Duration.seconds(5),
        },
        {
          JWT_ISSUER: props.jwt.issuer,
          JWT_AUDIENCE: props.jwt.audiences.join(','),
          PRINCIPAL_CLAIM: props.jwt.principalClaim,
        },
      );
    }
  }
}
