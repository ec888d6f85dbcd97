/**
 * Record batches as real Kafka clients compress them (fixtures/, written once by
 * fixtures/generate.ts from Debian's kcat, i.e. librdkafka, and kafka-python): each decodes to the
 * records sent, whatever framing its client uses. What the fixtures hold, by client:
 * - librdkafka: snappy as one raw block; lz4 frames of independent blocks without a content size;
 *   zstd frames without a content size (its streaming compressor).
 * - kafka-python, as the Java client: snappy in the xerial framing; lz4 frames of linked blocks
 *   with a content size; zstd frames with one.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { isXerialFramed } from '../../../src/wire/compression/snappy.js';
import { CODEC, decodeRecordBatches, RECORD_BATCH_OVERHEAD } from '../../../src/wire/record-batch.js';
import { FIXTURE_RECORDS } from './fixtures/records.js';

const fixture = (name: string) => readFileSync(join(import.meta.dirname, 'fixtures', `${name}.bin`));
const CLIENTS = ['librdkafka', 'kafka-python'] as const;
const CODECS = ['gzip', 'snappy', 'lz4', 'zstd'] as const;

describe.each(CLIENTS)('%s batches', (client) => {
  it.each(CODECS)('%s: one compressed batch that decodes to the records sent', (codec) => {
    const bytes = fixture(`${client}-${codec}`);
    const batches = decodeRecordBatches(bytes);
    expect(batches.map((b) => b.header.attributes & 0x07)).toEqual([CODEC[codec]]);
    // Compressed for real: the batch is far smaller than its records.
    expect(bytes.byteLength).toBeLessThan(FIXTURE_RECORDS.reduce((n, r) => n + r.value.length, 0) / 4);
    expect(
      batches[0]!.records.map((r) => ({
        key: Buffer.from(r.key!).toString(),
        value: Buffer.from(r.value!).toString(),
      })),
    ).toEqual(FIXTURE_RECORDS);
  });
});

const records = (name: string) => fixture(name).subarray(RECORD_BATCH_OVERHEAD);

describe('the framings the fixtures hold', () => {
  it('snappy: a raw block from librdkafka, the xerial framing from the Java-style client', () => {
    expect(isXerialFramed(records('librdkafka-snappy'))).toBe(false);
    expect(isXerialFramed(records('kafka-python-snappy'))).toBe(true);
  });

  it('lz4: independent blocks from librdkafka, linked blocks with a content size from kafka-python', () => {
    const flags = (name: string) => records(name).readUInt32LE(0) === 0x184d2204 && records(name)[4]!;
    expect(flags('librdkafka-lz4')).toBe(0x60);
    expect(flags('kafka-python-lz4')).toBe(0x68);
  });

  it('zstd: a frame without a content size from librdkafka, with one from kafka-python', () => {
    const descriptor = (name: string) => records(name).readUInt32LE(0) === 0xfd2fb528 && records(name)[4]! >> 6;
    expect(descriptor('librdkafka-zstd')).toBe(0);
    expect(descriptor('kafka-python-zstd')).toBeGreaterThan(0);
  });
});
