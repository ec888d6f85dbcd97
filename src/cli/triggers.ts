/** `triggers create|list|describe|pause|resume|delete`: a topic bound to a target (docs/triggers.md). */
import type { TriggerKnobs, TriggerStartingPosition, TriggerTargetConfig } from '../client/index.js';
import {
  action,
  CONNECTION_HELP,
  connect,
  optionalInt,
  parse,
  propertiesFile,
  required,
  UsageError,
  withFileConnection,
} from './args.js';
import type { Context } from './context.js';
import { table } from './format.js';

export const TRIGGERS_HELP = `Usage: kafka-log triggers <create|list|describe|pause|resume|delete> [options]
  create   --trigger NAME --topic T (--webhook URL | --function-arn ARN) [--group G] [--timeout-ms N]
           [--batch-size N] [--starting-position LATEST|TRIM_HORIZON|AT_TIMESTAMP]
           [--starting-position-timestamp MS] [--batching-window-ms N] [--maximum-retry-attempts N]
           [--maximum-record-age-seconds N] [--bisect-batch-on-function-error]
           [--report-batch-item-failures] [--on-failure-destination kafka://TOPIC|ARN]
           [--filter-pattern JSON]...   (Lambda's event source mapping knobs, docs/triggers.md)
  list
  describe --trigger NAME... | --all-triggers
           per partition: COMMITTED offset, LOG-END (high watermark), LAG, and the lease's
           expiry while a delivery holds it (DELIVERING-UNTIL)
  pause    --trigger NAME     no new delivery starts; positions stay
  resume   --trigger NAME
  delete   --trigger NAME     its consumer group and offsets stay (groups --delete removes them)
  --command-config FILE   connection settings as properties (bootstrap.servers, auth, token, region, ...)
${CONNECTION_HELP}`;

export const TRIGGERS_ACTIONS = ['create', 'list', 'describe', 'pause', 'resume', 'delete'] as const;

export const TRIGGERS_OPTIONS = {
  trigger: { type: 'string', multiple: true },
  'all-triggers': { type: 'boolean' },
  topic: { type: 'string' },
  group: { type: 'string' },
  webhook: { type: 'string' },
  'function-arn': { type: 'string' },
  'batching-window-ms': { type: 'string' },
  'maximum-retry-attempts': { type: 'string' },
  'maximum-record-age-seconds': { type: 'string' },
  'bisect-batch-on-function-error': { type: 'boolean' },
  'report-batch-item-failures': { type: 'boolean' },
  'on-failure-destination': { type: 'string' },
  'filter-pattern': { type: 'string', multiple: true },
  'timeout-ms': { type: 'string' },
  'batch-size': { type: 'string' },
  'starting-position': { type: 'string' },
  'starting-position-timestamp': { type: 'string' },
  'command-config': { type: 'string' },
} as const;

const POSITIONS: readonly string[] = ['LATEST', 'TRIM_HORIZON', 'AT_TIMESTAMP'];

const targetName = (t: TriggerTargetConfig) => (t.type === 'LAMBDA' ? t.functionArn : t.url);

/** The delivery knobs given on the command line (the server checks their ranges). */
function knobs(values: {
  'batching-window-ms'?: string | undefined;
  'maximum-retry-attempts'?: string | undefined;
  'maximum-record-age-seconds'?: string | undefined;
  'bisect-batch-on-function-error'?: boolean | undefined;
  'report-batch-item-failures'?: boolean | undefined;
  'on-failure-destination'?: string | undefined;
  'filter-pattern'?: string[] | undefined;
}): TriggerKnobs {
  const windowMs = optionalInt(values['batching-window-ms'], '--batching-window-ms', 0);
  const retries = optionalInt(values['maximum-retry-attempts'], '--maximum-retry-attempts', -1);
  const age = optionalInt(values['maximum-record-age-seconds'], '--maximum-record-age-seconds', -1);
  const patterns = values['filter-pattern'] ?? [];
  return {
    ...(windowMs !== undefined && { maximumBatchingWindowMs: windowMs }),
    ...(retries !== undefined && { maximumRetryAttempts: retries }),
    ...(age !== undefined && { maximumRecordAgeSeconds: age }),
    ...(values['bisect-batch-on-function-error'] && { bisectBatchOnFunctionError: true }),
    ...(values['report-batch-item-failures'] && { functionResponseTypes: ['ReportBatchItemFailures' as const] }),
    ...(values['on-failure-destination'] !== undefined && { onFailureDestination: values['on-failure-destination'] }),
    ...(patterns.length > 0 && { filterCriteria: { filters: patterns.map((pattern) => ({ pattern })) } }),
  };
}

export async function triggersCommand(argv: string[], ctx: Context): Promise<void> {
  const { sub, rest } = action(argv, TRIGGERS_ACTIONS);
  const parsed = parse(rest, TRIGGERS_OPTIONS, {}).values;
  if (parsed.help || sub === undefined) return ctx.out(TRIGGERS_HELP);
  const values = withFileConnection(parsed, propertiesFile(parsed['command-config']));
  const admin = connect(values, ctx.env).admin({ retries: 2 });
  const one = () => {
    const [name, ...others] = values.trigger ?? [];
    if (!name || others.length > 0) throw new UsageError(`${sub} needs one --trigger`);
    return name;
  };
  switch (sub) {
    case 'create': {
      const position = values['starting-position'];
      if (position !== undefined && !POSITIONS.includes(position))
        throw new UsageError(`--starting-position is one of ${POSITIONS.join(', ')} (got ${position})`);
      const timeoutMs = optionalInt(values['timeout-ms'], '--timeout-ms', 1);
      const batchSize = optionalInt(values['batch-size'], '--batch-size', 1);
      const timestamp = optionalInt(values['starting-position-timestamp'], '--starting-position-timestamp');
      const functionArn = values['function-arn'];
      if ((functionArn === undefined) === (values.webhook === undefined))
        throw new UsageError('create needs one target: --webhook URL or --function-arn ARN');
      const created = await admin.createTrigger({
        name: one(),
        topic: required(values.topic, '--topic'),
        ...(values.group !== undefined && { groupId: values.group }),
        target: {
          ...(functionArn !== undefined
            ? { type: 'LAMBDA' as const, functionArn }
            : { type: 'WEBHOOK' as const, url: required(values.webhook, '--webhook') }),
          ...(timeoutMs !== undefined && { timeoutMs }),
        },
        ...knobs(values),
        ...(batchSize !== undefined && { batchSize }),
        ...(position !== undefined && { startingPosition: position as TriggerStartingPosition }),
        ...(timestamp !== undefined && { startingPositionTimestamp: timestamp }),
      });
      return ctx.out(`Created trigger ${created.name} (group ${created.groupId}).`);
    }
    case 'list': {
      const rows = (await admin.listTriggers()).map((t) => [t.name, t.topic, t.groupId, t.state, targetName(t.target)]);
      for (const line of table(['TRIGGER', 'TOPIC', 'GROUP', 'STATE', 'TARGET'], rows)) ctx.out(line);
      return;
    }
    case 'describe': {
      const names = values['all-triggers'] ? (await admin.listTriggers()).map((t) => t.name) : values.trigger;
      if (!names || names.length === 0) throw new UsageError('describe needs --trigger or --all-triggers');
      for (const d of await admin.describeTriggers(names)) {
        ctx.out('');
        ctx.out(`Trigger '${d.name}' (${d.state}) on ${d.topic} as group ${d.groupId} -> ${targetName(d.target)}`);
        const rows = d.partitions.map((p) => [
          p.partition,
          p.committedOffset ?? '-',
          p.highWatermark,
          p.lag,
          p.deliveringUntil ?? '-',
        ]);
        for (const line of table(['PARTITION', 'COMMITTED', 'LOG-END', 'LAG', 'DELIVERING-UNTIL'], rows)) ctx.out(line);
      }
      return;
    }
    case 'pause':
    case 'resume': {
      const name = one();
      const t = sub === 'pause' ? await admin.pauseTrigger(name) : await admin.resumeTrigger(name);
      return ctx.out(`Trigger ${t.name} is ${t.state}.`);
    }
    case 'delete': {
      const name = one();
      await admin.deleteTrigger(name);
      return ctx.out(`Deleted trigger ${name}.`);
    }
  }
}
