/**
 * Each command against the Kafka tool it mirrors: every option of the Kafka tool is either taken
 * (under the same name) or refused with a reason, never "unknown option". The Kafka lists are the
 * options kafka-*.sh print with --help in Kafka 3.7-4.0.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import {
  action,
  CONNECTION_OPTIONS,
  pairs,
  parse,
  propertiesFile,
  UsageError,
  withFileConnection,
  type Options,
} from '../../src/cli/args.js';
import { CONSUME_OPTIONS, CONSUME_UNSUPPORTED } from '../../src/cli/consume.js';
import { GROUPS_ACTIONS, GROUPS_OPTIONS, GROUPS_UNSUPPORTED } from '../../src/cli/groups.js';
import { main } from '../../src/cli/main.js';
import {
  PERF_CONSUME_OPTIONS,
  PERF_CONSUME_UNSUPPORTED,
  PERF_PRODUCE_OPTIONS,
  PERF_PRODUCE_UNSUPPORTED,
} from '../../src/cli/perf.js';
import { PRODUCE_OPTIONS, PRODUCE_UNSUPPORTED } from '../../src/cli/produce.js';
import { TOPICS_ACTIONS, TOPICS_OPTIONS, TOPICS_UNSUPPORTED } from '../../src/cli/topics.js';

interface Tool {
  kafka: string;
  options: Options;
  unsupported: Record<string, string>;
  actions?: readonly string[];
  /** Kafka's option names. */
  kafkaOptions: string[];
}

const TOOLS: Tool[] = [
  {
    kafka: 'kafka-topics.sh',
    options: TOPICS_OPTIONS,
    unsupported: TOPICS_UNSUPPORTED,
    actions: TOPICS_ACTIONS,
    kafkaOptions: [
      'alter',
      'at-min-isr-partitions',
      'bootstrap-server',
      'command-config',
      'config',
      'create',
      'delete',
      'delete-config',
      'describe',
      'exclude-internal',
      'help',
      'if-exists',
      'if-not-exists',
      'list',
      'partitions',
      'replica-assignment',
      'replication-factor',
      'topic',
      'topic-id',
      'topics-with-overrides',
      'unavailable-partitions',
      'under-min-isr-partitions',
      'under-replicated-partitions',
    ],
  },
  {
    kafka: 'kafka-consumer-groups.sh',
    options: GROUPS_OPTIONS,
    unsupported: GROUPS_UNSUPPORTED,
    actions: GROUPS_ACTIONS,
    kafkaOptions: [
      'all-groups',
      'all-topics',
      'bootstrap-server',
      'by-duration',
      'command-config',
      'delete',
      'delete-offsets',
      'describe',
      'dry-run',
      'execute',
      'export',
      'from-file',
      'group',
      'help',
      'list',
      'members',
      'offsets',
      'reset-offsets',
      'shift-by',
      'state',
      'timeout',
      'to-current',
      'to-datetime',
      'to-earliest',
      'to-latest',
      'to-offset',
      'topic',
      'verbose',
    ],
  },
  {
    kafka: 'kafka-console-producer.sh',
    options: PRODUCE_OPTIONS,
    unsupported: PRODUCE_UNSUPPORTED,
    kafkaOptions: [
      'batch-size',
      'bootstrap-server',
      'compression-codec',
      'help',
      'line-reader',
      'max-block-ms',
      'max-memory-bytes',
      'max-partition-memory-bytes',
      'message-send-max-retries',
      'metadata-expiry-ms',
      'producer-property',
      'producer.config',
      'property',
      'reader-config',
      'request-required-acks',
      'request-timeout-ms',
      'retry-backoff-ms',
      'socket-buffer-size',
      'sync',
      'timeout',
      'topic',
    ],
  },
  {
    kafka: 'kafka-console-consumer.sh',
    options: CONSUME_OPTIONS,
    unsupported: CONSUME_UNSUPPORTED,
    kafkaOptions: [
      'bootstrap-server',
      'consumer-property',
      'consumer.config',
      'enable-systest-events',
      'formatter',
      'formatter-config',
      'from-beginning',
      'group',
      'help',
      'include',
      'isolation-level',
      'key-deserializer',
      'max-messages',
      'offset',
      'partition',
      'property',
      'skip-message-on-error',
      'timeout-ms',
      'topic',
      'value-deserializer',
      'whitelist',
    ],
  },
  {
    kafka: 'kafka-producer-perf-test.sh',
    options: PERF_PRODUCE_OPTIONS,
    unsupported: PERF_PRODUCE_UNSUPPORTED,
    kafkaOptions: [
      'help',
      'topic',
      'num-records',
      'payload-delimiter',
      'throughput',
      'producer-props',
      'producer.config',
      'print-metrics',
      'transactional-id',
      'transaction-duration-ms',
      'record-size',
      'payload-file',
      'warmup-records',
    ],
  },
  {
    kafka: 'kafka-consumer-perf-test.sh',
    options: PERF_CONSUME_OPTIONS,
    unsupported: PERF_CONSUME_UNSUPPORTED,
    kafkaOptions: [
      'bootstrap-server',
      'consumer.config',
      'date-format',
      'fetch-size',
      'from-latest',
      'group',
      'help',
      'hide-header',
      'messages',
      'num-fetch-threads',
      'print-metrics',
      'reporting-interval',
      'show-detailed-stats',
      'socket-buffer-size',
      'threads',
      'timeout',
      'topic',
    ],
  },
];

function run(argv: string[]) {
  const out: string[] = [];
  const err: string[] = [];
  const ctx = {
    out: (l: string) => out.push(l),
    err: (l: string) => err.push(l),
    stdin: new PassThrough(),
    env: {},
    signal: new AbortController().signal,
  };
  return main(argv, ctx).then((code) => ({ code, out: out.join('\n'), err: err.join('\n') }));
}

describe.each(TOOLS)('$kafka', (tool) => {
  it('takes every option of the Kafka tool or refuses it with a reason', () => {
    for (const name of tool.kafkaOptions) {
      const taken = name in tool.options || name in CONNECTION_OPTIONS || (tool.actions ?? []).includes(name);
      const refused = tool.unsupported[name];
      expect(taken || refused !== undefined, `--${name}`).toBe(true);
      if (!taken) {
        expect(() => parse([`--${name}`, 'x'], tool.options, tool.unsupported)).toThrow(
          new UsageError(`--${name} is not supported: ${refused}`),
        );
      }
    }
  });

  it('refuses only options the Kafka tool has', () => {
    for (const name of Object.keys(tool.unsupported)) expect(tool.kafkaOptions, name).toContain(name);
  });
});

describe('command lines as Kafka tools write them', () => {
  it('takes several name=value after one --producer-props, as kafka-producer-perf-test.sh', () => {
    const { values } = parse(
      ['--producer-props', 'batch.size=1048576', 'linger.ms=50', '--topic', 't'],
      PERF_PRODUCE_OPTIONS,
    );
    expect([...pairs(values['producer-props'], '--producer-props')]).toEqual([
      ['batch.size', '1048576'],
      ['linger.ms', '50'],
    ]);
    expect(values.topic).toBe('t');
  });

  it('still refuses a stray word that is no name=value', () => {
    expect(() => parse(['--producer-props', 'a=1', 'oops'], PERF_PRODUCE_OPTIONS)).toThrow(UsageError);
  });

  it('reads the action from a subcommand or from a Kafka action flag', () => {
    expect(action(['describe', '--topic', 't'], TOPICS_ACTIONS)).toEqual({ sub: 'describe', rest: ['--topic', 't'] });
    expect(action(['--topic', 't', '--describe'], TOPICS_ACTIONS)).toEqual({ sub: 'describe', rest: ['--topic', 't'] });
    expect(action(['--help'], TOPICS_ACTIONS)).toEqual({ sub: undefined, rest: ['--help'] });
    expect(() => action(['--list', '--delete'], TOPICS_ACTIONS)).toThrow(UsageError);
  });

  it('reads a properties file for connection settings and client configs, flags first', () => {
    const dir = mkdtempSync(join(tmpdir(), 'cli-props-'));
    const path = join(dir, 'client.properties');
    writeFileSync(
      path,
      '# a comment\nbootstrap.servers=http://127.0.0.1:1,http://127.0.0.1:2\nlinger.ms = 50\n! another\nauth:bearer\n',
    );
    const file = propertiesFile(path);
    const values = withFileConnection<Record<string, string | undefined>>({ auth: 'none' }, file);
    expect(values['bootstrap-server']).toBe('http://127.0.0.1:1');
    expect(values.auth).toBe('none');
    expect([...file]).toEqual([['linger.ms', '50']]);
    expect(() => propertiesFile(join(dir, 'missing'))).toThrow(/cannot read .*ENOENT/);
  });

  it.each([
    ['topics', '--help'],
    ['topics', 'create', '--help'],
    ['groups', '--help'],
    ['groups', 'describe', '--help'],
    ['perf', '--help'],
    ['perf', 'produce', '--help'],
    ['perf', 'consume', '--help'],
    ['produce', '--help'],
    ['consume', '--help'],
  ])('kafka-log %s %s answers with its help', async (...argv) => {
    const r = await run(argv);
    expect(r.code).toBe(0);
    expect(r.out).toMatch(/^Usage: kafka-log /);
    expect(r.err).toBe('');
  });

  it('names the reason when an unsupported Kafka option is used', async () => {
    const r = await run(['topics', 'create', '--topic', 't', '--replica-assignment', '0:1']);
    expect(r.code).toBe(2);
    expect(r.err).toContain('--replica-assignment is not supported: replicas are placed by store index');
  });
});
