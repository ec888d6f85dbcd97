/**
 * `KafkaLogTrigger`: the construct a user's own stack binds their function to a topic of a deployed
 * log with, as `lambda.EventSourceMapping` binds one to an MSK topic (docs/triggers.md, "From your
 * own CDK stack").
 *
 *   const log = KafkaLog.fromStackOutputs({ apiUrl, clusterId, triggerInvokerRoleArns });
 *   new KafkaLogTrigger(this, 'Orders', { log, topic: 'orders', function: fn, batchSize: 500 });
 *
 * Two things: a resource-based permission on the function for each role of the log that delivers
 * triggers (the scheduled function's, the Kafka listener's task role), so those roles may invoke
 * exactly this function, and nothing else; in the same account that is all IAM asks, so the log
 * stack need not list the function in `triggerFunctionArns`. And a custom resource that creates,
 * updates and deletes the trigger through the log's v3 API (trigger-resource-handler.ts).
 *
 * Why a Provider-backed function and not AwsCustomResource: AwsCustomResource makes AWS SDK calls,
 * and a trigger is no AWS resource: it is made by the log's own HTTP API (SigV4-signed, with the
 * log's Kafka ACLs on the caller), which only code that speaks that API can call. The handler is the
 * shipped client in a function; the Provider framework answers CloudFormation for it (timeouts,
 * the response upload). One handler and one provider per stack, shared by every trigger in it.
 */
import { join } from 'node:path';
import { CustomResource, Duration, Names, RemovalPolicy, Stack, Token } from 'aws-cdk-lib';
import type * as cw from 'aws-cdk-lib/aws-cloudwatch';
import * as iam from 'aws-cdk-lib/aws-iam';
import type * as kms from 'aws-cdk-lib/aws-kms';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import { NodejsFunction } from 'aws-cdk-lib/aws-lambda-nodejs';
import * as logs from 'aws-cdk-lib/aws-logs';
import type * as s3 from 'aws-cdk-lib/aws-s3';
import type * as sns from 'aws-cdk-lib/aws-sns';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import * as cr from 'aws-cdk-lib/custom-resources';
import { Construct, type IDependable } from 'constructs';
import { type DestinationService, destinationKeyUse } from './destination-keys.js';
import { BUNDLING, REPO_ROOT, RUNTIME } from './log-functions.js';
import { type LogStack, METRICS_NAMESPACE } from './log-stack.js';
import { triggerLagAlarm, type TriggerLagAlarmOptions } from './trigger-lag-alarm.js';
import type { TriggerResourceProperties } from './trigger-resource-handler.js';

/** A deployed log, as a trigger in another stack needs it. */
export interface KafkaLogReference {
  /** The v3 API's base URL (the log stack's ApiUrl output). */
  readonly apiUrl: string;
  /** The cluster id in /v3/clusters/{id} (ClusterId output). */
  readonly clusterId: string;
  /** The roles that invoke triggers' functions (TriggerInvokerRoleArns output). */
  readonly invokerRoleArns: readonly string[];
  /** The API's execute-api ARN (`arn:aws:execute-api:{region}:{account}:{api id}`): what the handler is granted to call. */
  readonly executeApiArn: string;
  /** The Service dimension of the log's metrics (MetricsService output): what a trigger's lag alarm watches. */
  readonly metricsService?: string;
}

export const KafkaLog = {
  /**
   * The log from its stack's outputs (`cdk deploy --outputs-file`, or `aws cloudformation
   * describe-stacks`): ApiUrl, ClusterId and TriggerInvokerRoleArns, as plain strings.
   */
  fromStackOutputs(outputs: {
    apiUrl: string;
    clusterId: string;
    triggerInvokerRoleArns: string;
    metricsService?: string;
  }): KafkaLogReference {
    if (Token.isUnresolved(outputs.apiUrl) || Token.isUnresolved(outputs.triggerInvokerRoleArns))
      throw new Error(
        'KafkaLog.fromStackOutputs takes the outputs as strings; in the same app use KafkaLog.fromLogStack',
      );
    const api = /^https:\/\/([a-z0-9]+)\.execute-api\.([a-z0-9-]+)\.amazonaws\.com(\.cn)?(\/|$)/.exec(outputs.apiUrl);
    if (!api)
      throw new Error(`apiUrl must be the log stack's ApiUrl output (an execute-api URL), got ${outputs.apiUrl}`);
    const roles = outputs.triggerInvokerRoleArns
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean);
    const role = /^arn:(aws[a-z-]*):iam::(\d{12}):role\/.+$/;
    const parsed = roles.map((r) => role.exec(r));
    if (roles.length === 0 || parsed.some((m) => !m))
      throw new Error(
        `triggerInvokerRoleArns must be IAM role ARNs, comma-separated, got ${outputs.triggerInvokerRoleArns}`,
      );
    const [, partition, account] = parsed[0]!;
    return {
      apiUrl: outputs.apiUrl,
      clusterId: outputs.clusterId,
      invokerRoleArns: roles,
      executeApiArn: `arn:${partition}:execute-api:${api[2]}:${account}:${api[1]}`,
      ...(outputs.metricsService !== undefined && { metricsService: outputs.metricsService }),
    };
  },

  /** The log of a stack in the same app (cross-stack references). */
  fromLogStack(stack: LogStack): KafkaLogReference {
    return {
      apiUrl: stack.api.url,
      clusterId: stack.clusterId,
      invokerRoleArns: stack.triggerInvokerRoles.map((r) => r.roleArn),
      executeApiArn: stack.formatArn({ service: 'execute-api', resource: stack.api.apiId }),
      metricsService: stack.stackName,
    };
  },
};

export type TriggerStartingPosition = 'LATEST' | 'TRIM_HORIZON' | 'AT_TIMESTAMP';

/** The knobs under the names of the CDK's own Kafka event sources (aws-lambda-event-sources). */
export interface KafkaLogTriggerProps {
  readonly log: KafkaLogReference;
  readonly topic: string;
  /** The function, or a version or alias of it: invoked as named, granted as named. */
  readonly function: lambda.IFunction;
  /** Default: a name unique in the app (this construct's path). 1-128 of [a-zA-Z0-9._-]. */
  readonly triggerName?: string;
  /** Default trigger.{triggerName}. */
  readonly groupId?: string;
  /** BatchSize, 1-10,000 (server default 100). */
  readonly batchSize?: number;
  /** Default LATEST. */
  readonly startingPosition?: TriggerStartingPosition;
  /** AT_TIMESTAMP's start (epoch seconds, as the CDK's event sources take it). */
  readonly startingPositionTimestamp?: number;
  /** How long one invocation may take (default 30 s); at most the function's own timeout is useful. */
  readonly timeout?: Duration;
  /** MaximumBatchingWindow (0-300 s; server default 500 ms). */
  readonly maxBatchingWindow?: Duration;
  /** MaximumRetryAttempts (-1 infinite, the default). */
  readonly retryAttempts?: number;
  /** MaximumRecordAge (60 s-7 days; default none). */
  readonly maxRecordAge?: Duration;
  readonly bisectBatchOnError?: boolean;
  /** FunctionResponseTypes ReportBatchItemFailures. */
  readonly reportBatchItemFailures?: boolean;
  /**
   * The on-failure destination: `kafka://{topic}`, an ARN (an S3 bucket's, an SQS queue's or an SNS
   * topic's, which the log stack must list in `triggerDestinationArns`), or a bucket, queue or topic
   * of this app, on which the construct grants the log's delivering roles what they send with
   * (s3:PutObject, sqs:SendMessage, sns:Publish) in its resource policy.
   */
  readonly onFailure?: string | s3.IBucket | sqs.IQueue | sns.ITopic;
  /**
   * The customer-managed KMS key the destination is encrypted with (SSE-KMS), when `onFailure` is
   * an ARN; a bucket, queue or topic of this app brings its own. The construct lets the log's
   * delivering roles use it through the destination's service in the key's policy (a key imported
   * by ARN takes none: list it in the log stack's `triggerDestinationKeys` instead).
   */
  readonly onFailureKey?: kms.IKey;
  /** FilterCriteria patterns, as objects (JSON-encoded for the API). */
  readonly filters?: Record<string, unknown>[];
  /** Default true; false: created (or left) paused. */
  readonly enabled?: boolean;
  /**
   * An alarm on this trigger's offset lag (TriggerOffsetLag under its Trigger dimension, the highest
   * of its partitions, as Lambda's OffsetLag per event source mapping): at `threshold` records or
   * more for `minutes` (default 5), notifying `topics`. Needs the log's `metricsService`.
   */
  readonly lagAlarm?: TriggerLagAlarmOptions;
}

const HANDLER_ID = 'KafkaLogTriggerHandler';
const PROVIDER_ID = 'KafkaLogTriggerProvider';

export class KafkaLogTrigger extends Construct {
  readonly triggerName: string;
  /** The custom resource; its physical id is the trigger's URL. */
  readonly resource: CustomResource;
  /** The function that calls the log's API: give its role the Kafka ACLs a trigger needs (docs/triggers.md). */
  readonly handler: lambda.IFunction;
  /** The lag alarm, with `lagAlarm`. */
  readonly lagAlarm?: cw.Alarm;

  constructor(scope: Construct, id: string, props: KafkaLogTriggerProps) {
    super(scope, id);
    this.triggerName = props.triggerName ?? Names.uniqueResourceName(this, { maxLength: 128, separator: '-' });
    if (!Token.isUnresolved(this.triggerName) && !/^[a-zA-Z0-9._-]{1,128}$/.test(this.triggerName))
      throw new Error(`triggerName must be 1-128 of [a-zA-Z0-9._-], got ${this.triggerName}`);

    // The log's delivering roles may invoke this function (or version, or alias) and no other.
    props.log.invokerRoleArns.forEach((roleArn, i) => {
      const permissionId = `Invoke${i}`;
      props.function.addPermission(permissionId, {
        principal: new iam.ArnPrincipal(roleArn),
        action: 'lambda:InvokeFunction',
        scope: this,
      });
      if (!this.node.tryFindChild(permissionId))
        throw new Error(
          `${props.function.node.path}: this stack cannot add a permission to the function (imported from another account or environment?): import it with sameEnvironment, or list it in the log stack's triggerFunctionArns`,
        );
    });

    const onFailure = this.grantDestination(props.onFailure, props.log.invokerRoleArns);
    const onFailureKey = this.grantDestinationKey(props.onFailure, props.onFailureKey, props.log.invokerRoleArns);

    const { handler, provider } = providerOf(Stack.of(this));
    handler.addToRolePolicy(
      new iam.PolicyStatement({
        actions: ['execute-api:Invoke'],
        // Any stage and method, the trigger routes of this cluster only.
        resources: [
          `${props.log.executeApiArn}/*/*/v3/clusters/${props.log.clusterId}/triggers`,
          `${props.log.executeApiArn}/*/*/v3/clusters/${props.log.clusterId}/triggers/*`,
        ],
      }),
    );
    this.handler = handler;

    const ms = (d: Duration | undefined) => (d === undefined ? undefined : d.toMilliseconds());
    const trigger = {
      name: this.triggerName,
      topic: props.topic,
      groupId: props.groupId,
      target: { type: 'LAMBDA', functionArn: props.function.functionArn, timeoutMs: ms(props.timeout) },
      batchSize: props.batchSize,
      startingPosition: props.startingPosition,
      startingPositionTimestamp:
        props.startingPositionTimestamp === undefined ? undefined : props.startingPositionTimestamp * 1000,
      maximumBatchingWindowMs: ms(props.maxBatchingWindow),
      maximumRetryAttempts: props.retryAttempts,
      maximumRecordAgeSeconds: props.maxRecordAge?.toSeconds(),
      bisectBatchOnFunctionError: props.bisectBatchOnError,
      functionResponseTypes: props.reportBatchItemFailures ? ['ReportBatchItemFailures'] : undefined,
      onFailureDestination: onFailure?.arn,
      filterCriteria: props.filters && { filters: props.filters.map((f) => ({ pattern: JSON.stringify(f) })) },
    };
    const properties: Omit<TriggerResourceProperties, 'ServiceToken'> = {
      ApiUrl: props.log.apiUrl,
      ClusterId: props.log.clusterId,
      Trigger: Stack.of(this).toJsonString(trigger),
      Enabled: String(props.enabled ?? true),
    };
    this.resource = new CustomResource(this, 'Resource', {
      serviceToken: provider.serviceToken,
      resourceType: 'Custom::KafkaLogTrigger',
      properties,
    });
    // The trigger exists only once its function may be invoked: no first delivery is refused.
    for (const child of this.node.children)
      if (child instanceof lambda.CfnPermission) this.resource.node.addDependency(child);
    // Nor is a first give-up refused by its destination.
    if (onFailure?.policy) this.resource.node.addDependency(onFailure.policy);
    if (onFailureKey) this.resource.node.addDependency(onFailureKey);

    if (props.lagAlarm) {
      if (props.log.metricsService === undefined)
        throw new Error(
          `${this.node.path}: lagAlarm needs the log's metricsService (its stack's MetricsService output, in KafkaLog.fromStackOutputs)`,
        );
      this.lagAlarm = triggerLagAlarm(
        this,
        'LagAlarm',
        { namespace: METRICS_NAMESPACE, service: props.log.metricsService, trigger: this.triggerName },
        props.lagAlarm,
      );
    }
  }

  /**
   * For an SSE-KMS destination with a customer-managed key, a statement in the key's policy that
   * lets the log's delivering roles use it through the destination's service, as sending takes
   * (destination-keys.ts). A key managed by AWS (alias/aws/sqs, alias/aws/sns) needs none: its
   * policy lets any caller of the account use it through its service.
   */
  private grantDestinationKey(
    destination: KafkaLogTriggerProps['onFailure'],
    key: kms.IKey | undefined,
    roleArns: readonly string[],
  ): IDependable | undefined {
    let service: DestinationService | undefined;
    if (typeof destination === 'string') {
      const s = destination.split(':')[2];
      service = s === 's3' || s === 'sqs' || s === 'sns' ? s : undefined;
    } else if (destination !== undefined) {
      service = 'queueArn' in destination ? 'sqs' : 'topicArn' in destination ? 'sns' : 's3';
      key ??=
        'queueArn' in destination
          ? destination.encryptionMasterKey
          : 'topicArn' in destination
            ? destination.masterKey
            : destination.encryptionKey;
    }
    if (!key) return undefined;
    if (!service)
      throw new Error(`${this.node.path}: onFailureKey is for an S3 bucket, SQS queue or SNS topic destination`);
    if ('aliasName' in key && String(key.aliasName).startsWith('alias/aws/')) return undefined;
    const added = key.addToResourcePolicy(
      new iam.PolicyStatement({
        ...destinationKeyUse(service),
        principals: roleArns.map((r) => new iam.ArnPrincipal(r)),
        resources: ['*'], // in a key policy: this key
      }),
    );
    if (!added.statementAdded)
      throw new Error(
        `${this.node.path}: the on-failure destination's KMS key takes no key policy here (imported?): list {destination ARN}={key ARN} in the log stack's triggerDestinationKeys`,
      );
    return key; // its policy is part of the key resource
  }

  /**
   * The destination's ARN and, for a bucket, queue or topic of this app, a statement in its resource
   * policy that lets the log's delivering roles send to it (in one account either that or their
   * own role's grant is enough, as with the function's permission). A bucket, queue or topic
   * imported by ARN takes no resource policy: the construct refuses it, name its ARN instead.
   */
  private grantDestination(
    destination: KafkaLogTriggerProps['onFailure'],
    roleArns: readonly string[],
  ): { arn: string; policy?: IDependable } | undefined {
    if (destination === undefined || typeof destination === 'string')
      return destination === undefined ? undefined : { arn: destination };
    // As Lambda, and the log's API: a FIFO queue or topic takes no destination record.
    if ('fifo' in destination && destination.fifo)
      throw new Error(`${this.node.path}: onFailure cannot be a FIFO queue or topic`);
    const principals = roleArns.map((r) => new iam.ArnPrincipal(r));
    const grant = (
      arn: string,
      action: string,
      resource: string,
      add: (s: iam.PolicyStatement) => iam.AddToResourcePolicyResult,
    ) => {
      const added = add(new iam.PolicyStatement({ actions: [action], principals, resources: [resource] }));
      if (!added.statementAdded)
        throw new Error(
          `${this.node.path}: the on-failure destination takes no resource policy here (imported?): pass its ARN as onFailure and list it in the log stack's triggerDestinationArns`,
        );
      return { arn, ...(added.policyDependable && { policy: added.policyDependable }) };
    };
    if ('queueArn' in destination)
      return grant(destination.queueArn, 'sqs:SendMessage', destination.queueArn, (s) =>
        destination.addToResourcePolicy(s),
      );
    if ('topicArn' in destination)
      return grant(destination.topicArn, 'sns:Publish', destination.topicArn, (s) =>
        destination.addToResourcePolicy(s),
      );
    return grant(destination.bucketArn, 's3:PutObject', destination.arnForObjects('*'), (s) =>
      destination.addToResourcePolicy(s),
    );
  }
}

/** The stack's one handler and provider, made by its first trigger. */
function providerOf(stack: Stack): { handler: NodejsFunction; provider: cr.Provider } {
  const existing = stack.node.tryFindChild(PROVIDER_ID) as cr.Provider | undefined;
  if (existing) return { handler: stack.node.findChild(HANDLER_ID) as NodejsFunction, provider: existing };
  // Its own role and log group, as the log's functions have: the role holds what the triggers add
  // (execute-api:Invoke on their log's trigger routes) and its log group, no managed policy.
  const logGroup = new logs.LogGroup(stack, `${HANDLER_ID}Logs`, {
    retention: logs.RetentionDays.ONE_MONTH,
    removalPolicy: RemovalPolicy.DESTROY,
  });
  const role = new iam.Role(stack, `${HANDLER_ID}Role`, {
    assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com'),
    description: "KafkaLogTrigger's handler: its log group and the trigger routes of its logs' APIs",
  });
  logGroup.grantWrite(role);
  const handler = new NodejsFunction(stack, HANDLER_ID, {
    role,
    logGroup,
    entry: join(REPO_ROOT, 'infra', 'trigger-resource-handler.ts'),
    handler: 'handler',
    projectRoot: REPO_ROOT,
    depsLockFilePath: join(REPO_ROOT, 'package-lock.json'),
    runtime: RUNTIME,
    architecture: lambda.Architecture.ARM_64,
    bundling: BUNDLING,
    description: "Creates, updates and deletes KafkaLogTriggers through the log's v3 API",
    memorySize: 256,
    timeout: Duration.minutes(2),
  });
  const provider = new cr.Provider(stack, PROVIDER_ID, { onEventHandler: handler });
  return { handler, provider };
}
