/** `share-groups list|describe|config|reset-offsets|delete-offsets|delete`: what kafka-share-groups.sh does (KIP-932). */
import type { ShareResetStrategy } from '../client/index.js';
import {
  action,
  connect,
  int,
  parse,
  propertiesFile,
  topicPartitions,
  UsageError,
  withFileConnection,
  CONNECTION_HELP,
} from './args.js';
import type { Context } from './context.js';
import { table } from './format.js';

export const SHARE_GROUPS_HELP = `Usage: kafka-log share-groups <list|describe|config|reset-offsets|delete-offsets|delete> [options]
       (kafka-share-groups.sh, also as --list, --describe, --reset-offsets, --delete-offsets, --delete)
  list
  describe --group G | --all-groups [--members]
           per share-partition: START-OFFSET (SPSO), END-OFFSET (SPEO), the records in flight
           (acquired / available) and LAG (records not yet acknowledged or archived);
           --members: the Kafka-protocol members and their assignments (HTTP receivers have none)
  config   --group G --set NAME=VALUE... | --delete NAME...
           share.auto.offset.reset (latest), share.record.lock.duration.ms (30000),
           share.delivery.count.limit (5), share.isolation.level (read_uncommitted)
  reset-offsets --group G (--all-topics | --topic T[:P,P...]...) STRATEGY [--dry-run | --execute]
           STRATEGY: --to-earliest | --to-latest | --to-offset N | --to-datetime YYYY-MM-DDTHH:mm:SS.sss
                     | --by-duration PnDTnHnMnS
           each share-partition starts afresh there (AlterShareGroupOffsets); the group must be empty:
           no member and no record locked by a receiver
  delete-offsets --group G --topic T...
           the group's state for the topics is removed (DeleteShareGroupOffsets): they start again by
           share.auto.offset.reset; the group must be empty
  delete   --group G...
           the groups and their share-partitions' state go (DeleteGroups): a group of the name used
           again starts by share.auto.offset.reset (its configs stay); each must be empty
  --command-config FILE   connection settings as properties (bootstrap.servers, auth, token, region, ...)
${CONNECTION_HELP}`;

export const SHARE_GROUPS_ACTIONS = [
  'list',
  'describe',
  'config',
  'reset-offsets',
  'delete-offsets',
  'delete',
] as const;

export const SHARE_GROUPS_OPTIONS = {
  group: { type: 'string', multiple: true },
  'all-groups': { type: 'boolean' },
  members: { type: 'boolean' },
  set: { type: 'string', multiple: true },
  delete: { type: 'string', multiple: true },
  'all-topics': { type: 'boolean' },
  topic: { type: 'string', multiple: true },
  'to-earliest': { type: 'boolean' },
  'to-latest': { type: 'boolean' },
  'to-offset': { type: 'string' },
  'to-datetime': { type: 'string' },
  'by-duration': { type: 'string' },
  'dry-run': { type: 'boolean' },
  execute: { type: 'boolean' },
  'command-config': { type: 'string' },
} as const;

export async function shareGroupsCommand(argv: string[], ctx: Context): Promise<void> {
  const { sub, rest } = action(argv, SHARE_GROUPS_ACTIONS);
  const parsed = parse(rest, SHARE_GROUPS_OPTIONS, {}).values;
  if (parsed.help || sub === undefined) return ctx.out(SHARE_GROUPS_HELP);
  const values = withFileConnection(parsed, propertiesFile(parsed['command-config']));
  const admin = connect(values, ctx.env).admin({ retries: 2 });
  switch (sub) {
    case 'list':
      for (const g of await admin.listShareGroups()) ctx.out(g);
      return;
    case 'describe': {
      const ids = values['all-groups'] ? await admin.listShareGroups() : values.group;
      if (!ids || ids.length === 0) throw new UsageError('describe needs --group or --all-groups');
      for (const d of await admin.describeShareGroups(ids)) {
        ctx.out('');
        if (values.members) {
          // kafka-share-groups.sh --describe --members: one row per member, its assignment as topic:p,p.
          if (d.members.length === 0) {
            ctx.out(`Share group '${d.groupId}' has no active members.`);
            continue;
          }
          const rows = d.members.map((m) => [
            d.groupId,
            m.memberId,
            m.clientHost,
            m.clientId,
            m.assignment.reduce((n, a) => n + a.partitions.length, 0),
            m.assignment.map((a) => `${a.topic}:${a.partitions.join(',')}`).join(';') || '-',
          ]);
          for (const line of table(['GROUP', 'CONSUMER-ID', 'HOST', 'CLIENT-ID', '#PARTITIONS', 'ASSIGNMENT'], rows))
            ctx.out(line);
          continue;
        }
        if (d.partitions.length === 0) ctx.out(`Share group '${d.groupId}' has read no partition yet.`);
        const rows = d.partitions.map((p) => [
          d.groupId,
          p.topic,
          p.partition,
          p.startOffset,
          p.endOffset,
          p.inFlight.acquired,
          p.inFlight.available,
          p.lag,
        ]);
        for (const line of table(
          ['GROUP', 'TOPIC', 'PARTITION', 'START-OFFSET', 'END-OFFSET', 'ACQUIRED', 'AVAILABLE', 'LAG'],
          rows,
        ))
          ctx.out(line);
      }
      return;
    }
    case 'config': {
      const [group, ...others] = values.group ?? [];
      if (!group || others.length > 0) throw new UsageError('config needs one --group');
      const changes: Record<string, string | null> = {};
      for (const s of values.set ?? []) {
        const at = s.indexOf('=');
        if (at <= 0) throw new UsageError(`--set takes NAME=VALUE (got ${s})`);
        changes[s.slice(0, at)] = s.slice(at + 1);
      }
      for (const name of values.delete ?? []) changes[name] = null;
      if (Object.keys(changes).length === 0) throw new UsageError('config needs --set or --delete');
      await admin.alterShareGroupConfigs(group, changes);
      return ctx.out(`Completed updating config for share group ${group}.`);
    }
    case 'reset-offsets': {
      const [groupId, ...others] = values.group ?? [];
      if (!groupId || others.length > 0) throw new UsageError('reset-offsets needs one --group');
      if (values['all-topics'] === (values.topic !== undefined))
        throw new UsageError('reset-offsets needs exactly one of --all-topics or --topic');
      if (values['dry-run'] && values.execute) throw new UsageError('--dry-run and --execute cannot be used together');
      const strategies: ShareResetStrategy[] = [];
      if (values['to-earliest']) strategies.push({ toEarliest: true });
      if (values['to-latest']) strategies.push({ toLatest: true });
      if (values['to-offset'] !== undefined) strategies.push({ toOffset: int(values['to-offset'], '--to-offset') });
      if (values['to-datetime'] !== undefined) strategies.push({ toDatetime: values['to-datetime'] });
      if (values['by-duration'] !== undefined) strategies.push({ byDuration: values['by-duration'] });
      if (strategies.length !== 1)
        throw new UsageError(
          'reset-offsets needs exactly one reset strategy (--to-earliest, --to-latest, --to-offset, --to-datetime, --by-duration)',
        );
      if (!values['dry-run'] && !values.execute)
        ctx.err(
          'WARN: No action will be performed as the --execute option is missing (add --dry-run to silence this warning).',
        );
      const plan = await admin.resetShareGroupOffsets({
        groupId,
        scope: values['all-topics'] ? { allTopics: true } : { topics: values.topic!.map(topicPartitions) },
        strategy: strategies[0]!,
        dryRun: !values.execute,
      });
      ctx.out('');
      for (const line of table(
        ['GROUP', 'TOPIC', 'PARTITION', 'NEW-OFFSET', 'ERROR'],
        plan.map((e) => [groupId, e.topic, e.partition, e.newOffset, e.error ?? '-']),
      ))
        ctx.out(line);
      return;
    }
    case 'delete-offsets': {
      const [groupId, ...others] = values.group ?? [];
      if (!groupId || others.length > 0) throw new UsageError('delete-offsets needs one --group');
      if (!values.topic || values.topic.length === 0) throw new UsageError('delete-offsets needs --topic');
      const results = await admin.deleteShareGroupOffsets(groupId, values.topic);
      ctx.out('');
      for (const line of table(
        ['TOPIC', 'STATUS'],
        [...results].map(([t, e]) => [t, e === null ? 'Successful' : `Error: ${e}`]),
      ))
        ctx.out(line);
      return;
    }
    case 'delete': {
      const ids = values.group ?? [];
      if (ids.length === 0) throw new UsageError('delete needs --group');
      await admin.deleteShareGroups(ids);
      return ctx.out(`Deletion of requested share groups (${ids.map((g) => `'${g}'`).join(', ')}) was successful.`);
    }
  }
}
