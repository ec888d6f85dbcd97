/** `groups list|describe|delete|reset-offsets`: what kafka-consumer-groups.sh does. */
import type { ResetStrategy } from '../client/index.js';
import {
  action,
  connect,
  int,
  parse,
  propertiesFile,
  required,
  topicPartitions,
  UsageError,
  withFileConnection,
  CONNECTION_HELP,
} from './args.js';
import type { Context } from './context.js';
import { table } from './format.js';

export const GROUPS_HELP = `Usage: kafka-log groups <list|describe|delete|reset-offsets> [options]
       (or kafka-consumer-groups.sh's --list, --describe, --delete, --reset-offsets)
  list     [--type] [--group-type classic|consumer|share]
           --type: every group with its TYPE and STATE, share groups beside consumer groups (Kafka's
           ListGroups with types, as kafka-groups.sh --list); --group-type filters
  describe --group G | --all-groups [--members | --state]
           (default: per partition CURRENT-OFFSET, LOG-END-OFFSET and LAG)
  delete   --group G...
  reset-offsets --group G (--all-topics | --topic T[:P,P...]...) STRATEGY [--dry-run | --execute]
           STRATEGY: --to-earliest | --to-latest | --to-current | --to-offset N | --shift-by N
                     | --to-datetime YYYY-MM-DDTHH:mm:SS.sss | --by-duration PnDTnHnMnS
           prints the plan; writes it only with --execute (the group must have no members);
           --export prints it as CSV (TOPIC,PARTITION,NEW-OFFSET), as kafka-consumer-groups.sh
  --command-config FILE   connection settings as properties (bootstrap.servers, auth, token, region, ...)
  --timeout MS            time limit of each request (as --request-timeout-ms)
${CONNECTION_HELP}`;

export const GROUPS_ACTIONS = ['list', 'describe', 'delete', 'reset-offsets'] as const;

export const GROUPS_OPTIONS = {
  group: { type: 'string', multiple: true },
  'all-groups': { type: 'boolean' },
  type: { type: 'boolean' },
  'group-type': { type: 'string', multiple: true },
  members: { type: 'boolean' },
  offsets: { type: 'boolean' },
  state: { type: 'boolean' },
  'all-topics': { type: 'boolean' },
  topic: { type: 'string', multiple: true },
  'to-earliest': { type: 'boolean' },
  'to-latest': { type: 'boolean' },
  'to-current': { type: 'boolean' },
  'to-offset': { type: 'string' },
  'shift-by': { type: 'string' },
  'to-datetime': { type: 'string' },
  'by-duration': { type: 'string' },
  'dry-run': { type: 'boolean' },
  execute: { type: 'boolean' },
  export: { type: 'boolean' },
  'command-config': { type: 'string' },
  timeout: { type: 'string' },
} as const;

/** kafka-consumer-groups.sh options with no meaning here. */
export const GROUPS_UNSUPPORTED = {
  'delete-offsets': 'the API has no OffsetDelete; reset the offsets or delete the group',
  'from-file': 'reset plans are computed by the server from a strategy; use --to-offset per --topic T:P',
  verbose: 'members carry no more detail than --members shows',
} as const;

export async function groupsCommand(argv: string[], ctx: Context): Promise<void> {
  const { sub, rest } = action(argv, GROUPS_ACTIONS);
  const parsed = parse(rest, GROUPS_OPTIONS, GROUPS_UNSUPPORTED).values;
  if (parsed.help || sub === undefined) return ctx.out(GROUPS_HELP);
  const values = withFileConnection(parsed, propertiesFile(parsed['command-config']));
  if (values.timeout !== undefined) values['request-timeout-ms'] ??= String(int(values.timeout, '--timeout', 1));
  const admin = connect(values, ctx.env).admin({ retries: 2 });
  switch (sub) {
    case 'list': {
      const types = values['group-type']?.flatMap((t) => t.split(','));
      if (!values.type && !types) {
        for (const g of (await admin.listGroups()).groups) ctx.out(g.groupId);
        return;
      }
      for (const t of types ?? [])
        if (t !== 'classic' && t !== 'consumer' && t !== 'share')
          throw new UsageError(`--group-type takes classic, consumer or share (got ${t})`);
      const groups = await admin.listGroupsWithTypes(types as ('classic' | 'consumer' | 'share')[] | undefined);
      for (const line of table(
        ['GROUP', 'TYPE', 'STATE'],
        groups.map((g) => [
          g.groupId,
          g.type === 'SHARE' ? 'Share' : g.type === 'CLASSIC' ? 'Classic' : 'Consumer',
          g.state,
        ]),
      ))
        ctx.out(line);
      return;
    }
    case 'describe': {
      const ids = values['all-groups'] ? (await admin.listGroups()).groups.map((g) => g.groupId) : values.group;
      if (!ids || ids.length === 0) throw new UsageError('describe needs --group or --all-groups');
      for (const id of ids) {
        const d = await admin.describeGroup(id);
        ctx.out('');
        if (values.state) {
          for (const line of table(
            ['GROUP', 'COORDINATOR (ID)', 'ASSIGNMENT-STRATEGY', 'STATE', '#MEMBERS'],
            [[d.groupId, 'server (0)', d.assignor, d.state, d.members.length]],
          ))
            ctx.out(line);
          continue;
        }
        if (d.members.length === 0) ctx.out(`Consumer group '${d.groupId}' has no active members.`);
        if (values.members) {
          if (d.members.length === 0) continue;
          const rows = d.members.map((m) => [
            d.groupId,
            m.memberId,
            '-',
            m.clientId,
            m.assignment.length,
            m.assignment.map((a) => `${a.topic}(${a.partition})`).join(','),
          ]);
          for (const line of table(['GROUP', 'CONSUMER-ID', 'HOST', 'CLIENT-ID', '#PARTITIONS', 'ASSIGNMENT'], rows))
            ctx.out(line);
          continue;
        }
        const rows = d.partitions.map((p) => [
          d.groupId,
          p.topic,
          p.partition,
          p.committedOffset,
          p.logEndOffset,
          p.lag,
          p.consumerId,
          p.consumerId ? '-' : null,
          p.clientId,
        ]);
        for (const line of table(
          [
            'GROUP',
            'TOPIC',
            'PARTITION',
            'CURRENT-OFFSET',
            'LOG-END-OFFSET',
            'LAG',
            'CONSUMER-ID',
            'HOST',
            'CLIENT-ID',
          ],
          rows,
        ))
          ctx.out(line);
      }
      return;
    }
    case 'delete': {
      const ids = values.group ?? [];
      if (ids.length === 0) throw new UsageError('delete needs --group');
      await admin.deleteGroups(ids);
      return ctx.out(`Deletion of requested consumer groups (${ids.map((g) => `'${g}'`).join(', ')}) was successful.`);
    }
    case 'reset-offsets': {
      const groups = values.group ?? [];
      if (groups.length !== 1) throw new UsageError('reset-offsets needs one --group');
      const groupId = required(groups[0], '--group');
      if (values['all-topics'] === (values.topic !== undefined))
        throw new UsageError('reset-offsets needs exactly one of --all-topics or --topic');
      if (values['dry-run'] && values.execute) throw new UsageError('--dry-run and --execute cannot be used together');
      const strategies: ResetStrategy[] = [];
      if (values['to-earliest']) strategies.push({ toEarliest: true });
      if (values['to-latest']) strategies.push({ toLatest: true });
      if (values['to-current']) strategies.push({ toCurrent: true });
      if (values['to-offset'] !== undefined) strategies.push({ toOffset: int(values['to-offset'], '--to-offset') });
      if (values['shift-by'] !== undefined)
        strategies.push({ shiftBy: int(values['shift-by'], '--shift-by', Number.MIN_SAFE_INTEGER) });
      if (values['to-datetime'] !== undefined) strategies.push({ toDatetime: values['to-datetime'] });
      if (values['by-duration'] !== undefined) strategies.push({ byDuration: values['by-duration'] });
      if (strategies.length !== 1)
        throw new UsageError(
          'reset-offsets needs exactly one reset strategy (--to-earliest, --to-latest, --to-current, --to-offset, --shift-by, --to-datetime, --by-duration)',
        );
      if (!values['dry-run'] && !values.execute)
        ctx.err(
          'WARN: No action will be performed as the --execute option is missing (add --dry-run to silence this warning).',
        );
      const plan = await admin.resetGroupOffsets({
        groupId,
        scope: values['all-topics'] ? { allTopics: true } : { topics: values.topic!.map(topicPartitions) },
        strategy: strategies[0]!,
        dryRun: !values.execute,
      });
      if (values.export) {
        for (const e of plan) ctx.out(`${e.topic},${e.partition},${e.newOffset}`);
        return;
      }
      ctx.out('');
      for (const line of table(
        ['GROUP', 'TOPIC', 'PARTITION', 'NEW-OFFSET'],
        plan.map((e) => [groupId, e.topic, e.partition, e.newOffset]),
      ))
        ctx.out(line);
      return;
    }
    default:
      throw new UsageError(`Unknown groups command ${sub}`);
  }
}
