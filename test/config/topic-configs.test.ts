/**
 * Every Kafka topic config is accepted with Kafka's types and ranges (src/config/topic-configs.ts),
 * and docs/topic-configs.md lists each with its default and what it does here.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  describedTopicConfigNames,
  resolveTopicConfig,
  TOPIC_CONFIG_DEFS,
  validateTopicConfig,
  validateTopicConfigSet,
} from '../../src/config/topic-configs.js';
import { isKafkaError } from '../../src/wire/errors.js';

const refused = (name: string, value: string) => {
  try {
    validateTopicConfig(name, value);
    return false;
  } catch (e) {
    return isKafkaError(e, 'INVALID_CONFIG');
  }
};

describe('topic configs', () => {
  it('accepts every config at its default, and refuses an unknown name', () => {
    for (const [name, def] of Object.entries(TOPIC_CONFIG_DEFS)) expect(refused(name, def.default), name).toBe(false);
    expect(refused('no.such.config', '1')).toBe(true);
    expect(refused('log.retention.ms', '1')).toBe(true); // a broker config, not a topic config
  });

  it("checks types and ranges as Kafka's LogConfig does", () => {
    const cases: [string, string, boolean][] = [
      ['segment.bytes', '1048575', true], // Kafka 4.0: at least 1 MiB
      ['segment.bytes', '1048576', false],
      ['segment.bytes', '2147483648', true], // an int
      ['retention.ms', '-1', false],
      ['retention.ms', '-2', true],
      ['retention.ms', '9223372036854775808', true], // past a long
      ['retention.bytes', '-5', false], // any long
      ['segment.jitter.ms', '-1', true],
      ['segment.index.bytes', '3', true],
      ['flush.messages', '0', true],
      ['flush.ms', '0', false],
      ['preallocate', 'TRUE', false], // Kafka reads booleans in any case
      ['preallocate', 'yes', true],
      ['compression.gzip.level', '-1', false],
      ['compression.gzip.level', '0', true],
      ['compression.gzip.level', '9', false],
      ['compression.gzip.level', '10', true],
      ['compression.lz4.level', '17', false],
      ['compression.lz4.level', '18', true],
      ['compression.zstd.level', '-131072', false],
      ['compression.zstd.level', '-131073', true],
      ['compression.zstd.level', '23', true],
      ['leader.replication.throttled.replicas', '*', false],
      ['leader.replication.throttled.replicas', '0:1, 1:2', false],
      ['follower.replication.throttled.replicas', '', false],
      ['follower.replication.throttled.replicas', 'all', true],
      ['local.retention.ms', '-2', false],
      ['local.retention.bytes', '-3', true],
      ['remote.copy.lag.ms', '-1', false],
      ['min.cleanable.dirty.ratio', '1.5', true],
      ['min.cleanable.dirty.ratio', '.25', false],
      ['message.timestamp.difference.max.ms', '60000', false],
      ['message.format.version', '2.8', false],
      ['message.format.version', '3.0-IV1', false],
      ['message.format.version', 'latest', true],
      ['cleanup.policy', 'compact, delete', false],
      ['cleanup.policy', 'compact,archive', true],
      ['max.message.bytes', ' 2048 ', false],
      ['max.message.bytes', '1e3', true],
    ];
    for (const [name, value, bad] of cases) expect(refused(name, value), `${name}=${JSON.stringify(value)}`).toBe(bad);
  });

  it('refuses min.compaction.lag.ms above max.compaction.lag.ms, as Kafka', () => {
    expect(() => validateTopicConfigSet({ 'min.compaction.lag.ms': '10000', 'max.compaction.lag.ms': '5000' })).toThrow(
      /min.compaction.lag.ms \(10000\) > max.compaction.lag.ms \(5000\)/,
    );
    expect(() => validateTopicConfigSet({ 'min.compaction.lag.ms': '5000' })).not.toThrow();
  });

  it('applies message.timestamp.difference.max.ms where before/after are not set, as Kafka 3.6-3.9', () => {
    const both = resolveTopicConfig({ 'message.timestamp.difference.max.ms': '60000' });
    expect([both.timestampBeforeMaxMs, both.timestampAfterMaxMs]).toEqual([60000, 60000]);
    const after = resolveTopicConfig({
      'message.timestamp.difference.max.ms': '60000',
      'message.timestamp.after.max.ms': '1000',
    });
    expect([after.timestampBeforeMaxMs, after.timestampAfterMaxMs]).toEqual([60000, 1000]);
    expect(resolveTopicConfig({ preallocate: 'TRUE', 'unclean.leader.election.enable': 'True' })).toMatchObject({
      uncleanLeaderElectionEnable: true,
    });
  });

  it('describes the configs Kafka 4.0 removed only where a topic sets them', () => {
    expect(describedTopicConfigNames({})).not.toContain('message.format.version');
    expect(describedTopicConfigNames({})).toContain('remote.storage.enable');
    expect(describedTopicConfigNames({ 'message.format.version': '2.8' })).toContain('message.format.version');
  });

  it('docs/topic-configs.md lists every config with its default', () => {
    const rows = new Map(
      readFileSync(new URL('../../docs/topic-configs.md', import.meta.url), 'utf8')
        .split('\n')
        .flatMap((line) => {
          const m = /^\| `([^`]+)` \| \w+ \| (`([^`]*)`|\(empty\)) \|/.exec(line);
          return m ? [[m[1]!, m[3] ?? ''] as const] : [];
        }),
    );
    expect([...rows.keys()].sort()).toEqual(Object.keys(TOPIC_CONFIG_DEFS).sort());
    for (const [name, def] of Object.entries(TOPIC_CONFIG_DEFS)) expect(rows.get(name), name).toBe(def.default);
  });
});
