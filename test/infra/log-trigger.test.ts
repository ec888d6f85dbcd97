/**
 * KafkaLogTrigger (infra/log-trigger.ts) in a user's own stack: the permission it puts on the
 * function for each role of the log that delivers, the custom resource's properties, one handler
 * for every trigger of a stack, the same-app reference to the log stack; and its handler
 * (infra/trigger-resource-handler.ts) driving a real app through the shipped client: create, a
 * create whose answer was lost, a name somebody else owns, updates (the definition, the state),
 * deletes (twice, and the rollback of a failed create). The recorded-call check of the invocation
 * this permission allows is in data-access.test.ts.
 */
import { App, Duration, Stack } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import * as kms from 'aws-cdk-lib/aws-kms';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import * as s3 from 'aws-cdk-lib/aws-s3';
import * as sns from 'aws-cdk-lib/aws-sns';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { afterAll, describe, expect, it } from 'vitest';
import { KafkaLog, KafkaLogTrigger } from '../../infra/index.js';
import { LogStack } from '../../infra/log-stack.js';
import { stackConfig } from '../../infra/stack-config.js';
import {
  onEvent,
  physicalId,
  type TriggerResourceEvent,
  type TriggerResourceProperties,
} from '../../infra/trigger-resource-handler.js';
import { testApp } from '../support/test-app.js';
import { TemplateIam } from './iam/template-iam.js';
import { CDK_JSON_CONTEXT, synthStack, TEST_ENV } from './synth.js';

const log = synthStack(
  {
    kafkaListener: true,
    kafkaCertificateArn: 'arn:aws:acm:us-east-1:123456789012:certificate/abc',
    kafkaHostName: 'kafka.example.com',
  },
  { bundle: false, cfnValidation: false },
);
afterAll(() => log.cleanup());
const logIam = new TemplateIam(log.template.toJSON() as never, {
  account: TEST_ENV.account!,
  region: TEST_ENV.region!,
  partition: 'aws',
});
/** The log stack's outputs as `cdk deploy --outputs-file` would write them. */
const outputs = Object.fromEntries(
  Object.entries(log.template.toJSON().Outputs as Record<string, { Value: unknown }>).map(([k, v]) => [
    k,
    logIam.resolve(v.Value),
  ]),
);

/** A user's stack with a function bound to `orders` (and `audit`), synthesized without bundling. */
function userStack(bind: (stack: Stack, fn: lambda.Function) => void) {
  const app = new App({ context: { ...CDK_JSON_CONTEXT, 'aws:cdk:bundling-stacks': [] } });
  const stack = new Stack(app, 'Consumers', { env: TEST_ENV });
  const fn = new lambda.Function(stack, 'OrdersConsumer', {
    runtime: lambda.Runtime.NODEJS_22_X,
    handler: 'index.handler',
    code: lambda.Code.fromInline('exports.handler = async () => ({ batchItemFailures: [] });'),
  });
  bind(stack, fn);
  return { stack, fn, template: Template.fromStack(stack) };
}

const reference = () =>
  KafkaLog.fromStackOutputs({
    apiUrl: outputs.ApiUrl!,
    clusterId: outputs.ClusterId!,
    triggerInvokerRoleArns: outputs.TriggerInvokerRoleArns!,
  });

// The first user stack synthesized loads much of aws-cdk-lib (16 s on a loaded 2-core machine):
// the bound is for that, not for the assertions.
describe('KafkaLogTrigger in a synthesized template', { timeout: 120_000 }, () => {
  it("the log stack names its delivering roles: the scheduler's and the listener's task role", () => {
    const roles = outputs.TriggerInvokerRoleArns!.split(',');
    expect(roles).toHaveLength(2);
    const schedulerRole = logIam.roleOf(
      log.stack.getLogicalId(log.stack.functions.byName.scheduler.node.defaultChild as never),
    );
    expect(roles[0]).toBe(`arn:aws:iam::${TEST_ENV.account}:role/${logIam.physicalName(schedulerRole)}`);
  });

  it('grants exactly those roles lambda:InvokeFunction on the function, and passes the trigger to the custom resource', () => {
    const { stack, fn, template } = userStack((stack, fn) => {
      new KafkaLogTrigger(stack, 'Orders', {
        log: reference(),
        topic: 'orders',
        function: fn,
        triggerName: 'orders-fn',
        batchSize: 500,
        startingPosition: 'TRIM_HORIZON',
        maxBatchingWindow: Duration.seconds(0),
        retryAttempts: 3,
        bisectBatchOnError: true,
        reportBatchItemFailures: true,
        onFailure: 'kafka://orders-failed',
        filters: [{ value: { kind: ['order'] } }],
        timeout: Duration.seconds(60),
      });
    });
    const fnArn = { 'Fn::GetAtt': [stack.getLogicalId(fn.node.defaultChild as lambda.CfnFunction), 'Arn'] };
    const permissions = template.findResources('AWS::Lambda::Permission');
    expect(Object.values(permissions).map((p) => p.Properties)).toEqual(
      outputs.TriggerInvokerRoleArns!.split(',').map((role) => ({
        Action: 'lambda:InvokeFunction',
        FunctionName: fnArn,
        Principal: role,
      })),
    );
    const [resource] = Object.values(template.findResources('Custom::KafkaLogTrigger'));
    expect(resource!.DependsOn).toEqual(expect.arrayContaining(Object.keys(permissions)));
    const iam = new TemplateIam(template.toJSON() as never, {
      account: TEST_ENV.account!,
      region: TEST_ENV.region!,
      partition: 'aws',
    });
    const props = resource!.Properties as Record<string, unknown>;
    expect(props.ApiUrl).toBe(outputs.ApiUrl);
    expect(props.ClusterId).toBe('test');
    expect(props.Enabled).toBe('true');
    expect(JSON.parse(iam.resolve(props.Trigger))).toEqual({
      name: 'orders-fn',
      topic: 'orders',
      target: { type: 'LAMBDA', functionArn: iam.resolve(fnArn), timeoutMs: 60_000 },
      batchSize: 500,
      startingPosition: 'TRIM_HORIZON',
      maximumBatchingWindowMs: 0,
      maximumRetryAttempts: 3,
      bisectBatchOnFunctionError: true,
      functionResponseTypes: ['ReportBatchItemFailures'],
      onFailureDestination: 'kafka://orders-failed',
      filterCriteria: { filters: [{ pattern: '{"value":{"kind":["order"]}}' }] },
    });
    // The handler may call the trigger routes of this cluster on this API, and nothing else.
    const apiId = /^https:\/\/([a-z0-9]+)\./.exec(outputs.ApiUrl!)![1];
    template.hasResourceProperties('AWS::IAM::Policy', {
      PolicyDocument: {
        Statement: Match.arrayWith([
          {
            Action: 'execute-api:Invoke',
            Effect: 'Allow',
            Resource: [
              `arn:aws:execute-api:us-east-1:${TEST_ENV.account}:${apiId}/*/*/v3/clusters/test/triggers`,
              `arn:aws:execute-api:us-east-1:${TEST_ENV.account}:${apiId}/*/*/v3/clusters/test/triggers/*`,
            ],
          },
        ]),
      },
    });
  });

  it('grants a qualified function (an alias) as named, and shares one handler between the triggers of a stack', () => {
    const { template } = userStack((stack, fn) => {
      const live = new lambda.Alias(stack, 'Live', { aliasName: 'live', version: fn.currentVersion });
      new KafkaLogTrigger(stack, 'Orders', { log: reference(), topic: 'orders', function: live });
      new KafkaLogTrigger(stack, 'Audit', { log: reference(), topic: 'audit', function: fn, enabled: false });
    });
    const permissions = Object.values(template.findResources('AWS::Lambda::Permission')).map((p) => p.Properties);
    expect(permissions.filter((p) => 'Ref' in (p.FunctionName as object))).toHaveLength(2); // the alias's ARN
    expect(permissions).toHaveLength(4);
    const handlers = Object.values(template.findResources('AWS::Lambda::Function')).filter((f) =>
      String(f.Properties.Description).includes('KafkaLogTriggers'),
    );
    expect(handlers).toHaveLength(1);
    expect(Object.keys(template.findResources('Custom::KafkaLogTrigger'))).toHaveLength(2);
  });

  it("an on-failure queue, topic or bucket of the app: its policy lets exactly the log's roles send, before the trigger exists", () => {
    const roles = outputs.TriggerInvokerRoleArns!.split(',');
    for (const [type, policyType, action, make] of [
      ['queue', 'AWS::SQS::QueuePolicy', 'sqs:SendMessage', (s: Stack) => new sqs.Queue(s, 'Failures')],
      ['topic', 'AWS::SNS::TopicPolicy', 'sns:Publish', (s: Stack) => new sns.Topic(s, 'Failures')],
      ['bucket', 'AWS::S3::BucketPolicy', 's3:PutObject', (s: Stack) => new s3.Bucket(s, 'Failures')],
    ] as const) {
      let destination: sqs.IQueue | sns.ITopic | s3.IBucket | undefined;
      const { stack, template } = userStack((stack, fn) => {
        destination = make(stack);
        new KafkaLogTrigger(stack, 'Orders', {
          log: reference(),
          topic: 'orders',
          function: fn,
          onFailure: destination,
        });
      });
      const iam = new TemplateIam(template.toJSON() as never, logIam.env);
      const arn = iam.resolve(
        stack.resolve(
          'queueArn' in destination!
            ? destination.queueArn
            : 'topicArn' in destination!
              ? destination.topicArn
              : destination!.bucketArn,
        ),
      );
      const policies = template.findResources(policyType);
      const statements = Object.values(policies).flatMap(
        (p) =>
          (p.Properties.PolicyDocument as { Statement: { Action: string; Principal?: unknown; Resource: unknown }[] })
            .Statement,
      );
      const grants = statements.filter((s) => s.Action === action);
      expect(grants, type).toHaveLength(1);
      expect(grants[0]!.Principal, type).toEqual({ AWS: roles });
      expect(iam.resolve(grants[0]!.Resource), type).toBe(type === 'bucket' ? `${arn}/*` : arn);
      const [resource] = Object.values(template.findResources('Custom::KafkaLogTrigger'));
      expect(resource!.DependsOn, type).toEqual(expect.arrayContaining(Object.keys(policies)));
      expect(JSON.parse(iam.resolve(resource!.Properties.Trigger)).onFailureDestination, type).toBe(arn);
    }
    // FIFO takes no destination record, and an imported queue no policy: both refused at synthesis.
    expect(() =>
      userStack((stack, fn) => {
        const fifo = new sqs.Queue(stack, 'Fifo', { fifo: true });
        new KafkaLogTrigger(stack, 'Orders', { log: reference(), topic: 'orders', function: fn, onFailure: fifo });
      }),
    ).toThrow(/FIFO/);
    expect(() =>
      userStack((stack, fn) => {
        const other = sqs.Queue.fromQueueArn(stack, 'Other', 'arn:aws:sqs:us-east-1:210987654321:theirs');
        new KafkaLogTrigger(stack, 'Orders', { log: reference(), topic: 'orders', function: fn, onFailure: other });
      }),
    ).toThrow(/triggerDestinationArns/);
  });

  it("an SSE-KMS destination's customer-managed key: its policy lets the log's roles use it through the destination's service", () => {
    const roles = outputs.TriggerInvokerRoleArns!.split(',');
    const keyStatements = (template: Template) =>
      Object.values(template.findResources('AWS::KMS::Key')).flatMap((k) =>
        (
          k.Properties.KeyPolicy as {
            Statement: {
              Action: string | string[];
              Principal: unknown;
              Condition?: Record<string, Record<string, unknown>>;
            }[];
          }
        ).Statement.filter((s) => JSON.stringify(s.Principal) === JSON.stringify({ AWS: roles })),
      );
    for (const [type, actions, make] of [
      [
        'sqs',
        ['kms:Decrypt', 'kms:GenerateDataKey'],
        (s: Stack) => new sqs.Queue(s, 'Failures', { encryption: sqs.QueueEncryption.KMS }),
      ],
      [
        'sns',
        ['kms:Decrypt', 'kms:GenerateDataKey'],
        (s: Stack) => new sns.Topic(s, 'Failures', { masterKey: new kms.Key(s, 'K') }),
      ],
      [
        's3',
        'kms:GenerateDataKey',
        (s: Stack) => new s3.Bucket(s, 'Failures', { encryption: s3.BucketEncryption.KMS }),
      ],
      // An ARN, with the key named beside it.
      [
        'sqs',
        ['kms:Decrypt', 'kms:GenerateDataKey'],
        (s: Stack) => ({ arn: 'arn:aws:sqs:us-east-1:123456789012:orders-failures', key: new kms.Key(s, 'K') }),
      ],
    ] as const) {
      const { template } = userStack((stack, fn) => {
        const made = make(stack);
        const [onFailure, onFailureKey] = 'arn' in made ? [made.arn, made.key] : [made, undefined];
        new KafkaLogTrigger(stack, 'Orders', {
          log: reference(),
          topic: 'orders',
          function: fn,
          onFailure,
          onFailureKey,
        });
      });
      const grants = keyStatements(template);
      expect(grants, type).toHaveLength(1);
      expect(grants[0]!.Action, type).toEqual(actions);
      const iam = new TemplateIam(template.toJSON() as never, logIam.env);
      expect(iam.resolve(grants[0]!.Condition!.StringLike!['kms:ViaService']), type).toBe(`${type}.*.amazonaws.com`);
      const [resource] = Object.values(template.findResources('Custom::KafkaLogTrigger'));
      expect(resource!.DependsOn, type).toEqual(
        expect.arrayContaining(Object.keys(template.findResources('AWS::KMS::Key'))),
      );
    }
    // A key AWS manages takes no statement (its policy already allows the account through SQS);
    // an imported key takes none either, so it is refused with where to grant it instead.
    const managed = userStack((stack, fn) => {
      const onFailure = new sqs.Queue(stack, 'Failures', { encryption: sqs.QueueEncryption.KMS_MANAGED });
      new KafkaLogTrigger(stack, 'Orders', { log: reference(), topic: 'orders', function: fn, onFailure });
    });
    expect(keyStatements(managed.template)).toEqual([]);
    expect(() =>
      userStack((stack, fn) => {
        const key = kms.Key.fromKeyArn(
          stack,
          'Theirs',
          'arn:aws:kms:us-east-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab',
        );
        const onFailure = new sqs.Queue(stack, 'Failures', { encryptionMasterKey: key });
        new KafkaLogTrigger(stack, 'Orders', { log: reference(), topic: 'orders', function: fn, onFailure });
      }),
    ).toThrow(/triggerDestinationKeys/);
  });

  it("a trigger's lag alarm: its own TriggerOffsetLag (Trigger dimension), the threshold and minutes asked, the topics given", () => {
    const { template } = userStack((stack, fn) => {
      const pager = new sns.Topic(stack, 'Pager');
      new KafkaLogTrigger(stack, 'Orders', {
        log: { ...reference(), metricsService: 'S3KafkaLog-prod' },
        topic: 'orders',
        function: fn,
        triggerName: 'orders-consumer',
        lagAlarm: { threshold: 1000, topics: [pager] },
      });
    });
    const pagerId = Object.keys(template.findResources('AWS::SNS::Topic'))[0]!;
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      Namespace: 'S3KafkaLog',
      MetricName: 'TriggerOffsetLag',
      Dimensions: Match.arrayWith([
        { Name: 'Service', Value: 'S3KafkaLog-prod' },
        { Name: 'Trigger', Value: 'orders-consumer' },
      ]),
      Statistic: 'Maximum',
      Period: 60,
      Threshold: 1000,
      EvaluationPeriods: 5,
      TreatMissingData: 'notBreaching',
      AlarmActions: [{ Ref: pagerId }],
      OKActions: [{ Ref: pagerId }],
    });
    // The Service dimension comes from the log's outputs: without it there is nothing to watch.
    expect(() =>
      userStack((stack, fn) => {
        new KafkaLogTrigger(stack, 'Orders', {
          log: reference(),
          topic: 'orders',
          function: fn,
          lagAlarm: { threshold: 1 },
        });
      }),
    ).toThrow(/metricsService/);
    expect(
      KafkaLog.fromStackOutputs({
        apiUrl: outputs.ApiUrl!,
        clusterId: 'c',
        triggerInvokerRoleArns: outputs.TriggerInvokerRoleArns!,
        metricsService: outputs.MetricsService!,
      }).metricsService,
    ).toBe(outputs.MetricsService);
  });

  it("the log stack's triggerDestinationKeys pair destinations with KMS key ARNs", () => {
    const key = 'arn:aws:kms:eu-west-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab';
    const queue = 'arn:aws:sqs:eu-west-1:123456789012:orders-failures';
    expect(stackConfig((k) => ({ triggerDestinationKeys: `${queue}=${key}` })[k]).triggerDestinationKeys).toEqual([
      { destinationArn: queue, keyArn: key },
    ]);
    for (const bad of [
      key, // no destination
      `${queue}=arn:aws:kms:eu-west-1:123456789012:alias/orders`, // an alias grants nothing
      `arn:aws:lambda:eu-west-1:123456789012:function:f=${key}`,
      `${queue}=${key}=${key}`,
    ])
      expect(() => stackConfig((k) => ({ triggerDestinationKeys: bad })[k]), bad).toThrow(/triggerDestinationKeys/);
  });

  it("the log stack's triggerDestinationArns take S3, SQS and SNS ARNs, not FIFO or other ones", () => {
    const arns = [
      'arn:aws:s3:::orders-failures',
      'arn:aws:sqs:eu-west-1:123456789012:orders-failures',
      'arn:aws:sns:eu-west-1:123456789012:orders-failures',
    ];
    expect(stackConfig((k) => ({ triggerDestinationArns: arns.join(',') })[k]).triggerDestinationArns).toEqual(arns);
    for (const bad of [
      'arn:aws:sqs:eu-west-1:123456789012:q.fifo',
      'arn:aws:sns:eu-west-1:123456789012:t.fifo',
      'arn:aws:sqs:eu-west-1:*:q',
      'arn:aws:lambda:eu-west-1:123456789012:function:f',
    ])
      expect(() => stackConfig((k) => ({ triggerDestinationArns: bad })[k]), bad).toThrow(/triggerDestinationArns/);
  });

  it("refuses outputs that are not the log stack's", () => {
    expect(() =>
      KafkaLog.fromStackOutputs({ apiUrl: 'http://localhost:8080', clusterId: 'c', triggerInvokerRoleArns: 'x' }),
    ).toThrow(/ApiUrl/);
    expect(() =>
      KafkaLog.fromStackOutputs({ apiUrl: outputs.ApiUrl!, clusterId: 'c', triggerInvokerRoleArns: 'arn:aws:s3:::b' }),
    ).toThrow(/role ARNs/);
  });

  it('in the same app, the log stack is referenced across stacks', () => {
    const app = new App({ context: { ...CDK_JSON_CONTEXT, stage: 'ref', 'aws:cdk:bundling-stacks': [] } });
    const logStack = new LogStack(app, 'Log', { config: stackConfig((k) => app.node.tryGetContext(k)), env: TEST_ENV });
    const stack = new Stack(app, 'Consumers', { env: TEST_ENV });
    const fn = new lambda.Function(stack, 'Fn', {
      runtime: lambda.Runtime.NODEJS_22_X,
      handler: 'index.handler',
      code: lambda.Code.fromInline('exports.handler = async () => {};'),
    });
    new KafkaLogTrigger(stack, 'T', { log: KafkaLog.fromLogStack(logStack), topic: 'orders', function: fn });
    const [permission] = Object.values(Template.fromStack(stack).findResources('AWS::Lambda::Permission'));
    expect(JSON.stringify(permission!.Properties.Principal)).toContain('Fn::ImportValue');
  });
});

describe('the custom resource handler against the log', () => {
  const { app, call } = testApp({ runTriggers: false });
  const fetch = ((input: string | URL | Request, init?: RequestInit) =>
    app.request(input instanceof Request ? input : String(input), init)) as typeof globalThis.fetch;
  const options = { fetch, auth: { type: 'none' } as const };
  const FN = 'arn:aws:lambda:us-east-1:123456789012:function:orders-consumer';
  const props = (trigger: Record<string, unknown>, enabled = true): TriggerResourceProperties => ({
    ApiUrl: 'http://log.test/',
    ClusterId: 'local',
    Trigger: JSON.stringify({
      name: 'orders-fn',
      topic: 'orders',
      target: { type: 'LAMBDA', functionArn: FN },
      ...trigger,
    }),
    Enabled: String(enabled),
  });
  const event = (
    e: Omit<TriggerResourceEvent, 'ResourceProperties'> & { ResourceProperties: TriggerResourceProperties },
  ) => onEvent(e, options);
  const describeTrigger = async () => call('GET', 'triggers/orders-fn');
  const ID = physicalId({ ApiUrl: 'http://log.test/', ClusterId: 'local' }, 'orders-fn');

  it('creates, recognises its own create, refuses a name somebody else owns, updates and deletes', async () => {
    expect(
      (await call('POST', '/v3/clusters/local/topics', { topic_name: 'orders', partitions_count: 2 })).status,
    ).toBe(201);
    const created = await event({ RequestType: 'Create', ResourceProperties: props({ batchSize: 50 }) });
    expect(created.PhysicalResourceId).toBe(ID);
    expect(ID).toBe('http://log.test/v3/clusters/local/triggers/orders-fn');
    expect((await describeTrigger()).body).toMatchObject({ batch_size: 50, state: 'ENABLED' });

    // The framework sends a Create again when the first one's answer was lost: the same trigger is ours.
    expect(
      (await event({ RequestType: 'Create', ResourceProperties: props({ batchSize: 50 }) })).PhysicalResourceId,
    ).toBe(ID);
    // Another definition under the same name is somebody else's: refused, and left as it was.
    await expect(event({ RequestType: 'Create', ResourceProperties: props({ batchSize: 7 }) })).rejects.toMatchObject({
      type: 'DUPLICATE_RESOURCE',
    });
    expect((await describeTrigger()).body.batch_size).toBe(50);
    // Its rollback deletes nothing: the failed create has no physical id of ours.
    await event({
      RequestType: 'Delete',
      PhysicalResourceId: 'request-id-of-the-failed-create',
      ResourceProperties: props({ batchSize: 7 }),
    });
    expect((await describeTrigger()).status).toBe(200);

    // The group's offsets, which a re-created trigger takes over (not LATEST's 2, where it would start anew).
    for (const n of [1, 2])
      expect((await call('POST', 'topics/orders/records', { partition_id: 0, value: { data: n } })).status).toBe(200);
    expect(
      (
        await call('POST', '/v3/clusters/local/consumer-groups/trigger.orders-fn/offsets:commit', {
          offsets: [{ topic_name: 'orders', partition_id: 0, offset: 1 }],
        })
      ).status,
    ).toBeLessThan(300);

    // A new definition under the same id: deleted and created again, the group's offsets kept.
    await event({
      RequestType: 'Update',
      PhysicalResourceId: ID,
      ResourceProperties: props({ batchSize: 200, maximumRetryAttempts: 2 }),
      OldResourceProperties: props({ batchSize: 50 }),
    });
    const updated = (await describeTrigger()).body;
    expect(updated).toMatchObject({ batch_size: 200, maximum_retry_attempts: 2, state: 'ENABLED' });
    expect(updated.partitions.find((p: { partition_id: number }) => p.partition_id === 0).committed_offset).toBe(1);

    // Only Enabled changed: paused, and resumed.
    await event({
      RequestType: 'Update',
      PhysicalResourceId: ID,
      ResourceProperties: props({ batchSize: 200, maximumRetryAttempts: 2 }, false),
      OldResourceProperties: props({ batchSize: 200, maximumRetryAttempts: 2 }),
    });
    expect((await describeTrigger()).body.state).toBe('PAUSED');
    await event({
      RequestType: 'Update',
      PhysicalResourceId: ID,
      ResourceProperties: props({ batchSize: 200, maximumRetryAttempts: 2 }),
      OldResourceProperties: props({ batchSize: 200, maximumRetryAttempts: 2 }, false),
    });
    expect((await describeTrigger()).body.state).toBe('ENABLED');

    await event({ RequestType: 'Delete', PhysicalResourceId: ID, ResourceProperties: props({ batchSize: 200 }) });
    expect((await describeTrigger()).status).toBe(404);
    // A Delete sent again finds nothing to delete: done.
    await event({ RequestType: 'Delete', PhysicalResourceId: ID, ResourceProperties: props({ batchSize: 200 }) });
  });

  it('a renamed trigger is a new physical id (CloudFormation then deletes the old one); created paused when disabled', async () => {
    const renamed = props({});
    renamed.Trigger = renamed.Trigger.replace('orders-fn', 'orders-fn-2');
    const out = await event({
      RequestType: 'Update',
      PhysicalResourceId: ID,
      ResourceProperties: { ...renamed, Enabled: 'false' },
      OldResourceProperties: props({}),
    });
    expect(out.PhysicalResourceId).toBe('http://log.test/v3/clusters/local/triggers/orders-fn-2');
    expect((await call('GET', 'triggers/orders-fn-2')).body.state).toBe('PAUSED');
  });

  it('an unknown topic fails the create with its Kafka error', async () => {
    const p = props({});
    p.Trigger = p.Trigger.replace('"orders"', '"nope"');
    await expect(event({ RequestType: 'Create', ResourceProperties: p })).rejects.toMatchObject({
      type: 'UNKNOWN_TOPIC_OR_PARTITION',
    });
  });
});
