/**
 * The stack's settings, from CDK context (`cdk.json` or `cdk deploy -c key=value`). Values given
 * with -c arrive as strings, values in cdk.json as JSON; both are accepted.
 *
 *   stage                 name suffix of the stack and its resources            dev
 *   clusterId             the v3 cluster id clients put in paths               the stage
 *   replicaStores         standard S3 buckets, one replica store each          1
 *   expressOneZoneAzIds   AZ ids (e.g. use1-az4,use1-az5) for S3 Express One Zone
 *                         directory buckets, appended as further replica stores  none
 *   retainData            keep buckets and table when the stack is deleted     true
 *   deletionProtection    DynamoDB deletion protection                         = retainData
 *   authMode              iam (SigV4) | jwt | apiKey                           iam
 *   jwtIssuer, jwtAudience          for authMode=jwt (audience: comma-separated)
 *   apiKeySha256          for authMode=apiKey: hex SHA-256 digests of the accepted keys
 *   schedulerRateMinutes  how often the scheduler runs                         1
 *   logRetentionDays      CloudWatch Logs retention (a value CloudWatch offers) 30
 *   throttleRate, throttleBurst     API requests per second, burst            1000, 2000
 *   alarmEmail            subscribe this address to the alarm topic           none
 *   triggerLagAlarmThreshold  alarm when a trigger is this many records behind its topic
 *                         (TriggerOffsetLag, the highest of every trigger's partitions)  none: no alarm
 *   triggerLagAlarmMinutes  for this many consecutive minutes                  5
 *   triggerLagAlarmTopicArns  SNS topics it notifies besides the alarm topic (comma-separated)  none
 *   authorization         enforce Kafka ACLs (docs/security.md)                true; false for stage local
 *   superUsers            Kafka's super.users, ';'-separated principals        none
 *                         (e.g. User:arn:aws:iam::123456789012:role/Admin)
 *   allowEveryoneIfNoAclFound       Kafka's allow.everyone.if.no.acl.found    false
 *   principalClaim        the JWT claim naming the principal (authMode=jwt)   sub
 *   quotaRate, quotaBurst API Gateway's per-route throttle of the produce and fetch routes
 *                         (requests per second, burst), below the stage's; HTTP API only   none
 *   apiFlavor             http (API Gateway v2) | rest (v1, e.g. LocalStack's free plan)
 *                                                                             http; rest for stage local
 *   lambdaRuntime         nodejs24.x | nodejs22.x (LocalStack images lag AWS)  nodejs24.x; nodejs22.x for stage local
 *   reservedConcurrency   reserved concurrency per function: a number for every HTTP function,
 *                         or produce=N,fetch=N,admin=N,scheduler=N (a ceiling that keeps one
 *                         stage from taking the account's whole concurrency)         none
 *   kafkaListener         the Kafka protocol listener on Fargate behind an NLB    false
 *   kafkaCertificateArn   its ACM certificate: TLS ends at the NLB (this, or kafkaTlsSecretArn)
 *   kafkaTlsSecretArn     a Secrets Manager secret (JSON: certificate, key, truststore for
 *                         mutual TLS): TLS ends at the tasks, the NLB passes TCP through
 *   kafkaClientAuth       none | requested | required (mutual TLS; needs kafkaTlsSecretArn)  none
 *   kafkaPrincipalMappingRules  ssl.principal.mapping.rules for client certificates      DEFAULT
 *   kafkaSaslMechanisms   SCRAM-SHA-256,SCRAM-SHA-512 (credentials in the table)   none
 *   kafkaHostName         the name clients connect to, the certificate's (required with kafkaListener)
 *   kafkaListenerMaxTasks the most tasks CPU scaling starts                    4
 *   triggerFunctionArns   the Lambda functions triggers may invoke: comma-separated function ARNs,
 *                         as triggers name them (a qualified one for a version or alias; `*` within
 *                         a name, e.g. function:orders-*); the functions that deliver may invoke
 *                         these and no other (docs/triggers.md)                        none
 *   triggerDestinationArns  the on-failure destinations triggers may write to: comma-separated ARNs
 *                         of S3 buckets (arn:aws:s3:::{bucket}), SQS queues and SNS topics; the
 *                         functions that deliver may put objects in, send messages to and publish
 *                         to these and no other (docs/triggers.md)                     none
 *   triggerDestinationKeys  the customer-managed KMS keys those destinations are encrypted with:
 *                         comma-separated {destination ARN}={key ARN} pairs; the functions that
 *                         deliver may use each key through its destination's service only
 *                         (kms:GenerateDataKey, and kms:Decrypt for SQS and SNS)        none
 */
import { RetentionDays } from 'aws-cdk-lib/aws-logs';

export type ApiAuth =
  | { mode: 'iam' }
  | { mode: 'jwt'; issuer: string; audiences: string[] }
  | { mode: 'apiKey'; keyDigests: string[] };

export type ApiFlavor = 'http' | 'rest';

export type ReservedConcurrency = Partial<Record<'produce' | 'fetch' | 'admin' | 'scheduler', number>>;

export interface LogStackConfig {
  stage: string;
  clusterId: string;
  replicaStores: number;
  expressOneZoneAzIds: string[];
  retainData: boolean;
  deletionProtection: boolean;
  auth: ApiAuth;
  schedulerRateMinutes: number;
  logRetention: RetentionDays;
  throttle: { rateLimit: number; burstLimit: number };
  alarmEmail?: string;
  /** The alarm on triggers' offset lag: records behind, for how many minutes, whom else it notifies. */
  triggerLagAlarm?: { threshold: number; minutes: number; topicArns: string[] };
  security: {
    authorization: boolean;
    superUsers: string[];
    allowEveryoneIfNoAclFound: boolean;
    principalClaim: string;
  };
  /** Per-route throttle of the data routes (API Gateway's own, per stage, not per caller). */
  dataRouteThrottle?: { rateLimit: number; burstLimit: number };
  apiFlavor: ApiFlavor;
  lambdaRuntime: 'nodejs24.x' | 'nodejs22.x';
  reservedConcurrency: ReservedConcurrency;
  kafkaListener?: KafkaListenerConfig;
  /** What the functions that deliver triggers may invoke (lambda:InvokeFunction): function ARNs or patterns. */
  triggerFunctionArns: string[];
  /** Where the functions that deliver triggers may write records given up on (s3:PutObject): S3 bucket ARNs. */
  triggerDestinationArns: string[];
  /** The customer-managed KMS key each encrypted destination uses (SSE-KMS): what sending to it takes. */
  triggerDestinationKeys: TriggerDestinationKey[];
}

export interface TriggerDestinationKey {
  destinationArn: string;
  keyArn: string;
}

/** Where the listener's TLS ends: at the NLB (an ACM certificate), or at the tasks (a secret's PEM, mutual TLS possible). */
export type KafkaListenerTls =
  | { at: 'nlb'; certificateArn: string }
  | { at: 'task'; secretArn: string; clientAuth: 'none' | 'requested' | 'required'; principalMappingRules?: string };

export interface KafkaListenerConfig {
  tls: KafkaListenerTls;
  hostName: string;
  maxTasks: number;
  /** sasl.enabled.mechanisms: SCRAM only (PLAIN's users live in a file the task does not have). */
  saslMechanisms: string[];
}

type Lookup = (key: string) => unknown;

/** One stack per stage; its name also names the API, the dashboard and the metrics' Service. */
export function stackName(stage: string): string {
  return `S3KafkaLog-${stage}`;
}

const str = (v: unknown): string | undefined => (v === undefined || v === null || v === '' ? undefined : String(v));

function list(v: unknown): string[] {
  if (Array.isArray(v))
    return v
      .map(String)
      .map((s) => s.trim())
      .filter(Boolean);
  return (str(v) ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
}

function bool(key: string, v: unknown, fallback: boolean): boolean {
  if (v === undefined || v === null || v === '') return fallback;
  if (v === true || v === 'true') return true;
  if (v === false || v === 'false') return false;
  throw new Error(`Context ${key} must be true or false, got ${JSON.stringify(v)}`);
}

function int(key: string, v: unknown, fallback: number, min: number, max: number): number {
  if (v === undefined || v === null || v === '') return fallback;
  const n = Number(v);
  if (!Number.isInteger(n) || n < min || n > max)
    throw new Error(`Context ${key} must be an integer in [${min}, ${max}], got ${JSON.stringify(v)}`);
  return n;
}

const RETENTION_DAYS = new Set<number>(Object.values(RetentionDays).filter((d): d is number => typeof d === 'number'));

/** Principals as Kafka writes them; ';' separates them (an IAM ARN holds ':' and '/', never ';'). */
function superUsers(v: unknown): string[] {
  const items = Array.isArray(v) ? v.map(String) : (str(v) ?? '').split(';');
  const out = items.map((s) => s.trim()).filter(Boolean);
  for (const p of out)
    if (!/^[A-Za-z][A-Za-z0-9_-]*:.+$/.test(p))
      throw new Error(`superUsers takes principals such as User:alice, got ${p}`);
  return out;
}

const CONCURRENCY_FUNCTIONS = ['produce', 'fetch', 'admin', 'scheduler'] as const;

function reservedConcurrency(v: unknown): ReservedConcurrency {
  const raw = str(v);
  if (raw === undefined) return {};
  if (/^\d+$/.test(raw)) {
    const n = int('reservedConcurrency', raw, 0, 1, 10_000);
    return { produce: n, fetch: n, admin: n };
  }
  const out: ReservedConcurrency = {};
  for (const part of list(raw)) {
    const [name, value] = part.split('=');
    if (!CONCURRENCY_FUNCTIONS.includes(name as (typeof CONCURRENCY_FUNCTIONS)[number])) {
      throw new Error(
        `reservedConcurrency takes N or ${CONCURRENCY_FUNCTIONS.map((f) => `${f}=N`).join(',')}, got ${part}`,
      );
    }
    out[name as (typeof CONCURRENCY_FUNCTIONS)[number]] = int(`reservedConcurrency ${name}`, value, 0, 1, 10_000);
  }
  return out;
}

export function stackConfig(context: Lookup): LogStackConfig {
  const stage = str(context('stage')) ?? 'dev';
  if (!/^[a-z][a-z0-9-]{0,19}$/.test(stage))
    throw new Error(`Context stage must be lower-case letters, digits and '-', at most 20 characters: ${stage}`);
  const retainData = bool('retainData', context('retainData'), true);

  const authMode = str(context('authMode')) ?? 'iam';
  let auth: ApiAuth;
  if (authMode === 'iam') auth = { mode: 'iam' };
  else if (authMode === 'jwt') {
    const issuer = str(context('jwtIssuer'));
    const audiences = list(context('jwtAudience'));
    if (!issuer || audiences.length === 0) throw new Error('authMode=jwt needs jwtIssuer and jwtAudience');
    auth = { mode: 'jwt', issuer, audiences };
  } else if (authMode === 'apiKey') {
    // `id=hex` names a key's principal (User:id); a bare digest's id is its first 12 hex digits.
    const keyDigests = list(context('apiKeySha256')).map((d) => d.replace(/[0-9a-fA-F]{64}$/, (h) => h.toLowerCase()));
    if (keyDigests.length === 0 || keyDigests.some((d) => !/^(?:[A-Za-z0-9._@-]+=)?[0-9a-f]{64}$/.test(d))) {
      throw new Error(
        'authMode=apiKey needs apiKeySha256: comma-separated hex SHA-256 digests of the accepted keys (each optionally id=digest)',
      );
    }
    auth = { mode: 'apiKey', keyDigests };
  } else throw new Error(`Context authMode must be iam, jwt or apiKey, got ${authMode}`);

  const expressOneZoneAzIds = list(context('expressOneZoneAzIds'));
  for (const az of expressOneZoneAzIds) {
    if (!/^[a-z0-9]+-az\d+$/.test(az)) throw new Error(`expressOneZoneAzIds takes AZ ids such as use1-az4, got ${az}`);
  }

  const logRetention = int('logRetentionDays', context('logRetentionDays'), 30, 1, 3653);
  if (!RETENTION_DAYS.has(logRetention)) {
    throw new Error(`logRetentionDays must be one of ${[...RETENTION_DAYS].sort((a, b) => a - b).join(', ')}`);
  }

  const replicaStores = int('replicaStores', context('replicaStores'), 1, 0, 10);
  if (replicaStores + expressOneZoneAzIds.length === 0)
    throw new Error('At least one replica store is needed: replicaStores or expressOneZoneAzIds');

  const apiFlavor = str(context('apiFlavor')) ?? (stage === 'local' ? 'rest' : 'http');
  if (apiFlavor !== 'http' && apiFlavor !== 'rest')
    throw new Error(`Context apiFlavor must be http or rest, got ${apiFlavor}`);
  if (apiFlavor === 'rest' && auth.mode !== 'iam') {
    throw new Error(
      `apiFlavor=rest takes authMode=iam only (REST APIs have no JWT authorizer, and their API keys would sit in the template); got ${auth.mode}`,
    );
  }

  const lambdaRuntime = str(context('lambdaRuntime')) ?? (stage === 'local' ? 'nodejs22.x' : 'nodejs24.x');
  if (lambdaRuntime !== 'nodejs24.x' && lambdaRuntime !== 'nodejs22.x')
    throw new Error(`Context lambdaRuntime must be nodejs24.x or nodejs22.x, got ${lambdaRuntime}`);

  return {
    stage,
    apiFlavor,
    lambdaRuntime,
    reservedConcurrency: reservedConcurrency(context('reservedConcurrency')),
    clusterId: str(context('clusterId')) ?? stage,
    replicaStores,
    expressOneZoneAzIds,
    retainData,
    deletionProtection: bool('deletionProtection', context('deletionProtection'), retainData),
    auth,
    schedulerRateMinutes: int('schedulerRateMinutes', context('schedulerRateMinutes'), 1, 1, 1440),
    logRetention: logRetention as RetentionDays,
    throttle: {
      rateLimit: int('throttleRate', context('throttleRate'), 1000, 1, 1_000_000),
      burstLimit: int('throttleBurst', context('throttleBurst'), 2000, 1, 1_000_000),
    },
    alarmEmail: str(context('alarmEmail')),
    ...triggerLagAlarmConfig(context),
    ...kafkaListenerConfig(context),
    triggerFunctionArns: triggerFunctionArns(context('triggerFunctionArns')),
    triggerDestinationArns: triggerDestinationArns(context('triggerDestinationArns')),
    triggerDestinationKeys: triggerDestinationKeys(context('triggerDestinationKeys')),
    security: {
      // LocalStack's emulated IAM names no caller: every request would be User:ANONYMOUS.
      authorization: bool('authorization', context('authorization'), stage !== 'local'),
      superUsers: superUsers(context('superUsers')),
      allowEveryoneIfNoAclFound: bool('allowEveryoneIfNoAclFound', context('allowEveryoneIfNoAclFound'), false),
      principalClaim: str(context('principalClaim')) ?? 'sub',
    },
    ...(context('quotaRate') !== undefined && {
      dataRouteThrottle: {
        rateLimit: int('quotaRate', context('quotaRate'), 100, 1, 1_000_000),
        burstLimit: int('quotaBurst', context('quotaBurst'), 200, 1, 1_000_000),
      },
    }),
  };
}

/** A function ARN, maybe qualified, `*` allowed in the region, the name and the qualifier (never for the account). */
const FUNCTION_ARN_PATTERN =
  /^arn:aws[a-zA-Z-]*:lambda:([a-z]{2}(-gov)?-[a-z]+-\d|\*):\d{12}:function:[a-zA-Z0-9_*-]{1,64}(:(\$LATEST|[a-zA-Z0-9_*-]+))?$/;

function triggerFunctionArns(v: unknown): string[] {
  const arns = list(v);
  for (const arn of arns)
    if (!FUNCTION_ARN_PATTERN.test(arn))
      throw new Error(
        `triggerFunctionArns takes Lambda function ARNs (arn:aws:lambda:{region}:{account}:function:{name}[:{qualifier}]), got ${arn}`,
      );
  return arns;
}

/** An S3 bucket's, an SQS queue's or an SNS topic's ARN, as a trigger's on-failure destination names it (not FIFO). */
const DESTINATION_ARN_PATTERN =
  /^arn:aws[a-zA-Z-]*:(s3:::[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]|sqs:[a-z]{2}(-gov)?-[a-z]+-\d:\d{12}:[a-zA-Z0-9_-]{1,80}|sns:[a-z]{2}(-gov)?-[a-z]+-\d:\d{12}:[a-zA-Z0-9_-]{1,256})$/;

function triggerDestinationArns(v: unknown): string[] {
  const arns = list(v);
  for (const arn of arns)
    if (!DESTINATION_ARN_PATTERN.test(arn))
      throw new Error(
        `triggerDestinationArns takes the ARNs of S3 buckets (arn:aws:s3:::{bucket}), SQS queues (arn:aws:sqs:{region}:{account}:{queue}) and SNS topics (arn:aws:sns:{region}:{account}:{topic}), not FIFO ones, got ${arn}`,
      );
  return arns;
}

function triggerLagAlarmConfig(context: Lookup): Pick<LogStackConfig, 'triggerLagAlarm'> {
  const topicArns = list(context('triggerLagAlarmTopicArns'));
  for (const arn of topicArns)
    if (!/^arn:aws[a-zA-Z-]*:sns:[a-z]{2}(-gov)?-[a-z]+-\d:\d{12}:[a-zA-Z0-9_-]{1,256}$/.test(arn))
      throw new Error(`triggerLagAlarmTopicArns takes SNS topic ARNs (not FIFO ones), got ${arn}`);
  if (str(context('triggerLagAlarmThreshold')) === undefined) {
    if (topicArns.length > 0 || context('triggerLagAlarmMinutes') !== undefined)
      throw new Error('triggerLagAlarmTopicArns and triggerLagAlarmMinutes need triggerLagAlarmThreshold');
    return {};
  }
  return {
    triggerLagAlarm: {
      threshold: int('triggerLagAlarmThreshold', context('triggerLagAlarmThreshold'), 1, 1, Number.MAX_SAFE_INTEGER),
      minutes: int('triggerLagAlarmMinutes', context('triggerLagAlarmMinutes'), 5, 1, 1440),
      topicArns,
    },
  };
}

/** A KMS key's ARN (not an alias's: a policy naming an alias does not grant its key). */
const KEY_ARN_PATTERN = /^arn:aws[a-zA-Z-]*:kms:[a-z]{2}(-gov)?-[a-z]+-\d:\d{12}:key\/[a-zA-Z0-9-]{1,128}$/;

function triggerDestinationKeys(v: unknown): TriggerDestinationKey[] {
  return list(v).map((pair) => {
    const [destinationArn = '', keyArn = '', ...rest] = pair.split('=').map((s) => s.trim());
    if (rest.length > 0 || !DESTINATION_ARN_PATTERN.test(destinationArn) || !KEY_ARN_PATTERN.test(keyArn))
      throw new Error(
        `triggerDestinationKeys takes {destination ARN}={KMS key ARN} pairs (an S3 bucket's, SQS queue's or SNS topic's ARN, then arn:aws:kms:{region}:{account}:key/{id}), got ${pair}`,
      );
    return { destinationArn, keyArn };
  });
}

function kafkaListenerConfig(context: Lookup): Pick<LogStackConfig, 'kafkaListener'> {
  if (!bool('kafkaListener', context('kafkaListener'), false)) return {};
  const certificateArn = str(context('kafkaCertificateArn'));
  const secretArn = str(context('kafkaTlsSecretArn'));
  const hostName = str(context('kafkaHostName'));
  if ((!certificateArn && !secretArn) || !hostName)
    throw new Error(
      'kafkaListener=true needs kafkaCertificateArn (or kafkaTlsSecretArn) and kafkaHostName (the TLS certificate and the name clients connect to)',
    );
  if (certificateArn && secretArn)
    throw new Error('Give kafkaCertificateArn (TLS at the NLB) or kafkaTlsSecretArn (TLS at the tasks), not both');
  if (secretArn && !/^arn:aws[a-z-]*:secretsmanager:[^:]+:\d{12}:secret:.+-[A-Za-z0-9]{6}$/.test(secretArn))
    throw new Error(
      `kafkaTlsSecretArn must be a secret's complete ARN (with its 6-character suffix), got ${secretArn}`,
    );
  const clientAuth = str(context('kafkaClientAuth')) ?? 'none';
  if (clientAuth !== 'none' && clientAuth !== 'requested' && clientAuth !== 'required')
    throw new Error(`Context kafkaClientAuth must be none, requested or required, got ${clientAuth}`);
  if (clientAuth !== 'none' && !secretArn)
    throw new Error(
      'kafkaClientAuth (mutual TLS) needs kafkaTlsSecretArn: an NLB TLS listener does not ask for client certificates',
    );
  const rules = str(context('kafkaPrincipalMappingRules'));
  const saslMechanisms = list(context('kafkaSaslMechanisms'));
  for (const m of saslMechanisms)
    if (m !== 'SCRAM-SHA-256' && m !== 'SCRAM-SHA-512')
      throw new Error(
        `Context kafkaSaslMechanisms takes SCRAM-SHA-256 and SCRAM-SHA-512 (PLAIN's users are a local auth config file), got ${m}`,
      );
  return {
    kafkaListener: {
      tls: secretArn
        ? { at: 'task', secretArn, clientAuth, ...(rules ? { principalMappingRules: rules } : {}) }
        : { at: 'nlb', certificateArn: certificateArn! },
      hostName,
      maxTasks: int('kafkaListenerMaxTasks', context('kafkaListenerMaxTasks'), 4, 1, 100),
      saslMechanisms,
    },
  };
}
