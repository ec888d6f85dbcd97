/** `topics create|list|describe|alter|delete`: what kafka-topics.sh (and kafka-configs.sh for topics) does. */
import { KafkaClientError } from '../client/index.js';
import {
  action,
  connect,
  optionalInt,
  pairs,
  parse,
  propertiesFile,
  required,
  UsageError,
  withFileConnection,
  CONNECTION_HELP,
} from './args.js';
import type { Context } from './context.js';

export const TOPICS_HELP = `Usage: kafka-log topics <create|list|describe|alter|delete> [options]
       (or kafka-topics.sh's --create, --list, --describe, --alter, --delete)
  create   --topic T [--partitions N] [--replication-factor N] [--config k=v]... [--if-not-exists] [--validate-only]
  list     [--exclude-internal]
  describe [--topic T]... [--topic-id ID] [--topics-with-overrides] [--under-replicated-partitions]
           [--under-min-isr-partitions] [--at-min-isr-partitions] [--unavailable-partitions]
           a line per topic, then its partitions: leader, replicas, ISR, leader epoch,
           log start offset, high watermark (HW) and log end offset (LEO)
  alter    --topic T [--partitions N] [--config k=v]... [--delete-config k]...
  delete   --topic T [--if-exists]
  --command-config FILE   connection settings as properties (bootstrap.servers, auth, token, region, ...)
${CONNECTION_HELP}`;

export const TOPICS_ACTIONS = ['create', 'list', 'describe', 'alter', 'delete'] as const;

export const TOPICS_OPTIONS = {
  topic: { type: 'string', multiple: true },
  'topic-id': { type: 'string' },
  partitions: { type: 'string' },
  'replication-factor': { type: 'string' },
  config: { type: 'string', multiple: true },
  'delete-config': { type: 'string', multiple: true },
  'if-not-exists': { type: 'boolean' },
  'if-exists': { type: 'boolean' },
  'validate-only': { type: 'boolean' },
  'command-config': { type: 'string' },
  'exclude-internal': { type: 'boolean' },
  'topics-with-overrides': { type: 'boolean' },
  'under-replicated-partitions': { type: 'boolean' },
  'under-min-isr-partitions': { type: 'boolean' },
  'at-min-isr-partitions': { type: 'boolean' },
  'unavailable-partitions': { type: 'boolean' },
} as const;

/** kafka-topics.sh options with no meaning here. */
export const TOPICS_UNSUPPORTED = {
  'replica-assignment':
    'replicas are placed by store index (replica j of partition i is store (i + j) mod n); use --replication-factor',
} as const;

export async function topicsCommand(argv: string[], ctx: Context): Promise<void> {
  const { sub, rest } = action(argv, TOPICS_ACTIONS);
  const parsed = parse(rest, TOPICS_OPTIONS, TOPICS_UNSUPPORTED).values;
  if (parsed.help || sub === undefined) return ctx.out(TOPICS_HELP);
  const values = withFileConnection(parsed, propertiesFile(parsed['command-config']));
  const admin = connect(values, ctx.env).admin({ retries: 2 });
  const one = () => {
    const t = values.topic ?? [];
    if (t.length !== 1) throw new UsageError('--topic is required (once)');
    return required(t[0], '--topic');
  };
  switch (sub) {
    case 'create': {
      const topic = one();
      const numPartitions = optionalInt(values.partitions, '--partitions', 1);
      const replicationFactor = optionalInt(values['replication-factor'], '--replication-factor', 1);
      const configEntries = [...pairs(values.config, '--config')].map(([name, value]) => ({ name, value }));
      const created = await admin.createTopics({
        topics: [
          {
            topic,
            ...(numPartitions ? { numPartitions } : {}),
            ...(replicationFactor ? { replicationFactor } : {}),
            configEntries,
          },
        ],
        validateOnly: values['validate-only'] ?? false,
      });
      if (!created) {
        if (values['if-not-exists']) return;
        throw new KafkaClientError('TOPIC_ALREADY_EXISTS', `Topic '${topic}' already exists.`);
      }
      return ctx.out(values['validate-only'] ? `Topic ${topic} would be created.` : `Created topic ${topic}.`);
    }
    case 'list':
      // There are no internal topics here, so --exclude-internal leaves the list as it is.
      for (const t of await admin.listTopics()) ctx.out(t);
      return;
    case 'describe': {
      const names = values.topic ?? (await admin.listTopics());
      // As kafka-topics.sh: any of these filters shows only the partitions it selects.
      const filtered =
        values['under-replicated-partitions'] ||
        values['under-min-isr-partitions'] ||
        values['at-min-isr-partitions'] ||
        values['unavailable-partitions'];
      for (const name of names) {
        const [d, configs] = await Promise.all([admin.describeTopic(name), admin.describeTopicConfigs(name)]);
        if (values['topic-id'] !== undefined && d.topicId !== values['topic-id']) continue;
        const overrides = configs.filter((c) => !c.isDefault).map((c) => `${c.name}=${c.value}`);
        if (values['topics-with-overrides'] && overrides.length === 0) continue;
        const minIsr = Number(configs.find((c) => c.name === 'min.insync.replicas')?.value ?? 1);
        const selected = d.partitions.filter(
          (p) =>
            !filtered ||
            (values['under-replicated-partitions'] && p.isr.length < p.replicas.length) ||
            (values['under-min-isr-partitions'] && p.isr.length < minIsr) ||
            (values['at-min-isr-partitions'] && p.isr.length === minIsr) ||
            (values['unavailable-partitions'] && (p.leader === null || p.leader < 0 || p.isr.length === 0)),
        );
        if (filtered && selected.length === 0) continue;
        if (!filtered)
          ctx.out(
            `Topic: ${d.name}\tTopicId: ${d.topicId}\tPartitionCount: ${d.partitionCount}\tReplicationFactor: ${d.replicationFactor}\tConfigs: ${overrides.join(',')}`,
          );
        else ctx.out(`Topic: ${d.name}`);
        if (values['topics-with-overrides']) continue;
        // kafka-topics.sh's partition lines (scripts split them on tabs and read the keys), then
        // this log's own numbers as more `Key: value` pairs.
        for (const p of selected)
          ctx.out(
            [
              '',
              `Topic: ${d.name}`,
              `Partition: ${p.partition}`,
              `Leader: ${p.leader ?? -1}`,
              `Replicas: ${p.replicas.join(',')}`,
              `Isr: ${p.isr.join(',')}`,
              'Elr: ',
              'LastKnownElr: ',
              `LeaderEpoch: ${p.leaderEpoch}`,
              `LogStartOffset: ${p.logStartOffset}`,
              `HighWatermark: ${p.highWatermark}`,
              `LogEndOffset: ${p.logEndOffset}`,
            ].join('\t'),
          );
      }
      return;
    }
    case 'alter': {
      const topic = one();
      const partitions = optionalInt(values.partitions, '--partitions', 1);
      const set = Object.fromEntries(pairs(values.config, '--config'));
      const del = values['delete-config'] ?? [];
      if (partitions === undefined && Object.keys(set).length === 0 && del.length === 0) {
        throw new UsageError('alter needs --partitions, --config or --delete-config');
      }
      if (Object.keys(set).length > 0 || del.length > 0)
        await admin.alterTopicConfigs(topic, { set, delete: del }, values['validate-only'] ?? false);
      if (partitions !== undefined) await admin.createPartitions({ topicPartitions: [{ topic, count: partitions }] });
      return ctx.out(`Altered topic ${topic}.`);
    }
    case 'delete': {
      const topic = one();
      try {
        await admin.deleteTopics({ topics: [topic] });
      } catch (e) {
        if (values['if-exists'] && e instanceof KafkaClientError && e.type === 'UNKNOWN_TOPIC_OR_PARTITION') return;
        throw e;
      }
      return ctx.out(`Deleted topic ${topic}.`);
    }
    default:
      throw new UsageError(`Unknown topics command ${sub}`);
  }
}
