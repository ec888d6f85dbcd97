/** `share-groups list|describe|config`: what kafka-share-groups.sh does (KIP-932). */
import { action, connect, parse, propertiesFile, UsageError, withFileConnection, CONNECTION_HELP } from './args.js';
import type { Context } from './context.js';
import { table } from './format.js';

export const SHARE_GROUPS_HELP = `Usage: kafka-log share-groups <list|describe|config> [options]
       (kafka-share-groups.sh)
  list
  describe --group G | --all-groups
           per share-partition: START-OFFSET (SPSO), END-OFFSET (SPEO), the records in flight
           (acquired / available) and LAG (records not yet acknowledged or archived)
  config   --group G --set NAME=VALUE... | --delete NAME...
           share.auto.offset.reset (latest), share.record.lock.duration.ms (30000),
           share.delivery.count.limit (5)
  --command-config FILE   connection settings as properties (bootstrap.servers, auth, token, region, ...)
${CONNECTION_HELP}`;

export const SHARE_GROUPS_ACTIONS = ['list', 'describe', 'config'] as const;

export const SHARE_GROUPS_OPTIONS = {
  group: { type: 'string', multiple: true },
  'all-groups': { type: 'boolean' },
  set: { type: 'string', multiple: true },
  delete: { type: 'string', multiple: true },
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
  }
}
