/**
 * The IAM side of a synthesized template, evaluated as AWS would for the calls a function makes:
 * each resource gets a physical name (as CloudFormation would give it), intrinsic functions
 * (Ref, Fn::GetAtt, Fn::Join, Fn::Select, Fn::Split) are resolved against those names and the
 * stack's account, region and partition, and a request (action, resource ARN, condition keys) is
 * allowed when an Allow statement of the role's policies names the action and the resource (with
 * IAM's `*` and `?` wildcards) and its conditions hold, and no Deny statement matches.
 *
 * Small on purpose: the condition operators the stack uses, and an unknown one fails loudly so
 * that a new kind of grant extends this rather than passing unchecked.
 */

export interface StackEnv {
  account: string;
  region: string;
  partition: string;
}

export interface IamRequest {
  /** e.g. `s3:GetObject`. */
  action: string;
  /** The resource ARN the call acts on. */
  resource: string;
  /** Condition keys the call carries (e.g. `s3express:SessionMode`). */
  context?: Record<string, string>;
}

export interface Statement {
  effect: 'Allow' | 'Deny';
  actions: string[];
  resources: string[];
  conditions: Record<string, Record<string, string[]>>;
  /** Where it comes from, for messages: the policy's logical id and the statement's index. */
  source: string;
}

type Json = unknown;
type Resource = { Type: string; Properties?: Record<string, Json> };

export class TemplateIam {
  private readonly resources: Record<string, Resource>;

  constructor(
    template: { Resources: Record<string, Resource> },
    readonly env: StackEnv,
  ) {
    this.resources = template.Resources;
  }

  /** The physical name CloudFormation would give a resource (deterministic, lower case). */
  physicalName(logicalId: string): string {
    const r = this.resource(logicalId);
    const base = `t-${logicalId.toLowerCase()}`;
    if (r.Type === 'AWS::S3Express::DirectoryBucket')
      return `${base}--${String(r.Properties?.LocationName ?? 'use1-az4')}--x-s3`;
    if (r.Type === 'AWS::ApiGatewayV2::Api' || r.Type === 'AWS::ApiGateway::RestApi')
      return logicalId
        .toLowerCase()
        .replace(/[^a-z0-9]/g, '')
        .slice(0, 10);
    return base;
  }

  resolve(value: Json): string {
    const v = this.resolveAny(value);
    if (typeof v !== 'string') throw new Error(`Not a string after resolution: ${JSON.stringify(value)}`);
    return v;
  }

  /** The function's environment variables, resolved. */
  environmentOf(functionLogicalId: string): Record<string, string> {
    const vars = (this.resource(functionLogicalId).Properties?.Environment as { Variables?: Record<string, Json> })
      ?.Variables;
    return Object.fromEntries(Object.entries(vars ?? {}).map(([k, v]) => [k, this.resolve(v)]));
  }

  /** The logical id of the role a function (or an ECS task definition's task role) runs as. */
  roleOf(logicalId: string): string {
    const props = this.resource(logicalId).Properties ?? {};
    const role = (props.Role ?? props.TaskRoleArn) as { 'Fn::GetAtt': [string, string] } | undefined;
    if (!role?.['Fn::GetAtt']) throw new Error(`${logicalId} has no role of this template`);
    return role['Fn::GetAtt'][0];
  }

  /** Every statement of the role's inline policies and of the AWS::IAM::Policy resources attached to it. */
  statementsOf(roleLogicalId: string): Statement[] {
    const documents: [string, Json][] = [];
    const role = this.resource(roleLogicalId);
    if ((role.Properties?.ManagedPolicyArns as Json[] | undefined)?.length)
      throw new Error(`${roleLogicalId} has managed policies, which this evaluator does not read`);
    for (const [i, p] of ((role.Properties?.Policies as { PolicyDocument: Json }[] | undefined) ?? []).entries())
      documents.push([`${roleLogicalId}.Policies[${i}]`, p.PolicyDocument]);
    for (const [id, r] of Object.entries(this.resources)) {
      if (r.Type !== 'AWS::IAM::Policy') continue;
      const roles = (r.Properties?.Roles as { Ref?: string }[] | undefined) ?? [];
      if (roles.some((x) => x.Ref === roleLogicalId)) documents.push([id, r.Properties?.PolicyDocument]);
    }
    return documents.flatMap(([id, doc]) =>
      ((doc as { Statement: Record<string, Json>[] }).Statement ?? []).map((s, i) => this.statement(s, `${id}#${i}`)),
    );
  }

  /**
   * The statements of every bucket policy (S3 and S3 Express), which apply to every caller: only
   * Deny statements for any principal (the stack's TLS-only rules), evaluated with the role's own
   * statements. A bucket policy that grants, or names a principal, fails loudly: reading it
   * needs more than this evaluator knows.
   */
  bucketPolicyStatements(): Statement[] {
    const out: Statement[] = [];
    for (const [id, r] of Object.entries(this.resources)) {
      if (r.Type !== 'AWS::S3::BucketPolicy' && r.Type !== 'AWS::S3Express::BucketPolicy') continue;
      const doc = r.Properties?.PolicyDocument as { Statement: Record<string, Json>[] };
      for (const [i, st] of doc.Statement.entries()) {
        const { Principal, ...rest } = st;
        const everyone = Principal === '*' || (Principal as { AWS?: Json })?.AWS === '*';
        if (st.Effect !== 'Deny' || !everyone)
          throw new Error(`${id}#${i}: only Deny statements for every principal are evaluated here`);
        out.push(this.statement(rest, `${id}#${i}`));
      }
    }
    return out;
  }

  /**
   * The template's Lambda permissions (a function's resource-based policy) as statements, each with
   * the principal it names: in the same account such a statement alone allows that principal's call
   * (IAM asks the identity-based or the resource-based policy, either). Only principals named by ARN
   * or account, without conditions, are read: anything else fails loudly.
   */
  lambdaPermissions(): (Statement & { principal: string })[] {
    const out: (Statement & { principal: string })[] = [];
    for (const [id, r] of Object.entries(this.resources)) {
      if (r.Type !== 'AWS::Lambda::Permission') continue;
      const p = r.Properties ?? {};
      const extra = Object.keys(p).filter((k) => !['Action', 'FunctionName', 'Principal'].includes(k));
      if (extra.length > 0) throw new Error(`${id}: Lambda permission with ${extra.join(', ')} is not evaluated here`);
      out.push({
        effect: 'Allow',
        actions: [String(p.Action)],
        resources: [this.resolve(p.FunctionName)],
        conditions: {},
        source: id,
        principal: this.resolve(p.Principal),
      });
    }
    return out;
  }

  /**
   * The template's queue and topic policies (SQS, SNS) and KMS key policies as statements, each
   * with the principal it names, read as Lambda permissions are: Allow statements naming
   * principals by ARN only. A key policy's `*` resource is the key: resolved to its ARN.
   */
  destinationPolicies(): (Statement & { principal: string })[] {
    const out: (Statement & { principal: string })[] = [];
    for (const [id, r] of Object.entries(this.resources)) {
      const key = r.Type === 'AWS::KMS::Key';
      if (r.Type !== 'AWS::SQS::QueuePolicy' && r.Type !== 'AWS::SNS::TopicPolicy' && !key) continue;
      const doc = (key ? r.Properties?.KeyPolicy : r.Properties?.PolicyDocument) as {
        Statement: Record<string, Json>[];
      };
      for (const [i, st] of doc.Statement.entries()) {
        const { Principal, ...rest } = st;
        const aws = (Principal as { AWS?: Json } | undefined)?.AWS;
        if (st.Effect !== 'Allow' || aws === undefined || aws === '*')
          throw new Error(`${id}#${i}: only Allow statements naming principals by ARN are evaluated here`);
        const statement = this.statement(
          key ? { ...rest, Resource: { 'Fn::GetAtt': [id, 'Arn'] } } : rest,
          `${id}#${i}`,
        );
        for (const principal of Array.isArray(aws) ? aws : [aws])
          out.push({ ...statement, principal: this.resolve(principal) });
      }
    }
    return out;
  }

  private statement(s: Record<string, Json>, source: string): Statement {
    if (s.NotAction || s.NotResource || s.Principal) throw new Error(`${source}: unsupported statement element`);
    const list = (v: Json): Json[] => (Array.isArray(v) ? v : [v]);
    const conditions: Statement['conditions'] = {};
    for (const [op, keys] of Object.entries((s.Condition as Record<string, Record<string, Json>>) ?? {}))
      conditions[op] = Object.fromEntries(
        Object.entries(keys).map(([k, v]) => [k, list(v).map((x) => this.resolve(x))]),
      );
    return {
      effect: s.Effect as Statement['effect'],
      actions: list(s.Action).map(String),
      resources: list(s.Resource).map((r) => this.resolve(r)),
      conditions,
      source,
    };
  }

  private resource(logicalId: string): Resource {
    const r = this.resources[logicalId];
    if (!r) throw new Error(`No resource ${logicalId} in the template`);
    return r;
  }

  private resolveAny(value: Json): Json {
    if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') return String(value);
    if (Array.isArray(value)) return value.map((v) => this.resolveAny(v));
    const o = value as Record<string, Json>;
    if ('Ref' in o) return this.ref(String(o.Ref));
    if ('Fn::GetAtt' in o) {
      const [id, attr] = o['Fn::GetAtt'] as [string, string];
      return this.getAtt(id, attr);
    }
    if ('Fn::Join' in o) {
      const [sep, parts] = o['Fn::Join'] as [string, Json[]];
      return parts.map((p) => this.resolve(p)).join(sep);
    }
    if ('Fn::Select' in o) {
      const [index, items] = o['Fn::Select'] as [Json, Json];
      const list = this.resolveAny(items) as string[];
      return list[Number(this.resolve(index))]!;
    }
    if ('Fn::Split' in o) {
      const [sep, source] = o['Fn::Split'] as [string, Json];
      return this.resolve(source).split(sep);
    }
    throw new Error(`Cannot resolve ${JSON.stringify(value)}`);
  }

  private ref(name: string): string {
    switch (name) {
      case 'AWS::AccountId':
        return this.env.account;
      case 'AWS::Region':
        return this.env.region;
      case 'AWS::Partition':
        return this.env.partition;
      case 'AWS::URLSuffix':
        return 'amazonaws.com';
      case 'AWS::StackName':
        return 'stack';
    }
    return this.physicalName(name);
  }

  private getAtt(id: string, attr: string): string {
    const r = this.resource(id);
    const { partition, region, account } = this.env;
    const name = this.physicalName(id);
    if (attr !== 'Arn') return `${name}.${attr}`;
    switch (r.Type) {
      case 'AWS::S3::Bucket':
        return `arn:${partition}:s3:::${name}`;
      case 'AWS::S3Express::DirectoryBucket':
        return `arn:${partition}:s3express:${region}:${account}:bucket/${name}`;
      case 'AWS::KMS::Key':
        return `arn:${partition}:kms:${region}:${account}:key/${name}`;
      case 'AWS::DynamoDB::Table':
        return `arn:${partition}:dynamodb:${region}:${account}:table/${name}`;
      case 'AWS::Logs::LogGroup':
        return `arn:${partition}:logs:${region}:${account}:log-group:${name}:*`;
      case 'AWS::IAM::Role':
        return `arn:${partition}:iam::${account}:role/${name}`;
      case 'AWS::Lambda::Function':
        return `arn:${partition}:lambda:${region}:${account}:function:${name}`;
      default:
        return `arn:${partition}:${r.Type.split('::')[1]!.toLowerCase()}:${region}:${account}:${name}`;
    }
  }
}

/** IAM's wildcard match: `*` any run of characters (`/` and `:` too), `?` any one. */
export function wildcardMatch(pattern: string, value: string, ignoreCase = false): boolean {
  const re = pattern
    .replace(/[.+^${}()|[\]\\]/g, '\\$&')
    .replace(/\*/g, '.*')
    .replace(/\?/g, '.');
  return new RegExp(`^${re}$`, ignoreCase ? 'is' : 's').test(value);
}

function conditionHolds(op: string, key: string, expected: string[], context: Record<string, string>): boolean {
  const actual = context[key];
  switch (op) {
    case 'StringEquals':
      return actual !== undefined && expected.includes(actual);
    case 'StringNotEquals':
      return actual === undefined || !expected.includes(actual);
    case 'StringLike':
      return actual !== undefined && expected.some((e) => wildcardMatch(e, actual));
    case 'Bool':
      return actual !== undefined && expected.includes(actual);
    case 'ArnLike':
    case 'ArnEquals':
      return actual !== undefined && expected.some((e) => wildcardMatch(e, actual));
    case 'NumericLessThan':
      return actual !== undefined && expected.some((e) => Number(actual) < Number(e));
    default:
      throw new Error(`Condition operator ${op} is not evaluated here: extend test/infra/iam/template-iam.ts`);
  }
}

/** Whether a statement applies to a request (its effect aside). */
export function statementMatches(s: Statement, req: IamRequest): boolean {
  if (!s.actions.some((a) => wildcardMatch(a, req.action, true))) return false;
  if (!s.resources.some((r) => wildcardMatch(r, req.resource))) return false;
  const context = req.context ?? {};
  return Object.entries(s.conditions).every(([op, keys]) =>
    Object.entries(keys).every(([key, expected]) => conditionHolds(op, key, expected, context)),
  );
}

/** The Allow statement that grants the request, or undefined when it is denied (implicitly or explicitly). */
export function allowingStatement(statements: Statement[], req: IamRequest): Statement | undefined {
  if (statements.some((s) => s.effect === 'Deny' && statementMatches(s, req))) return undefined;
  return statements.find((s) => s.effect === 'Allow' && statementMatches(s, req));
}
