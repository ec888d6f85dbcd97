import { parseArgs } from 'node:util';

/**
 * The local server's command line (`npm start -- <flags>`): flags override the environment
 * variables of the same meaning (the README's configuration table), `--help` prints the usage.
 */
export const SERVER_USAGE = `Usage: npm start -- [flags]      (or: node --import tsx src/server.ts [flags])

Flags (each overrides the environment variable named after it):
  --port <n>                       HTTP port (PORT, default 8080)
  --host <addr>                    address to bind (HOST, default 127.0.0.1)
  --backend local|memory|aws       storage (STORAGE_BACKEND, default local)
  --data-dir <dir>                 the local backend's files (DATA_DIR, default .data)
  --replicas <n>                   replica stores (REPLICA_STORES, default 1)
  --kafka-port <n>                 Kafka protocol listener, 0: off (KAFKA_PORT, default 9092)
  --kafka-advertised-listener <h[:p]>  what Metadata tells clients (KAFKA_ADVERTISED_HOST)
  --scheduler-interval-ms <n>      in-process maintenance, 0: off (SCHEDULER_INTERVAL_MS, default 30000)
  --auth-config <file>             tokens, SASL users, ACL enforcement (AUTH_CONFIG; docs/security.md)
  --help                           this text

npm keeps flags before "--" for itself: \`npm start --port 9000\` does not reach the server the
way \`npm start -- --port 9000\` does. Every other setting is an environment variable: README.md,
"Configuration".`;

/** Flag -> the environment variable it sets. */
const FLAG_ENV = {
  port: 'PORT',
  host: 'HOST',
  backend: 'STORAGE_BACKEND',
  'data-dir': 'DATA_DIR',
  replicas: 'REPLICA_STORES',
  'kafka-port': 'KAFKA_PORT',
  'kafka-advertised-listener': 'KAFKA_ADVERTISED_HOST',
  'scheduler-interval-ms': 'SCHEDULER_INTERVAL_MS',
  'auth-config': 'AUTH_CONFIG',
} as const;
type Flag = keyof typeof FLAG_ENV;

/** A command line the server cannot run with; its message says why and the usage follows it. */
export class ServerArgsError extends Error {}

export type ServerArgs = { help: true } | { help: false; env: Record<string, string | undefined> };

/**
 * The environment the server runs with: `env` with the flags applied. Run by npm, a flag written
 * before `--` reaches the server only as npm's `npm_config_<flag>`: `--port=9000` as its value,
 * `--port 9000` as "true" with the value left as an argument. Those are taken too where they are
 * unambiguous (one such flag, one argument); anything else is refused with the way to write it.
 */
export function parseServerArgs(argv: string[], env: Record<string, string | undefined>): ServerArgs {
  let parsed: ReturnType<typeof parseFlags>;
  try {
    parsed = parseFlags(argv);
  } catch (e) {
    // node's message goes on about positionals starting with '-': its first sentence says it.
    throw new ServerArgsError((e as Error).message.split('. ')[0]!.replace(/\.?$/, '.'));
  }
  if (parsed.values.help) return { help: true };
  const out = { ...env };
  const positionals = [...parsed.positionals];
  const viaNpm = env.npm_lifecycle_event !== undefined;
  const swallowed: Flag[] = [];
  for (const [flag, name] of Object.entries(FLAG_ENV) as [Flag, string][]) {
    const npmValue = viaNpm ? env[`npm_config_${flag.replaceAll('-', '_')}`] : undefined;
    if (npmValue === 'true') swallowed.push(flag);
    else if (npmValue !== undefined && npmValue !== '') out[name] = npmValue;
    const value = parsed.values[flag];
    if (typeof value === 'string') out[name] = value;
  }
  if (swallowed.length === 1 && positionals.length === 1 && parsed.values[swallowed[0]!] === undefined) {
    out[FLAG_ENV[swallowed[0]!]] = positionals.pop();
  }
  if (positionals.length > 0) {
    const hint =
      swallowed.length > 0
        ? ` npm kept ${swallowed.map((f) => `--${f}`).join(', ')} for itself: write the flags after "--", as in \`npm start -- --${swallowed[0]} ${positionals[0]}\`.`
        : '';
    throw new ServerArgsError(`Unexpected argument ${JSON.stringify(positionals[0])}.${hint}`);
  }
  return { help: false, env: out };
}

function parseFlags(argv: string[]) {
  return parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      help: { type: 'boolean', short: 'h' },
      ...(Object.fromEntries(Object.keys(FLAG_ENV).map((f) => [f, { type: 'string' }])) as Record<
        Flag,
        { type: 'string' }
      >),
    },
  });
}
