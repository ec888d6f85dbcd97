/**
 * One deployment: replica buckets, the metadata table, the functions, the HTTP API, the
 * scheduler's schedule, least-privilege grants, monitoring and the outputs a client needs.
 */
import {
  Annotations,
  Aspects,
  CfnOutput,
  CfnResource,
  Duration,
  RemovalPolicy,
  Stack,
  Validations,
  type StackProps,
} from 'aws-cdk-lib';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as events from 'aws-cdk-lib/aws-events';
import * as targets from 'aws-cdk-lib/aws-events-targets';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import type { Construct, IConstruct } from 'constructs';
import { destinationKeyStatements } from './destination-keys.js';
import { DATA_ACCESS, expressSessionMode, type DataFunctionName } from './data-access.js';
import { LogHttpApi } from './http-api.js';
import { KAFKA_TLS_PORT, KafkaListener } from './kafka-listener.js';
import { LogRestApi } from './rest-api.js';
import { LogFunctions, RUNTIME } from './log-functions.js';
import { Monitoring } from './monitoring.js';
import { wildcardResourceFinding } from './nag-findings.js';
import { PushApi } from './push-api.js';
import { ReplicaStores, REQUEST_METRICS_FILTER_ID } from './replica-stores.js';
import type { LogStackConfig } from './stack-config.js';

export const METRICS_NAMESPACE = 'S3KafkaLog';

/**
 * A synchronous Lambda invocation carries at most 6 MB each way. Requests are capped at 4 MiB:
 * API Gateway hands a binary body (record batches) to Lambda as base64, 5.6 MB for 4 MiB; fetches at 1 MiB of record batches, which the JSON response (base64 values plus per-record
 * fields) inflates to about 1.5 MB for 1 KiB records (test/functions/request-counts.test.ts). Whatever
 * the records, a fetch answer keeps within MAX_RESPONSE_BYTES (src/http/answer-limit.ts).
 */
export const LAMBDA_PAYLOAD_LIMITS = {
  MAX_REQUEST_BYTES: String(4 * 1024 * 1024),
  MAX_FETCH_BYTES: String(1024 * 1024),
  MAX_RESPONSE_BYTES: String(6_000_000),
};

/**
 * The functions that deliver triggers (src/triggers): the scheduler, each run (the Kafka listener's
 * tasks also do, woken by their own commits). They invoke triggers' Lambda targets.
 */
export const TRIGGER_DELIVERERS = ['scheduler'] as const satisfies readonly DataFunctionName[];

/** The functions that commit to partitions, and so post to the push connections armed on them. */
export const PUSH_POSTERS = ['produce', 'admin', 'scheduler'] as const satisfies readonly DataFunctionName[];

export interface LogStackProps extends StackProps {
  config: LogStackConfig;
}

export class LogStack extends Stack {
  readonly stores: ReplicaStores;
  readonly table: dynamodb.Table;
  readonly functions: LogFunctions;
  /** The HTTP API (apiFlavor=http) or the REST API (apiFlavor=rest) in front of the functions. */
  readonly api: LogHttpApi | LogRestApi;
  /** Where idle consumers wait (API Gateway v2 WebSocket): with apiFlavor=http only. */
  readonly pushApi?: PushApi;
  /** The heartbeat function's URL (authMode=iam): group heartbeats without an API Gateway request. */
  readonly heartbeatUrl?: lambda.FunctionUrl;
  readonly monitoring: Monitoring;
  readonly clusterId: string;
  /**
   * The roles that invoke triggers' Lambda targets (the deliverers', the Kafka listener's task role):
   * what a KafkaLogTrigger in another stack names in its function's permission (infra/log-trigger.ts).
   */
  readonly triggerInvokerRoles: iam.IRole[] = [];

  constructor(scope: Construct, id: string, props: LogStackProps) {
    super(scope, id, props);
    const { config } = props;
    this.clusterId = config.clusterId;
    const removalPolicy = config.retainData ? RemovalPolicy.RETAIN : RemovalPolicy.DESTROY;

    this.stores = new ReplicaStores(this, 'ReplicaStores', {
      standardBuckets: config.replicaStores,
      expressOneZoneAzIds: config.expressOneZoneAzIds,
      retainData: config.retainData,
    });

    // The key schema of src/storage/dynamodb-metadata-store.ts; every write is one conditional
    // UpdateItem, so on-demand capacity is the only mode that costs nothing while idle.
    this.table = new dynamodb.Table(this, 'Metadata', {
      partitionKey: { name: 'pk', type: dynamodb.AttributeType.STRING },
      sortKey: { name: 'sk', type: dynamodb.AttributeType.STRING },
      billingMode: dynamodb.BillingMode.PAY_PER_REQUEST,
      // Items written with an expiry (push subscriptions) carry it in `ttl` (TTL_ATTRIBUTE of the
      // DynamoDB adapter); DynamoDB deletes them some time after, at no write cost. Readers skip
      // expired items before that.
      timeToLiveAttribute: 'ttl',
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
      deletionProtection: config.deletionProtection,
      removalPolicy,
    });

    if (
      config.security.authorization &&
      config.security.superUsers.length === 0 &&
      !config.security.allowEveryoneIfNoAclFound
    ) {
      Annotations.of(this).addWarningV2(
        's3-kafka-log:no-super-users',
        'authorization is on and no superUsers are set: no principal can create the first ACL (set -c superUsers=User:<your IAM role ARN>)',
      );
    }

    this.functions = new LogFunctions(this, 'Functions', {
      environment: {
        STORAGE_BACKEND: 'aws',
        BUCKETS: this.stores.bucketNames.join(','),
        TABLE_NAME: this.table.tableName,
        CLUSTER_ID: config.clusterId,
        SERVICE_NAME: this.stackName,
        METRICS_NAMESPACE,
        ...LAMBDA_PAYLOAD_LIMITS,
        AUTHORIZATION: String(config.security.authorization),
        ALLOW_EVERYONE_IF_NO_ACL_FOUND: String(config.security.allowEveryoneIfNoAclFound),
        PRINCIPAL_CLAIM: config.security.principalClaim,
        ...(config.security.superUsers.length > 0 && { SUPER_USERS: config.security.superUsers.join(';') }),
      },
      logRetention: config.logRetention,
      removalPolicy,
      ...(config.auth.mode === 'apiKey' && { apiKeyDigests: config.auth.keyDigests }),
      ...(config.auth.mode === 'jwt' && {
        jwt: {
          issuer: config.auth.issuer,
          audiences: config.auth.audiences,
          principalClaim: config.security.principalClaim,
        },
      }),
      reservedConcurrency: config.reservedConcurrency,
    });

    for (const [name, fn] of Object.entries(this.functions.byName) as [
      DataFunctionName,
      LogFunctions['byName'][DataFunctionName],
    ][]) {
      const access = DATA_ACCESS[name];
      this.stores.grant(fn, access);
      // The SDK asks for ReadWrite sessions unless told otherwise, which a ReadOnly grant refuses.
      if (this.stores.directoryBuckets.length > 0 && expressSessionMode(access) === 'ReadOnly')
        fn.addEnvironment('S3_EXPRESS_SESSION_MODE', 'ReadOnly');
      fn.addToRolePolicy(
        new iam.PolicyStatement({ actions: [...access.tableActions], resources: [this.table.tableArn] }),
      );
      if (access.objectActions.length > 0) {
        for (const id of this.stores.objectArnFindings()) {
          Validations.of(fn.role!).acknowledge({
            id,
            reason:
              `Objects are created under fresh keys per request, so object actions (${access.objectActions.join(', ')}) ` +
              "name every key of the stack's own replica buckets (bucket/*) and nothing else.",
          });
        }
      }
    }

    // Triggers' Lambda targets: the deliverers may invoke the functions the stack lists and no other
    // (none listed: no grant, and a Lambda target's invocations are refused and retried).
    const invokeTargets =
      config.triggerFunctionArns.length > 0
        ? new iam.PolicyStatement({ actions: ['lambda:InvokeFunction'], resources: config.triggerFunctionArns })
        : undefined;
    // Their on-failure destinations: the buckets, queues and topics the stack lists and no other.
    const failureDestinations = [
      ...failureDestinationStatements(config.triggerDestinationArns),
      ...destinationKeyStatements(config.triggerDestinationKeys),
    ];
    for (const name of TRIGGER_DELIVERERS) {
      const fn = this.functions.byName[name];
      this.triggerInvokerRoles.push(fn.role!);
      for (const statement of failureDestinations) fn.addToRolePolicy(statement);
      acknowledgeDestinationObjects(fn.role!, config.triggerDestinationArns);
      if (!invokeTargets) continue;
      fn.addToRolePolicy(invokeTargets);
      acknowledgeInvokePatterns(fn.role!, config.triggerFunctionArns);
    }

    const { scheduler, heartbeat, ...httpFunctions } = this.functions.byName;
    this.api =
      config.apiFlavor === 'rest'
        ? new LogRestApi(this, 'Rest', {
            apiName: this.stackName,
            stageName: config.stage,
            functions: httpFunctions,
            throttle: config.throttle,
            logRetention: config.logRetention,
            removalPolicy,
          })
        : new LogHttpApi(this, 'Http', {
            apiName: this.stackName,
            functions: httpFunctions,
            auth: config.auth,
            authorizerFunction: this.functions.authorizer,
            throttle: config.throttle,
            ...(config.dataRouteThrottle && { dataRouteThrottle: config.dataRouteThrottle }),
            logRetention: config.logRetention,
            removalPolicy,
          });

    // A WebSocket API is API Gateway v2, which the REST flavor exists to avoid (LocalStack's free
    // plan): there consumers poll with the idle back-off.
    if (config.apiFlavor === 'http') {
      this.pushApi = new PushApi(this, 'Push', {
        apiName: this.stackName,
        pushFunction: this.functions.byName.push,
        auth: config.auth,
        authorizerFunction: this.functions.authorizer,
        throttle: config.throttle,
      });
      // Commits notify the connections armed on their partitions, wherever they are made: records
      // (produce), transaction markers (admin: commit and abort; the scheduler: timed-out
      // transactions) and the Kafka listener below (every kind).
      for (const name of PUSH_POSTERS) this.pushApi.grantPost(this.functions.byName[name]);
    }

    // An idle member heartbeats every 5 s: on the HTTP API that is $0.52 a month in requests alone.
    // A function URL has no request charge. It authenticates with IAM (SigV4, service `lambda`),
    // as the HTTP API does by default; it has no JWT or Lambda authorizer, so in those modes
    // heartbeats stay on the API (the same route reaches the admin function there). Like the push
    // API, only with apiFlavor=http: the REST flavor is for LocalStack's free plan, which has the
    // resource types of infra/localstack-free-plan.ts only.
    if (config.auth.mode === 'iam' && config.apiFlavor === 'http') {
      this.heartbeatUrl = heartbeat.addFunctionUrl({ authType: lambda.FunctionUrlAuthType.AWS_IAM });
      new CfnOutput(this, 'HeartbeatUrl', {
        value: this.heartbeatUrl.url,
        description: "Where consumers send group heartbeats (the client's heartbeatUrl)",
      });
    }

    const rate = Duration.minutes(config.schedulerRateMinutes);
    new events.Rule(this, 'SchedulerSchedule', {
      description: `Runs scheduled maintenance every ${config.schedulerRateMinutes} minute(s)`,
      schedule: events.Schedule.rate(rate),
      targets: [
        new targets.LambdaFunction(this.functions.byName.scheduler, {
          retryAttempts: 0,
          maxEventAge: Duration.seconds(Math.max(60, rate.toSeconds())),
        }),
      ],
    });

    this.monitoring = new Monitoring(this, 'Monitoring', {
      dashboardName: this.stackName,
      namespace: METRICS_NAMESPACE,
      service: this.stackName,
      functions: {
        ...httpFunctions,
        ...(this.heartbeatUrl && { heartbeat }),
        ...(this.functions.authorizer && { authorizer: this.functions.authorizer }),
      },
      scheduler,
      schedulerRateMinutes: config.schedulerRateMinutes,
      api: this.api instanceof LogRestApi ? this.api.api : this.api.stage,
      table: this.table,
      buckets: this.stores.buckets,
      requestMetricsFilterId: REQUEST_METRICS_FILTER_ID,
      alarmEmail: config.alarmEmail,
      ...(config.triggerLagAlarm && { triggerLagAlarm: config.triggerLagAlarm }),
    });

    // Every function of the stack (the CDK's own custom-resource providers too) on the configured
    // runtime, where it is not the default: LocalStack's images lag AWS's runtimes.
    const runtime = config.lambdaRuntime;
    if (runtime !== RUNTIME.name) {
      Aspects.of(this).add({
        visit: (node) => {
          if (node instanceof CfnResource && node.cfnResourceType === 'AWS::Lambda::Function')
            node.addPropertyOverride('Runtime', runtime);
        },
      });
    }

    new CfnOutput(this, 'ApiUrl', { value: this.api.url, description: 'Base URL of the v3 API (append v3/clusters)' });
    if (this.pushApi)
      new CfnOutput(this, 'PushUrl', {
        value: this.pushApi.url,
        description: "The consumers' push WebSocket URL (the client's pushUrl)",
      });
    new CfnOutput(this, 'ClusterId', {
      value: config.clusterId,
      description: 'The cluster id in /v3/clusters/{cluster_id}',
    });
    new CfnOutput(this, 'TableName', {
      value: this.table.tableName,
      description: 'DynamoDB metadata table (TABLE_NAME)',
    });
    new CfnOutput(this, 'BucketNames', {
      value: this.stores.bucketNames.join(','),
      description: 'Replica buckets in replica-id order (BUCKETS)',
    });
    new CfnOutput(this, 'DashboardName', { value: this.monitoring.dashboard.dashboardName });
    new CfnOutput(this, 'MetricsService', {
      value: this.stackName,
      description: `The Service dimension of the log's metrics in namespace ${METRICS_NAMESPACE} (KafkaLog.fromStackOutputs, for a trigger's lag alarm)`,
    });
    new CfnOutput(this, 'AlarmTopicArn', {
      value: this.monitoring.alarmTopic.topicArn,
      description: 'Subscribe to get alarm notifications',
    });

    if (config.kafkaListener) {
      const kafka = new KafkaListener(this, 'KafkaListener', {
        stores: this.stores,
        table: this.table,
        clusterId: config.clusterId,
        ...config.kafkaListener,
        logRetention: config.logRetention,
        removalPolicy,
        metrics: { namespace: METRICS_NAMESPACE, service: this.stackName, alarmTopic: this.monitoring.alarmTopic },
      });
      this.pushApi?.grantPost(kafka.service.taskDefinition.taskRole);
      this.triggerInvokerRoles.push(kafka.service.taskDefinition.taskRole);
      for (const statement of failureDestinations)
        kafka.service.taskDefinition.taskRole.addToPrincipalPolicy(statement);
      acknowledgeDestinationObjects(kafka.service.taskDefinition.taskRole, config.triggerDestinationArns);
      if (invokeTargets) {
        kafka.service.taskDefinition.taskRole.addToPrincipalPolicy(invokeTargets);
        acknowledgeInvokePatterns(kafka.service.taskDefinition.taskRole, config.triggerFunctionArns);
      }
      new CfnOutput(this, 'KafkaBootstrap', {
        value: `${config.kafkaListener.hostName}:${KAFKA_TLS_PORT}`,
        description: 'bootstrap.servers for Kafka clients (security.protocol=SSL)',
      });
      new CfnOutput(this, 'KafkaLoadBalancerDns', {
        value: kafka.loadBalancer.loadBalancerDnsName,
        description: 'Point kafkaHostName at this name (CNAME or alias)',
      });
    }
    new CfnOutput(this, 'TriggerInvokerRoleArns', {
      value: this.triggerInvokerRoles.map((r) => r.roleArn).join(','),
      description: "The roles that invoke triggers' functions (KafkaLog.fromStackOutputs, docs/triggers.md)",
    });
  }
}

/**
 * What each on-failure destination takes, as Lambda's execution role needs it: s3:PutObject on the
 * bucket's objects, sqs:SendMessage on the queue, sns:Publish on the topic (one statement per action).
 */
function failureDestinationStatements(arns: readonly string[]): iam.PolicyStatement[] {
  const grants = [
    { service: 's3', action: 's3:PutObject', resource: (arn: string) => `${arn}/*` },
    { service: 'sqs', action: 'sqs:SendMessage', resource: (arn: string) => arn },
    { service: 'sns', action: 'sns:Publish', resource: (arn: string) => arn },
  ];
  return grants.flatMap(({ service, action, resource }) => {
    const resources = arns.filter((arn) => arn.split(':')[2] === service).map(resource);
    return resources.length > 0 ? [new iam.PolicyStatement({ actions: [action], resources })] : [];
  });
}

/** A failure record's key is new per give-up, so the grant names every key of the buckets the operator listed. */
function acknowledgeDestinationObjects(role: IConstruct, arns: readonly string[]): void {
  for (const arn of arns.filter((a) => a.split(':')[2] === 's3'))
    Validations.of(role).acknowledge({
      id: wildcardResourceFinding(role, `${arn}/*`),
      reason:
        "triggerDestinationArns names the buckets triggers' failure records go to; each give-up writes a new key in them",
    });
}

/** A pattern in triggerFunctionArns is the operator's own choice of functions: cdk-nag's wildcard finding, acknowledged. */
function acknowledgeInvokePatterns(role: IConstruct, arns: readonly string[]): void {
  for (const arn of arns.filter((a) => a.includes('*')))
    Validations.of(role).acknowledge({
      id: wildcardResourceFinding(role, arn),
      reason: "triggerFunctionArns names the functions triggers may invoke; a pattern in it is the deployment's choice",
    });
}
