/**
 * Argument helpers shared by the commands: node:util parseArgs with the connection options every
 * command takes, number parsing that names the flag at fault, and Kafka-style `name=value`
 * properties turned into the client's camelCase configs (linger.ms -> lingerMs).
 */
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { Kafka } from '../client/index.js';
import type { AuthConfig } from '../client/index.js';

/** A mistake in the command line: printed with a hint to --help, exit code 2. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}

export type Options = NonNullable<ParseArgsConfig['options']>;

export const CONNECTION_OPTIONS = {
  'bootstrap-server': { type: 'string' },
  url: { type: 'string' },
  'cluster-id': { type: 'string' },
  token: { type: 'string' },
  auth: { type: 'string' },
  region: { type: 'string' },
  'request-timeout-ms': { type: 'string' },
  'wire-format': { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const satisfies Options;

export const CONNECTION_HELP = `Connection (every command):
  --bootstrap-server URL  the server (or --url; env KAFKA_LOG_URL; default http://127.0.0.1:8080)
  --cluster-id ID         when the URL does not name the cluster (default: the server's first)
  --auth none|bearer|sigv4  bearer uses --token or KAFKA_LOG_TOKEN; sigv4 the AWS credential chain
  --region REGION         SigV4 region (default AWS_REGION, or the one in the host name)
  --request-timeout-ms N  one request's time limit (default 30000)
  --wire-format auto|record-batch|json  how records travel (env KAFKA_LOG_WIRE_FORMAT; default auto:
                          Kafka record batches, or JSON if the server has no record-batch API)`;

export function parse<O extends Options>(argv: string[], options: O, positionals = false) {
  const all = { ...CONNECTION_OPTIONS, ...options };
  // parseArgs takes `--throughput -1` for two options; a negative number is a value, as in Kafka's tools.
  const args: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    const next = argv[i + 1];
    const spec = a.startsWith('--') ? (all as Options)[a.slice(2)] : undefined;
    if (spec?.type === 'string' && next !== undefined && /^-\d/.test(next)) {
      args.push(`${a}=${next}`);
      i++;
    } else args.push(a);
  }
  try {
    return parseArgs({ args, options: all, strict: true, allowPositionals: positionals });
  } catch (e) {
    throw new UsageError((e as Error).message);
  }
}

type ConnectionValues = { [K in keyof typeof CONNECTION_OPTIONS]?: (typeof CONNECTION_OPTIONS)[K]['type'] extends 'boolean' ? boolean : string };

export function connect(values: ConnectionValues, env: NodeJS.ProcessEnv): Kafka {
  const url = values['bootstrap-server'] ?? values.url ?? env.KAFKA_LOG_URL ?? 'http://127.0.0.1:8080';
  const token = values.token ?? env.KAFKA_LOG_TOKEN;
  const mode = values.auth ?? env.KAFKA_LOG_AUTH ?? (token ? 'bearer' : 'none');
  let auth: AuthConfig;
  if (mode === 'none') auth = { type: 'none' };
  else if (mode === 'bearer') {
    if (!token) throw new UsageError('--auth bearer needs --token or KAFKA_LOG_TOKEN');
    auth = { type: 'bearer', token };
  } else if (mode === 'sigv4') auth = { type: 'sigv4', ...(values.region ? { region: values.region } : {}) };
  else throw new UsageError(`--auth must be none, bearer or sigv4 (got ${mode})`);
  const format = values['wire-format'] ?? env.KAFKA_LOG_WIRE_FORMAT ?? 'auto';
  if (format !== 'auto' && format !== 'record-batch' && format !== 'json') throw new UsageError(`--wire-format must be auto, record-batch or json (got ${format})`);
  return new Kafka({
    format,
    url,
    auth,
    clientId: 'kafka-log-cli',
    ...(values['cluster-id'] ? { clusterId: values['cluster-id'] } : {}),
    ...(values['request-timeout-ms'] ? { requestTimeoutMs: int(values['request-timeout-ms'], '--request-timeout-ms', 1) } : {}),
  });
}

export function int(raw: string | undefined, flag: string, min = 0): number {
  if (raw === undefined) throw new UsageError(`${flag} is required`);
  const n = Number(raw);
  if (!/^-?\d+$/.test(raw.trim()) || !Number.isSafeInteger(n) || n < min) throw new UsageError(`${flag} must be an integer >= ${min} (got ${raw})`);
  return n;
}

export function optionalInt(raw: string | undefined, flag: string, min = 0): number | undefined {
  return raw === undefined ? undefined : int(raw, flag, min);
}

export function required(raw: string | undefined, flag: string): string {
  if (raw === undefined || raw === '') throw new UsageError(`${flag} is required`);
  return raw;
}

/** `name=value` pairs (--config, --property, --producer-props) into a map. */
export function pairs(list: string[] | undefined, flag: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const item of list ?? []) {
    const eq = item.indexOf('=');
    if (eq <= 0) throw new UsageError(`${flag} takes name=value (got ${item})`);
    out.set(item.slice(0, eq).trim(), item.slice(eq + 1));
  }
  return out;
}

/** Kafka property names to the client's config keys: `max.in.flight.requests.per.connection` -> `maxInFlightRequestsPerConnection`. */
export function clientConfig(props: Map<string, string>): Record<string, string | number | boolean> {
  const out: Record<string, string | number | boolean> = {};
  for (const [name, raw] of props) {
    const key = name.replace(/[.-]([a-z])/g, (_, c: string) => c.toUpperCase());
    out[key] = raw === 'true' ? true : raw === 'false' ? false : /^-?\d+(\.\d+)?$/.test(raw) ? Number(raw) : raw;
  }
  return out;
}

/** `t` or `t:0,1,2` (kafka-consumer-groups.sh's --topic). */
export function topicPartitions(spec: string): { topic: string; partitions?: number[] } {
  const colon = spec.indexOf(':');
  if (colon < 0) return { topic: spec };
  const partitions = spec
    .slice(colon + 1)
    .split(',')
    .map((p) => int(p.trim(), `--topic ${spec}`));
  return { topic: spec.slice(0, colon), partitions };
}
