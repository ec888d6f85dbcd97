/** `-c kafkaListener=true`: the Kafka listener on Fargate behind a TLS NLB, on the stack's buckets and table. */
import { Match } from 'aws-cdk-lib/assertions';
import { describe, expect, it } from 'vitest';
import { budgetedMiB, TASK_BUDGET } from '../../infra/kafka-listener.js';
import { stackConfig } from '../../infra/stack-config.js';
import { synthStack } from './synth.js';

const SECRET = 'arn:aws:secretsmanager:us-east-1:123456789012:secret:kafka-tls-AbCdEf';
const context = {
  kafkaListener: 'true',
  kafkaCertificateArn: 'arn:aws:acm:us-east-1:123456789012:certificate/abc',
  kafkaHostName: 'kafka.example.com',
};

describe('the Kafka listener service', () => {
  it('is off by default, and needs a certificate and a host name when on', () => {
    expect(stackConfig(() => undefined).kafkaListener).toBeUndefined();
    expect(() => stackConfig((k) => ({ kafkaListener: 'true' })[k])).toThrow(
      /kafkaCertificateArn \(or kafkaTlsSecretArn\) and kafkaHostName/,
    );
    expect(stackConfig((k) => (context as Record<string, string>)[k]).kafkaListener).toEqual({
      tls: { at: 'nlb', certificateArn: context.kafkaCertificateArn },
      hostName: 'kafka.example.com',
      maxTasks: 4,
      saslMechanisms: [],
    });
    const of = (extra: Record<string, string>) => () =>
      stackConfig((k) => ({ ...context, kafkaCertificateArn: undefined, ...extra })[k]).kafkaListener;
    expect(
      of({ kafkaTlsSecretArn: SECRET, kafkaClientAuth: 'required', kafkaSaslMechanisms: 'SCRAM-SHA-512' })(),
    ).toEqual({
      tls: { at: 'task', secretArn: SECRET, clientAuth: 'required' },
      hostName: 'kafka.example.com',
      maxTasks: 4,
      saslMechanisms: ['SCRAM-SHA-512'],
    });
    expect(of({ kafkaCertificateArn: context.kafkaCertificateArn, kafkaClientAuth: 'required' })).toThrow(
      /needs kafkaTlsSecretArn/,
    );
    expect(of({ kafkaTlsSecretArn: SECRET, kafkaCertificateArn: context.kafkaCertificateArn })).toThrow(/not both/);
    expect(of({ kafkaTlsSecretArn: 'arn:aws:secretsmanager:us-east-1:123456789012:secret:kafka-tls' })).toThrow(
      /complete ARN/,
    );
    expect(of({ kafkaTlsSecretArn: SECRET, kafkaSaslMechanisms: 'PLAIN' })).toThrow(/SCRAM-SHA-256 and SCRAM-SHA-512/);
  });

  it('with kafkaTlsSecretArn: TLS at the tasks from the secret (mutual TLS, SCRAM), the NLB passing TCP through', () => {
    const s = synthStack(
      {
        ...context,
        kafkaCertificateArn: '',
        kafkaTlsSecretArn: SECRET,
        kafkaClientAuth: 'required',
        kafkaPrincipalMappingRules: 'RULE:^CN=([^,]+),.*$/$1/L,DEFAULT',
        kafkaSaslMechanisms: 'SCRAM-SHA-512,SCRAM-SHA-256',
      },
      { bundle: false, cfnValidation: false, nag: true },
    );
    try {
      const t = s.template;
      t.hasResourceProperties('AWS::ElasticLoadBalancingV2::Listener', { Port: 9094, Protocol: 'TCP' });
      const secret = (field: string) => `${SECRET}:${field}::`;
      t.hasResourceProperties('AWS::ECS::TaskDefinition', {
        ContainerDefinitions: [
          Match.objectLike({
            Environment: Match.arrayWith([
              { Name: 'KAFKA_SASL_ENABLED_MECHANISMS', Value: 'SCRAM-SHA-512,SCRAM-SHA-256' },
              { Name: 'KAFKA_SSL_CLIENT_AUTH', Value: 'required' },
              { Name: 'KAFKA_SSL_PRINCIPAL_MAPPING_RULES', Value: 'RULE:^CN=([^,]+),.*$/$1/L,DEFAULT' },
            ]),
            Secrets: [
              { Name: 'KAFKA_SSL_CERTIFICATE', ValueFrom: secret('certificate') },
              { Name: 'KAFKA_SSL_KEY', ValueFrom: secret('key') },
              { Name: 'KAFKA_SSL_TRUSTSTORE_CERTIFICATES', ValueFrom: secret('truststore') },
            ],
          }),
        ],
      });
      // The execution role reads the secret (ECS fetches it before the container starts).
      t.hasResourceProperties('AWS::IAM::Policy', {
        PolicyDocument: {
          Statement: Match.arrayWith([
            Match.objectLike({
              // Sorted, as cdk.json's @aws-cdk/aws-iam:minimizePolicies writes them.
              Action: ['secretsmanager:DescribeSecret', 'secretsmanager:GetSecretValue'],
              Resource: SECRET,
            }),
          ]),
        },
      });
    } finally {
      s.cleanup();
    }
  }, 60_000);

  it('runs Fargate tasks on the aws backend behind a TLS listener, scaling on CPU, with no unacknowledged cdk-nag finding', () => {
    const s = synthStack(context, { bundle: false, cfnValidation: false, nag: true });
    try {
      const t = s.template;
      t.hasResourceProperties('AWS::ElasticLoadBalancingV2::Listener', {
        Port: 9094,
        Protocol: 'TLS',
        Certificates: [{ CertificateArn: context.kafkaCertificateArn }],
      });
      t.hasResourceProperties('AWS::ECS::TaskDefinition', {
        ContainerDefinitions: [
          Match.objectLike({
            PortMappings: [{ ContainerPort: 9092, Protocol: 'tcp' }],
            Environment: Match.arrayWith([
              { Name: 'STORAGE_BACKEND', Value: 'aws' },
              { Name: 'KAFKA_HOST', Value: '0.0.0.0' },
              { Name: 'KAFKA_ADVERTISED_HOST', Value: 'kafka.example.com:9094' },
            ]),
          }),
        ],
      });
      t.hasResourceProperties('AWS::ApplicationAutoScaling::ScalingPolicy', {
        TargetTrackingScalingPolicyConfiguration: Match.objectLike({
          TargetValue: 60,
          PredefinedMetricSpecification: { PredefinedMetricType: 'ECSServiceAverageCPUUtilization' },
        }),
      });
      t.hasResourceProperties('AWS::ApplicationAutoScaling::ScalableTarget', { MinCapacity: 1, MaxCapacity: 4 });
      t.resourceCountIs('AWS::EC2::NatGateway', 0);
      t.hasOutput('KafkaBootstrap', { Value: 'kafka.example.com:9094' });
    } finally {
      s.cleanup();
    }
  }, 60_000);

  it('sizes each task for its limits against hostile clients, publishes the metrics and alarms on refused connections', () => {
    // The pool, the connections' own buffers and the rest fit in the task's memory, with room to spare.
    expect(budgetedMiB()).toBeLessThan(TASK_BUDGET.taskMemoryMiB * 0.8);
    const s = synthStack(context, { bundle: false, cfnValidation: false });
    try {
      const t = s.template;
      t.hasResourceProperties('AWS::ECS::TaskDefinition', {
        Memory: String(TASK_BUDGET.taskMemoryMiB),
        ContainerDefinitions: [
          Match.objectLike({
            Environment: Match.arrayWith([
              { Name: 'KAFKA_QUEUED_MAX_REQUEST_BYTES', Value: String(512 * 1024 * 1024) },
              { Name: 'KAFKA_MAX_CONNECTIONS', Value: '2000' },
              { Name: 'KAFKA_MAX_CONNECTIONS_PER_IP', Value: '100' },
              { Name: 'KAFKA_MAX_CONNECTION_CREATION_RATE', Value: '100' },
              { Name: 'METRICS_INTERVAL_MS', Value: '60000' },
              { Name: 'METRICS_NAMESPACE', Value: 'S3KafkaLog' },
            ]),
          }),
        ],
      });
      const alarms = t.findResources('AWS::CloudWatch::Alarm', {
        Properties: { MetricName: 'KafkaConnectionsRefused', Namespace: 'S3KafkaLog' },
      });
      const [alarm] = Object.values(alarms) as { Properties: Record<string, unknown> }[];
      expect(alarm?.Properties).toMatchObject({
        Statistic: 'Sum',
        Threshold: 1,
        ComparisonOperator: 'GreaterThanOrEqualToThreshold',
        TreatMissingData: 'notBreaching',
        Dimensions: [{ Name: 'Service', Value: expect.anything() }],
      });
      // Its notifications go to the stack's alarm topic.
      const topics = Object.keys(t.findResources('AWS::SNS::Topic'));
      expect(topics).toHaveLength(1);
      expect(alarm?.Properties.AlarmActions).toEqual([{ Ref: topics[0] }]);
    } finally {
      s.cleanup();
    }
  }, 60_000);

  it('adds nothing when off', () => {
    const s = synthStack({}, { bundle: false, cfnValidation: false });
    try {
      s.template.resourceCountIs('AWS::ECS::Service', 0);
      s.template.resourceCountIs('AWS::ElasticLoadBalancingV2::LoadBalancer', 0);
    } finally {
      s.cleanup();
    }
  }, 60_000);
});
