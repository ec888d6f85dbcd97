/** `acls --add | --remove | --list`: what kafka-acls.sh does, with its flags. */
import type { AclEntry, AclFilter, AclOperation, AclResourceType } from '../client/index.js';
import { connect, parse, UsageError, CONNECTION_HELP } from './args.js';
import type { Context } from './context.js';

export const ACLS_HELP = `Usage: kafka-log acls (--add | --remove | --list) [options]   (kafka-acls.sh)
  resources (any number; --list without one lists every ACL):
    --topic T  --group G  --transactional-id X  --cluster
    --resource-pattern-type literal|prefixed (add; default literal) | any|match (list, remove)
  entries (--add, --remove):
    --allow-principal User:alice  --deny-principal User:bob   (repeatable)
    --allow-host H  --deny-host H                              (default *)
    --operation Read|Write|Create|Delete|Alter|Describe|ClusterAction|DescribeConfigs|AlterConfigs|IdempotentWrite|All
    --producer   Write, Describe and Create on the topics (with --idempotent, IdempotentWrite on the cluster)
    --consumer   Read and Describe on the topics, Read on the groups
  --principal P   (--list) only the ACLs of this principal
${CONNECTION_HELP}`;

const OPERATIONS: readonly AclOperation[] = [
  'ALL',
  'READ',
  'WRITE',
  'CREATE',
  'DELETE',
  'ALTER',
  'DESCRIBE',
  'CLUSTER_ACTION',
  'DESCRIBE_CONFIGS',
  'ALTER_CONFIGS',
  'IDEMPOTENT_WRITE',
];

/** kafka-acls.sh's `IdempotentWrite` (or `idempotent-write`, `IDEMPOTENT_WRITE`) -> Kafka's enum name. */
export function operationName(raw: string): AclOperation {
  const name = raw
    .replace(/([a-z])([A-Z])/g, '$1_$2')
    .replace(/-/g, '_')
    .toUpperCase();
  if (!(OPERATIONS as readonly string[]).includes(name)) throw new UsageError(`Unknown operation ${raw}`);
  return name as AclOperation;
}

type Pattern = 'LITERAL' | 'PREFIXED' | 'ANY' | 'MATCH';
interface Resource {
  type: AclResourceType;
  name: string;
}

const describeResource = (type: string, name: string, pattern: string) =>
  `ResourcePattern(resourceType=${type}, name=${name}, patternType=${pattern})`;
const describeEntry = (a: AclEntry) =>
  `(principal=${a.principal}, host=${a.host}, operation=${a.operation}, permissionType=${a.permissionType})`;

/** kafka-acls.sh's listing: the ACLs grouped under their resource pattern. */
function printGrouped(ctx: Context, heading: string, acls: AclEntry[]): void {
  const groups = new Map<string, AclEntry[]>();
  for (const a of acls) {
    const key = describeResource(a.resourceType, a.resourceName, a.resourcePatternType);
    groups.set(key, [...(groups.get(key) ?? []), a]);
  }
  for (const [resource, entries] of groups) {
    ctx.out(`${heading} \`${resource}\`:`);
    for (const e of entries) ctx.out(`\t${describeEntry(e)}`);
    ctx.out('');
  }
}

export async function aclsCommand(argv: string[], ctx: Context): Promise<void> {
  const { values } = parse(argv, {
    add: { type: 'boolean' },
    remove: { type: 'boolean' },
    list: { type: 'boolean' },
    force: { type: 'boolean' },
    topic: { type: 'string', multiple: true },
    group: { type: 'string', multiple: true },
    'transactional-id': { type: 'string', multiple: true },
    cluster: { type: 'boolean' },
    'resource-pattern-type': { type: 'string' },
    'allow-principal': { type: 'string', multiple: true },
    'deny-principal': { type: 'string', multiple: true },
    'allow-host': { type: 'string', multiple: true },
    'deny-host': { type: 'string', multiple: true },
    operation: { type: 'string', multiple: true },
    producer: { type: 'boolean' },
    consumer: { type: 'boolean' },
    idempotent: { type: 'boolean' },
    principal: { type: 'string' },
  });
  if (values.help) return ctx.out(ACLS_HELP);
  const actions = [values.add, values.remove, values.list].filter(Boolean).length;
  if (actions !== 1) throw new UsageError('Give exactly one of --add, --remove or --list');
  const pattern = (
    values['resource-pattern-type'] ?? (values.add ? 'literal' : values.list ? 'any' : 'literal')
  ).toUpperCase() as Pattern;
  if (!['LITERAL', 'PREFIXED', 'ANY', 'MATCH'].includes(pattern))
    throw new UsageError('--resource-pattern-type must be literal, prefixed, any or match');
  if (values.add && (pattern === 'ANY' || pattern === 'MATCH'))
    throw new UsageError('--add takes --resource-pattern-type literal or prefixed');

  const topics: Resource[] = (values.topic ?? []).map((name) => ({ type: 'TOPIC', name }));
  const groups: Resource[] = (values.group ?? []).map((name) => ({ type: 'GROUP', name }));
  const others: Resource[] = [
    ...(values['transactional-id'] ?? []).map((name): Resource => ({ type: 'TRANSACTIONAL_ID', name })),
    ...(values.cluster ? [{ type: 'CLUSTER' as const, name: 'kafka-cluster' }] : []),
  ];
  const admin = connect(values, ctx.env).admin({ retries: 2 });

  if (values.list) {
    const resources = [...topics, ...groups, ...others];
    const filters: AclFilter[] =
      resources.length === 0
        ? [{}]
        : resources.map((r) => ({ resourceType: r.type, resourceName: r.name, resourcePatternType: pattern }));
    const acls = (
      await Promise.all(
        filters.map((f) => admin.describeAcls({ ...f, ...(values.principal ? { principal: values.principal } : {}) })),
      )
    ).flat();
    return printGrouped(ctx, 'Current ACLs for resource', acls);
  }

  // Entries: (resource, operation) pairs, from --operation or the --producer / --consumer shorthands.
  const pairs: { resource: Resource; operation: AclOperation }[] = [];
  const ops = (values.operation ?? []).map(operationName);
  for (const resource of [...topics, ...groups, ...others])
    for (const operation of ops) pairs.push({ resource, operation });
  if (values.producer) {
    if (topics.length === 0) throw new UsageError('--producer needs --topic');
    for (const resource of topics)
      for (const operation of ['WRITE', 'DESCRIBE', 'CREATE'] as const) pairs.push({ resource, operation });
    if (values.idempotent)
      pairs.push({ resource: { type: 'CLUSTER', name: 'kafka-cluster' }, operation: 'IDEMPOTENT_WRITE' });
  }
  if (values.consumer) {
    if (topics.length === 0 || groups.length === 0) throw new UsageError('--consumer needs --topic and --group');
    for (const resource of topics)
      for (const operation of ['READ', 'DESCRIBE'] as const) pairs.push({ resource, operation });
    for (const resource of groups) pairs.push({ resource, operation: 'READ' });
  }
  const principals = [
    ...(values['allow-principal'] ?? []).map((p) => ({
      principal: p,
      permissionType: 'ALLOW' as const,
      hosts: values['allow-host'] ?? ['*'],
    })),
    ...(values['deny-principal'] ?? []).map((p) => ({
      principal: p,
      permissionType: 'DENY' as const,
      hosts: values['deny-host'] ?? ['*'],
    })),
  ];
  const entries: AclEntry[] = [];
  for (const { resource, operation } of pairs) {
    for (const p of principals) {
      for (const host of p.hosts) {
        entries.push({
          resourceType: resource.type,
          resourceName: resource.name,
          resourcePatternType: pattern as 'LITERAL' | 'PREFIXED',
          principal: p.principal,
          host,
          operation,
          permissionType: p.permissionType,
        });
      }
    }
  }

  if (values.add) {
    if (entries.length === 0)
      throw new UsageError(
        '--add needs a resource, --operation (or --producer/--consumer) and --allow-principal or --deny-principal',
      );
    await admin.createAcls({ acl: entries });
    return printGrouped(ctx, 'Adding ACLs for resource', entries);
  }
  // --remove: the named entries, or, with no principal and no operation, every ACL of the resources.
  const resources = [...topics, ...groups, ...others];
  if (resources.length === 0) throw new UsageError('--remove needs a resource');
  const filters: AclFilter[] =
    principals.length === 0 && pairs.length === 0
      ? resources.map((r) => ({ resourceType: r.type, resourceName: r.name, resourcePatternType: pattern }))
      : entries.map((e) => ({ ...e, resourcePatternType: pattern }));
  if (filters.length === 0)
    throw new UsageError(
      '--remove takes a principal with --operation (those ACLs), or neither (every ACL of the resources)',
    );
  const removed = await admin.deleteAcls({ filters });
  return printGrouped(ctx, 'Removed ACLs for resource', removed);
}
