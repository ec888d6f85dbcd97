/** `topics create|list|describe|alter|delete`: what kafka-topics.sh (and kafka-configs.sh for topics) does. */
import { KafkaClientError } from '../client/index.js';
import { connect, optionalInt, pairs, parse, required, UsageError, CONNECTION_HELP } from './args.js';
import type { Context } from './context.js';
import { table } from './format.js';

export const TOPICS_HELP = `Usage: kafka-log topics <create|list|describe|alter|delete> [options]
  create   --topic T [--partitions N] [--replication-factor N] [--config k=v]... [--if-not-exists] [--validate-only]
  list
  describe [--topic T]...   a line per topic, then its partitions: leader, replicas, ISR, leader epoch,
                            log start offset, high watermark (HW) and log end offset (LEO)
  alter    --topic T [--partitions N] [--config k=v]... [--delete-config k]...
  delete   --topic T [--if-exists]
${CONNECTION_HELP}`;

export async function topicsCommand(argv: string[], ctx: Context): Promise<void> {
  const [sub, ...rest] = argv;
  const { values } = parse(rest, {
    topic: { type: 'string', multiple: true },
    partitions: { type: 'string' },
    'replication-factor': { type: 'string' },
    config: { type: 'string', multiple: true },
    'delete-config': { type: 'string', multiple: true },
    'if-not-exists': { type: 'boolean' },
    'if-exists': { type: 'boolean' },
    'validate-only': { type: 'boolean' },
  });
  if (values.help || sub === undefined) return ctx.out(TOPICS_HELP);
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
        topics: [{ topic, ...(numPartitions ? { numPartitions } : {}), ...(replicationFactor ? { replicationFactor } : {}), configEntries }],
        validateOnly: values['validate-only'] ?? false,
      });
      if (!created) {
        if (values['if-not-exists']) return;
        throw new KafkaClientError('TOPIC_ALREADY_EXISTS', `Topic '${topic}' already exists.`);
      }
      return ctx.out(values['validate-only'] ? `Topic ${topic} would be created.` : `Created topic ${topic}.`);
    }
    case 'list':
      for (const t of await admin.listTopics()) ctx.out(t);
      return;
    case 'describe': {
      const names = values.topic ?? (await admin.listTopics());
      for (const name of names) {
        const [d, configs] = await Promise.all([admin.describeTopic(name), admin.describeTopicConfigs(name)]);
        const overrides = configs.filter((c) => !c.isDefault).map((c) => `${c.name}=${c.value}`);
        ctx.out(`Topic: ${d.name}\tTopicId: ${d.topicId}\tPartitionCount: ${d.partitionCount}\tReplicationFactor: ${d.replicationFactor}\tConfigs: ${overrides.join(',')}`);
        const rows = d.partitions.map((p) => [p.partition, p.leader, p.replicas.join(','), p.isr.join(','), p.leaderEpoch, p.logStartOffset, p.highWatermark, p.logEndOffset]);
        for (const line of table(['PARTITION', 'LEADER', 'REPLICAS', 'ISR', 'LEADER-EPOCH', 'LOG-START-OFFSET', 'HW', 'LEO'], rows)) ctx.out(`\t${line}`);
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
      if (Object.keys(set).length > 0 || del.length > 0) await admin.alterTopicConfigs(topic, { set, delete: del }, values['validate-only'] ?? false);
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

