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

  it.each([
    ['defaults', {}],
    [
      'everything on: 2 buckets + 2 directory buckets, API key, data not retained, alarm email',
      {
        replicaStores: 2,
        expressOneZoneAzIds: 'use1-az4,use1-az6',
        authMode: 'apiKey',
        apiKeySha256: 'b'.repeat(64),
        retainData: false,
        alarmEmail: 'ops@example.com',
      },
    ],
    ['JWT', { authMode: 'jwt', jwtIssuer: 'https://issuer.example.com', jwtAudience: 'clients' }],
    ['the local stage: REST API, nodejs22.x, data not retained', { stage: 'local', retainData: false }],
  ])('no unacknowledged findings: %s', (_name, context) => {
    const s = synthStack(context, quick);
    s.cleanup();
  });

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
        'AwsSolutions-IAM5', // @connections/* of the push stage, for produce
        'AwsSolutions-S1', // no server access logs
        'AwsSolutions-SNS2', // alarm topic without a CMK
      ]);
      for (const [id, reason] of acks) expect(reason.length, id).toBeGreaterThan(40);
    } finally {
      s.cleanup();
    }
  });
});
