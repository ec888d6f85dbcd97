/**
 * Every AWS call each function makes is allowed by its role in the synthesized template, and
 * nothing more is granted (issue 31's recorded-call check).
 *
 * The stack is synthesized under cdk.json's context with one S3 Standard and one S3 Express store
 * and the Kafka listener. Each function runs over one shared in-memory world, through a layer that
 * records the call its adapter would make (service, IAM action, resource ARN, condition keys such
 * as s3express:SessionMode) and answers it as AWS would for that function's role
 * (test/infra/iam/recorded-calls.ts): refused when no statement allows it, 403 for a missing key
 * without s3:ListBucket, writes refused on a ReadOnly S3 Express session. The functions are driven
 * as the stack wires them: every HTTP operation (test/support/every-operation.ts) on the function
 * infra/routes.ts routes it to (heartbeats on the heartbeat function's URL), subscribes through
 * the push function's Lambda handler, commits from produce, admin (transaction markers) and the
 * scheduler (a timed-out transaction), each waking a push subscriber, scheduler passes, and a
 * trigger's Lambda target, invoked by the scheduler's deliveries (the one function that delivers).
 * Beside the stack, a user's own stack binds a function no `triggerFunctionArns` lists with
 * KafkaLogTrigger (infra/log-trigger.ts): its handler's calls to the log's API are checked against
 * the handler's role, and the scheduler's invocation of that function against the resource-based
 * permission the construct put on it (in the same account, IAM allows on either policy).
 *
 * A recorded call that is denied fails the test; a granted (action, resource) no recorded call
 * used fails it too, unless UNUSED_BUT_NEEDED says why it stays. The API key, JWT and REST stacks
 * are checked to grant each data function exactly the same (REST less the push API it lacks), so the
 * evaluation holds for them too.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { App, Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { CfnTaskDefinition } from 'aws-cdk-lib/aws-ecs';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import type { APIGatewayProxyWebsocketEventV2 } from 'aws-lambda';
import { createPushHandler } from '../../functions/push-entry.js';
import { HEARTBEAT_ROUTE, observedApp } from '../../functions/http-entry.js';
import type { DataFunctionName } from '../../infra/data-access.js';
import { KafkaLog, KafkaLogTrigger } from '../../infra/log-trigger.js';
import { routeFor } from '../../infra/routes.js';
import { onEvent, physicalId, type TriggerResourceProperties } from '../../infra/trigger-resource-handler.js';
import type { Clock } from '../../src/clock.js';
import { createServices, createStorage, runMaintenancePass, type Storage } from '../../src/compose.js';
import { serverConfigFromEnv } from '../../src/config/server-config.js';
import { createApp } from '../../src/http/app.js';
import { indexSk, newRequestObjectKey, partitionPk } from '../../src/storage/key-layout.js';
import { encodeTopicData, PRODUCE_REQUEST_MEDIA_TYPE } from '../../src/wire/produce-request.js';
import { encodeRecordBatch } from '../../src/wire/record-batch.js';
import { everyOperation } from '../support/every-operation.js';
import {
  CallRecorder,
  functionRole,
  recordedFailureMessages,
  recordedFailureObjects,
  recordedLambda,
  type FunctionRole,
  type RecordedCall,
} from './iam/recorded-calls.js';
import { allowingStatement, statementMatches, TemplateIam } from './iam/template-iam.js';
import { CDK_JSON_CONTEXT, logicalId, synthStack, TEST_ENV } from './synth.js';
import type { KafkaEvent } from '../../src/triggers/kafka-event.js';

const FUNCTIONS: DataFunctionName[] = ['produce', 'fetch', 'admin', 'push', 'heartbeat', 'scheduler'];
const B = '/v3/clusters/local';

/** Grants that no handler call uses, and why they stay. */
const UNUSED_BUT_NEEDED: { action: RegExp; fn?: string; why: string }[] = [
  { action: /^logs:/, why: "the Lambda runtime writes the function's logs, not its handler" },
  {
    action: /^dynamodb:UpdateItem$/,
    fn: 'fetch',
    why: "on a topic made below feature level 9 a fetch writes the index entry a writer died before writing (the repair below); the topics here have a commit log, where that commit is read from the shard's log",
  },
];

/** A trigger's Lambda target, which the stack lets the deliverers invoke. */
const TARGET_ARN = `arn:aws:lambda:${TEST_ENV.region}:${TEST_ENV.account}:function:orders-consumer`;
/** Triggers' on-failure destinations (S3, SQS, SNS), which the stack lets the deliverers write to. */
const FAILURE_BUCKET_ARN = 'arn:aws:s3:::orders-failures';
const FAILURE_QUEUE_ARN = `arn:aws:sqs:${TEST_ENV.region}:${TEST_ENV.account}:orders-failures`;
const FAILURE_TOPIC_ARN = `arn:aws:sns:${TEST_ENV.region}:${TEST_ENV.account}:orders-failures`;
/** The customer-managed keys they are encrypted with (SSE-KMS): one for the queue and topic, one for the bucket. */
const MESSAGES_KEY_ARN = `arn:aws:kms:${TEST_ENV.region}:${TEST_ENV.account}:key/1111aaaa-1111-aaaa-1111-aaaa1111aaaa`;
const OBJECTS_KEY_ARN = `arn:aws:kms:${TEST_ENV.region}:${TEST_ENV.account}:key/2222bbbb-2222-bbbb-2222-bbbb2222bbbb`;
/**
 * The stack the calls are evaluated against: one S3 Standard store, one S3 Express, and the
 * function triggers may invoke.
 */
const STORES = {
  replicaStores: 1,
  expressOneZoneAzIds: 'use1-az4',
  triggerFunctionArns: TARGET_ARN,
  triggerDestinationArns: [FAILURE_BUCKET_ARN, FAILURE_QUEUE_ARN, FAILURE_TOPIC_ARN].join(','),
  triggerDestinationKeys: [
    `${FAILURE_QUEUE_ARN}=${MESSAGES_KEY_ARN}`,
    `${FAILURE_TOPIC_ARN}=${MESSAGES_KEY_ARN}`,
    `${FAILURE_BUCKET_ARN}=${OBJECTS_KEY_ARN}`,
  ].join(','),
};
const synth = synthStack(
  {
    ...STORES,
    kafkaListener: true,
    kafkaCertificateArn: 'arn:aws:acm:us-east-1:123456789012:certificate/abc',
    kafkaHostName: 'kafka.example.com',
  },
  { bundle: false, cfnValidation: false },
);
const iam = new TemplateIam(synth.template.toJSON() as never, {
  account: TEST_ENV.account!,
  region: TEST_ENV.region!,
  partition: 'aws',
});
const recorder = new CallRecorder(iam);
const roles = Object.fromEntries(
  FUNCTIONS.map((fn) => {
    const id = logicalId(synth.stack, synth.stack.functions.byName[fn]);
    const env = iam.environmentOf(id);
    // The mode the function's own configuration makes its S3 client ask for.
    const backend = serverConfigFromEnv({ ...env, STORAGE_BACKEND: 'aws' }).backend;
    return [
      fn,
      functionRole(iam, fn, id, backend.kind === 'aws' ? (backend.s3ExpressSessionMode ?? 'ReadWrite') : 'ReadWrite'),
    ];
  }),
) as Record<DataFunctionName, FunctionRole>;
const pushApiId = iam.physicalName(logicalId(synth.stack, synth.stack.pushApi!.api));
/** The log stack's outputs, as a user reads them after deploying it. */
const outputs = Object.fromEntries(
  Object.entries(synth.template.toJSON().Outputs as Record<string, { Value: unknown }>).map(([k, v]) => [
    k,
    iam.resolve(v.Value),
  ]),
);

/**
 * A user's stack: a function bound to `p` by KafkaLogTrigger, from the log's outputs, its failures
 * to a queue of its own, encrypted with a key of its own.
 */
const user = (() => {
  const app = new App({ context: { ...CDK_JSON_CONTEXT, 'aws:cdk:bundling-stacks': [] } });
  const stack = new Stack(app, 'Consumers', { env: TEST_ENV });
  const fn = new lambda.Function(stack, 'AuditConsumer', {
    runtime: lambda.Runtime.NODEJS_22_X,
    handler: 'index.handler',
    code: lambda.Code.fromInline('exports.handler = async () => {};'),
  });
  const queue = new sqs.Queue(stack, 'AuditFailures', { encryption: sqs.QueueEncryption.KMS });
  const trigger = new KafkaLogTrigger(stack, 'Audit', {
    log: KafkaLog.fromStackOutputs({
      apiUrl: outputs.ApiUrl!,
      clusterId: 'local', // the scenario's
      triggerInvokerRoleArns: outputs.TriggerInvokerRoleArns!,
    }),
    topic: 'p',
    function: fn,
    triggerName: 'audit',
    startingPosition: 'TRIM_HORIZON',
    onFailure: queue,
  });
  const template = Template.fromStack(stack).toJSON() as {
    Resources: Record<string, { Type: string; Properties: Record<string, unknown> }>;
  };
  const userIam = new TemplateIam(template as never, iam.env);
  const resource = Object.values(template.Resources).find((r) => r.Type === 'Custom::KafkaLogTrigger')!;
  const properties = Object.fromEntries(
    Object.entries(resource.Properties)
      .filter(([k]) => k !== 'ServiceToken')
      .map(([k, v]) => [k, userIam.resolve(v)]),
  ) as unknown as TriggerResourceProperties;
  return {
    functionArn: userIam.resolve({
      'Fn::GetAtt': [stack.getLogicalId(fn.node.defaultChild as lambda.CfnFunction), 'Arn'],
    }),
    properties,
    queueArn: userIam.resolve({ 'Fn::GetAtt': [stack.getLogicalId(queue.node.defaultChild as sqs.CfnQueue), 'Arn'] }),
    queueKeyArn: userIam.resolve(stack.resolve((queue.node.defaultChild as sqs.CfnQueue).kmsMasterKeyId)),
    handlerRole: functionRole(
      userIam,
      'trigger-handler',
      stack.getLogicalId(trigger.handler.node.defaultChild as lambda.CfnFunction),
      'ReadWrite',
    ),
    permissions: [...userIam.lambdaPermissions(), ...userIam.destinationPolicies()],
  };
})();
recorder.addResourcePolicies(user.permissions);
/** How the destinations are encrypted, as AWS knows it: what the sends make their services ask KMS. */
const DESTINATION_KEYS: Record<string, string> = {
  [FAILURE_QUEUE_ARN]: MESSAGES_KEY_ARN,
  [FAILURE_TOPIC_ARN]: MESSAGES_KEY_ARN,
  [FAILURE_BUCKET_ARN]: OBJECTS_KEY_ARN,
  [user.queueArn]: user.queueKeyArn,
};
const PUSH_DOMAIN = `${pushApiId}.execute-api.${TEST_ENV.region}.amazonaws.com`;

let now = Date.now();
const clock: Clock = { now: () => now };
const world = createStorage({ kind: 'memory', replicaStores: roles.produce.buckets.length });
/** Push messages delivered, with the function that posted them. */
const delivered: {
  fn: string;
  connectionId: string;
  message: { topic: string; partitions: { partition: number }[] };
}[] = [];
/** Lambda invocations of triggers, with the function that made them. */
const invoked: { fn: string; functionArn: string; offsets: number[] }[] = [];
/** Objects written to triggers' S3 failure destinations, with the function that wrote them. */
const failureObjects: { fn: string; bucket: string; key: string }[] = [];
/** Messages sent to triggers' SQS and SNS failure destinations, with the function that sent them. */
const failureMessages: { fn: string; arn: string; requestId: string }[] = [];

/** A function's services as its Lambda composes them (its environment, storage as its role reaches it). */
const environmentOf = (fn: DataFunctionName) => ({
  ...roles[fn].env,
  STORAGE_BACKEND: 'memory',
  REPLICA_STORES: String(roles[fn].buckets.length),
  CLUSTER_ID: 'local', // the scenario's
  // Authorization stays on (each call reads the ACLs, as deployed); with no ACL for a resource
  // the scenario's anonymous caller may use it.
  ALLOW_EVERYONE_IF_NO_ACL_FOUND: 'true',
});

function servicesOf(fn: DataFunctionName): { services: ReturnType<typeof createServices>; storage: Storage } {
  const role = roles[fn];
  const config = serverConfigFromEnv(environmentOf(fn));
  const storage = recorder.storage(world, role);
  const poster = recorder.poster(role, async (_endpoint, connectionId, message) => {
    delivered.push({ fn, connectionId, message: JSON.parse(message) });
    return 'delivered';
  });
  const lambda = recordedLambda(recorder, role, async (functionArn, _timeoutMs, eventJson) => {
    const event = JSON.parse(Buffer.from(eventJson).toString()) as KafkaEvent;
    invoked.push({ fn, functionArn, offsets: Object.values(event.records).flatMap((rs) => rs.map((r) => r.offset)) });
    return { ok: true, response: null };
  });
  // Every function is composed as its Lambda is: only the scheduler delivers triggers.
  const runTriggers = fn === 'scheduler';
  const putFailureObject = recordedFailureObjects(
    recorder,
    role,
    async (bucket, key) => {
      failureObjects.push({ fn, bucket, key });
    },
    (arn) => DESTINATION_KEYS[arn],
  );
  const sendFailureMessage = recordedFailureMessages(
    recorder,
    role,
    async (arn, body) => {
      failureMessages.push({ fn, arn, requestId: JSON.parse(body).requestContext.requestId });
    },
    (arn) => DESTINATION_KEYS[arn],
  );
  return {
    services: createServices(config, storage, clock, {
      poster,
      lambda,
      runTriggers,
      putFailureObject,
      sendFailureMessage,
    }),
    storage,
  };
}

const apps = Object.fromEntries(
  (['produce', 'fetch', 'admin', 'heartbeat'] as const).map((fn) => {
    const app = createApp(servicesOf(fn).services, { logError: () => {} });
    const telemetry = { namespace: 'n', service: 's', functionName: fn, write: () => {}, now: () => Date.now() };
    return [fn, fn === 'heartbeat' ? observedApp(app, telemetry, HEARTBEAT_ROUTE) : app];
  }),
) as unknown as Record<
  'produce' | 'fetch' | 'admin' | 'heartbeat',
  { request: (url: string, init: RequestInit) => Response | Promise<Response> }
>;
const scheduler = servicesOf('scheduler');
const push = createPushHandler(environmentOf('push'), recorder.storage(world, roles.push));

/** Which function served each request (method and path), as API Gateway and the function URL route it. */
const served: { fn: string; key: string; status: number }[] = [];

async function call(method: string, path: string, body?: unknown, headers: Record<string, string> = {}) {
  const pathname = new URL(path, 'http://x').pathname;
  const fn =
    HEARTBEAT_ROUTE.path.test(pathname) && method === 'POST' ? 'heartbeat' : routeFor(method, pathname)!.target;
  const bytes = body instanceof Uint8Array;
  const res = await apps[fn].request(path, {
    method,
    headers: { ...(body !== undefined && !bytes && { 'content-type': 'application/json' }), ...headers },
    ...(body !== undefined && { body: bytes ? (body as Uint8Array<ArrayBuffer>) : JSON.stringify(body) }),
  });
  served.push({ fn, key: `${method} ${pathname}`, status: res.status });
  const text = await res.text();
  const json = (res.headers.get('content-type') ?? '').includes('json') && text;
  return { status: res.status, body: json ? JSON.parse(text.split('\n')[0]!) : text };
}

/**
 * The construct's handler reaching the log's API as API Gateway lets its role: execute-api:Invoke
 * on the route's ARN (a refusal is API Gateway's 403), then the function the route goes to.
 */
const handlerFetch = (async (input: string | URL | Request, init?: RequestInit) => {
  const url = new URL(input instanceof Request ? input.url : String(input));
  const method = (init?.method ?? 'GET').toUpperCase();
  const apiId = url.hostname.split('.')[0];
  try {
    recorder.authorize(user.handlerRole, 'ExecuteApi.Invoke', {
      action: 'execute-api:Invoke',
      resource: `arn:aws:execute-api:${iam.env.region}:${iam.env.account}:${apiId}/$default/${method}${url.pathname}`,
    });
  } catch {
    return new Response(JSON.stringify({ message: 'Forbidden' }), { status: 403 });
  }
  const fn = routeFor(method, url.pathname)!.target as 'admin';
  const res = await apps[fn].request(`${url.pathname}${url.search}`, init ?? {});
  served.push({ fn, key: `${method} ${url.pathname}`, status: res.status });
  return res;
}) as typeof globalThis.fetch;
const triggerResource = (RequestType: 'Create' | 'Delete') =>
  onEvent(
    {
      RequestType,
      ...(RequestType === 'Delete' && { PhysicalResourceId: physicalId(user.properties, 'audit') }),
      ResourceProperties: user.properties,
    },
    { fetch: handlerFetch, auth: { type: 'none' } },
  );

const subscribe = async (connectionId: string, topic: string, partitions: { partition: number; offset: number }[]) => {
  const res = await push({
    requestContext: {
      routeKey: 'subscribe',
      connectionId,
      domainName: PUSH_DOMAIN,
      stage: 'push',
      eventType: 'MESSAGE',
    },
    body: JSON.stringify({ action: 'subscribe', topic, partitions }),
    isBase64Encoded: false,
  } as unknown as APIGatewayProxyWebsocketEventV2);
  return res.body ? JSON.parse(res.body) : undefined;
};

const txBatch = (producer: { producer_id: number; producer_epoch: number }, seq: number) =>
  encodeRecordBatch([{ key: null, value: Buffer.from('t'), headers: [], timestamp: clock.now() }], {
    partitionLeaderEpoch: -1,
    producerId: producer.producer_id,
    producerEpoch: producer.producer_epoch,
    baseSequence: seq,
    transactional: true,
  });

/** A transaction over `p-0` with one record in it, left open. */
async function openTransaction(id: string, timeoutMs: number) {
  const init = await call('POST', `${B}/transactions/${id}/init`, { transaction_timeout_ms: timeoutMs });
  expect(init.status).toBe(200);
  const producer = { producer_id: init.body.producer_id as number, producer_epoch: init.body.producer_epoch as number };
  const produced = await call(
    'POST',
    `${B}/records?transactional_id=${id}`,
    encodeTopicData([{ name: 'p', partitions: [{ index: 0, records: txBatch(producer, 0) }] }]),
    { 'content-type': PRODUCE_REQUEST_MEDIA_TYPE },
  );
  expect(produced.status).toBe(200);
  return producer;
}

/** Arms a fresh connection on p-0 at its end; the next commit there must wake it. */
async function armed(connectionId: string) {
  const end = await call('GET', `${B}/topics/p/partitions/0/offset?offset_type=latest`);
  expect(await subscribe(connectionId, 'p', [{ partition: 0, offset: end.body.offset }])).toBeUndefined();
}
async function schedulerPasses(n: number) {
  for (let pass = 0; pass < n; pass++) {
    await runMaintenancePass(scheduler.storage, scheduler.services, { deadline: clock.now() + 60_000, options: {} });
    await scheduler.services.push.notifier.settle();
    now += 60_000;
  }
}

const woken = (connectionId: string) => delivered.filter((d) => d.connectionId === connectionId).map((d) => d.fn);

beforeAll(async () => {
  await everyOperation(call);

  // Push: every function that commits wakes the consumers armed on the partition.
  expect(
    (await call('POST', `${B}/topics`, { topic_name: 'p', partitions_count: 2, replication_factor: 2 })).status,
  ).toBe(201);
  await armed('conn-produce');
  expect((await call('POST', `${B}/topics/p/records`, { partition_id: 0, value: { data: 1 } })).status).toBe(200);
  const tx = await openTransaction('tx-admin', 60_000);
  await armed('conn-admin');
  expect((await call('POST', `${B}/transactions/tx-admin/commit`, tx)).status).toBe(200);
  // A trigger with a Lambda target: created on admin, delivered by the scheduler's run.
  expect(
    (
      await call('POST', `${B}/triggers`, {
        trigger_name: 'fn',
        topic_name: 'p',
        target: { type: 'LAMBDA', function_arn: TARGET_ARN },
        starting_position: 'TRIM_HORIZON',
      })
    ).status,
  ).toBe(201);
  expect(await scheduler.services.triggers.runner.deliverDue(clock.now() + 60_000)).toBe(1);
  expect((await call('DELETE', `${B}/triggers/fn`)).status).toBe(204);
  // The user's KafkaLogTrigger: created by its handler, delivered by the scheduler, deleted.
  await triggerResource('Create');
  expect(await scheduler.services.triggers.runner.deliverDue(clock.now() + 60_000)).toBe(1);
  await triggerResource('Delete');
  expect((await call('GET', `${B}/triggers/audit`)).status).toBe(404);
  // Records past their maximum age go to the triggers' failure destinations, written by the
  // scheduler: the stack's bucket, queue and topic, and the user's queue (its policy, not the role).
  const aged = {
    aged: FAILURE_BUCKET_ARN,
    'aged-sqs': FAILURE_QUEUE_ARN,
    'aged-sns': FAILURE_TOPIC_ARN,
    'aged-user': user.queueArn,
  };
  for (const [name, destination] of Object.entries(aged))
    expect(
      (
        await call('POST', `${B}/triggers`, {
          trigger_name: name,
          topic_name: 'p',
          target: { type: 'LAMBDA', function_arn: TARGET_ARN },
          starting_position: 'TRIM_HORIZON',
          maximum_record_age_seconds: 60,
          on_failure_destination: destination,
        })
      ).status,
    ).toBe(201);
  now += 120_000;
  await scheduler.services.triggers.runner.deliverDue(clock.now() + 60_000);
  for (const name of Object.keys(aged)) expect((await call('DELETE', `${B}/triggers/${name}`)).status).toBe(204);
  await openTransaction('tx-scheduler', 1_000);
  await armed('conn-scheduler');
  now += 120_000; // past the transaction's timeout
  await schedulerPasses(3);
  expect(await subscribe('conn-scheduler', 'p', [])).toBeUndefined(); // unsubscribes

  // Fetch from the S3 Express store (partition 1 leads there), and the index repair: a writer that
  // died between its state write and its index write leaves the next fetch to write the entry.
  expect((await call('POST', `${B}/topics/p/records`, { partition_id: 1, value: { data: 2 } })).status).toBe(200);
  expect((await call('POST', `${B}/topics/p/records`, { partition_id: 1, value: { data: 3 } })).status).toBe(200);
  await world.metadata.delete(partitionPk('p', 1), indexSk(1));
  const fetched = await call('GET', `${B}/topics/p/partitions/1/records?offset=0`);
  expect(fetched.body.records).toHaveLength(2);

  // Retention: the scheduler deletes expired segments on every store.
  expect(
    (
      await call('POST', `${B}/topics`, {
        topic_name: 'r',
        partitions_count: 2,
        replication_factor: 2,
        configs: [{ name: 'retention.ms', value: '1000' }],
      })
    ).status,
  ).toBe(201);
  for (const partition_id of [0, 1])
    expect((await call('POST', `${B}/topics/r/records`, { partition_id, value: { data: 1 } })).status).toBe(200);
  // And the object of a produce that died after its PUT, before its commit: the sweep collects it.
  const topicId = (await scheduler.services.topics.get('r')).id;
  for (const store of world.stores) await store.put(newRequestObjectKey(topicId, clock.now(), 2), new Uint8Array([1]));
  now += 3_600_000;
  await schedulerPasses(3);

  expect((await call('DELETE', `${B}/topics/p`)).status).toBe(204);
  expect((await call('DELETE', `${B}/topics/r`)).status).toBe(204);
  await schedulerPasses(2);
}, 120_000);

afterAll(() => synth.cleanup());

const callsOf = (fn: string) => recorder.calls.filter((c) => c.fn === fn);

/** The granted (action, resource) pairs of a role that no allowed call used. */
function unusedGrants(fn: string, role: FunctionRole, calls: RecordedCall[]): string[] {
  const out: string[] = [];
  for (const s of role.statements) {
    if (s.effect !== 'Allow') continue;
    for (const action of s.actions)
      for (const resource of s.resources) {
        const narrowed = { ...s, actions: [action], resources: [resource] };
        if (calls.some((c) => !c.denied && statementMatches(narrowed, c.request))) continue;
        if (UNUSED_BUT_NEEDED.some((u) => u.action.test(action) && (u.fn ?? fn) === fn)) continue;
        out.push(`${action} on ${resource}`);
      }
  }
  return out;
}

describe('recorded AWS calls against the synthesized roles', () => {
  it('drives every function, and each HTTP function on the routes API Gateway gives it', () => {
    for (const fn of FUNCTIONS) expect(callsOf(fn).length, fn).toBeGreaterThan(0);
    expect(new Set(served.map((s) => s.fn))).toEqual(new Set(['produce', 'fetch', 'admin', 'heartbeat']));
    expect(served.filter((s) => s.status >= 500)).toEqual([]);
  });

  it.each(FUNCTIONS)('%s: no call is denied', (fn) => {
    expect(
      callsOf(fn)
        .filter((c) => c.denied)
        .map((c) => `${c.api} ${c.request.action} ${c.request.resource}: ${c.denied}`),
    ).toEqual([]);
  });

  it.each(FUNCTIONS)('%s: every grant is used by some call (or listed as needed)', (fn) => {
    expect(unusedGrants(fn, roles[fn], callsOf(fn))).toEqual([]);
  });

  it('the Kafka listener (every kind of request) is allowed every call any function made', () => {
    const task = synth.stack.node.findAll().find((c) => c instanceof CfnTaskDefinition) as CfnTaskDefinition;
    const taskRole = iam.roleOf(synth.stack.getLogicalId(task));
    const statements = recorder.statementsFor({
      statements: iam.statementsOf(taskRole),
      roleArn: iam.resolve({ 'Fn::GetAtt': [taskRole, 'Arn'] }),
    });
    expect(statements.length).toBeGreaterThan(0);
    const denied = recorder.calls
      .filter((c) => !c.denied && FUNCTIONS.includes(c.fn as DataFunctionName))
      .filter(
        (c) =>
          !statements.some(
            (s) =>
              s.effect === 'Allow' &&
              statementMatches(s, {
                ...c.request,
                context: { ...c.request.context, 's3express:SessionMode': 'ReadWrite' },
              }),
          ),
      )
      .map((c) => `${c.fn}: ${c.request.action} ${c.request.resource}`);
    expect([...new Set(denied)]).toEqual([]);
  });

  // The calls above are evaluated against the IAM-auth HTTP API stack; the auth mode and the API
  // flavour must not change what any data function's role allows, or they need a run of their own.
  it.each([
    ['API key', { authMode: 'apiKey', apiKeySha256: 'b'.repeat(64) }],
    ['JWT', { authMode: 'jwt', jwtIssuer: 'https://issuer.example.com', jwtAudience: 'clients' }],
    ['REST API', { apiFlavor: 'rest' }],
  ])('the %s stack grants every data function exactly what this one does', (_name, context) => {
    const other = synthStack({ ...STORES, ...context }, { bundle: false, cfnValidation: false });
    try {
      const otherIam = new TemplateIam(other.template.toJSON() as never, {
        account: TEST_ENV.account!,
        region: TEST_ENV.region!,
        partition: 'aws',
      });
      for (const fn of FUNCTIONS) {
        const grants = (t: TemplateIam, s: typeof synth) =>
          t
            .statementsOf(t.roleOf(logicalId(s.stack, s.stack.functions.byName[fn])))
            .map(({ effect, actions, resources, conditions }) =>
              JSON.stringify([effect, [...actions].sort(), [...resources].sort(), conditions]),
            )
            .sort();
        // The REST flavour has no WebSocket API (consumers poll there), so nothing to post to.
        const expected = grants(iam, synth).filter((g) => other.stack.pushApi || !g.includes('execute-api:'));
        expect(grants(otherIam, other), fn).toEqual(expected);
      }
    } finally {
      other.cleanup();
    }
  });

  it("the buckets' policies bind every role: the TLS-only Deny refuses a call without TLS", () => {
    const policies = iam.bucketPolicyStatements();
    expect(policies.length).toBeGreaterThanOrEqual(2);
    const { partition, region, account } = iam.env;
    for (const bucket of roles.fetch.buckets) {
      const request = bucket.express
        ? {
            action: 's3express:CreateSession',
            resource: `arn:${partition}:s3express:${region}:${account}:bucket/${bucket.name}`,
            context: { 's3express:SessionMode': 'ReadOnly' },
          }
        : { action: 's3:GetObject', resource: `arn:${partition}:s3:::${bucket.name}/k` };
      const over = (secure: string, version: string) => ({
        ...request,
        context: { ...request.context, 'aws:SecureTransport': secure, 's3:TlsVersion': version },
      });
      expect(allowingStatement(roles.fetch.statements, over('true', '1.3')), bucket.name).toBeDefined();
      expect(allowingStatement(roles.fetch.statements, over('false', '1.3')), bucket.name).toBeUndefined();
      if (!bucket.express)
        expect(allowingStatement(roles.fetch.statements, over('true', '1.1')), bucket.name).toBeUndefined();
    }
  });

  it('commits wake push consumers from every function that makes them: produce, admin and the scheduler', () => {
    expect(woken('conn-produce')).toEqual(['produce']);
    expect(woken('conn-admin')).toEqual(['admin']);
    expect(woken('conn-scheduler')).toEqual(['scheduler']);
  });

  it("triggers' Lambda targets are invoked by the scheduler only, as the stack grants it", () => {
    expect(invoked.map((i) => i.fn)).toEqual(['scheduler', 'scheduler']);
    expect(invoked[0]).toMatchObject({ functionArn: TARGET_ARN });
    expect(invoked[0]!.offsets.length).toBeGreaterThan(0);
  });

  it("records given up on reach the trigger's S3 failure destination, written by the scheduler as the stack grants it", () => {
    expect(failureObjects.map((o) => [o.fn, o.bucket])).toEqual([['scheduler', 'orders-failures']]);
    expect(failureObjects[0]!.key).toMatch(/^aged\/p-0\//);
  });

  it("records given up on reach the triggers' SQS and SNS destinations, sent by the scheduler as the stack grants it", () => {
    expect(failureMessages.map((m) => [m.fn, m.arn, m.requestId.split('/')[0]]).sort()).toEqual(
      [
        ['scheduler', FAILURE_QUEUE_ARN, 'aged-sqs'],
        ['scheduler', FAILURE_TOPIC_ARN, 'aged-sns'],
        ['scheduler', user.queueArn, 'aged-user'],
      ].sort(),
    );
    const sends = callsOf('scheduler').filter((c) => c.api === 'SQS.SendMessage' || c.api === 'SNS.Publish');
    expect(sends.filter((c) => c.denied)).toEqual([]);
    // The user's queue: allowed by the queue policy KafkaLogTrigger put on it, not by the scheduler's role.
    const toUser = sends.filter((c) => c.request.resource === user.queueArn);
    expect(toUser).toHaveLength(1);
    expect(user.permissions.map((p) => p.source)).toContain(toUser[0]!.allowedBy);
  });

  it('encrypted destinations: the scheduler uses their customer-managed keys through SQS, SNS and S3 only, as granted', () => {
    const keyCalls = callsOf('scheduler').filter((c) => c.request.action.startsWith('kms:'));
    expect(keyCalls.filter((c) => c.denied)).toEqual([]);
    const used = (keyArn: string) =>
      keyCalls
        .filter((c) => c.request.resource === keyArn)
        .map((c) => `${c.request.action} ${c.request.context!['kms:ViaService']!.split('.')[0]}`)
        .sort();
    expect(used(MESSAGES_KEY_ARN)).toEqual([
      'kms:Decrypt sns',
      'kms:Decrypt sqs',
      'kms:GenerateDataKey sns',
      'kms:GenerateDataKey sqs',
    ]);
    expect(used(OBJECTS_KEY_ARN)).toEqual(['kms:GenerateDataKey s3']);
    // The user's key: allowed by the statement KafkaLogTrigger put in its key policy, not the role.
    expect(used(user.queueKeyArn)).toEqual(['kms:Decrypt sqs', 'kms:GenerateDataKey sqs']);
    const byKeyPolicy = keyCalls.filter((c) => c.request.resource === user.queueKeyArn);
    expect(byKeyPolicy.every((c) => user.permissions.some((p) => p.source === c.allowedBy))).toBe(true);
    expect(allowingStatement(roles.scheduler.statements, byKeyPolicy[0]!.request)).toBeUndefined();
    // Through the destination's service only: the key itself, called directly, or via S3 for the
    // messages' key, is not the scheduler's.
    const direct = { action: 'kms:Decrypt', resource: MESSAGES_KEY_ARN };
    expect(allowingStatement(roles.scheduler.statements, direct)).toBeUndefined();
    const viaS3 = { ...direct, context: { 'kms:ViaService': `s3.${TEST_ENV.region}.amazonaws.com` } };
    expect(allowingStatement(roles.scheduler.statements, viaS3)).toBeUndefined();
    const objectsDecrypt = { action: 'kms:Decrypt', resource: OBJECTS_KEY_ARN, context: viaS3.context };
    expect(allowingStatement(roles.scheduler.statements, objectsDecrypt)).toBeUndefined();
  });

  it("a KafkaLogTrigger's function is invoked under the permission the construct put on it, its handler under its role", () => {
    expect(invoked[1]).toMatchObject({ fn: 'scheduler', functionArn: user.functionArn });
    const invokes = callsOf('scheduler').filter((c) => c.request.resource === user.functionArn);
    expect(invokes.length).toBeGreaterThan(0);
    // Allowed by the user stack's Lambda permission, not the scheduler's role (it lists no such function).
    const permissionIds = user.permissions.map((p) => p.source);
    expect(invokes.every((c) => permissionIds.includes(c.allowedBy!))).toBe(true);
    const handlerCalls = callsOf('trigger-handler');
    expect(new Set(handlerCalls.map((c) => c.request.resource.replace(/^.*\/\$default\//, '')))).toEqual(
      new Set([
        'POST/v3/clusters/local/triggers',
        'GET/v3/clusters/local/triggers/audit',
        'DELETE/v3/clusters/local/triggers/audit',
      ]),
    );
    expect(handlerCalls.filter((c) => c.denied)).toEqual([]);
    expect(unusedGrants('trigger target', user.handlerRole, handlerCalls)).toEqual([]);
  });

  it('the table of calls (function, calls recorded, denied, unused grants)', () => {
    const rows = FUNCTIONS.map((fn) => ({
      fn,
      calls: callsOf(fn).length,
      actions: [...new Set(callsOf(fn).map((c) => c.request.action))].sort().join(' '),
      denied: callsOf(fn).filter((c) => c.denied).length,
      unused: unusedGrants(fn, roles[fn], callsOf(fn)).length,
    }));
    console.log(rows.map((r) => `${r.fn}\t${r.calls}\t${r.denied}\t${r.unused}\t${r.actions}`).join('\n'));
    expect(rows.every((r) => r.denied === 0)).toBe(true);
  });
});
