/**
 * librdkafka (Debian's kcat, installed by .ci/run) compresses with each codec against the
 * listener, which it does only because ApiVersions lists Produce v0-2 (produce-versions.test.ts):
 * the batches are stored with the codec asked for, and kcat reads them back. Skips, saying so,
 * where kcat is missing.
 */
import { execFile, spawnSync } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CODEC, decodeRecordBatches } from '../../src/wire/record-batch.js';
import { startKafkaServer, type TestKafkaServer } from './support/kafka-server.js';

const run = promisify(execFile);
const hasKcat = spawnSync('kcat', ['-V']).status === 0;

let s: TestKafkaServer;
beforeAll(async () => {
  s = await startKafkaServer({}, { DEFAULT_PARTITIONS: '1' });
});
afterAll(async () => {
  await s?.close();
});

describe.skipIf(!hasKcat)(hasKcat ? 'kcat -z' : 'kcat (Debian package kcat) is not installed: skipped', () => {
  it.each(['gzip', 'snappy', 'lz4', 'zstd'] as const)('%s: stored so, consumed as sent', async (codec) => {
    const topic = `kcat-${codec}`;
    await s.services.topics.create({ name: topic, partitionCount: 1, replicationFactor: 1 });
    const lines = Array.from({ length: 10 }, (_, i) => `k${i}:${'compressible '.repeat(10)}${i}`);
    const producer = run('kcat', ['-b', s.broker, '-P', '-t', topic, '-K:', '-z', codec, '-X', 'linger.ms=100'], {
      timeout: 20_000,
    });
    producer.child.stdin!.end(`${lines.join('\n')}\n`);
    await producer;
    const res = await fetch(`${s.http}/topics/${topic}/partitions/0/records?offset=0`, {
      headers: { accept: 'application/vnd.kafka.record-batch.v2' },
    });
    const batches = decodeRecordBatches(new Uint8Array(await res.arrayBuffer()));
    expect(batches.length).toBeGreaterThan(0);
    for (const b of batches) expect(b.header.attributes & 0x07).toBe(CODEC[codec]);
    const out = (await run('kcat', ['-b', s.broker, '-C', '-t', topic, '-e', '-f', '%k:%s\\n'], { timeout: 20_000 }))
      .stdout;
    expect(out.trim().split('\n')).toEqual(lines);
  });
});
