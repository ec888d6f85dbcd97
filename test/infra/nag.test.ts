/**
 * cdk-nag's AwsSolutions pack over the stack, as CDK policy validation: a finding that is neither
 * fixed nor acknowledged (with its reason, next to the resource in infra/) fails the synth.
 * Functions are not bundled here: no rule looks inside a bundle.
 */
import { App, Stack, Validations } from 'aws-cdk-lib';
import * as s3 from 'aws-cdk-lib/aws-s3';
import { AwsSolutionsChecks } from 'cdk-nag';
import { describe, expect, it } from 'vitest';
import { synthStack } from './synth.js';

const quick = { bundle: false, cfnValidation: false, nag: true } as const;

describe('cdk-nag AwsSolutions', () => {
  // Controls: the pack really runs in this setup, and an acknowledgement really silences a finding.
  const control = (acknowledge: boolean) => {
    const app = new App({ builtinCloudFormationValidation: false });
    const bucket = new s3.Bucket(new Stack(app, 'Control'), 'Plain', { enforceSSL: true });
    if (acknowledge) Validations.of(bucket).acknowledge({ id: 'AwsSolutions-S1', reason: 'control' });
    Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
    app.synth();
  };
  it('control: an unacknowledged finding fails the synth', () =>
    expect(() => control(false)).toThrow(/server access logs/));
  it('control: the acknowledged finding does not', () => expect(() => control(true)).not.toThrow());

  // Every flavour the stack offers (REST takes IAM auth only: stack-config.ts), each synthesized
  // as `cdk synth` runs the app: with no AWS environment at all (an environment-agnostic stack:
  // account and region are CloudFormation's pseudo parameters), and with an account and region
  // (as `cdk deploy` runs it; cdk.json's partition literals then make the partition `aws`).
  const JWT = { authMode: 'jwt', jwtIssuer: 'https://issuer.example.com', jwtAudience: 'clients' };
  const API_KEY = { authMode: 'apiKey', apiKeySha256: 'b'.repeat(64) };
  const EXPRESS = { replicaStores: 2, expressOneZoneAzIds: 'use1-az4,use1-az6' };
  const LISTENER = {
    kafkaListener: true,
    kafkaCertificateArn: 'arn:aws:acm:us-east-1:123456789012:certificate/abc',
    kafkaHostName: 'kafka.example.com',
  };
  const FLAVOURS: [string, Record<string, unknown>][] = [
    ['HTTP API, S3 Standard, IAM', {}],
    ['HTTP API, S3 Standard, API key', API_KEY],
    ['HTTP API, S3 Standard, JWT', JWT],
    ['HTTP API, S3 Standard + Express, IAM', EXPRESS],
    ['HTTP API, S3 Express only, API key', { ...API_KEY, replicaStores: 0, expressOneZoneAzIds: 'use1-az4' }],
    [
      'HTTP API, S3 Standard + Express, JWT, data not retained, alarm email',
      { ...JWT, ...EXPRESS, retainData: false, alarmEmail: 'ops@example.com' },
    ],
    ['HTTP API, Kafka listener', LISTENER],
    [
      "HTTP API, Kafka listener, triggers' functions by ARN and by pattern, S3, SQS and SNS failure destinations, SSE-KMS keys",
      {
        ...LISTENER,
        triggerFunctionArns:
          'arn:aws:lambda:eu-west-1:210987654321:function:orders-consumer,arn:aws:lambda:*:210987654321:function:audit-*',
        triggerDestinationArns:
          'arn:aws:s3:::orders-failures,arn:aws:sqs:eu-west-1:210987654321:orders-failures,arn:aws:sns:eu-west-1:210987654321:orders-failures',
        triggerDestinationKeys:
          'arn:aws:sqs:eu-west-1:210987654321:orders-failures=arn:aws:kms:eu-west-1:210987654321:key/1234abcd-12ab-34cd-56ef-1234567890ab,arn:aws:s3:::orders-failures=arn:aws:kms:eu-west-1:210987654321:key/1234abcd-12ab-34cd-56ef-1234567890ac',
      },
    ],
    ['REST API, S3 Standard, IAM', { apiFlavor: 'rest' }],
    ['REST API, S3 Standard + Express, IAM', { apiFlavor: 'rest', ...EXPRESS }],
    ['the local stage: REST API, nodejs22.x, data not retained', { stage: 'local', retainData: false }],
  ];
  const ENVS: [string, { account?: string; region?: string }][] = [
    ['no AWS environment', {}],
    ['an account and region', { account: '210987654321', region: 'eu-west-1' }],
  ];
  it.each(FLAVOURS.flatMap(([name, context]) => ENVS.map(([e, env]) => [name, e, context, env] as const)))(
    'no unacknowledged findings: %s, with %s',
    (_name, _env, context, env) => {
      const s = synthStack(context, { ...quick, env });
      s.cleanup();
    },
  );

  it('acknowledgements all carry reasons', () => {
    const s = synthStack({ retainData: false }, quick);
    try {
      const acks = s.stack.node
        .findAll()
        .flatMap((c) => c.node.metadata.filter((m) => m.type === Validations.ACKNOWLEDGED_RULES_METADATA_KEY))
        .flatMap((m) => Object.entries(m.data as Record<string, string>));
      expect(acks.map(([id]) => id.replace(/^Annotation::/, '').replace(/\[.*$/, '')).sort()).toEqual([
        'AwsSolutions-APIG1', // push stage: no access logs (they need the account-wide role)
        'AwsSolutions-APIG4', // push subscribe and ping: authorized on $connect
        'AwsSolutions-APIG4',
        'AwsSolutions-IAM5', // bucket/* for each function's object actions
        'AwsSolutions-IAM5',
        'AwsSolutions-IAM5',
        'AwsSolutions-IAM5',
        'AwsSolutions-IAM5', // POST @connections/* of the push stage, for produce, admin and the scheduler
        'AwsSolutions-IAM5',
        'AwsSolutions-IAM5',
        'AwsSolutions-S1', // no server access logs
        'AwsSolutions-SNS2', // alarm topic without a CMK
      ]);
      for (const [id, reason] of acks) expect(reason.length, id).toBeGreaterThan(40);
    } finally {
      s.cleanup();
    }
  });
});
