/** `-c kafkaListener=true`: the Kafka listener on Fargate behind a TLS NLB, on the stack's buckets and table. */
import { Match } from 'aws-cdk-lib/assertions';
import { describe, expect, it } from 'vitest';
import { stackConfig } from '../../infra/stack-config.js';
import { synthStack } from './synth.js';

const context = {
  kafkaListener: 'true',
  kafkaCertificateArn: 'arn:aws:acm:us-east-1:123456789012:certificate/abc',
  kafkaHostName: 'kafka.example.com',
};

describe('the Kafka listener service', () => {
  it('is off by default, and needs a certificate and a host name when on', () => {
    expect(stackConfig(() => undefined).kafkaListener).toBeUndefined();
    expect(() => stackConfig((k) => ({ kafkaListener: 'true' })[k])).toThrow(/kafkaCertificateArn and kafkaHostName/);
    expect(stackConfig((k) => (context as Record<string, string>)[k]).kafkaListener).toEqual({
      certificateArn: context.kafkaCertificateArn,
      hostName: 'kafka.example.com',
      maxTasks: 4,
    });
  });

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
