/**
 * librdkafka, unmodified, against the Kafka listener: kcat and python3-confluent-kafka (Debian
 * packages, installed by .ci/run). Each part skips, saying so, where its package is missing.
 */
import { execFile, spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startKafkaServer, type TestKafkaServer } from './support/kafka-server.js';
import { unpackProducers } from '../../src/partition/producer-state.js';

const run = promisify(execFile);
const PYTHON = '/usr/bin/python3';
const hasKcat = spawnSync('kcat', ['-V']).status === 0;
const hasConfluentKafka = spawnSync(PYTHON, ['-c', 'import confluent_kafka']).status === 0;

let s: TestKafkaServer;
beforeAll(async () => {
  s = await startKafkaServer({}, { DEFAULT_PARTITIONS: '1' });
});
afterAll(async () => {
  await s?.close();
});

async function kcat(args: string[], input?: string): Promise<string> {
  const child = run('kcat', ['-b', s.broker, ...args], { timeout: 20_000 });
  if (input !== undefined) {
    child.child.stdin!.end(input);
  }
  return (await child).stdout;
}

describe.skipIf(!hasKcat)(hasKcat ? 'kcat' : 'kcat (Debian package kcat) is not installed: skipped', () => {
  it('produces with acks 0, 1, all and idempotence, and consumes what was produced', async () => {
    await s.services.topics.create({ name: 'kc', partitionCount: 1, replicationFactor: 1 });
    for (const [acks, extra] of [
      ['0', []],
      ['1', []],
      ['all', []],
      ['all', ['-X', 'enable.idempotence=true']],
    ] as const) {
      await kcat(['-P', '-t', 'kc', '-K:', '-X', `acks=${acks}`, ...extra], `k-${acks}-${extra.length}:v1\nk2:v2\n`);
    }
    await s.services.log.idle(); // the acks=0 append
    const out = await kcat(['-C', '-t', 'kc', '-e', '-f', '%o %k=%s\\n']);
    expect(out.trim().split('\n').sort()).toEqual(
      ['0 k-0-0=v1', '1 k2=v2', '2 k-1-0=v1', '3 k2=v2', '4 k-all-0=v1', '5 k2=v2', '6 k-all-2=v1', '7 k2=v2'].sort(),
    );
    const t = await s.services.topics.get('kc');
    expect(unpackProducers((await s.services.log.state(t, 0)).pids)).toHaveLength(1); // the idempotent one
  });

  it('reads metadata, and consumes in a group what HTTP produced, committing its offsets', async () => {
    await s.services.topics.create({ name: 'kc-http', partitionCount: 2, replicationFactor: 1 });
    const res = await fetch(`${s.http}/topics/kc-http/records:batch`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        entries: [0, 1, 2, 3].map((i) => ({
          id: String(i),
          partition_id: i % 2,
          value: { type: 'STRING', data: `h${i}` },
        })),
      }),
    });
    expect(res.status).toBe(207);
    const meta = JSON.parse(await kcat(['-L', '-J', '-t', 'kc-http']));
    expect(meta.brokers).toEqual([{ id: 0, name: s.broker }]);
    expect(
      meta.topics[0].partitions.map((p: { partition: number; leader: number }) => [p.partition, p.leader]),
    ).toEqual([
      [0, 0],
      [1, 0],
    ]);
    const out = await kcat([
      '-C',
      '-G',
      'kc-group',
      '-X',
      'auto.offset.reset=earliest',
      '-X',
      'enable.auto.commit=true',
      '-X',
      'auto.commit.interval.ms=100',
      '-e',
      '-f',
      '%s\\n',
      'kc-http',
    ]);
    expect(out.trim().split('\n').sort()).toEqual(['h0', 'h1', 'h2', 'h3']);
    const committed = await s.services.groups.offsets.committed('kc-group');
    expect(committed.map((o) => [o.partition, o.offset])).toEqual([
      [0, 2],
      [1, 2],
    ]);
  }, 30_000);
});

describe.skipIf(!hasConfluentKafka)(
  hasConfluentKafka ? 'python3-confluent-kafka' : 'python3-confluent-kafka (Debian package) is not installed: skipped',
  () => {
    it('admin, acks 0/1/all, idempotence, a group of three with a leave, commit, resume and seek', async () => {
      const { stdout } = await run(
        PYTHON,
        [join(import.meta.dirname, 'support/librdkafka-client.py'), s.broker, 'rdk'],
        { timeout: 50_000 },
      );
      const steps = Object.fromEntries(
        stdout
          .trim()
          .split('\n')
          .map((l) => JSON.parse(l))
          .map((o) => [o.step, o]),
      );
      expect(steps.configs).toMatchObject({ retention: '3600000', cleanup: 'delete' });
      for (const acks of ['0', '1', 'all'])
        expect(steps[`produced-${acks}`]).toEqual({ step: `produced-${acks}`, errors: [] });
      expect(steps.idempotent).toMatchObject({ delivered: 300, unique: 300 });
      const three = steps.three.assignments as number[][];
      expect(three).toHaveLength(3);
      expect(three.flat().sort()).toEqual([0, 1, 2, 3, 4, 5]);
      const two = steps.two.assignments as number[][];
      expect(two.flat().sort()).toEqual([0, 1, 2, 3, 4, 5]);
      expect(steps.resume).toMatchObject({ first: [0, 1, 2], committed: 10, resumed: 10, sought: 2 });
      // Partition 0 got every sixth of 100 records per acks setting (17) and of the 300 idempotent ones.
      expect(steps.watermarks).toMatchObject({ low: 0, high: 3 * 17 + 50 });
      expect(steps.partitions.count).toBe(8);
      expect(steps.deleted.exists).toBe(false);
    }, 60_000);
  },
);
