/**
 * The AWS calls a function makes, recorded and answered as AWS would answer them for the function's
 * role in the synthesized template (template-iam.ts). Wraps the storage ports the domain uses (and
 * the push ConnectionPoster) with the call each adapter makes for them:
 *
 *   S3 Standard bucket     PutObject, GetObject/HeadObject (s3:GetObject), ListObjectsV2
 *                          (s3:ListBucket, with s3:prefix), DeleteObjects (s3:DeleteObject per key)
 *   S3 Express bucket      s3express:CreateSession on the bucket, with s3express:SessionMode as the
 *                          function's configuration makes the SDK ask for it; the session then
 *                          allows what its mode allows (ReadOnly: GET, HEAD, LIST)
 *   DynamoDB table         GetItem, Query, UpdateItem (every put), DeleteItem
 *   API Gateway @connections   execute-api:ManageConnections on `{api}/{stage}/POST/@connections/{id}`
 *   Lambda Invoke          lambda:InvokeFunction on the function ARN as the trigger names it
 *   S3 failure destination s3:PutObject on the object of the bucket the trigger names
 *   SQS / SNS destination  sqs:SendMessage / sns:Publish on the queue or topic
 *   SSE-KMS destination    the calls its service makes to KMS on the sender's behalf (as the
 *                          sender, with kms:ViaService): kms:GenerateDataKey for an S3 object,
 *                          and kms:Decrypt too for a message
 *
 * A call the role does not allow is recorded as denied and fails as the SDK fails it (AccessDenied,
 * 403), so the domain code meets what it would meet on AWS. As S3 does, a GET or HEAD of a missing
 * key answers 403 instead of 404 to a caller without s3:ListBucket on the bucket.
 */
import type { Storage } from '../../../src/compose.js';
import type { ConnectionPoster } from '../../../src/push/ports.js';
import type { LambdaInvoke, PutFailureObject, SendFailureMessage } from '../../../src/triggers/index.js';
import {
  ObjectNotFoundError,
  type MetadataStore,
  type MetaItem,
  type ObjectInfo,
  type ObjectStore,
} from '../../../src/storage/ports.js';
import { allowingStatement, type IamRequest, type Statement, type TemplateIam } from './template-iam.js';

export interface RecordedCall {
  fn: string;
  /** The API call as the adapter makes it, e.g. `S3.HeadObject`, `DynamoDB.Query`. */
  api: string;
  request: IamRequest;
  /** The allowing statement's source; undefined when denied. */
  allowedBy?: string;
  /** Why it was refused, when it was (missing grant, session mode, 403 for a missing key). */
  denied?: string;
}

/** A function as the template defines it: its role's statements and the resources its environment names. */
export interface FunctionRole {
  fn: string;
  statements: Statement[];
  /** Replica stores in replica-id order. */
  buckets: { name: string; express: boolean }[];
  tableArn: string;
  /** The S3 Express session mode the function's configuration asks for. */
  sessionMode: 'ReadOnly' | 'ReadWrite';
  env: Record<string, string>;
  /** The role's ARN, as resource-based policies name it. */
  roleArn: string;
}

export function functionRole(
  iam: TemplateIam,
  fn: string,
  functionLogicalId: string,
  sessionMode: FunctionRole['sessionMode'],
): FunctionRole {
  const env = iam.environmentOf(functionLogicalId);
  const { partition, region, account } = iam.env;
  const roleId = iam.roleOf(functionLogicalId);
  return {
    roleArn: iam.resolve({ 'Fn::GetAtt': [roleId, 'Arn'] }),
    fn,
    // The buckets' policies (TLS only) bind the role as they bind every caller.
    statements: [...iam.statementsOf(roleId), ...iam.bucketPolicyStatements()],
    buckets: (env.BUCKETS ?? '')
      .split(',')
      .filter(Boolean)
      .map((name) => ({ name, express: name.endsWith('--x-s3') })),
    tableArn: `arn:${partition}:dynamodb:${region}:${account}:table/${env.TABLE_NAME}`,
    sessionMode,
    env,
  };
}

const accessDenied = (what: string) =>
  Object.assign(new Error(`Access Denied: ${what}`), { name: 'AccessDenied', $metadata: { httpStatusCode: 403 } });

/** The condition keys of a call the SDK makes: over HTTPS, with TLS 1.2 or later (Node's default minimum). */
const OVER_TLS = { 'aws:SecureTransport': 'true', 's3:TlsVersion': '1.3' };

/** S3 actions a ReadOnly S3 Express session allows. */
const READ_ONLY_SESSION = new Set(['s3:GetObject', 's3:ListBucket']);

export class CallRecorder {
  readonly calls: RecordedCall[] = [];
  /** Resource-based statements of the same account (e.g. a function's Lambda permissions), by principal. */
  private readonly resourcePolicies: (Statement & { principal: string })[] = [];

  constructor(private readonly iam: TemplateIam) {}

  /** Adds resource-based statements (another template's: a user's stack) that apply to the principals they name. */
  addResourcePolicies(statements: (Statement & { principal: string })[]): void {
    this.resourcePolicies.push(...statements);
  }

  /** What allows `role`'s calls: its own statements, and the resource policies naming it. */
  statementsFor(role: Pick<FunctionRole, 'statements' | 'roleArn'>): Statement[] {
    return [...role.statements, ...this.resourcePolicies.filter((s) => s.principal === role.roleArn)];
  }

  /** Records a call; throws AccessDenied when the role does not allow it. */
  authorize(role: FunctionRole, api: string, request: IamRequest): void {
    let allowed: Statement | undefined;
    try {
      allowed = allowingStatement(this.statementsFor(role), request);
    } catch (e) {
      // The domain code may swallow what a store throws: recorded as denied, so the check fails.
      this.calls.push({ fn: role.fn, api, request, denied: `not evaluated: ${(e as Error).message}` });
      throw e;
    }
    this.calls.push({
      fn: role.fn,
      api,
      request,
      ...(allowed ? { allowedBy: allowed.source } : { denied: 'no statement allows it' }),
    });
    if (!allowed) throw accessDenied(`${role.fn} may not ${request.action} on ${request.resource}`);
  }

  private deny(role: FunctionRole, api: string, request: IamRequest, why: string): never {
    this.calls.push({ fn: role.fn, api, request, denied: why });
    throw accessDenied(`${role.fn}: ${api}: ${why}`);
  }

  /** The storage as `role` would reach it on AWS. */
  storage(base: Storage, role: FunctionRole): Storage {
    if (base.stores.length !== role.buckets.length)
      throw new Error(`${role.fn}: ${base.stores.length} stores for ${role.buckets.length} buckets`);
    return {
      ...base,
      metadata: new RecordedMetadata(base.metadata, (api, action) =>
        this.authorize(role, `DynamoDB.${api}`, { action, resource: role.tableArn }),
      ),
      stores: base.stores.map((s, i) => this.objectStore(s, role, role.buckets[i]!)),
    };
  }

  private objectStore(inner: ObjectStore, role: FunctionRole, bucket: { name: string; express: boolean }): ObjectStore {
    const { partition, region, account } = this.iam.env;
    const s3 = (api: string, action: string, key?: string, keys?: Record<string, string>) => {
      // The SDK speaks HTTPS (TLS 1.2 or later) to S3: what the buckets' TLS-only policies ask.
      const context = { ...keys, ...OVER_TLS };
      if (!bucket.express) {
        const resource = `arn:${partition}:s3:::${bucket.name}${key === undefined ? '' : `/${key}`}`;
        return this.authorize(role, `S3.${api}`, { action, resource, context });
      }
      // A directory bucket: the session authorizes the call, and CreateSession authorizes the session.
      const session: IamRequest = {
        action: 's3express:CreateSession',
        resource: `arn:${partition}:s3express:${region}:${account}:bucket/${bucket.name}`,
        context: { 's3express:SessionMode': role.sessionMode, ...OVER_TLS },
      };
      this.authorize(role, `S3Express.CreateSession (for ${api})`, session);
      if (role.sessionMode === 'ReadOnly' && !READ_ONLY_SESSION.has(action))
        this.deny(role, `S3Express.${api}`, { action, resource: session.resource }, 'a ReadOnly session');
    };
    // S3 decides between 404 and 403 for a missing key by s3:ListBucket on the bucket: recorded as
    // the permission the answer needs (directory buckets answer 404 within a session).
    const notFound = (api: string, key: string): void => {
      if (bucket.express) return;
      this.authorize(role, `S3.${api} (missing ${key}: 404, or 403 without s3:ListBucket)`, {
        action: 's3:ListBucket',
        resource: `arn:${partition}:s3:::${bucket.name}`,
        context: OVER_TLS,
      });
    };
    return {
      name: inner.name,
      put: async (key, body) => {
        s3('PutObject', 's3:PutObject', key);
        return inner.put(key, body);
      },
      get: async (key, range) => {
        s3('GetObject', 's3:GetObject', key);
        try {
          return await inner.get(key, range);
        } catch (e) {
          if (e instanceof ObjectNotFoundError) notFound('GetObject', key);
          throw e;
        }
      },
      head: async (key): Promise<ObjectInfo | undefined> => {
        s3('HeadObject', 's3:GetObject', key);
        const info = await inner.head(key);
        if (!info) notFound('HeadObject', key);
        return info;
      },
      list: async (prefix, page) => {
        s3('ListObjectsV2', 's3:ListBucket', undefined, { 's3:prefix': prefix });
        return inner.list(prefix, page);
      },
      delete: async (keys) => {
        // The S3 adapter sends nothing for an empty delete.
        for (const key of keys) s3('DeleteObjects', 's3:DeleteObject', key);
        return inner.delete(keys);
      },
    };
  }

  /**
   * The KMS calls a service makes as `role` when it sends to a destination encrypted with `keyArn`
   * (none without a key): each must be allowed to the sender, through that service.
   */
  keyUse(role: FunctionRole, service: 's3' | 'sqs' | 'sns', keyArn: string | undefined, actions: string[]): void {
    if (keyArn === undefined) return;
    const region = keyArn.split(':')[3];
    for (const action of actions)
      this.authorize(role, `KMS.${action.slice(4)} (by ${service.toUpperCase()})`, {
        action,
        resource: keyArn,
        context: { 'kms:ViaService': `${service}.${region}.amazonaws.com` },
      });
  }

  /** PostToConnection as the role would make it; the message goes to `deliver`. */
  poster(role: FunctionRole, deliver: ConnectionPoster['post']): ConnectionPoster {
    return {
      post: async (endpoint, connectionId, message) => {
        const m = /^https:\/\/([^.]+)\.execute-api\.([^.]+)\.amazonaws\.com\/([^/]+)$/.exec(endpoint);
        if (!m) throw new Error(`Not an API Gateway WebSocket endpoint: ${endpoint}`);
        const [, apiId, region, stage] = m;
        this.authorize(role, 'ApiGatewayManagementApi.PostToConnection', {
          action: 'execute-api:ManageConnections',
          resource: `arn:${this.iam.env.partition}:execute-api:${region}:${this.iam.env.account}:${apiId}/${stage}/POST/@connections/${connectionId}`,
        });
        return deliver(endpoint, connectionId, message);
      },
    };
  }
}

/** Lambda's Invoke as the role would make it (a trigger's Lambda target); the event goes to `invoke`. */
export function recordedLambda(recorder: CallRecorder, role: FunctionRole, invoke: LambdaInvoke): LambdaInvoke {
  return async (functionArn, timeoutMs, event) => {
    try {
      recorder.authorize(role, 'Lambda.Invoke', { action: 'lambda:InvokeFunction', resource: functionArn });
    } catch (e) {
      // The Lambda adapter answers a refused call as a failed invocation, as the SDK's error is.
      return { ok: false, error: (e as Error).message };
    }
    return invoke(functionArn, timeoutMs, event);
  };
}

/** The customer-managed KMS key (its ARN) a destination (its ARN; a bucket's without a key) is encrypted with, if any. */
export type DestinationKeys = (destinationArn: string) => string | undefined;

/** A trigger's S3 failure destination's PutObject as the role would make it; the object goes to `put`. */
export function recordedFailureObjects(
  recorder: CallRecorder,
  role: FunctionRole,
  put: PutFailureObject,
  keyOf: DestinationKeys = () => undefined,
): PutFailureObject {
  return async (bucket, key, body) => {
    recorder.authorize(role, 'S3.PutObject (failure destination)', {
      action: 's3:PutObject',
      resource: `arn:aws:s3:::${bucket}/${key}`,
      context: OVER_TLS,
    });
    recorder.keyUse(role, 's3', keyOf(`arn:aws:s3:::${bucket}`), ['kms:GenerateDataKey']);
    return put(bucket, key, body);
  };
}

/** A trigger's SQS or SNS failure destination's SendMessage or Publish as the role would make it; the message goes to `send`. */
export function recordedFailureMessages(
  recorder: CallRecorder,
  role: FunctionRole,
  send: SendFailureMessage,
  keyOf: DestinationKeys = () => undefined,
): SendFailureMessage {
  return async (arn, body) => {
    const sqs = arn.split(':')[2] === 'sqs';
    recorder.authorize(role, sqs ? 'SQS.SendMessage' : 'SNS.Publish', {
      action: sqs ? 'sqs:SendMessage' : 'sns:Publish',
      resource: arn,
    });
    recorder.keyUse(role, sqs ? 'sqs' : 'sns', keyOf(arn), ['kms:Decrypt', 'kms:GenerateDataKey']);
    return send(arn, body);
  };
}

/** Each metadata call, authorized before it runs (a denied call has no effect). */
class RecordedMetadata implements MetadataStore {
  constructor(
    private readonly inner: MetadataStore,
    private readonly authorize: (api: string, action: string) => void,
  ) {}

  get<T = unknown>(pk: string, sk: string): Promise<MetaItem<T> | undefined> {
    this.authorize('GetItem', 'dynamodb:GetItem');
    return this.inner.get<T>(pk, sk);
  }

  changeStamp(pk: string): string | undefined {
    return this.inner.changeStamp?.(pk);
  }

  query<T = unknown>(pk: string, options?: Parameters<MetadataStore['query']>[1]): Promise<MetaItem<T>[]> {
    this.authorize('Query', 'dynamodb:Query');
    return this.inner.query<T>(pk, options);
  }

  put<T>(...args: Parameters<MetadataStore['put']>): Promise<MetaItem<T>> {
    this.authorize('UpdateItem', 'dynamodb:UpdateItem');
    return this.inner.put(...args) as Promise<MetaItem<T>>;
  }

  delete(pk: string, sk: string, condition?: { ifVersion: number }): Promise<void> {
    this.authorize('DeleteItem', 'dynamodb:DeleteItem');
    return this.inner.delete(pk, sk, condition);
  }
}
