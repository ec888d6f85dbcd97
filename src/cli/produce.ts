/** `produce`: kafka-console-producer.sh: one record per stdin line. */
import { createInterface } from 'node:readline';
import { COMPRESSION_TYPES, type Message, type RecordMetadata } from '../client/index.js';
import {
  clientConfig,
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

export const PRODUCE_HELP = `Usage: kafka-log produce --topic T [options] < lines
  --key-separator SEP     each line is KEY<SEP>VALUE (as --property parse.key=true key.separator=SEP)
  --header k=v            a header on every record (repeatable)
  --property k=v          console-producer properties: parse.key, key.separator, parse.headers,
                          headers.delimiter (\\t), headers.separator (,), headers.key.separator (:), null.marker
  --partition N           every record to this partition (else murmur2(key), or sticky without a key)
  --acks 0|1|all          default all
  --linger-ms N  --batch-size N  --producer-property k=v (Kafka producer configs, e.g. enable.idempotence=false)
  --print-metadata        print TOPIC-PARTITION@OFFSET for every record, in input order
  kafka-console-producer.sh's own names work too: --producer.config FILE, --request-required-acks,
  --compression-codec none|gzip|snappy|lz4|zstd, --timeout MS (linger), --sync, --message-send-max-retries N,
  --retry-backoff-ms N, --max-block-ms N, --max-memory-bytes N, --max-partition-memory-bytes N,
  --metadata-expiry-ms N
${CONNECTION_HELP}`;

export const PRODUCE_OPTIONS = {
  topic: { type: 'string' },
  'key-separator': { type: 'string' },
  header: { type: 'string', multiple: true },
  property: { type: 'string', multiple: true },
  partition: { type: 'string' },
  acks: { type: 'string' },
  'request-required-acks': { type: 'string' },
  'linger-ms': { type: 'string' },
  timeout: { type: 'string' },
  'batch-size': { type: 'string' },
  'max-partition-memory-bytes': { type: 'string' },
  'max-memory-bytes': { type: 'string' },
  'max-block-ms': { type: 'string' },
  'message-send-max-retries': { type: 'string' },
  'retry-backoff-ms': { type: 'string' },
  'metadata-expiry-ms': { type: 'string' },
  'compression-codec': { type: 'string' },
  sync: { type: 'boolean' },
  'producer-property': { type: 'string', multiple: true },
  'producer.config': { type: 'string' },
  'print-metadata': { type: 'boolean' },
} as const;

/** kafka-console-producer.sh options with no meaning here. */
export const PRODUCE_UNSUPPORTED = {
  'line-reader': 'lines are read by this tool; use --property parse.key / parse.headers',
  'reader-config': 'there is no pluggable line reader; use --property',
  'socket-buffer-size': 'requests travel over HTTP, not a Kafka socket',
} as const;

/** The console producer's flags as the client's configs (they win over --producer-property, as in Kafka). */
function toolConfigs(values: Record<string, string | boolean | string[] | undefined>): Record<string, number | string> {
  const out: Record<string, number | string> = {};
  const num = (flag: string, key: string, min = 0) => {
    const n = optionalInt(values[flag] as string | undefined, `--${flag}`, min);
    if (n !== undefined) out[key] = n;
  };
  num('linger-ms', 'lingerMs');
  num('timeout', 'lingerMs');
  num('batch-size', 'batchSize', 1);
  num('max-partition-memory-bytes', 'batchSize', 1);
  num('max-memory-bytes', 'bufferMemory', 1);
  num('max-block-ms', 'maxBlockMs');
  num('message-send-max-retries', 'retries');
  num('retry-backoff-ms', 'retryBackoffMs');
  num('metadata-expiry-ms', 'metadataMaxAgeMs');
  const codec = values['compression-codec'] as string | undefined;
  if (codec !== undefined) {
    if (!(COMPRESSION_TYPES as readonly string[]).includes(codec))
      throw new UsageError(`--compression-codec takes ${COMPRESSION_TYPES.join(', ')} (got ${codec})`);
    out.compressionType = codec;
  }
  if (values.sync) out.lingerMs = 0;
  return out;
}

const unescapeText = (s: string) => s.replace(/\\t/g, '\t').replace(/\\n/g, '\n');

export async function produceCommand(argv: string[], ctx: Context): Promise<void> {
  const parsed = parse(argv, PRODUCE_OPTIONS, PRODUCE_UNSUPPORTED).values;
  if (parsed.help) return ctx.out(PRODUCE_HELP);
  const file = propertiesFile(parsed['producer.config']);
  const values = withFileConnection(parsed, file);
  const topic = required(values.topic, '--topic');
  const props = pairs(values.property, '--property');
  const keySeparator = unescapeText(values['key-separator'] ?? props.get('key.separator') ?? '\t');
  const parseKey = values['key-separator'] !== undefined || props.get('parse.key') === 'true';
  const parseHeaders = props.get('parse.headers') === 'true';
  const headersDelimiter = unescapeText(props.get('headers.delimiter') ?? '\t');
  const headersSeparator = props.get('headers.separator') ?? ',';
  const headersKeySeparator = props.get('headers.key.separator') ?? ':';
  const nullMarker = props.get('null.marker');
  const staticHeaders = Object.fromEntries(pairs(values.header, '--header'));
  const partition = optionalInt(values.partition, '--partition');
  const acksFlag = values.acks ?? values['request-required-acks'];
  const acks =
    acksFlag === undefined
      ? undefined
      : acksFlag === 'all' || acksFlag === '-1'
        ? 'all'
        : acksFlag === '1'
          ? 1
          : acksFlag === '0'
            ? 0
            : undefined;
  if (acksFlag !== undefined && acks === undefined) throw new UsageError('--acks must be 0, 1, all or -1');

  const producer = connect(values, ctx.env).producer({
    ...clientConfig(file),
    ...clientConfig(pairs(values['producer-property'], '--producer-property')),
    ...toolConfigs(values),
    ...(acks !== undefined ? { acks } : {}),
  });
  const toMessage = (line: string, n: number): Message => {
    let rest = line;
    const headers: Record<string, string> = { ...staticHeaders };
    if (parseHeaders) {
      const at = rest.indexOf(headersDelimiter);
      if (at < 0) throw new UsageError(`line ${n}: no headers delimiter ${JSON.stringify(headersDelimiter)}`);
      for (const h of rest.slice(0, at).split(headersSeparator)) {
        if (h === '') continue;
        const k = h.indexOf(headersKeySeparator);
        if (k < 0)
          throw new UsageError(`line ${n}: header ${JSON.stringify(h)} has no ${JSON.stringify(headersKeySeparator)}`);
        headers[h.slice(0, k)] = h.slice(k + headersKeySeparator.length);
      }
      rest = rest.slice(at + headersDelimiter.length);
    }
    let key: string | null = null;
    if (parseKey) {
      const at = rest.indexOf(keySeparator);
      if (at < 0)
        throw new UsageError(`line ${n}: no key separator ${JSON.stringify(keySeparator)} in ${JSON.stringify(line)}`);
      key = rest.slice(0, at);
      rest = rest.slice(at + keySeparator.length);
      if (nullMarker !== undefined && key === nullMarker) key = null;
    }
    const value = nullMarker !== undefined && rest === nullMarker ? null : rest;
    return {
      key,
      value,
      ...(Object.keys(headers).length > 0 ? { headers } : {}),
      ...(partition !== undefined ? { partition } : {}),
    };
  };

  let pending: Promise<RecordMetadata[]>[] = [];
  const settle = async () => {
    const results = await Promise.all(pending);
    pending = [];
    if (values['print-metadata']) for (const [m] of results) ctx.out(`${m!.topic}-${m!.partition}@${m!.offset}`);
  };
  try {
    let n = 0;
    for await (const line of createInterface({ input: ctx.stdin, crlfDelay: Infinity })) {
      if (ctx.signal.aborted) break;
      n++;
      const p = producer.send({ topic, messages: [toMessage(line, n)] });
      p.catch(() => {}); // raised by settle()
      pending.push(p);
      if (values.sync || pending.length >= 10_000) await settle();
    }
    await settle();
  } finally {
    await producer.close({ timeoutMs: 30_000 }).catch(() => {});
  }
}
