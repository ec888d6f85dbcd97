/**
 * The Kafka protocol listener as an optional stateless service (`-c kafkaListener=true`): Fargate
 * tasks running src/server.ts on the aws backend (the stack's buckets and table), behind a Network
 * Load Balancer, scaling on CPU. TLS ends at the NLB (an ACM certificate), or at the tasks (PEM from
 * a Secrets Manager secret, given to the container as secret environment variables; the NLB passes
 * TCP through), which is what mutual TLS needs: an NLB TLS listener asks for no client certificate.
 * SASL/SCRAM credentials are the table's, so any task authenticates any user. Tasks keep no
 * state of their own: any task serves any partition and any group, as the Lambdas do (every change
 * is a conditional write). The scheduler stays the stack's Lambda. Costs: docs/cost-model.md.
 * Each task is sized for the limits it is given against hostile clients (TASK_BUDGET, docs/security.md)
 * and publishes its connection metrics as EMF lines; refused connections raise an alarm.
 */
import { Duration, type RemovalPolicy, Stack, Validations } from 'aws-cdk-lib';
import * as acm from 'aws-cdk-lib/aws-certificatemanager';
import * as cw from 'aws-cdk-lib/aws-cloudwatch';
import { SnsAction } from 'aws-cdk-lib/aws-cloudwatch-actions';
import type * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as ec2 from 'aws-cdk-lib/aws-ec2';
import { Platform } from 'aws-cdk-lib/aws-ecr-assets';
import * as ecs from 'aws-cdk-lib/aws-ecs';
import * as elbv2 from 'aws-cdk-lib/aws-elasticloadbalancingv2';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as logs from 'aws-cdk-lib/aws-logs';
import * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import type * as sns from 'aws-cdk-lib/aws-sns';
import { Construct } from 'constructs';
import { join } from 'node:path';
import { DATA_ACCESS, type DataAccess } from './data-access.js';
import type { KafkaListenerTls } from './stack-config.js';
import type { ReplicaStores } from './replica-stores.js';

export interface KafkaListenerProps {
  stores: ReplicaStores;
  table: dynamodb.Table;
  clusterId: string;
  tls: KafkaListenerTls;
  /** sasl.enabled.mechanisms (SCRAM): a connection must authenticate. */
  saslMechanisms: readonly string[];
  /** The name clients use (the certificate's); Metadata advertises it. Point it at the NLB (CNAME). */
  hostName: string;
  maxTasks: number;
  logRetention: logs.RetentionDays;
  removalPolicy: RemovalPolicy;
  /** The stack's EMF namespace and Service dimension (the functions' own), and where alarms go. */
  metrics: { namespace: string; service: string; alarmTopic: sns.ITopic };
}

const MiB = 1024 * 1024;
/**
 * One task's memory, by what holds it under attack (docs/security.md), and the limits that bound
 * each part: the Kafka pool (queued.max.request.bytes) for requests read and not answered; per
 * connection (max.connections of them) its unpooled allowance, read-ahead and socket buffers, some
 * 192 KiB; the localhost HTTP server's small body pool; request objects held for acks=0/1 work
 * (MAX_BACKGROUND_BYTES); node, the SDK and the caches. The sum stays under the task's memory with
 * room for what is not pooled (answers being written: a fetch answer is at most max.bytes per connection).
 */
export const TASK_BUDGET = {
  taskMemoryMiB: 2048,
  queuedMaxRequestBytes: 512 * MiB,
  maxConnections: 2000,
  perConnectionBytes: 192 * 1024,
  maxConnectionsPerIp: 100,
  maxConnectionCreationRate: 100,
  httpQueuedMaxRequestBytes: 16 * MiB,
  httpMaxConnections: 64,
  backgroundBytes: 64 * MiB,
  processBytes: 300 * MiB,
} as const;

/** What the budget's parts add up to, in MiB (under taskMemoryMiB; a test holds it there). */
export const budgetedMiB = (b: typeof TASK_BUDGET = TASK_BUDGET): number =>
  (b.queuedMaxRequestBytes +
    b.maxConnections * b.perConnectionBytes +
    b.httpQueuedMaxRequestBytes +
    b.backgroundBytes +
    b.processBytes) /
  MiB;

/** The port clients connect to (TLS, on the load balancer or passed through to the tasks); tasks listen on 9092. */
export const KAFKA_TLS_PORT = 9094;
const TASK_PORT = 9092;

/** Everything the listener does: produce, fetch, admin and groups (the union of the functions' grants). */
const LISTENER_ACCESS: DataAccess = (() => {
  const union = (pick: (a: DataAccess) => readonly string[]) =>
    [...new Set(Object.values(DATA_ACCESS).flatMap(pick))].sort();
  return {
    objectActions: union((a) => a.objectActions),
    bucketActions: union((a) => a.bucketActions),
    tableActions: union((a) => a.tableActions),
  };
})();

export class KafkaListener extends Construct {
  readonly loadBalancer: elbv2.NetworkLoadBalancer;
  readonly service: ecs.FargateService;

  constructor(scope: Construct, id: string, props: KafkaListenerProps) {
    super(scope, id);
    // Public subnets only: no NAT gateway to pay for; S3 and DynamoDB through gateway endpoints.
    const vpc = new ec2.Vpc(this, 'Vpc', {
      maxAzs: 2,
      natGateways: 0,
      subnetConfiguration: [{ name: 'public', subnetType: ec2.SubnetType.PUBLIC }],
      gatewayEndpoints: {
        S3: { service: ec2.GatewayVpcEndpointAwsService.S3 },
        DynamoDB: { service: ec2.GatewayVpcEndpointAwsService.DYNAMODB },
      },
      flowLogs: {
        all: {
          destination: ec2.FlowLogDestination.toCloudWatchLogs(
            new logs.LogGroup(this, 'FlowLogs', { retention: props.logRetention, removalPolicy: props.removalPolicy }),
          ),
        },
      },
    });
    const cluster = new ecs.Cluster(this, 'Cluster', { vpc, containerInsightsV2: ecs.ContainerInsights.ENABLED });

    const { tls } = props;
    const secret =
      tls.at === 'task' ? secretsmanager.Secret.fromSecretCompleteArn(this, 'TlsSecret', tls.secretArn) : undefined;
    const task = new ecs.FargateTaskDefinition(this, 'Task', {
      cpu: 1024,
      memoryLimitMiB: TASK_BUDGET.taskMemoryMiB,
      runtimePlatform: {
        cpuArchitecture: ecs.CpuArchitecture.ARM64,
        operatingSystemFamily: ecs.OperatingSystemFamily.LINUX,
      },
    });
    task.addContainer('listener', {
      image: ecs.ContainerImage.fromAsset(join(import.meta.dirname, '..'), {
        file: 'infra/kafka-listener.Dockerfile',
        exclude: ['node_modules', 'cdk.out', '.data', 'test', 'bench', 'docs', '.git', 'functions', 'infra'],
        platform: Platform.LINUX_ARM64,
      }),
      portMappings: [{ containerPort: TASK_PORT }],
      environment: {
        STORAGE_BACKEND: 'aws',
        BUCKETS: props.stores.bucketNames.join(','),
        TABLE_NAME: props.table.tableName,
        CLUSTER_ID: props.clusterId,
        AWS_REGION: Stack.of(this).region,
        KAFKA_HOST: '0.0.0.0',
        KAFKA_PORT: String(TASK_PORT),
        KAFKA_ADVERTISED_HOST: `${props.hostName}:${KAFKA_TLS_PORT}`,
        // The HTTP API stays on API Gateway; inside the task it only answers on localhost.
        HOST: '127.0.0.1',
        KAFKA_QUEUED_MAX_REQUEST_BYTES: String(TASK_BUDGET.queuedMaxRequestBytes),
        KAFKA_MAX_CONNECTIONS: String(TASK_BUDGET.maxConnections),
        KAFKA_MAX_CONNECTIONS_PER_IP: String(TASK_BUDGET.maxConnectionsPerIp),
        KAFKA_MAX_CONNECTION_CREATION_RATE: String(TASK_BUDGET.maxConnectionCreationRate),
        HTTP_QUEUED_MAX_REQUEST_BYTES: String(TASK_BUDGET.httpQueuedMaxRequestBytes),
        HTTP_MAX_CONNECTIONS: String(TASK_BUDGET.httpMaxConnections),
        MAX_BACKGROUND_BYTES: String(TASK_BUDGET.backgroundBytes),
        METRICS_INTERVAL_MS: '60000',
        METRICS_NAMESPACE: props.metrics.namespace,
        SERVICE_NAME: props.metrics.service,
        ...(props.saslMechanisms.length > 0 ? { KAFKA_SASL_ENABLED_MECHANISMS: props.saslMechanisms.join(',') } : {}),
        ...(tls.at === 'task'
          ? {
              KAFKA_SSL_CLIENT_AUTH: tls.clientAuth,
              ...(tls.principalMappingRules ? { KAFKA_SSL_PRINCIPAL_MAPPING_RULES: tls.principalMappingRules } : {}),
            }
          : {}),
      },
      // The certificate and key (and the CAs of client certificates) reach the process as
      // environment variables ECS reads from the secret at start; the execution role may read it.
      ...(secret
        ? {
            secrets: {
              KAFKA_SSL_CERTIFICATE: ecs.Secret.fromSecretsManager(secret, 'certificate'),
              KAFKA_SSL_KEY: ecs.Secret.fromSecretsManager(secret, 'key'),
              ...(tls.at === 'task' && tls.clientAuth !== 'none'
                ? { KAFKA_SSL_TRUSTSTORE_CERTIFICATES: ecs.Secret.fromSecretsManager(secret, 'truststore') }
                : {}),
            },
          }
        : {}),
      logging: ecs.LogDrivers.awsLogs({
        streamPrefix: 'kafka',
        logGroup: new logs.LogGroup(this, 'Logs', {
          retention: props.logRetention,
          removalPolicy: props.removalPolicy,
        }),
      }),
    });
    props.stores.grant(task.taskRole, LISTENER_ACCESS);
    task.taskRole.addToPrincipalPolicy(
      new iam.PolicyStatement({ actions: [...LISTENER_ACCESS.tableActions], resources: [props.table.tableArn] }),
    );

    const securityGroup = new ec2.SecurityGroup(this, 'TaskSecurityGroup', {
      vpc,
      description: 'Kafka listener tasks: the load balancer forwards client connections (client IPs preserved)',
    });
    securityGroup.addIngressRule(ec2.Peer.anyIpv4(), ec2.Port.tcp(TASK_PORT), 'Kafka clients through the NLB');
    this.service = new ecs.FargateService(this, 'Service', {
      cluster,
      taskDefinition: task,
      desiredCount: 1,
      assignPublicIp: true, // to pull the image without a NAT gateway
      securityGroups: [securityGroup],
      circuitBreaker: { rollback: true },
      minHealthyPercent: 100,
    });
    const scaling = this.service.autoScaleTaskCount({ minCapacity: 1, maxCapacity: props.maxTasks });
    scaling.scaleOnCpuUtilization('Cpu', {
      targetUtilizationPercent: 60,
      scaleInCooldown: Duration.minutes(5),
      scaleOutCooldown: Duration.minutes(1),
    });

    // Any refused connection: a client turned away by max.connections, max.connections.per.ip,
    // max.connection.creation.rate or sasl.server.max.receive.size (the per-cause metrics say which).
    const refused = new cw.Alarm(this, 'ConnectionsRefused', {
      alarmDescription:
        'The Kafka listener refused connections (an attack, or limits too low for the clients: docs/security.md)',
      metric: new cw.Metric({
        namespace: props.metrics.namespace,
        metricName: 'KafkaConnectionsRefused',
        dimensionsMap: { Service: props.metrics.service },
        statistic: 'Sum',
        period: Duration.minutes(5),
      }),
      threshold: 1,
      evaluationPeriods: 1,
      comparisonOperator: cw.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      treatMissingData: cw.TreatMissingData.NOT_BREACHING,
    });
    refused.addAlarmAction(new SnsAction(props.metrics.alarmTopic));
    refused.addOkAction(new SnsAction(props.metrics.alarmTopic));

    this.loadBalancer = new elbv2.NetworkLoadBalancer(this, 'Nlb', {
      vpc,
      internetFacing: true,
      crossZoneEnabled: true,
    });
    const listener = this.loadBalancer.addListener(
      'Tls',
      tls.at === 'nlb'
        ? {
            port: KAFKA_TLS_PORT,
            protocol: elbv2.Protocol.TLS,
            certificates: [
              elbv2.ListenerCertificate.fromCertificateManager(
                acm.Certificate.fromCertificateArn(this, 'Certificate', tls.certificateArn),
              ),
            ],
            sslPolicy: elbv2.SslPolicy.TLS13_RES,
          }
        : { port: KAFKA_TLS_PORT, protocol: elbv2.Protocol.TCP }, // TLS (and client certificates) at the tasks
    );
    listener.addTargets('Tasks', {
      port: TASK_PORT,
      protocol: elbv2.Protocol.TCP,
      targets: [this.service],
      healthCheck: { protocol: elbv2.Protocol.TCP, interval: Duration.seconds(10) },
      deregistrationDelay: Duration.seconds(30),
    });

    const why = (id: string, reason: string, at: Construct = this) => Validations.of(at).acknowledge({ id, reason });
    why(
      'AwsSolutions-ELB2',
      "The NLB passes TLS connections through to the tasks; connection logs would duplicate the listener's own JSON logs at the cost of a bucket per stack.",
      this.loadBalancer,
    );
    why(
      'AwsSolutions-EC23',
      "Kafka clients connect from anywhere to the NLB, which preserves client IPs, so the tasks take port 9092 from any address; TLS ends at the NLB or at the tasks, SASL/SCRAM and mutual TLS are the listener's.",
      securityGroup,
    );
    why(
      'AwsSolutions-ECS2',
      'The environment holds bucket and table names, the advertised host and TLS settings: configuration; the TLS key comes from Secrets Manager as an ECS secret.',
      task,
    );
    why(
      'AwsSolutions-IAM5[Resource::*]',
      "The execution role pulls the image: ECR's GetAuthorizationToken takes no resource, so it is granted on * (as CDK grants it); the layer actions name the one repository.",
      task.obtainExecutionRole(),
    );
    for (const finding of props.stores.objectArnFindings()) {
      why(
        finding,
        `Objects are created under fresh keys per request, so the listener's object actions (${LISTENER_ACCESS.objectActions.join(', ')}) name every key of the stack's own replica buckets (bucket/*) and nothing else.`,
        task.taskRole,
      );
    }
  }
}
