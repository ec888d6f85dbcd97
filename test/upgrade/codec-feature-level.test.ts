/**
 * Feature level 2 gates snappy, lz4 and zstd record batches (src/storage/formats.ts): v0.1.0 cannot
 * read them, so while a cluster is at level 1 a produce that would store them is refused
 * UNSUPPORTED_COMPRESSION_TYPE, naming the level and the raise; a new cluster starts at level 2; a
 * store with data and no level item (what v0.1.0 leaves) stays at 1; another process sees a raise
 * within FEATURE_LEVEL_MAX_AGE_MS.
 */
import { describe, expect, it } from 'vitest';
import { RECORD_BATCH_MEDIA_TYPE } from '../../src/http/record-batch-body.js';
import { FEATURE_LEVEL_MAX_AGE_MS } from '../../src/storage/feature-level.js';
import { SUPPORTED_FEATURE_LEVEL } from '../../src/storage/formats.js';
import { TopicRegistry } from '../../src/topics/topics.js';
import { encodeRecordBatch, type CompressionType } from '../../src/wire/record-batch.js';
import { BASE, testApp } from '../support/test-app.js';

const batch = (compression: CompressionType, value: string) =>
  encodeRecordBatch([{ key: null, value: Buffer.from(value), headers: [], timestamp: Date.now() }], {
    partitionLeaderEpoch: -1,
    compression,
  });

async function produce(t: ReturnType<typeof testApp>, topic: string, body: Uint8Array) {
  const res = await t.app.request(`${BASE}/topics/${topic}/partitions/0/records`, {
    method: 'POST',
    headers: { 'content-type': RECORD_BATCH_MEDIA_TYPE },
    body,
  });
  return { status: res.status, body: (await res.json()) as { error_code?: number; message?: string } };
}

const level = async (t: ReturnType<typeof testApp>) => (await t.call('GET', 'features')).body.feature_level;

describe('feature level 2: snappy, lz4 and zstd record batches', () => {
  it('a new cluster starts at the newest level and takes zstd with no raise', async () => {
    const t = testApp();
    expect((await t.call('POST', 'topics', { topic_name: 'fresh', partitions_count: 1 })).status).toBe(201);
    const shown = (await t.call('GET', 'features')).body;
    expect(shown).toMatchObject({ feature_level: SUPPORTED_FEATURE_LEVEL, raised_by: 'new-cluster' });
    expect(SUPPORTED_FEATURE_LEVEL).toBeGreaterThanOrEqual(2);
    for (const codec of ['snappy', 'lz4', 'zstd'] as const)
      expect((await produce(t, 'fresh', batch(codec, codec))).status).toBe(200);
  });

  it('a cluster with data and no level stays at 1: zstd refused until raised, gzip taken; another process sees the raise within its cache age', async () => {
    let now = 1_800_000_000_000;
    const clock = { now: () => now };
    const a = testApp({ clock });
    // Data as v0.1.0 left it: a topic, and no level item.
    await new TopicRegistry(a.storage.metadata, clock, 1).create({
      name: 'legacy',
      partitionCount: 1,
      replicationFactor: 1,
    });
    const b = testApp({ storage: a.storage, clock });

    const refused = await produce(b, 'legacy', batch('zstd', 'too early'));
    expect(refused.status).toBe(400);
    expect(refused.body.error_code).toBe(40002);
    expect(refused.body.message).toContain("Compression zstd needs the cluster's feature level 2 (it is 1)");
    expect(refused.body.message).toContain('kafka-log features upgrade --feature-level 2');
    for (const codec of ['snappy', 'lz4'] as const)
      expect((await produce(a, 'legacy', batch(codec, codec))).status).toBe(400);
    expect((await produce(b, 'legacy', batch('gzip', 'gzip is v0.1.0s'))).status).toBe(200);
    // A topic created now does not make the cluster new: the store holds data.
    expect((await a.call('POST', 'topics', { topic_name: 'later', partitions_count: 1 })).status).toBe(201);
    expect(await level(a)).toBe(1);
    // JSON records stored as compression.type=zstd says are refused the same way.
    await a.call('POST', 'topics', {
      topic_name: 'zstd-topic',
      partitions_count: 1,
      configs: [{ name: 'compression.type', value: 'zstd' }],
    });
    const json = await a.call('POST', 'topics/zstd-topic/records', { value: { type: 'STRING', data: 'x' } });
    expect(json.status).toBe(400);
    expect(json.body.message).toContain("Compression zstd needs the cluster's feature level 2");
    expect((await a.call('GET', 'topics/zstd-topic/partitions/0/records?offset=0')).body.high_watermark).toBe(0);

    // `features upgrade` (its route) in process a: a sees it at once.
    expect((await a.call('POST', 'features:raise', { feature_level: 2 })).status).toBe(200);
    expect((await produce(a, 'legacy', batch('zstd', 'after the raise'))).status).toBe(200);
    // Process b read level 1 at `now`: it keeps it until its cache is FEATURE_LEVEL_MAX_AGE_MS old.
    now += FEATURE_LEVEL_MAX_AGE_MS - 1;
    expect((await produce(b, 'legacy', batch('zstd', 'still cached'))).status).toBe(400);
    now += 1;
    expect((await produce(b, 'legacy', batch('zstd', 'seen'))).status).toBe(200);
    // Only what was taken is in the log, and it reads back (as JSON, which converts each codec).
    const read = (await a.call('GET', 'topics/legacy/partitions/0/records?offset=0')).body;
    expect(read.high_watermark).toBe(3);
    expect(
      read.records.map((r: { value: { data: string } }) => Buffer.from(r.value.data, 'base64').toString()),
    ).toEqual(['gzip is v0.1.0s', 'after the raise', 'seen']);
  });
});
