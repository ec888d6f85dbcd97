/** `configs --entity-type users|clients (--describe | --alter)`: kafka-configs.sh's client quotas and users' SCRAM credentials. */
import type { QuotaEntityPart, QuotaKey, ScramCredentialAlteration, ScramMechanism } from '../client/index.js';
import { connect, pairs, parse, UsageError, CONNECTION_HELP } from './args.js';
import type { Context } from './context.js';

export const CONFIGS_HELP = `Usage: kafka-log configs --entity-type users|clients (--entity-name N | --entity-default) (--describe | --alter) [options]
                                                               (kafka-configs.sh, client quotas)
  --entity-type users|clients   repeat with a second --entity-name for a user and client id together
  --entity-name N               the user (principal name without User:) or client id
  --entity-default              the default entity of the type(s) without a name
  --alter --add-config producer_byte_rate=1048576,consumer_byte_rate=2097152,request_percentage=50
          --add-config 'SCRAM-SHA-512=[iterations=8192,password=alice-secret]'   (a user's SCRAM
                                credential; salted and hashed here, the password is not sent)
          --delete-config producer_byte_rate[,...],SCRAM-SHA-512
  --describe                    the quotas set, and users' SCRAM mechanisms (all of the type(s) when no name is given)
${CONNECTION_HELP}`;

const TYPES: Record<string, QuotaEntityPart['entityType']> = { users: 'user', clients: 'client-id' };
const SHOWN: Record<QuotaEntityPart['entityType'], string> = { user: 'user-principal', 'client-id': 'client-id' };

export async function configsCommand(argv: string[], ctx: Context): Promise<void> {
  const { values } = parse(argv, {
    'entity-type': { type: 'string', multiple: true },
    'entity-name': { type: 'string', multiple: true },
    'entity-default': { type: 'boolean' },
    alter: { type: 'boolean' },
    describe: { type: 'boolean' },
    'add-config': { type: 'string' },
    'delete-config': { type: 'string' },
  });
  if (values.help) return ctx.out(CONFIGS_HELP);
  const types = (values['entity-type'] ?? []).map((t) => {
    const type = TYPES[t];
    if (!type) throw new UsageError(`--entity-type must be users or clients (got ${t})`);
    return type;
  });
  if (types.length === 0 || types.length > 2 || new Set(types).size !== types.length)
    throw new UsageError('--entity-type users, clients, or both once each');
  const names = values['entity-name'] ?? [];
  if (names.length > types.length) throw new UsageError('More --entity-name than --entity-type');
  const named = names.length === types.length || values['entity-default'];
  // Names pair with types in order; the types left over are the default entity with --entity-default.
  const entity: QuotaEntityPart[] = types.map((entityType, i) => ({ entityType, entityName: names[i] ?? null }));
  if (values.alter === values.describe) throw new UsageError('Give exactly one of --alter or --describe');
  const admin = connect(values, ctx.env).admin({ retries: 2 });

  if (values.describe) {
    const want = (type: QuotaEntityPart['entityType']) => {
      const part = entity.find((p) => p.entityType === type);
      if (!part) return undefined;
      return part.entityName ?? (values['entity-default'] ? null : undefined);
    };
    const quotas = await admin.describeClientQuotas({ user: want('user'), clientId: want('client-id') });
    const sameTypes = (q: { entity: QuotaEntityPart[] }) =>
      q.entity.length === entity.length && entity.every((p) => q.entity.some((e) => e.entityType === p.entityType));
    const scram =
      entity.length === 1 && entity[0]!.entityType === 'user' && !values['entity-default']
        ? await admin.describeUserScramCredentials(names.length > 0 ? names : undefined)
        : [];
    for (const u of scram.filter((d) => !d.error && d.credentials.length > 0))
      ctx.out(
        `SCRAM credential configs for user-principal '${u.user}' are ${u.credentials
          .map((c) => `${c.mechanism}=iterations=${c.iterations}`)
          .join(', ')}`,
      );
    for (const q of quotas.filter(sameTypes)) {
      const who = q.entity
        .map((e) => `${SHOWN[e.entityType]} ${e.entityName === null ? "'<default>'" : `'${e.entityName}'`}`)
        .join(', ');
      ctx.out(
        `Quota configs for ${who} are ${Object.entries(q.values)
          .map(([k, v]) => `${k}=${v}`)
          .join(', ')}`,
      );
    }
    return;
  }
  if (!named) throw new UsageError('--alter needs --entity-name or --entity-default');
  const add = pairs(splitConfigs(values['add-config'] ?? ''), '--add-config');
  const remove = splitConfigs(values['delete-config'] ?? '');
  if (add.size === 0 && remove.length === 0) throw new UsageError('--alter needs --add-config or --delete-config');
  const scram = scramAlterations(entity, add, remove);
  for (const k of SCRAM_MECHANISMS) add.delete(k);
  const quotaRemove = remove.filter((k) => !(SCRAM_MECHANISMS as readonly string[]).includes(k));
  // One call per alteration: Kafka refuses a user altered twice in one request.
  for (const a of scram) {
    const [result] = await admin.alterUserScramCredentials([a]);
    if (result?.error) throw result.error;
  }
  if (add.size === 0 && quotaRemove.length === 0)
    return ctx.out(`Completed updating config for user-principal '${entity[0]!.entityName}'.`);
  const ops = [
    ...[...add].map(([key, raw]) => {
      const value = Number(raw);
      if (!Number.isFinite(value) || value <= 0) throw new UsageError(`${key} must be a positive number (got ${raw})`);
      return { key: key as QuotaKey, value };
    }),
    ...quotaRemove.map((key) => ({ key: key as QuotaKey, remove: true })),
  ];
  await admin.alterClientQuotas([{ entity, ops }]);
  const who = entity
    .map((e) => `${SHOWN[e.entityType]} ${e.entityName === null ? "'<default>'" : `'${e.entityName}'`}`)
    .join(', ');
  ctx.out(`Completed updating config for ${who}.`);
}

const SCRAM_MECHANISMS = ['SCRAM-SHA-256', 'SCRAM-SHA-512'] as const;

/** Comma-separated entries, a comma inside [...] kept (`SCRAM-SHA-256=[iterations=8192,password=p]`). */
function splitConfigs(text: string): string[] {
  const out: string[] = [];
  let depth = 0;
  let at = 0;
  for (let i = 0; i <= text.length; i++) {
    const ch = text[i];
    if (ch === '[') depth++;
    else if (ch === ']') depth = Math.max(0, depth - 1);
    else if (i === text.length || (ch === ',' && depth === 0)) {
      const item = text.slice(at, i).trim();
      if (item) out.push(item);
      at = i + 1;
    }
  }
  return out;
}

/** kafka-configs.sh's SCRAM entries for one named user: `MECH=[iterations=N,password=P]` to add, `MECH` to delete. */
function scramAlterations(
  entity: QuotaEntityPart[],
  add: Map<string, string>,
  remove: string[],
): ScramCredentialAlteration[] {
  const isScram = (k: string): k is ScramMechanism => (SCRAM_MECHANISMS as readonly string[]).includes(k);
  const adds = [...add].filter(([k]) => isScram(k));
  const deletes = remove.filter(isScram);
  if (adds.length === 0 && deletes.length === 0) return [];
  const user = entity.length === 1 && entity[0]!.entityType === 'user' ? entity[0]!.entityName : null;
  if (!user) throw new UsageError('SCRAM credentials are set for one user: --entity-type users --entity-name NAME');
  return [
    ...adds.map(([mechanism, raw]) => {
      const m = /^\[(.*)\]$/.exec(raw.trim());
      const props = pairs(m ? splitConfigs(m[1]!) : [], mechanism);
      const password = props.get('password');
      if (!m || !password) throw new UsageError(`${mechanism} takes [iterations=N,password=P] (iterations optional)`);
      const iterations = props.has('iterations') ? Number(props.get('iterations')) : undefined;
      if (iterations !== undefined && !Number.isInteger(iterations))
        throw new UsageError(`${mechanism} iterations must be a whole number`);
      return {
        user,
        mechanism: mechanism as ScramMechanism,
        password,
        ...(iterations !== undefined ? { iterations } : {}),
      };
    }),
    ...deletes.map((mechanism) => ({ user, mechanism, delete: true as const })),
  ];
}
