/**
 * Argument helpers shared by the commands: node:util parseArgs with the connection options every
 * command takes, number parsing that names the flag at fault, and Kafka-style `name=value`
 * properties turned into the client's camelCase configs (linger.ms -> lingerMs).
 */
import { readFileSync } from 'node:fs';
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
  --bootstrap-server URL  the server's HTTP API, a URL or host:port (or --url; env KAFKA_LOG_URL;
                          default http://127.0.0.1:8080; not the Kafka listener's 9092)
  --cluster-id ID         when the URL does not name the cluster (default: the server's first)
  --auth none|bearer|sigv4  bearer uses --token or KAFKA_LOG_TOKEN; sigv4 the AWS credential chain
  --region REGION         SigV4 region (default AWS_REGION, or the one in the host name)
  --request-timeout-ms N  one request's time limit (default 30000)
  --wire-format auto|record-batch|json  how records travel (env KAFKA_LOG_WIRE_FORMAT; default auto:
                          Kafka record batches, or JSON if the server has no record-batch API)`;

/**
 * Options of the Kafka tool a command mirrors that have no meaning here, with the reason: using one
 * is a usage error that says so, rather than "unknown option".
 */
export type Unsupported = Record<string, string>;

export function parse<O extends Options>(argv: string[], options: O, unsupported: Unsupported = {}) {
  const all = { ...CONNECTION_OPTIONS, ...options };
  const args: string[] = [];
  let multi: string | undefined;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    const next = argv[i + 1];
    const name = a.startsWith('--') ? a.slice(2).split('=')[0]! : undefined;
    if (name !== undefined && name in unsupported && !(name in all))
      throw new UsageError(`--${name} is not supported: ${unsupported[name]}`);
    const spec = name !== undefined ? (all as Options)[name] : undefined;
    if (multi !== undefined && name === undefined && /^[^-=][^=]*=/.test(a)) {
      // `--producer-props a=1 b=2`: as Kafka's tools, several name=value after one flag.
      args.push(`--${multi}=${a}`);
      continue;
    }
    multi = spec?.type === 'string' && spec.multiple ? name : undefined;
    if (multi !== undefined && !a.includes('=') && next !== undefined) {
      args.push(`--${multi}=${next}`);
      i++;
      continue;
    }
    // parseArgs takes `--throughput -1` for two options; a negative number is a value, as in Kafka's tools.
    if (spec?.type === 'string' && next !== undefined && /^-\d/.test(next) && !a.includes('=')) {
      args.push(`${a}=${next}`);
      i++;
    } else args.push(a);
  }
  try {
    return parseArgs({ args, options: all, strict: true, allowPositionals: false });
  } catch (e) {
    throw new UsageError((e as Error).message);
  }
}

/**
 * A command's action: `kafka-log topics create ...` or, as kafka-topics.sh writes it,
 * `kafka-log topics --create ...`. Anything else first (an option, `--help`) leaves it undefined.
 */
export function action(argv: string[], actions: readonly string[]): { sub: string | undefined; rest: string[] } {
  const [first, ...rest] = argv;
  if (first !== undefined && !first.startsWith('-')) return { sub: first, rest };
  const flags = argv.filter((a) => actions.includes(a.replace(/^--/, '')) && a.startsWith('--'));
  if (flags.length > 1) throw new UsageError(`only one of ${flags.join(', ')} at a time`);
  if (flags.length === 0) return { sub: undefined, rest: argv };
  return { sub: flags[0]!.slice(2), rest: argv.filter((a) => a !== flags[0]) };
}

/** A Java properties file (`--command-config`, `--producer.config`, `--consumer.config`): name=value or name:value lines, # and ! comments. */
export function propertiesFile(path: string | undefined): Map<string, string> {
  const out = new Map<string, string>();
  if (path === undefined) return out;
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    throw new UsageError(`cannot read ${path}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
  }
  for (const raw of text.split(/\r?\n/)) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#') || line.startsWith('!')) continue;
    const m = /^([^=:\s]+)\s*[=:]\s*(.*)$/.exec(line);
    if (!m) throw new UsageError(`${path}: expected name=value, got "${line}"`);
    out.set(m[1]!, m[2]!);
  }
  return out;
}

/**
 * The connection settings a properties file may carry, by Kafka's names where Kafka has one:
 * command-line flags win over the file, the file over the environment.
 */
const FILE_CONNECTION_KEYS: Record<string, keyof ConnectionValues> = {
  'bootstrap.servers': 'bootstrap-server',
  'request.timeout.ms': 'request-timeout-ms',
  'cluster.id': 'cluster-id',
  auth: 'auth',
  token: 'token',
  region: 'region',
  'wire.format': 'wire-format',
};

/** Splits a properties file into connection values and the rest (client configs), removing the former. */
export function withFileConnection<V extends ConnectionValues>(values: V, file: Map<string, string>): V {
  const merged: ConnectionValues = { ...values };
  for (const [key, flag] of Object.entries(FILE_CONNECTION_KEYS)) {
    const v = file.get(key);
    if (v === undefined) continue;
    file.delete(key);
    if (merged[flag] === undefined)
      (merged as Record<string, unknown>)[flag] = flag === 'bootstrap-server' ? v.split(',')[0]!.trim() : v;
  }
  return merged as V;
}

type ConnectionValues = {
  [K in keyof typeof CONNECTION_OPTIONS]?: (typeof CONNECTION_OPTIONS)[K]['type'] extends 'boolean' ? boolean : string;
};

/**
 * The server's URL from --bootstrap-server, --url or KAFKA_LOG_URL. A bare `host:port`, as
 * kafka-topics.sh users write it, is that host and port over http.
 */
export function serverUrl(values: ConnectionValues, env: NodeJS.ProcessEnv): string {
  const given = values['bootstrap-server'] ?? values.url ?? env.KAFKA_LOG_URL ?? 'http://127.0.0.1:8080';
  return /^[a-z][a-z0-9+.-]*:\/\//i.test(given) ? given : `http://${given}`;
}

/** How requests authenticate, from --auth, --token and --region (or their environment variables). */
export function authConfig(values: ConnectionValues, env: NodeJS.ProcessEnv): AuthConfig {
  const token = values.token ?? env.KAFKA_LOG_TOKEN;
  const mode = values.auth ?? env.KAFKA_LOG_AUTH ?? (token ? 'bearer' : 'none');
  if (mode === 'none') return { type: 'none' };
  if (mode === 'bearer') {
    if (!token) throw new UsageError('--auth bearer needs --token or KAFKA_LOG_TOKEN');
    return { type: 'bearer', token };
  }
  if (mode === 'sigv4') return { type: 'sigv4', ...(values.region ? { region: values.region } : {}) };
  throw new UsageError(`--auth must be none, bearer or sigv4 (got ${mode})`);
}

export function connect(values: ConnectionValues, env: NodeJS.ProcessEnv): Kafka {
  const url = serverUrl(values, env);
  const auth = authConfig(values, env);
  const format = values['wire-format'] ?? env.KAFKA_LOG_WIRE_FORMAT ?? 'auto';
  if (format !== 'auto' && format !== 'record-batch' && format !== 'json')
    throw new UsageError(`--wire-format must be auto, record-batch or json (got ${format})`);
  return new Kafka({
    format,
    url,
    auth,
    clientId: 'kafka-log-cli',
    ...(values['cluster-id'] ? { clusterId: values['cluster-id'] } : {}),
    ...(values['request-timeout-ms']
      ? { requestTimeoutMs: int(values['request-timeout-ms'], '--request-timeout-ms', 1) }
      : {}),
  });
}

export function int(raw: string | undefined, flag: string, min = 0): number {
  if (raw === undefined) throw new UsageError(`${flag} is required`);
  const n = Number(raw);
  if (!/^-?\d+$/.test(raw.trim()) || !Number.isSafeInteger(n) || n < min)
    throw new UsageError(`${flag} must be an integer >= ${min} (got ${raw})`);
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
