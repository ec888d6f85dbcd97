/**
 * The command-line tool (`kafka-log`, package bin): Kafka's shell tools over the client.
 *   kafka-log topics create --topic orders --partitions 3
 *   printf 'alice:1\nbob:2\n' | kafka-log produce --topic orders --key-separator :
 *   kafka-log consume --topic orders --from-beginning --print-key --max-messages 2
 *   kafka-log groups describe --group billing
 *   kafka-log perf produce --topic orders --num-records 100000 --record-size 100 --throughput -1
 *   kafka-log transactions find-hanging --topic orders
 *   kafka-log acls --add --allow-principal User:alice --operation Read --topic orders
 *   kafka-log configs --entity-type users --entity-name alice --alter --add-config producer_byte_rate=1048576
 *   kafka-log console --bootstrap-server https://abc.execute-api.eu-west-1.amazonaws.com --auth sigv4
 * Errors print one line to stderr and exit non-zero (2 for a usage mistake, 1 otherwise).
 */
import { KafkaClientError, RELEASE } from '../client/index.js';
import { aclsCommand } from './acls.js';
import { UsageError, CONNECTION_HELP } from './args.js';
import { configsCommand } from './configs.js';
import { consoleCommand } from './console.js';
import { consumeCommand } from './consume.js';
import { featuresCommand } from './features.js';
import type { Context } from './context.js';
import { groupsCommand } from './groups.js';
import { shareGroupsCommand } from './share-groups.js';
import { perfCommand } from './perf.js';
import { produceCommand } from './produce.js';
import { topicsCommand } from './topics.js';
import { transactionsCommand } from './transactions.js';
import { triggersCommand } from './triggers.js';

const HELP = `Usage: kafka-log <command> [options]   (kafka-log <command> --help for more)
  topics   create | list | describe | alter | delete           (kafka-topics.sh)
  produce  records from stdin lines                             (kafka-console-producer.sh)
  consume  records to stdout                                    (kafka-console-consumer.sh)
  groups   list | describe | delete | reset-offsets             (kafka-consumer-groups.sh)
  share-groups list | describe | config | reset-offsets | delete-offsets  (kafka-share-groups.sh)
  triggers create | list | describe | pause | resume | delete   (functions run by new records)
  perf     produce | consume                                    (kafka-*-perf-test.sh)
  transactions list | describe | find-hanging | abort           (kafka-transactions.sh)
  acls     --add | --remove | --list                            (kafka-acls.sh)
  configs  --entity-type users|clients --alter | --describe     (kafka-configs.sh, client quotas)
  console  the web console, calls signed (--auth sigv4)         (as kubectl proxy)
  features describe | upgrade --feature-level N                 (kafka-features.sh)
  --version  the release of kafka-log
${CONNECTION_HELP}`;

const COMMANDS: Record<string, (argv: string[], ctx: Context) => Promise<void>> = {
  topics: topicsCommand,
  produce: produceCommand,
  consume: consumeCommand,
  groups: groupsCommand,
  'share-groups': shareGroupsCommand,
  triggers: triggersCommand,
  perf: perfCommand,
  transactions: transactionsCommand,
  acls: aclsCommand,
  configs: configsCommand,
  console: consoleCommand,
  features: featuresCommand,
};

/** Runs one command line; resolves to the exit code. */
export async function main(argv: string[], ctx: Context): Promise<number> {
  const [command, ...rest] = argv;
  if (command === '--version' || command === '-V' || command === 'version') {
    ctx.out(`kafka-log ${RELEASE}`);
    return 0;
  }
  if (command === undefined || command === '--help' || command === '-h' || command === 'help') {
    ctx.out(HELP);
    return command === undefined ? 2 : 0;
  }
  const run = COMMANDS[command];
  try {
    if (!run) throw new UsageError(`Unknown command ${command}`);
    await run(rest, ctx);
    return 0;
  } catch (e) {
    ctx.err(errorLine(e));
    return e instanceof UsageError ? 2 : 1;
  }
}

/** One clear line: the Kafka error name when there is one, then the message. */
export function errorLine(e: unknown): string {
  if (e instanceof UsageError) return `Error: ${e.message} (see --help)`;
  if (e instanceof KafkaClientError) {
    const line = `Error: ${e.type}: ${e.message.split('\n')[0]}`;
    // Nothing listens there: say what to start, or which address the CLI wants (HTTP, not Kafka's port).
    return /ECONNREFUSED/.test(e.message)
      ? `${line}\nIs the server running? Start it with \`npm start\`, or name it with --bootstrap-server http://host:port (its HTTP API, 8080 by default; the Kafka listener's port is for Kafka clients).`
      : line;
  }
  return `Error: ${e instanceof Error ? e.message.split('\n')[0] : String(e)}`;
}

const isEntry = process.argv[1] !== undefined && /[\\/]cli[\\/](main\.ts|bin\.mjs)$/.test(process.argv[1]);
if (isEntry || process.env.KAFKA_LOG_CLI_ENTRY === '1') {
  const abort = new AbortController();
  let interrupted = 0;
  const onSignal = () => {
    if (++interrupted > 1) process.exit(130);
    abort.abort();
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  process.stdout.on('error', (e: NodeJS.ErrnoException) => {
    if (e.code === 'EPIPE') process.exit(0); // `| head`
  });
  const code = await main(process.argv.slice(2), {
    out: (line) => process.stdout.write(`${line}\n`),
    err: (line) => process.stderr.write(`${line}\n`),
    stdin: process.stdin,
    env: process.env,
    signal: abort.signal,
  });
  process.exitCode = code;
  // Whatever might still hold the event loop (a request in flight at Ctrl-C) must not hold the exit.
  setTimeout(() => process.exit(code), 2000).unref();
}
