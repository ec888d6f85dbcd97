/**
 * The synthesized template: resources and their security settings, IAM scoped to the stack's own
 * buckets and table, routes, schedule, outputs. One synth with real bundling (local esbuild) for
 * the default configuration; variants synthesize without bundling.
 */
import type { LogHttpApi } from '../../infra/http-api.js';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Match, type Template } from 'aws-cdk-lib/assertions';
import { DATA_ACCESS, type DataFunctionName } from '../../infra/data-access.js';
import { FUNCTION_SPECS } from '../../infra/log-functions.js';
import { API_ROUTES } from '../../infra/routes.js';
import { logicalId, synthStack, type Synthesized } from './synth.js';
import { TTL_ATTRIBUTE } from '../../src/storage/dynamodb-metadata-store.js';

type Resource = {
  Type: string;
  Properties: Record<string, any>;
  DeletionPolicy?: string;
  UpdateReplacePolicy?: string;
};

const FUNCTIONS: DataFunctionName[] = ['produce', 'fetch', 'admin', 'push', 'scheduler'];

let s: Synthesized;
let synthMs = 0;

beforeAll(() => {
  const started = performance.now();
  s = synthStack();
  synthMs = performance.now() - started;
  // Bundling every function takes ~25 s on a quiet machine, several times that on a loaded one.
}, 300_000);
afterAll(() => s?.cleanup());

const resources = (t: Template, type: string) => t.findResources(type) as Record<string, Resource>;
const fnId = (name: DataFunctionName) => logicalId(s.stack, s.stack.functions.byName[name]);
/** The HTTP API's own resources (the push WebSocket API's are checked in push-api.test.ts). */
const ofHttpApi = (t: Template, type: string) => {
  const apiId = logicalId(s.stack, (s.stack.api as LogHttpApi).api);
  return Object.fromEntries(Object.entries(resources(t, type)).filter(([, r]) => r.Properties.ApiId?.Ref === apiId));
};

describe('synth', () => {
  it('bundles the six functions with the local esbuild in seconds', () => {
    console.log(`synth with bundling: ${Math.round(synthMs)} ms`);
    expect(Object.keys(resources(s.template, 'AWS::Lambda::Function'))).toHaveLength(6);
  });

  it('serves group heartbeats from a 128 MB function behind an IAM-authenticated function URL, logging warnings only', () => {
    s.template.resourceCountIs('AWS::Lambda::Url', 1);
    s.template.hasResourceProperties('AWS::Lambda::Url', {
      AuthType: 'AWS_IAM',
      TargetFunctionArn: { 'Fn::GetAtt': [fnId('heartbeat'), 'Arn'] },
    });
    const fn = resources(s.template, 'AWS::Lambda::Function')[fnId('heartbeat')]!;
    expect(fn.Properties.MemorySize).toBe(128);
    expect(fn.Properties.LoggingConfig).toMatchObject({
      LogFormat: 'JSON',
      ApplicationLogLevel: 'WARN',
      SystemLogLevel: 'WARN',
    });
    expect(fn.Properties.Environment.Variables.ACL_CACHE_MS).toBe('30000');
    expect(s.template.findOutputs('HeartbeatUrl')).toHaveProperty('HeartbeatUrl');
  });
});

describe('replica buckets', () => {
  it('block public access, encrypt, require TLS 1.2+, abort incomplete uploads, and are retained', () => {
    const buckets = resources(s.template, 'AWS::S3::Bucket');
    expect(Object.keys(buckets)).toHaveLength(1);
    for (const bucket of Object.values(buckets)) {
      expect(bucket.DeletionPolicy).toBe('Retain');
      expect(bucket.UpdateReplacePolicy).toBe('Retain');
      expect(bucket.Properties.PublicAccessBlockConfiguration).toEqual({
        BlockPublicAcls: true,
        BlockPublicPolicy: true,
        IgnorePublicAcls: true,
        RestrictPublicBuckets: true,
      });
      expect(
        bucket.Properties.BucketEncryption.ServerSideEncryptionConfiguration[0].ServerSideEncryptionByDefault
          .SSEAlgorithm,
      ).toBe('AES256');
      expect(bucket.Properties.OwnershipControls.Rules[0].ObjectOwnership).toBe('BucketOwnerEnforced');
      expect(bucket.Properties.LifecycleConfiguration.Rules).toContainEqual(
        expect.objectContaining({ Status: 'Enabled', AbortIncompleteMultipartUpload: { DaysAfterInitiation: 1 } }),
      );
    }
    const policies = Object.values(resources(s.template, 'AWS::S3::BucketPolicy'));
    expect(policies).toHaveLength(1);
    const statements = policies[0]!.Properties.PolicyDocument.Statement as any[];
    expect(statements).toContainEqual(
      expect.objectContaining({
        Effect: 'Deny',
        Action: 's3:*',
        Condition: { Bool: { 'aws:SecureTransport': 'false' } },
      }),
    );
    expect(statements).toContainEqual(
      expect.objectContaining({
        Effect: 'Deny',
        Action: 's3:*',
        Condition: { NumericLessThan: { 's3:TlsVersion': 1.2 } },
      }),
    );
  });
});

describe('metadata table', () => {
  it('is on-demand with PITR, deletion protection, the pk/sk key schema, and retained', () => {
    const tables = Object.values(resources(s.template, 'AWS::DynamoDB::Table'));
    expect(tables).toHaveLength(1);
    const table = tables[0]!;
    expect(table.DeletionPolicy).toBe('Retain');
    expect(table.Properties).toMatchObject({
      BillingMode: 'PAY_PER_REQUEST',
      PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
      DeletionProtectionEnabled: true,
      KeySchema: [
        { AttributeName: 'pk', KeyType: 'HASH' },
        { AttributeName: 'sk', KeyType: 'RANGE' },
      ],
    });
  });

  it("has TTL on the attribute the DynamoDB adapter writes an item's expiry to", () => {
    const table = Object.values(resources(s.template, 'AWS::DynamoDB::Table'))[0]!;
    expect(table.Properties.TimeToLiveSpecification).toEqual({ AttributeName: TTL_ATTRIBUTE, Enabled: true });
  });
});

describe('functions', () => {
  it.each(FUNCTIONS)('%s: arm64, Node 24, ESM bundle, sized for its job, logs retained 30 days', (name) => {
    const fn = resources(s.template, 'AWS::Lambda::Function')[fnId(name)]!;
    expect(fn.Properties).toMatchObject({
      Architectures: ['arm64'],
      Runtime: 'nodejs24.x',
      Handler: 'index.handler',
      MemorySize: FUNCTION_SPECS[name].memorySize,
      Timeout: FUNCTION_SPECS[name].timeout.toSeconds(),
    });
    const env = fn.Properties.Environment.Variables;
    expect(env).toMatchObject({
      STORAGE_BACKEND: 'aws',
      CLUSTER_ID: 'test',
      SERVICE_NAME: 'S3KafkaLog-test',
      METRICS_NAMESPACE: 'S3KafkaLog',
      // Below Lambda's 6 MB synchronous payload limit, each way.
      MAX_REQUEST_BYTES: String(4 * 1024 * 1024),
      MAX_FETCH_BYTES: String(1024 * 1024),
      MAX_RESPONSE_BYTES: '6000000',
    });
    expect(env.TABLE_NAME).toEqual({ Ref: logicalId(s.stack, s.stack.table) });
    expect(env.BUCKETS).toEqual({ Ref: logicalId(s.stack, s.stack.stores.buckets[0]!) });
    const logGroupId = fn.Properties.LoggingConfig.LogGroup.Ref as string;
    expect(resources(s.template, 'AWS::Logs::LogGroup')[logGroupId]!.Properties.RetentionInDays).toBe(30);
  });

  it("the HTTP functions stop before API Gateway's 30 s integration limit", () => {
    for (const name of ['produce', 'fetch', 'admin'] as const)
      expect(FUNCTION_SPECS[name].timeout.toSeconds()).toBeLessThan(30);
  });

  it('roles carry no managed policies (no AWSLambdaBasicExecutionRole on every log group)', () => {
    for (const role of Object.values(resources(s.template, 'AWS::IAM::Role')))
      expect(role.Properties.ManagedPolicyArns).toBeUndefined();
  });
});

describe('least-privilege IAM', () => {
  const policyOf = (name: DataFunctionName) => {
    const roleId = logicalId(s.stack, s.stack.functions.byName[name].role as any);
    const policies = Object.values(resources(s.template, 'AWS::IAM::Policy')).filter((p) =>
      (p.Properties.Roles as any[]).some((r) => r.Ref === roleId),
    );
    return policies.flatMap((p) => p.Properties.PolicyDocument.Statement as any[]);
  };
  const list = <T>(v: T | T[]) => (Array.isArray(v) ? v : [v]);
  const dataActions = (statement: any) =>
    list<string>(statement.Action).filter((a) => /^(s3|s3express|dynamodb):/.test(a));

  it.each(FUNCTIONS)('%s gets exactly its data actions of infra/data-access.ts', (name) => {
    const granted = policyOf(name).flatMap(dataActions).sort();
    const access = DATA_ACCESS[name];
    expect(granted).toEqual([...access.objectActions, ...access.bucketActions, ...access.tableActions].sort());
  });

  it.each(FUNCTIONS)("%s: data actions name only the stack's own bucket and table, never *", (name) => {
    const bucketId = logicalId(s.stack, s.stack.stores.buckets[0]!);
    const tableId = logicalId(s.stack, s.stack.table);
    for (const statement of policyOf(name)) {
      const actions = dataActions(statement);
      if (actions.length === 0) continue;
      expect(statement.Effect).toBe('Allow');
      for (const resource of list<any>(statement.Resource)) {
        expect(resource).not.toBe('*');
        if (actions.every((a) => a.startsWith('dynamodb:')))
          expect(resource).toEqual({ 'Fn::GetAtt': [tableId, 'Arn'] });
        else if (actions.every((a) => a === 's3:ListBucket'))
          expect(resource).toEqual({ 'Fn::GetAtt': [bucketId, 'Arn'] });
        else expect(resource).toEqual({ 'Fn::Join': ['', [{ 'Fn::GetAtt': [bucketId, 'Arn'] }, '/*']] });
      }
    }
  });

  it("log permissions are on the function's own log group", () => {
    for (const name of FUNCTIONS) {
      const logStatements = policyOf(name).filter((st) => list<string>(st.Action).some((a) => a.startsWith('logs:')));
      expect(logStatements).toHaveLength(1);
      expect(list<any>(logStatements[0]!.Resource)).toEqual([{ 'Fn::GetAtt': [expect.stringMatching(/Logs/), 'Arn'] }]);
    }
  });
});

describe('HTTP API', () => {
  const integrationTarget = (routeKey: string) => {
    const route = Object.values(ofHttpApi(s.template, 'AWS::ApiGatewayV2::Route')).find(
      (r) => r.Properties.RouteKey === routeKey,
    )!;
    const integrationId = (route.Properties.Target['Fn::Join'][1][1] as { Ref: string }).Ref;
    const integration = resources(s.template, 'AWS::ApiGatewayV2::Integration')[integrationId]!;
    return integration.Properties.IntegrationUri['Fn::GetAtt'][0] as string;
  };

  it('has exactly the routes of infra/routes.ts, each to its function, all SigV4 (AWS_IAM)', () => {
    const routes = Object.values(ofHttpApi(s.template, 'AWS::ApiGatewayV2::Route'));
    expect(routes.map((r) => r.Properties.RouteKey).sort()).toEqual(
      API_ROUTES.map((r) => `${r.method} ${r.path}`).sort(),
    );
    for (const route of routes) expect(route.Properties.AuthorizationType).toBe('AWS_IAM');
    for (const route of API_ROUTES) expect(integrationTarget(`${route.method} ${route.path}`)).toBe(fnId(route.target));
  });

  it('integrations use payload format 2.0', () => {
    for (const i of Object.values(ofHttpApi(s.template, 'AWS::ApiGatewayV2::Integration'))) {
      expect(i.Properties).toMatchObject({ IntegrationType: 'AWS_PROXY', PayloadFormatVersion: '2.0' });
    }
  });

  it('the $default stage deploys automatically, throttles and writes JSON access logs', () => {
    s.template.hasResourceProperties('AWS::ApiGatewayV2::Stage', {
      StageName: '$default',
      AutoDeploy: true,
      DefaultRouteSettings: { ThrottlingRateLimit: 1000, ThrottlingBurstLimit: 2000 },
      AccessLogSettings: {
        DestinationArn: Match.anyValue(),
        Format: Match.stringLikeRegexp('"requestId":"\\$context.requestId"'),
      },
    });
  });
});

describe('schedule', () => {
  it('an EventBridge rule runs the scheduler every minute, without retries', () => {
    const rules = Object.values(resources(s.template, 'AWS::Events::Rule'));
    expect(rules).toHaveLength(1);
    expect(rules[0]!.Properties.ScheduleExpression).toBe('rate(1 minute)');
    expect(rules[0]!.Properties.Targets).toEqual([
      expect.objectContaining({
        Arn: { 'Fn::GetAtt': [fnId('scheduler'), 'Arn'] },
        RetryPolicy: expect.objectContaining({ MaximumRetryAttempts: 0 }),
      }),
    ]);
    s.template.hasResourceProperties('AWS::Lambda::Permission', {
      Principal: 'events.amazonaws.com',
      FunctionName: { 'Fn::GetAtt': [fnId('scheduler'), 'Arn'] },
    });
    s.template.hasResourceProperties('AWS::Lambda::EventInvokeConfig', { MaximumRetryAttempts: 0 });
  });
});

describe('observability', () => {
  it('a dashboard, and alarms on errors, throttles, 5xx and the scheduler, all notifying one topic', () => {
    s.template.resourceCountIs('AWS::CloudWatch::Dashboard', 1);
    const alarms = Object.values(resources(s.template, 'AWS::CloudWatch::Alarm'));
    const names = alarms.map((a) => `${a.Properties.Namespace}/${a.Properties.MetricName}`);
    expect(names.filter((n) => n === 'AWS/Lambda/Errors')).toHaveLength(6); // produce, fetch, admin, push, heartbeat + scheduler failures
    expect(names.filter((n) => n === 'AWS/Lambda/Throttles')).toHaveLength(6);
    expect(names).toContain('AWS/ApiGateway/5xx');
    expect(names).toContain('AWS/Lambda/Invocations'); // the scheduler stopped running
    const topicId = logicalId(s.stack, s.stack.monitoring.alarmTopic);
    for (const alarm of alarms) expect(alarm.Properties.AlarmActions).toEqual([{ Ref: topicId }]);
  });

  it('the dashboard shows DynamoDB capacity, account concurrency and triggers, within the free tier (50 metrics) at 3 stores, the listener and an authorizer', () => {
    const big = synthStack(
      {
        authMode: 'apiKey',
        apiKeySha256: 'b'.repeat(64),
        replicaStores: 2,
        expressOneZoneAzIds: 'use1-az4',
        kafkaListener: true,
        kafkaCertificateArn: 'arn:aws:acm:us-east-1:123456789012:certificate/abc',
        kafkaHostName: 'kafka.example.com',
      },
      { bundle: false, cfnValidation: false },
    );
    try {
      for (const { template } of [s, big]) {
        const [dashboard] = Object.values(resources(template, 'AWS::CloudWatch::Dashboard'));
        const join = dashboard!.Properties.DashboardBody['Fn::Join'] as [string, unknown[]];
        const body = JSON.parse(join[1].map((part) => (typeof part === 'string' ? part : 'token')).join('')) as {
          widgets: { properties: { metrics?: string[][] } }[];
        };
        const metrics = body.widgets.flatMap((w) => w.properties.metrics ?? []).map((m) => `${m[0]}/${m[1]}`);
        expect(metrics).toEqual(
          expect.arrayContaining([
            'AWS/DynamoDB/ConsumedReadCapacityUnits',
            'AWS/DynamoDB/ConsumedWriteCapacityUnits',
            'AWS/Lambda/ClaimedAccountConcurrency',
            'S3KafkaLog/TriggerInvocations',
            'S3KafkaLog/TriggerErrors',
            'S3KafkaLog/TriggerRecordsToFailureDestination',
            'S3KafkaLog/TriggerOffsetLag',
          ]),
        );
        expect(metrics.length).toBeLessThanOrEqual(50);
      }
    } finally {
      big.cleanup();
    }
  });

  it('alarms on DynamoDB throttling, S3 5xx (SlowDown among them) and scheduler rounds that do not finish', () => {
    const alarms = Object.values(resources(s.template, 'AWS::CloudWatch::Alarm'));
    const byMetric = (namespace: string, name: string) =>
      alarms.filter((a) => a.Properties.Namespace === namespace && a.Properties.MetricName === name);
    const tableId = logicalId(s.stack, s.stack.table);
    for (const name of ['ReadThrottleEvents', 'WriteThrottleEvents']) {
      const [throttles, ...more] = byMetric('AWS/DynamoDB', name);
      expect(more, name).toEqual([]);
      expect(throttles!.Properties).toMatchObject({
        Dimensions: [{ Name: 'TableName', Value: { Ref: tableId } }],
        Statistic: 'Sum',
        Threshold: 1,
      });
    }
    // S3 publishes request metrics only for a bucket with a metrics configuration: each replica bucket has one.
    const buckets = s.stack.stores.buckets;
    expect(buckets.length).toBeGreaterThan(0);
    const s3Alarms = byMetric('AWS/S3', '5xxErrors');
    expect(s3Alarms).toHaveLength(buckets.length);
    for (const bucket of buckets) {
      const id = logicalId(s.stack, bucket);
      expect(resources(s.template, 'AWS::S3::Bucket')[id]!.Properties.MetricsConfigurations).toEqual([
        { Id: 'EntireBucket' },
      ]);
      expect(s3Alarms.map((a) => a.Properties.Dimensions)).toContainEqual(
        expect.arrayContaining([
          { Name: 'BucketName', Value: { Ref: id } },
          { Name: 'FilterId', Value: 'EntireBucket' },
        ]),
      );
    }
    // The scheduler function publishes SchedulerIncompleteRuns (test/functions/bundles.test.ts); half an hour of them alarms.
    const [incomplete] = byMetric('S3KafkaLog', 'SchedulerIncompleteRuns');
    expect(incomplete!.Properties).toMatchObject({
      Dimensions: [{ Name: 'Service', Value: s.stack.stackName }],
      Period: 300,
      EvaluationPeriods: 6,
    });
  });
});

describe('outputs', () => {
  it('give the API URL, cluster id, table and bucket names', () => {
    const outputs = s.template.findOutputs('*');
    expect(Object.keys(outputs)).toEqual(
      expect.arrayContaining(['ApiUrl', 'ClusterId', 'TableName', 'BucketNames', 'DashboardName', 'AlarmTopicArn']),
    );
    expect(outputs.TableName!.Value).toEqual({ Ref: logicalId(s.stack, s.stack.table) });
    expect(outputs.BucketNames!.Value).toEqual({ Ref: logicalId(s.stack, s.stack.stores.buckets[0]!) });
  });
});

describe('CloudFormation schema validation (aws-cdk-lib built-in, offline)', () => {
  it('reports nothing for the template', () => {
    const report = JSON.parse(readFileSync(join(s.outdir, 'validation-report.json'), 'utf8')) as {
      pluginReports: { violations?: unknown[] }[];
    };
    expect(report.pluginReports.flatMap((r) => r.violations ?? [])).toEqual([]);
  });
});
