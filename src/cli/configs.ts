/** `configs --entity-type users|clients (--describe | --alter)`: kafka-configs.sh's client quotas. */
import type { QuotaEntityPart, QuotaKey } from '../client/index.js';
import { connect, pairs, parse, UsageError, CONNECTION_HELP } from './args.js';
import type { Context } from './context.js';

export const CONFIGS_HELP = `Usage: kafka-log configs --entity-type users|clients (--entity-name N | --entity-default) (--describe | --alter) [options]
                                                               (kafka-configs.sh, client quotas)
  --entity-type users|clients   repeat with a second --entity-name for a user and client id together
  --entity-name N               the user (principal name without User:) or client id
  --entity-default              the default entity of the type(s) without a name
  --alter --add-config producer_byte_rate=1048576,consumer_byte_rate=2097152,request_percentage=50
          --delete-config producer_byte_rate[,...]
  --describe                    the quotas set (all of the type(s) when no name is given)
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
  const add = pairs(values['add-config']?.split(',').filter(Boolean), '--add-config');
  const remove = (values['delete-config'] ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  if (add.size === 0 && remove.length === 0) throw new UsageError('--alter needs --add-config or --delete-config');
  const ops = [
    ...[...add].map(([key, raw]) => {
      const value = Number(raw);
      if (!Number.isFinite(value) || value <= 0) throw new UsageError(`${key} must be a positive number (got ${raw})`);
      return { key: key as QuotaKey, value };
    }),
    ...remove.map((key) => ({ key: key as QuotaKey, remove: true })),
  ];
  await admin.alterClientQuotas([{ entity, ops }]);
  const who = entity
    .map((e) => `${SHOWN[e.entityType]} ${e.entityName === null ? "'<default>'" : `'${e.entityName}'`}`)
    .join(', ');
  ctx.out(`Completed updating config for ${who}.`);
}
