/** `consume`: kafka-console-consumer.sh: in a group, by partition and offset, or every partition of a topic. */
import type { Consumer, ConsumerRecord } from '../client/index.js';
import {
  clientConfig,
  connect,
  int,
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
import { showBytes, type BytesFormat } from './format.js';

export const CONSUME_HELP = `Usage: kafka-log consume --topic T [options]
  --group G               consume in a consumer group (commits offsets); else no group, nothing committed
  --from-beginning        start at the log start when there is no committed offset (default: the end)
  --partition N           only this partition (no group membership)
  --offset earliest|latest|N  where to start on --partition
  --max-messages N        stop after N records
  --timeout-ms N          stop when no record arrived for N ms
  --print-key --print-timestamp --print-partition --print-offset --print-headers
  --key-separator SEP     between printed fields (default a tab)
  --property k=v          console-consumer properties: print.key, print.timestamp, print.partition,
                          print.offset, print.headers, print.value, key.separator, null.literal
  --key-format F  --value-format F   string (default), base64 or hex
  --timestamp-format ms|iso   default ms
  --consumer-property k=v     Kafka consumer configs (e.g. max.poll.records=100)
  --consumer.config FILE      the same as a properties file (connection settings too: bootstrap.servers, ...)
${CONNECTION_HELP}`;

export const CONSUME_OPTIONS = {
  topic: { type: 'string' },
  group: { type: 'string' },
  'from-beginning': { type: 'boolean' },
  partition: { type: 'string' },
  offset: { type: 'string' },
  'max-messages': { type: 'string' },
  'timeout-ms': { type: 'string' },
  'print-key': { type: 'boolean' },
  'print-timestamp': { type: 'boolean' },
  'print-partition': { type: 'boolean' },
  'print-offset': { type: 'boolean' },
  'print-headers': { type: 'boolean' },
  'key-separator': { type: 'string' },
  property: { type: 'string', multiple: true },
  'key-format': { type: 'string' },
  'value-format': { type: 'string' },
  'timestamp-format': { type: 'string' },
  'consumer-property': { type: 'string', multiple: true },
  'consumer.config': { type: 'string' },
} as const;

const JAVA_CLASSES = 'it names a Java class; use --key-format / --value-format (string, base64, hex) and --property';

/** kafka-console-consumer.sh options with no meaning here. */
export const CONSUME_UNSUPPORTED: Record<string, string> = {
  formatter: JAVA_CLASSES,
  'formatter-config': JAVA_CLASSES,
  'key-deserializer': JAVA_CLASSES,
  'value-deserializer': JAVA_CLASSES,
  include: 'consume one --topic at a time (no regular-expression subscriptions)',
  whitelist: 'consume one --topic at a time (no regular-expression subscriptions)',
  'isolation-level': 'there are no transactions yet, so every record is committed',
  'skip-message-on-error': 'records are shown as bytes, so none fails to deserialize',
  'enable-systest-events': "Kafka's system-test events have no meaning here",
};

const FORMATS = ['string', 'base64', 'hex'];

export async function consumeCommand(argv: string[], ctx: Context): Promise<void> {
  const parsed = parse(argv, CONSUME_OPTIONS, CONSUME_UNSUPPORTED).values;
  if (parsed.help) return ctx.out(CONSUME_HELP);
  const file = propertiesFile(parsed['consumer.config']);
  const values = withFileConnection(parsed, file);
  const topic = required(values.topic, '--topic');
  const props = pairs(values.property, '--property');
  const flag = (name: string, cli: boolean | undefined) => cli === true || props.get(name) === 'true';
  const print = {
    key: flag('print.key', values['print-key']),
    timestamp: flag('print.timestamp', values['print-timestamp']),
    partition: flag('print.partition', values['print-partition']),
    offset: flag('print.offset', values['print-offset']),
    headers: flag('print.headers', values['print-headers']),
    value: props.get('print.value') !== 'false',
  };
  const sep = (values['key-separator'] ?? props.get('key.separator') ?? '\t').replace(/\\t/g, '\t');
  const nullLiteral = props.get('null.literal') ?? 'null';
  const keyFormat = (values['key-format'] ?? 'string') as BytesFormat;
  const valueFormat = (values['value-format'] ?? 'string') as BytesFormat;
  if (!FORMATS.includes(keyFormat) || !FORMATS.includes(valueFormat))
    throw new UsageError('--key-format and --value-format take string, base64 or hex');
  const isoTime = (values['timestamp-format'] ?? 'ms') === 'iso';
  if (!['ms', 'iso'].includes(values['timestamp-format'] ?? 'ms'))
    throw new UsageError('--timestamp-format takes ms or iso');
  const maxMessages = optionalInt(values['max-messages'], '--max-messages', 1);
  const timeoutMs = optionalInt(values['timeout-ms'], '--timeout-ms', 1);
  const partition = optionalInt(values.partition, '--partition');
  if (values.offset !== undefined && partition === undefined) throw new UsageError('--offset needs --partition');
  if (values.group !== undefined && partition !== undefined)
    throw new UsageError('--group and --partition cannot be used together');
  if (values.group !== undefined && values.offset !== undefined)
    throw new UsageError('--group and --offset cannot be used together');

  const kafka = connect(values, ctx.env);
  const fromBeginning = values['from-beginning'] ?? false;
  const consumer = kafka.consumer({
    ...clientConfig(file),
    ...clientConfig(pairs(values['consumer-property'], '--consumer-property')),
    ...(values.group !== undefined ? { groupId: values.group } : {}),
    autoOffsetReset: fromBeginning ? 'earliest' : 'latest',
  });
  const render = (r: ConsumerRecord): string => {
    const cols: string[] = [];
    if (print.timestamp) cols.push(`CreateTime:${isoTime ? new Date(r.timestamp).toISOString() : r.timestamp}`);
    if (print.partition) cols.push(`Partition:${r.partition}`);
    if (print.offset) cols.push(`Offset:${r.offset}`);
    if (print.headers) {
      const hs = Object.entries(r.headers).flatMap(([k, v]) =>
        (Array.isArray(v) ? v : [v]).map((b) => `${k}:${b.toString('utf8')}`),
      );
      cols.push(hs.length > 0 ? hs.join(',') : 'NO_HEADERS');
    }
    const show = (b: Buffer | null, f: BytesFormat) => (b === null ? nullLiteral : showBytes(b, f));
    if (print.key) cols.push(show(r.key, keyFormat));
    if (print.value) cols.push(show(r.value, valueFormat));
    return cols.join(sep);
  };

  let count = 0;
  try {
    await start(
      consumer,
      kafka.admin({ retries: 2 }),
      topic,
      values.group !== undefined,
      partition,
      values.offset,
      fromBeginning,
    );
    let lastRecordAt = Date.now();
    while (!ctx.signal.aborted) {
      const records = await consumer.poll({ timeoutMs: Math.min(1000, timeoutMs ?? 1000) });
      const now = Date.now();
      if (records.length === 0) {
        if (timeoutMs !== undefined && now - lastRecordAt >= timeoutMs) break;
        continue;
      }
      lastRecordAt = now;
      const take = maxMessages === undefined ? records.length : Math.min(records.length, maxMessages - count);
      for (const r of records.slice(0, take)) ctx.out(render(r));
      count += take;
      if (take < records.length) {
        // Records beyond --max-messages were not shown: leave them for the next consumer of the group.
        const unshown = new Map<string, ConsumerRecord>();
        for (const r of records.slice(take))
          if (!unshown.has(`${r.topic}:${r.partition}`)) unshown.set(`${r.topic}:${r.partition}`, r);
        for (const r of unshown.values()) consumer.seek({ topic: r.topic, partition: r.partition, offset: r.offset });
      }
      if (maxMessages !== undefined && count >= maxMessages) break;
    }
  } finally {
    await consumer.close().catch(() => {});
    ctx.err(`Processed a total of ${count} messages`);
  }
}

async function start(
  consumer: Consumer,
  admin: ReturnType<ReturnType<typeof connect>['admin']>,
  topic: string,
  inGroup: boolean,
  partition: number | undefined,
  offset: string | undefined,
  fromBeginning: boolean,
): Promise<void> {
  if (inGroup) return consumer.subscribe({ topics: [topic] });
  const d = await admin.describeTopic(topic); // also fails clearly on an unknown topic
  if (partition !== undefined) {
    if (partition >= d.partitionCount)
      throw new UsageError(`Topic ${topic} has no partition ${partition} (it has ${d.partitionCount})`);
    consumer.assign([{ topic, partition }]);
    const where = offset ?? (fromBeginning ? 'earliest' : 'latest');
    if (where === 'earliest') consumer.seekToBeginning([{ topic, partition }]);
    else if (where === 'latest') consumer.seekToEnd([{ topic, partition }]);
    else consumer.seek({ topic, partition, offset: int(where, '--offset') });
    return;
  }
  const all = d.partitions.map((p) => ({ topic, partition: p.partition }));
  consumer.assign(all);
  if (fromBeginning) consumer.seekToBeginning(all);
  else consumer.seekToEnd(all);
}
