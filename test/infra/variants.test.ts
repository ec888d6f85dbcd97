/**
 * Stack settings other than the defaults (synthesized without bundling: only the template's shape
 * matters here). Each variant is one synth.
 */
import type { LogHttpApi } from '../../infra/http-api.js';
import { Match } from 'aws-cdk-lib/assertions';
import { describe, expect, it } from 'vitest';
import { stackConfig } from '../../infra/stack-config.js';
import { logicalId, synthStack } from './synth.js';

const quick = { bundle: false, cfnValidation: false } as const;
/** The HTTP API's routes (the push WebSocket API's are checked in push-api.test.ts). */
const httpRoutes = (s: ReturnType<typeof synthStack>) =>
  Object.values(s.template.findResources('AWS::ApiGatewayV2::Route')).filter(
    (r) => r.Properties.ApiId.Ref === logicalId(s.stack, (s.stack.api as LogHttpApi).api),
  );
const DIGEST = 'a'.repeat(64);

describe('authorization modes', () => {
  it('jwt: a JWT authorizer with the issuer and audience on every route', () => {
    const s = synthStack(
      { authMode: 'jwt', jwtIssuer: 'https://issuer.example.com', jwtAudience: 'log-clients,admins' },
      quick,
    );
    try {
      s.template.hasResourceProperties('AWS::ApiGatewayV2::Authorizer', {
        AuthorizerType: 'JWT',
        IdentitySource: ['$request.header.Authorization'],
        JwtConfiguration: { Issuer: 'https://issuer.example.com', Audience: ['log-clients', 'admins'] },
      });
      for (const route of httpRoutes(s)) {
        expect(route.Properties.AuthorizationType).toBe('JWT');
      }
      // A function URL has no JWT authorizer: heartbeats stay on the API, and there is no URL to reach.
      s.template.resourceCountIs('AWS::Lambda::Url', 0);
      expect(s.template.findOutputs('HeartbeatUrl')).toEqual({});
    } finally {
      s.cleanup();
    }
  });

  it('apiKey: a Lambda authorizer on x-api-key that knows only the key digests', () => {
    const s = synthStack({ authMode: 'apiKey', apiKeySha256: DIGEST }, quick);
    try {
      const authorizer = s.stack.functions.authorizer!;
      s.template.hasResourceProperties('AWS::ApiGatewayV2::Authorizer', {
        AuthorizerType: 'REQUEST',
        IdentitySource: ['$request.header.x-api-key'],
        EnableSimpleResponses: true,
        AuthorizerResultTtlInSeconds: 300,
      });
      s.template.hasResourceProperties('AWS::Lambda::Function', {
        Architectures: ['arm64'],
        Environment: { Variables: { API_KEY_SHA256: DIGEST } },
      });
      for (const route of httpRoutes(s)) {
        expect(route.Properties.AuthorizationType).toBe('CUSTOM');
      }
      // The authorizer touches no data.
      const roleId = logicalId(s.stack, authorizer.role as any);
      const statements = Object.values(s.template.findResources('AWS::IAM::Policy'))
        .filter((p) => (p.Properties.Roles as any[]).some((r) => r.Ref === roleId))
        .flatMap((p) => p.Properties.PolicyDocument.Statement as any[]);
      expect(statements.flatMap((st) => [st.Action].flat()).filter((a: string) => !a.startsWith('logs:'))).toEqual([]);
    } finally {
      s.cleanup();
    }
  });
});

describe('replica stores', () => {
  it('three buckets and two S3 Express One Zone directory buckets, in replica order in BUCKETS', () => {
    const s = synthStack({ replicaStores: '3', expressOneZoneAzIds: 'use1-az4,use1-az5' }, quick);
    try {
      s.template.resourceCountIs('AWS::S3::Bucket', 3);
      const dirs = Object.values(s.template.findResources('AWS::S3Express::DirectoryBucket'));
      expect(dirs.map((d) => d.Properties.LocationName)).toEqual(['use1-az4', 'use1-az5']);
      for (const d of dirs) {
        expect(d.Properties).toMatchObject({
          DataRedundancy: 'SingleAvailabilityZone',
          LifecycleConfiguration: {
            Rules: [expect.objectContaining({ AbortIncompleteMultipartUpload: { DaysAfterInitiation: 1 } })],
          },
        });
        expect(d.DeletionPolicy).toBe('Retain');
      }
      const bucketRefs = s.stack.stores.buckets.map((b) => ({ Ref: logicalId(s.stack, b) }));
      const dirRefs = s.stack.stores.directoryBuckets.map((d) => ({ Ref: s.stack.getLogicalId(d) }));
      const env = Object.values(s.template.findResources('AWS::Lambda::Function'))[0]!.Properties.Environment.Variables;
      expect(env.BUCKETS).toEqual({
        'Fn::Join': ['', [bucketRefs[0], ',', bucketRefs[1], ',', bucketRefs[2], ',', dirRefs[0], ',', dirRefs[1]]],
      });
      s.template.hasResourceProperties('AWS::IAM::Policy', {
        PolicyDocument: {
          Statement: Match.arrayWith([
            Match.objectLike({
              Action: 's3express:CreateSession',
              Resource: s.stack.stores.directoryBuckets.map((d) => ({
                'Fn::GetAtt': [s.stack.getLogicalId(d), 'Arn'],
              })),
            }),
          ]),
        },
      });
    } finally {
      s.cleanup();
    }
  });

  it('retainData=false: buckets (emptied first), table and logs are deleted with the stack; no deletion protection', () => {
    const s = synthStack({ retainData: 'false' }, quick);
    try {
      for (const type of ['AWS::S3::Bucket', 'AWS::DynamoDB::Table', 'AWS::Logs::LogGroup']) {
        for (const r of Object.values(s.template.findResources(type))) expect(r.DeletionPolicy).toBe('Delete');
      }
      s.template.hasResourceProperties('AWS::DynamoDB::Table', { DeletionProtectionEnabled: false });
      s.template.resourceCountIs('Custom::S3AutoDeleteObjects', 1);
    } finally {
      s.cleanup();
    }
  });

  it('deletionProtection can be set apart from retainData', () => {
    const s = synthStack({ deletionProtection: false }, quick);
    try {
      s.template.hasResourceProperties('AWS::DynamoDB::Table', { DeletionProtectionEnabled: false });
      for (const r of Object.values(s.template.findResources('AWS::DynamoDB::Table')))
        expect(r.DeletionPolicy).toBe('Retain');
    } finally {
      s.cleanup();
    }
  });
});

describe('scheduler rate and alarm subscription', () => {
  it('rate, email subscription, stage name, cluster id and the trigger lag alarm come from context', () => {
    const pager = 'arn:aws:sns:us-east-1:123456789012:pager';
    const s = synthStack(
      {
        stage: 'prod',
        clusterId: 'main',
        schedulerRateMinutes: 5,
        alarmEmail: 'ops@example.com',
        triggerLagAlarmThreshold: '5000',
        triggerLagAlarmMinutes: 10,
        triggerLagAlarmTopicArns: pager,
      },
      quick,
    );
    try {
      // Every trigger's highest lag, per minute, for ten of them, to the alarm topic and the pager.
      const topic = { Ref: logicalId(s.stack, s.stack.monitoring.alarmTopic) };
      s.template.hasResourceProperties('AWS::CloudWatch::Alarm', {
        Namespace: 'S3KafkaLog',
        MetricName: 'TriggerOffsetLag',
        Dimensions: [{ Name: 'Service', Value: 'S3KafkaLog-prod' }],
        Statistic: 'Maximum',
        Period: 60,
        Threshold: 5000,
        EvaluationPeriods: 10,
        ComparisonOperator: 'GreaterThanOrEqualToThreshold',
        TreatMissingData: 'notBreaching',
        AlarmActions: [topic, pager],
        OKActions: [topic, pager],
      });
      expect(s.template.findOutputs('MetricsService').MetricsService!.Value).toBe('S3KafkaLog-prod');
      s.template.hasResourceProperties('AWS::Events::Rule', { ScheduleExpression: 'rate(5 minutes)' });
      s.template.hasResourceProperties('AWS::SNS::Subscription', { Protocol: 'email', Endpoint: 'ops@example.com' });
      s.template.hasResourceProperties('AWS::Lambda::Function', {
        Environment: { Variables: Match.objectLike({ CLUSTER_ID: 'main', SERVICE_NAME: 'S3KafkaLog-prod' }) },
      });
      expect(s.stack.stackName).toBe('S3KafkaLog-prod');
    } finally {
      s.cleanup();
    }
  });
});

describe('authorization and quotas', () => {
  it('ACLs on by default with the super users, allow-everyone and claim in every function; the data routes throttled on request', () => {
    const s = synthStack(
      {
        superUsers: 'User:arn:aws:iam::111122223333:role/Admin;User:ops',
        principalClaim: 'email',
        quotaRate: 50,
        quotaBurst: 80,
      },
      quick,
    );
    try {
      for (const fn of Object.values(s.stack.functions.byName)) {
        const env =
          s.template.toJSON().Resources[s.stack.getLogicalId(fn.node.defaultChild as never)].Properties.Environment
            .Variables;
        expect(env).toMatchObject({
          AUTHORIZATION: 'true',
          SUPER_USERS: 'User:arn:aws:iam::111122223333:role/Admin;User:ops',
          ALLOW_EVERYONE_IF_NO_ACL_FOUND: 'false',
          PRINCIPAL_CLAIM: 'email',
        });
      }
      const stage = Object.values(s.template.findResources('AWS::ApiGatewayV2::Stage')).find(
        (st) => st.Properties.StageName === '$default',
      )!;
      const routeSettings = stage.Properties.RouteSettings as Record<
        string,
        { ThrottlingRateLimit: number; ThrottlingBurstLimit: number }
      >;
      expect(Object.keys(routeSettings).sort()).toEqual([
        'GET /v3/clusters/{clusterId}/topics/{topicName}/partitions/{partitionId}/records',
        'POST /v3/clusters/{clusterId}/records',
        'POST /v3/clusters/{clusterId}/topics/{topicName}/partitions/{partitionId}/records',
        'POST /v3/clusters/{clusterId}/topics/{topicName}/{action}',
      ]);
      for (const r of Object.values(routeSettings))
        expect(r).toEqual({ ThrottlingRateLimit: 50, ThrottlingBurstLimit: 80 });
      const httpApiId = logicalId(s.stack, (s.stack.api as LogHttpApi).api);
      const routeIds = Object.entries(s.template.findResources('AWS::ApiGatewayV2::Route'))
        .filter(([, r]) => r.Properties.ApiId.Ref === httpApiId)
        .map(([id]) => id);
      expect(stage.DependsOn).toEqual(expect.arrayContaining(routeIds));
    } finally {
      s.cleanup();
    }
  });

  it('stage settings parse: authorization off, principals checked', () => {
    const ctx = (values: Record<string, unknown>) => (key: string) => values[key];
    expect(stackConfig(ctx({ authorization: 'false' })).security).toEqual({
      authorization: false,
      superUsers: [],
      allowEveryoneIfNoAclFound: false,
      principalClaim: 'sub',
    });
    expect(stackConfig(ctx({ superUsers: ['User:a', 'User:b'] })).security.superUsers).toEqual(['User:a', 'User:b']);
    expect(stackConfig(ctx({ stage: 'local' })).security.authorization).toBe(false);
    expect(() => stackConfig(ctx({ superUsers: 'alice' }))).toThrow(/superUsers/);
    expect(stackConfig(ctx({ authMode: 'apiKey', apiKeySha256: `ci=${DIGEST.toUpperCase()}` })).auth).toEqual({
      mode: 'apiKey',
      keyDigests: [`ci=${DIGEST}`],
    });
  });
});

describe('context validation', () => {
  const ctx = (values: Record<string, unknown>) => (key: string) => values[key];
  it('rejects settings that cannot deploy', () => {
    expect(() => stackConfig(ctx({ authMode: 'jwt' }))).toThrow(/jwtIssuer/);
    expect(() => stackConfig(ctx({ authMode: 'apiKey', apiKeySha256: 'secret' }))).toThrow(/SHA-256/);
    expect(() => stackConfig(ctx({ authMode: 'basic' }))).toThrow(/authMode/);
    expect(() => stackConfig(ctx({ replicaStores: 0 }))).toThrow(/At least one replica store/);
    expect(() => stackConfig(ctx({ expressOneZoneAzIds: 'us-east-1a' }))).toThrow(/AZ ids/);
    expect(() => stackConfig(ctx({ logRetentionDays: 31 }))).toThrow(/logRetentionDays/);
    expect(() => stackConfig(ctx({ retainData: 'yes' }))).toThrow(/retainData/);
    expect(() => stackConfig(ctx({ stage: 'Prod_1' }))).toThrow(/stage/);
    expect(() => stackConfig(ctx({ triggerLagAlarmThreshold: 0 }))).toThrow(/triggerLagAlarmThreshold/);
    expect(() => stackConfig(ctx({ triggerLagAlarmThreshold: 10, triggerLagAlarmMinutes: 0 }))).toThrow(
      /triggerLagAlarmMinutes/,
    );
    expect(() => stackConfig(ctx({ triggerLagAlarmTopicArns: 'arn:aws:sns:us-east-1:123456789012:t' }))).toThrow(
      /need triggerLagAlarmThreshold/,
    );
    expect(() =>
      stackConfig(
        ctx({ triggerLagAlarmThreshold: 10, triggerLagAlarmTopicArns: 'arn:aws:sqs:us-east-1:123456789012:q' }),
      ),
    ).toThrow(/triggerLagAlarmTopicArns/);
  });

  it('defaults: dev stage, one bucket, IAM auth, data retained and protected', () => {
    expect(stackConfig(ctx({}))).toMatchObject({
      stage: 'dev',
      clusterId: 'dev',
      replicaStores: 1,
      expressOneZoneAzIds: [],
      retainData: true,
      deletionProtection: true,
      auth: { mode: 'iam' },
      schedulerRateMinutes: 1,
      logRetention: 30,
    });
    expect(stackConfig(ctx({})).triggerLagAlarm).toBeUndefined(); // no lag alarm unless asked
    expect(stackConfig(ctx({ replicaStores: 0, expressOneZoneAzIds: ['use1-az4'] })).replicaStores).toBe(0);
  });
});

describe('S3 Express least privilege and reserved concurrency', () => {
  it('read-only sessions for the fetch function, read-write for writers; TLS-only directory buckets', () => {
    const s = synthStack({ expressOneZoneAzIds: 'use1-az4' }, quick);
    try {
      const sessionStatements = (fn: { role?: unknown }) => {
        const roleId = logicalId(s.stack, fn.role as any);
        return Object.values(s.template.findResources('AWS::IAM::Policy'))
          .filter((p) => (p.Properties.Roles as any[]).some((r) => r.Ref === roleId))
          .flatMap((p) => p.Properties.PolicyDocument.Statement as any[])
          .filter((st) => st.Action === 's3express:CreateSession');
      };
      const { fetch, produce, scheduler } = s.stack.functions.byName;
      expect(sessionStatements(fetch).map((st) => st.Condition)).toEqual([
        { StringEquals: { 's3express:SessionMode': 'ReadOnly' } },
      ]);
      for (const fn of [produce, scheduler])
        expect(sessionStatements(fn).map((st) => st.Condition)).toEqual([undefined]);
      s.template.hasResourceProperties('AWS::S3Express::BucketPolicy', {
        PolicyDocument: {
          Statement: [
            Match.objectLike({
              Effect: 'Deny',
              Action: 's3express:CreateSession',
              Condition: { Bool: { 'aws:SecureTransport': 'false' } },
            }),
          ],
        },
      });
    } finally {
      s.cleanup();
    }
  });

  it('reservedConcurrency caps the functions it names, or every HTTP function with one number', () => {
    const named = synthStack({ reservedConcurrency: 'produce=50,fetch=20' }, quick);
    try {
      const byName = named.stack.functions.byName;
      const reserved = (fn: object) =>
        named.template.toJSON().Resources[logicalId(named.stack, fn as any)].Properties.ReservedConcurrentExecutions;
      expect([
        reserved(byName.produce),
        reserved(byName.fetch),
        reserved(byName.admin),
        reserved(byName.scheduler),
      ]).toEqual([50, 20, undefined, undefined]);
    } finally {
      named.cleanup();
    }
    expect(stackConfig((k) => ({ reservedConcurrency: '100' })[k]).reservedConcurrency).toEqual({
      produce: 100,
      fetch: 100,
      admin: 100,
    });
    expect(() => stackConfig((k) => ({ reservedConcurrency: 'writer=5' })[k])).toThrow(
      /reservedConcurrency takes N or produce=N/,
    );
  });
});
