/**
 * librdkafka (Debian's kcat, installed by .ci/run) compresses with each codec against the
 * listener, which it does only because ApiVersions lists Produce v0-2 (produce-versions.test.ts):
 * the batches are stored with the codec asked for, and kcat reads them back. And the other way:
 * batches this product compresses (a topic's compression.type) are read by librdkafka and by
 * kafka-python (whose decoders are the Java client's: xerial snappy, lz4 frames). Each part skips,
 * saying so, where its Debian package is missing (.ci/run installs them).
 */
import { execFile, spawnSync } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/clock.js';
import { TopicRegistry } from '../../src/topics/topics.js';
import { CODEC, decodeRecordBatches } from '../../src/wire/record-batch.js';
import { startKafkaServer, type TestKafkaServer } from './support/kafka-server.js';

const run = promisify(execFile);
const hasKcat = spawnSync('kcat', ['-V']).status === 0;
const PYTHON = '/usr/bin/python3';
const hasKafkaPython = spawnSync(PYTHON, ['-c', 'import kafka, snappy, lz4.frame, zstandard']).status === 0;
const CODECS = ['gzip', 'snappy', 'lz4', 'zstd'] as const;

/** A topic whose batches the server compresses with `codec`, holding `values` produced as JSON. */
async function serverCompressed(codec: (typeof CODECS)[number], values: string[]): Promise<string> {
  const topic = `stored-${codec}-${Math.random().toString(36).slice(2, 8)}`;
  await s.services.topics.create({
    name: topic,
    partitionCount: 1,
    replicationFactor: 1,
    configs: { 'compression.type': codec },
  });
  const res = await fetch(`${s.http}/topics/${topic}/records:batch`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      entries: values.map((v, i) => ({ id: String(i), partition_id: 0, value: { type: 'STRING', data: v } })),
    }),
  });
  expect(res.status).toBe(207);
  const raw = await fetch(`${s.http}/topics/${topic}/partitions/0/records?offset=0`, {
    headers: { accept: 'application/vnd.kafka.record-batch.v2' },
  });
  for (const b of decodeRecordBatches(new Uint8Array(await raw.arrayBuffer())))
    expect(b.header.attributes & 0x07).toBe(CODEC[codec]);
  return topic;
}

let s: TestKafkaServer;
beforeAll(async () => {
  s = await startKafkaServer({}, { DEFAULT_PARTITIONS: '1' });
});
afterAll(async () => {
  await s?.close();
});

describe.skipIf(!hasKcat)(hasKcat ? 'kcat -z' : 'kcat (Debian package kcat) is not installed: skipped', () => {
  it.each(CODECS)('reads %s batches this product compressed', async (codec) => {
    const values = Array.from({ length: 8 }, (_, i) => `${'server side '.repeat(8)}${i}`);
    const topic = await serverCompressed(codec, values);
    const out = (await run('kcat', ['-b', s.broker, '-C', '-t', topic, '-e', '-f', '%s\\n'], { timeout: 20_000 }))
      .stdout;
    expect(out.trim().split('\n')).toEqual(values);
  });

  it.each(CODECS)('%s: stored so, consumed as sent', async (codec) => {
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

describe.skipIf(!hasKcat)(
  hasKcat ? 'kcat -z on a cluster at feature level 1' : 'kcat (Debian package kcat) is not installed: skipped',
  () => {
    it('zstd is refused UNSUPPORTED_COMPRESSION_TYPE until the feature level is raised, and taken after', async () => {
      const old = await startKafkaServer({}, { DEFAULT_PARTITIONS: '1' });
      try {
        // A topic as v0.1.0 left it: data, and no feature level item.
        await new TopicRegistry(old.metadata, systemClock, 1).create({
          name: 'legacy',
          partitionCount: 1,
          replicationFactor: 1,
        });
        const produce = (line: string) => {
          const p = run(
            'kcat',
            ['-b', old.broker, '-P', '-t', 'legacy', '-z', 'zstd', '-X', 'message.send.max.retries=0'],
            {
              timeout: 20_000,
            },
          );
          // librdkafka sends a batch uncompressed when compressing does not make it smaller.
          p.child.stdin!.end(`${line} ${'compressible '.repeat(20)}\n`);
          return p.then(
            (r) => r.stderr,
            (e: { stderr: string }) => e.stderr,
          );
        };
        expect(await produce('too early')).toMatch(/Unsupported compression type/i);
        const highWatermark = async () =>
          (
            (await (await fetch(`${old.http}/topics/legacy/partitions/0/records?offset=0`)).json()) as {
              high_watermark: number;
            }
          ).high_watermark;
        expect(await highWatermark()).toBe(0);
        const raised = await fetch(`${old.http}/features:raise`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ feature_level: 2 }),
        });
        expect(raised.status).toBe(200);
        expect(await produce('after the raise')).not.toMatch(/Unsupported compression type/i);
        expect(await highWatermark()).toBe(1);
        const stored = await fetch(`${old.http}/topics/legacy/partitions/0/records?offset=0`, {
          headers: { accept: 'application/vnd.kafka.record-batch.v2' },
        });
        const [batch] = decodeRecordBatches(new Uint8Array(await stored.arrayBuffer()));
        expect(batch!.header.attributes & 0x07).toBe(CODEC.zstd);
      } finally {
        await old.close();
      }
    });
  },
);

const KAFKA_PYTHON_CONSUMER = `
import sys
from kafka import KafkaConsumer
c = KafkaConsumer(sys.argv[2], bootstrap_servers=sys.argv[1], auto_offset_reset='earliest', consumer_timeout_ms=5000)
for m in c:
    print(m.value.decode())
    if m.offset + 1 >= int(sys.argv[3]):
        break
c.close()
`;

describe.skipIf(!hasKafkaPython)(
  hasKafkaPython
    ? 'kafka-python'
    : 'kafka-python (Debian python3-kafka, python3-snappy, python3-lz4, python3-zstandard) is not installed: skipped',
  () => {
    it.each(CODECS)("reads %s batches this product compressed (the Java client's framings)", async (codec) => {
      const values = Array.from({ length: 8 }, (_, i) => `${'server side '.repeat(8)}${i}`);
      const topic = await serverCompressed(codec, values);
      const out = (
        await run(PYTHON, ['-c', KAFKA_PYTHON_CONSUMER, s.broker, topic, String(values.length)], { timeout: 30_000 })
      ).stdout;
      expect(out.trim().split('\n')).toEqual(values);
    });
  },
);
