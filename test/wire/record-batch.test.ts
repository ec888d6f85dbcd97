import { gunzipSync } from 'node:zlib';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { KafkaError, isKafkaError } from '../../src/wire/errors.js';
import { crc32c } from '../../src/wire/crc32c.js';
import {
  type DecodedBatch,
  type LogRecord,
  RECORD_BATCH_OVERHEAD,
  decodeRecordBatch,
  decodeRecordBatches,
  encodeRecordBatch,
  readBatchHeader,
  setBaseOffset,
  setPartitionLeaderEpoch,
} from '../../src/wire/record-batch.js';
import {
  type ByteCursor,
  readVarint,
  readVarlong,
  sizeOfVarint,
  sizeOfVarlong,
  writeVarint,
  writeVarlong,
} from '../../src/wire/varint.js';

const utf8 = (s: string): Uint8Array => new TextEncoder().encode(s);
const cursor = (bytes: Uint8Array): ByteCursor => ({ bytes, pos: 0, end: bytes.length });

/** Runs `fn` and returns what it threw (failing if it returned). */
function thrown(fn: () => unknown): unknown {
  try {
    fn();
  } catch (e) {
    return e;
  }
  throw new Error('expected a throw, got a return');
}

function expectCorrupt(fn: () => unknown): void {
  const e = thrown(fn);
  expect(e).toBeInstanceOf(KafkaError);
  expect((e as KafkaError).errorName).toBe('CORRUPT_MESSAGE');
}

/** Rewrites the CRC after a deliberate edit, to get past the checksum into the structure checks. */
function fixCrc(batch: Uint8Array): void {
  new DataView(batch.buffer, batch.byteOffset).setUint32(17, crc32c(batch.subarray(21)));
}

// ---------------------------------------------------------------------------------------------------

describe('varint / varlong', () => {
  const enc = (write: (b: Uint8Array, p: number, v: number) => number, v: number): number[] => {
    const b = new Uint8Array(10);
    return Array.from(b.subarray(0, write(b, 0, v)));
  };

  it('writes the zigzag encodings Kafka writes', () => {
    expect(enc(writeVarint, 0)).toEqual([0x00]);
    expect(enc(writeVarint, -1)).toEqual([0x01]);
    expect(enc(writeVarint, 1)).toEqual([0x02]);
    expect(enc(writeVarint, 63)).toEqual([0x7e]);
    expect(enc(writeVarint, -64)).toEqual([0x7f]);
    expect(enc(writeVarint, 64)).toEqual([0x80, 0x01]);
    expect(enc(writeVarint, 300)).toEqual([0xd8, 0x04]); // zigzag 600 = 0b100_1011000
    expect(enc(writeVarint, 0x7fffffff)).toEqual([0xfe, 0xff, 0xff, 0xff, 0x0f]);
    expect(enc(writeVarint, -0x80000000)).toEqual([0xff, 0xff, 0xff, 0xff, 0x0f]);
    expect(enc(writeVarlong, 0x7fffffff)).toEqual([0xfe, 0xff, 0xff, 0xff, 0x0f]);
    expect(enc(writeVarlong, 2 ** 35)).toEqual([0x80, 0x80, 0x80, 0x80, 0x80, 0x02]); // zigzag 2^36
  });

  it('round-trips varints over the int32 range with matching sizes', () => {
    fc.assert(
      fc.property(fc.integer(), (v) => {
        const b = new Uint8Array(5);
        const end = writeVarint(b, 0, v);
        expect(end).toBe(sizeOfVarint(v));
        const c = cursor(b.subarray(0, end));
        expect(readVarint(c)).toBe(v);
        expect(c.pos).toBe(end);
      }),
    );
  });

  it('round-trips varlongs over the safe integer range with matching sizes', () => {
    const edges = [
      0,
      -1,
      2 ** 30 - 1,
      -(2 ** 30),
      2 ** 30,
      -(2 ** 30) - 1,
      2 ** 52 - 1,
      -(2 ** 52) + 1,
      2 ** 52,
      -(2 ** 52),
    ];
    const values = fc.oneof(
      fc.constantFrom(...edges, Number.MAX_SAFE_INTEGER, Number.MIN_SAFE_INTEGER),
      fc.maxSafeInteger(),
    );
    fc.assert(
      fc.property(values, (v) => {
        const b = new Uint8Array(10);
        const end = writeVarlong(b, 0, v);
        expect(end).toBe(sizeOfVarlong(v));
        const c = cursor(b.subarray(0, end));
        expect(readVarlong(c)).toBe(v);
        expect(c.pos).toBe(end);
      }),
      { numRuns: 500 },
    );
  });

  it('treats truncated, over-long or unrepresentable encodings as corruption', () => {
    expectCorrupt(() => readVarint(cursor(Uint8Array.of(0x80))));
    expectCorrupt(() => readVarint(cursor(Uint8Array.of(0x80, 0x80, 0x80, 0x80, 0x80, 0x01))));
    expectCorrupt(() => readVarlong(cursor(Uint8Array.of(0xff, 0xff, 0xff, 0xff, 0xff))));
    expectCorrupt(() => readVarlong(cursor(new Uint8Array(11).fill(0x80))));
    // Long.MIN_VALUE (zigzag 2^64 - 1): valid Kafka bytes, but not a safe JS integer.
    expectCorrupt(() => readVarlong(cursor(Uint8Array.of(0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01))));
    expect(() => writeVarlong(new Uint8Array(10), 0, 2 ** 53)).toThrow(RangeError);
  });
});

// ---------------------------------------------------------------------------------------------------

describe('encodeRecordBatch: byte-exact against the published RecordBatch v2 layout', () => {
  const t0 = 1_700_000_000_000; // 0x0000_018B_CFE5_6800
  const records: LogRecord[] = [
    { key: utf8('k1'), value: utf8('v1'), headers: [{ key: 'h', value: utf8('x') }], timestamp: t0 },
    { key: null, value: utf8('hi'), headers: [], timestamp: t0 - 1 },
  ];
  const options = { baseOffset: 5, partitionLeaderEpoch: 3, producerId: 7, producerEpoch: 1, baseSequence: 10 };

  // prettier-ignore
  const expected = Uint8Array.of(
    // ---- batch header (61 bytes) ----
    0x00,
    0x00,
    0x00,
    0x00,
    0x00,
    0x00,
    0x00,
    0x05, // baseOffset int64 = 5
    0x00,
    0x00,
    0x00,
    0x49, // batchLength int32 = 73 (85 total - 12)
    0x00,
    0x00,
    0x00,
    0x03, // partitionLeaderEpoch int32 = 3
    0x02, // magic int8 = 2
    0x7f,
    0x22,
    0x54,
    0x5b, // crc uint32: CRC-32C of bytes 21..84, from an independent bitwise CRC
    0x00,
    0x00, // attributes int16 = 0 (no compression, CreateTime)
    0x00,
    0x00,
    0x00,
    0x01, // lastOffsetDelta int32 = 1
    0x00,
    0x00,
    0x01,
    0x8b,
    0xcf,
    0xe5,
    0x68,
    0x00, // baseTimestamp int64 = t0 (first record)
    0x00,
    0x00,
    0x01,
    0x8b,
    0xcf,
    0xe5,
    0x68,
    0x00, // maxTimestamp int64 = t0 (second record is older)
    0x00,
    0x00,
    0x00,
    0x00,
    0x00,
    0x00,
    0x00,
    0x07, // producerId int64 = 7
    0x00,
    0x01, // producerEpoch int16 = 1
    0x00,
    0x00,
    0x00,
    0x0a, // baseSequence int32 = 10
    0x00,
    0x00,
    0x00,
    0x02, // recordCount int32 = 2
    // ---- record 0 (15 bytes) ----
    0x1c, // length varint = 14 (zigzag 28)
    0x00, // attributes int8 = 0
    0x00, // timestampDelta varlong = 0
    0x00, // offsetDelta varint = 0
    0x04,
    0x6b,
    0x31, // keyLength varint = 2, key "k1"
    0x04,
    0x76,
    0x31, // valueLength varint = 2, value "v1"
    0x02, // header count varint = 1
    0x02,
    0x68, //   header keyLength varint = 1, key "h"
    0x02,
    0x78, //   header valueLength varint = 1, value "x"
    // ---- record 1 (9 bytes) ----
    0x10, // length varint = 8 (zigzag 16)
    0x00, // attributes int8 = 0
    0x01, // timestampDelta varlong = -1 (zigzag 1)
    0x02, // offsetDelta varint = 1
    0x01, // keyLength varint = -1: null key
    0x04,
    0x68,
    0x69, // valueLength varint = 2, value "hi"
    0x00, // header count varint = 0
  );

  it('encodes exactly the hand-written bytes', () => {
    const bytes = encodeRecordBatch(records, options);
    expect(Array.from(bytes)).toEqual(Array.from(expected));
    expect(crc32c(expected.subarray(21))).toBe(0x7f22545b);
  });

  it('decodes the hand-written bytes back', () => {
    const batch = decodeRecordBatch(expected);
    expect(batch.sizeInBytes).toBe(85);
    expect(batch.header).toEqual({
      baseOffset: 5,
      batchLength: 73,
      partitionLeaderEpoch: 3,
      magic: 2,
      crc: 0x7f22545b,
      attributes: 0,
      lastOffsetDelta: 1,
      baseTimestamp: t0,
      maxTimestamp: t0,
      producerId: 7,
      producerEpoch: 1,
      baseSequence: 10,
      recordCount: 2,
    });
    expect(readBatchHeader(expected)).toEqual(batch.header);
    expect(batch.records).toEqual([
      { ...records[0], offset: 5 },
      { ...records[1], offset: 6 },
    ]);
  });

  it('returns keys and values as views of the input (no copy)', () => {
    const batch = decodeRecordBatch(expected);
    const key = batch.records[0]!.key!;
    expect(key.buffer).toBe(expected.buffer);
    expect(key.byteOffset).toBe(66); // 61-byte header + length, attributes, timestampDelta, offsetDelta, keyLength
  });

  it('uses the documented defaults and sets the LogAppendTime bit', () => {
    const bytes = encodeRecordBatch([{ key: null, value: null, headers: [], timestamp: 0 }]);
    expect(readBatchHeader(bytes)).toMatchObject({
      baseOffset: 0,
      partitionLeaderEpoch: 0,
      producerId: -1,
      producerEpoch: -1,
      baseSequence: -1,
      attributes: 0,
    });
    expect(bytes.length).toBe(RECORD_BATCH_OVERHEAD + 7); // length + attributes, tsDelta, offsetDelta, -1, -1, 0 headers
    const appendTime = encodeRecordBatch(records, { logAppendTime: true });
    expect(readBatchHeader(appendTime).attributes).toBe(0x08);
    // Kafka reports maxTimestamp as every record's timestamp in a LogAppendTime batch.
    expect(decodeRecordBatch(appendTime).records.map((r) => r.timestamp)).toEqual([t0, t0]);
  });
});

// ---------------------------------------------------------------------------------------------------

const bytesArb = fc.oneof(
  { weight: 6, arbitrary: fc.uint8Array({ maxLength: 40 }) },
  { weight: 1, arbitrary: fc.integer({ min: 1000, max: 300_000 }).map((n) => new Uint8Array(n).fill(n & 0xff)) },
);
const nullable = <T>(a: fc.Arbitrary<T>): fc.Arbitrary<T | null> => fc.option(a, { nil: null, freq: 4 });
const headerArb = fc.record({
  key: fc.string({ unit: 'binary', maxLength: 12 }),
  value: nullable(fc.uint8Array({ maxLength: 20 })),
});
const timestampArb = fc.oneof(
  fc.integer({ min: 1_600_000_000_000, max: 1_600_000_100_000 }), // close together: small deltas either way
  fc.integer({ min: -1, max: 1 }),
  fc.integer({ min: -(2 ** 50), max: 2 ** 50 }), // far apart: multi-byte varlong deltas, negative too
);
const recordArb: fc.Arbitrary<LogRecord> = fc.record({
  key: nullable(bytesArb),
  value: nullable(bytesArb),
  headers: fc.array(headerArb, { maxLength: 4 }),
  timestamp: timestampArb,
});
const optionsArb: fc.Arbitrary<Options> = fc.record({
  baseOffset: fc.oneof(fc.nat({ max: 1000 }), fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER - 2 ** 31 })),
  partitionLeaderEpoch: fc.integer(),
  producerId: fc.oneof(fc.constant(-1), fc.maxSafeNat()),
  producerEpoch: fc.integer({ min: -0x8000, max: 0x7fff }),
  baseSequence: fc.integer(),
  logAppendTime: fc.boolean(),
});

/**
 * Records with bytes as hex strings: deep equality over large typed arrays element by element is far
 * too slow for property runs, while Buffer's hex conversion is native.
 */
const hex = (b: Uint8Array | null): string | null =>
  b === null ? null : Buffer.from(b.buffer, b.byteOffset, b.length).toString('hex');
const normalize = (r: LogRecord & { offset?: number }) => ({
  key: hex(r.key),
  value: hex(r.value),
  headers: r.headers.map((h) => ({ key: h.key, value: hex(h.value) })),
  timestamp: r.timestamp,
  offset: r.offset,
});

/** The records a decode must return for `records` encoded with `logAppendTime` at `baseOffset`. */
function expectedRecords(records: LogRecord[], baseOffset: number, logAppendTime: boolean) {
  const max = Math.max(...records.map((r) => r.timestamp));
  return records.map((r, i) =>
    normalize({ ...r, timestamp: logAppendTime ? max : r.timestamp, offset: baseOffset + i }),
  );
}

interface Options {
  baseOffset: number;
  partitionLeaderEpoch: number;
  producerId: number;
  producerEpoch: number;
  baseSequence: number;
  logAppendTime: boolean;
}

function checkBatch(batch: DecodedBatch, records: LogRecord[], o: Options): void {
  const { header } = batch;
  expect(header).toMatchObject({
    baseOffset: o.baseOffset,
    partitionLeaderEpoch: o.partitionLeaderEpoch,
    magic: 2,
    attributes: o.logAppendTime ? 0x08 : 0,
    lastOffsetDelta: records.length - 1,
    baseTimestamp: records[0]!.timestamp,
    maxTimestamp: Math.max(...records.map((r) => r.timestamp)),
    producerId: o.producerId,
    producerEpoch: o.producerEpoch,
    baseSequence: o.baseSequence,
    recordCount: records.length,
  });
  expect(batch.sizeInBytes).toBe(12 + header.batchLength);
  expect(batch.records.map(normalize)).toEqual(expectedRecords(records, o.baseOffset, o.logAppendTime));
}

describe('record batch round trips (property-based)', () => {
  it('decode(encode(records)) returns the records with their offsets', () => {
    fc.assert(
      fc.property(fc.array(recordArb, { minLength: 1, maxLength: 30 }), optionsArb, (records, o) => {
        const bytes = encodeRecordBatch(records, o);
        const batch = decodeRecordBatch(bytes);
        expect(batch.sizeInBytes).toBe(bytes.length);
        checkBatch(batch, records, o);
      }),
      { numRuns: 300 },
    );
  });

  it('a batch written into memory given by allocate (here full of old bytes) is the same bytes', () => {
    fc.assert(
      fc.property(fc.array(recordArb, { minLength: 1, maxLength: 30 }), optionsArb, (records, o) => {
        let dirty: Uint8Array | undefined;
        const allocate = (n: number) => (dirty = new Uint8Array(n + 3).fill(0xa5)).subarray(3);
        const bytes = encodeRecordBatch(records, { ...o, allocate });
        expect(bytes.buffer).toBe(dirty!.buffer);
        expect(bytes.byteOffset).toBe(3);
        expect(Buffer.from(bytes).equals(encodeRecordBatch(records, o))).toBe(true);
      }),
      { numRuns: 100 },
    );
  });

  it('gzip batches decode to the same records, with codec 1 set and only the records compressed', () => {
    fc.assert(
      fc.property(fc.array(recordArb, { minLength: 1, maxLength: 30 }), optionsArb, (records, o) => {
        const plain = decodeRecordBatch(encodeRecordBatch(records, o));
        const bytes = encodeRecordBatch(records, { ...o, compression: 'gzip' });
        const gzip = decodeRecordBatch(bytes);
        expect(gzip.header.attributes).toBe(plain.header.attributes | 1);
        expect({ ...gzip.header, attributes: 0, crc: 0, batchLength: 0 }).toEqual({
          ...plain.header,
          attributes: 0,
          crc: 0,
          batchLength: 0,
        });
        expect(gzip.records.map(normalize)).toEqual(plain.records.map(normalize));
        expect(gunzipSync(bytes.subarray(61)).byteLength).toBe(plain.sizeInBytes - 61);
      }),
      { numRuns: 100 },
    );
  });

  it('decodes a concatenation of batches, at any position', () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.array(recordArb, { minLength: 1, maxLength: 5 }), optionsArb), {
          minLength: 1,
          maxLength: 5,
        }),
        fc.nat({ max: 9 }),
        (specs, skew) => {
          const encoded = specs.map(([records, o]) => encodeRecordBatch(records, o));
          const total = encoded.reduce((n, b) => n + b.length, 0);
          const backing = new Uint8Array(skew + total);
          let at = skew;
          const positions: number[] = [];
          for (const b of encoded) {
            backing.set(b, at);
            positions.push(at - skew);
            at += b.length;
          }
          const all = backing.subarray(skew); // not at the start of its ArrayBuffer
          const batches = decodeRecordBatches(all);
          expect(batches).toHaveLength(specs.length);
          specs.forEach(([records, o], i) => {
            checkBatch(batches[i]!, records, o);
            const again = decodeRecordBatch(all, positions[i]);
            expect(again.header).toEqual(batches[i]!.header);
            expect(again.records.map(normalize)).toEqual(batches[i]!.records.map(normalize));
            expect(readBatchHeader(all, positions[i])).toEqual(batches[i]!.header);
          });
        },
      ),
      { numRuns: 100 },
    );
  });

  it('setBaseOffset and setPartitionLeaderEpoch patch in place and keep the CRC valid', () => {
    fc.assert(
      fc.property(
        fc.array(recordArb, { minLength: 1, maxLength: 10 }),
        optionsArb,
        fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER - 2 ** 31 }),
        fc.integer(),
        (records, o, newBase, newEpoch) => {
          const first = encodeRecordBatch([{ key: null, value: utf8('x'), headers: [], timestamp: 1 }]);
          const second = encodeRecordBatch(records, o);
          const all = new Uint8Array(first.length + second.length);
          all.set(first);
          all.set(second, first.length);
          const crcCovered = hex(second.subarray(17));
          setBaseOffset(all, first.length, newBase);
          setPartitionLeaderEpoch(all, first.length, newEpoch);
          expect(hex(all.subarray(first.length + 17))).toBe(crcCovered);
          expect(hex(all.subarray(0, first.length))).toBe(hex(first));
          const batch = decodeRecordBatches(all)[1]!;
          checkBatch(batch, records, { ...o, baseOffset: newBase, partitionLeaderEpoch: newEpoch });
        },
      ),
      { numRuns: 100 },
    );
  });

  it('encodes lone surrogates in header keys as U+FFFD, like TextEncoder', () => {
    const bytes = encodeRecordBatch([
      { key: null, value: null, headers: [{ key: 'a\ud800b', value: null }], timestamp: 0 },
    ]);
    expect(decodeRecordBatch(bytes).records[0]!.headers[0]!.key).toBe('a\ufffdb');
  });

  it('keeps a header key that starts with U+FEFF (a byte order mark is a character here)', () => {
    const bytes = encodeRecordBatch([
      {
        key: null,
        value: null,
        headers: [
          { key: '\ufeff', value: null },
          { key: '\ufeffk', value: null },
        ],
        timestamp: 0,
      },
    ]);
    expect(decodeRecordBatch(bytes).records[0]!.headers.map((h) => h.key)).toEqual(['\ufeff', '\ufeffk']);
  });
});

// ---------------------------------------------------------------------------------------------------

describe('corruption is never data', () => {
  const small = encodeRecordBatch(
    [
      {
        key: utf8('key'),
        value: utf8('value'),
        headers: [{ key: 'h1', value: utf8('v') }],
        timestamp: 1_700_000_000_000,
      },
      { key: null, value: utf8('second'), headers: [{ key: 'h2', value: null }], timestamp: 1_700_000_000_042 },
    ],
    { baseOffset: 100, partitionLeaderEpoch: 2, producerId: 9, producerEpoch: 0, baseSequence: 0 },
  );

  it('any change to any single byte from batchLength to the end is CORRUPT_MESSAGE', () => {
    // Bytes 0..7 (baseOffset) and 12..15 (partitionLeaderEpoch) are deliberately outside the CRC.
    for (let pos = 8; pos < small.length; pos++) {
      if (pos >= 12 && pos < 16) continue;
      for (let mask = 1; mask < 256; mask++) {
        const copy = small.slice();
        copy[pos]! ^= mask;
        expectCorrupt(() => decodeRecordBatch(copy));
        expectCorrupt(() => decodeRecordBatches(copy));
      }
    }
  });

  it('every truncation is CORRUPT_MESSAGE', () => {
    for (let n = 0; n < small.length; n++) {
      const prefix = small.slice(0, n);
      expectCorrupt(() => decodeRecordBatch(prefix));
      if (n > 0) expectCorrupt(() => decodeRecordBatches(prefix));
      if (n < RECORD_BATCH_OVERHEAD) expectCorrupt(() => readBatchHeader(prefix));
    }
    const twoBatches = new Uint8Array(small.length * 2);
    twoBatches.set(small);
    twoBatches.set(small, small.length);
    expectCorrupt(() => decodeRecordBatches(twoBatches.subarray(0, small.length + 30)));
    expectCorrupt(() => setBaseOffset(small.slice(0, 40), 0, 1));
  });

  it('a wrong magic, or a codec flag on records that do not inflate, is CORRUPT_MESSAGE even with a valid CRC; codec ids past 4 are UNSUPPORTED_COMPRESSION_TYPE', () => {
    const magic1 = small.slice();
    magic1[16] = 1;
    expectCorrupt(() => readBatchHeader(magic1));
    expectCorrupt(() => setPartitionLeaderEpoch(magic1, 0, 1));
    for (const codec of [1, 2, 3, 4]) {
      const flagged = small.slice();
      flagged[22] = codec; // attributes low byte: the compression codec
      fixCrc(flagged);
      expectCorrupt(() => decodeRecordBatch(flagged));
    }
    for (const codec of [5, 6, 7]) {
      const other = small.slice();
      other[22] = codec;
      fixCrc(other);
      expect(() => decodeRecordBatch(other)).toThrow(
        expect.objectContaining({ errorName: 'UNSUPPORTED_COMPRESSION_TYPE' }),
      );
    }
  });

  it('malformed records behind a valid CRC throw CORRUPT_MESSAGE and nothing else', () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.integer({ min: 23, max: small.length - 1 }), fc.integer({ min: 1, max: 255 })), {
          minLength: 1,
          maxLength: 3,
        }),
        (edits) => {
          const copy = small.slice();
          for (const [pos, mask] of edits) copy[pos]! ^= mask;
          fixCrc(copy);
          try {
            decodeRecordBatch(copy); // some edits (e.g. inside a value) still parse: that is fine
          } catch (e) {
            expect(isKafkaError(e, 'CORRUPT_MESSAGE')).toBe(true);
          }
        },
      ),
      { numRuns: 2000 },
    );
  });
});

describe('encode input checks', () => {
  it('rejects an empty batch and invalid timestamps as INVALID_RECORD', () => {
    expect(
      isKafkaError(
        thrown(() => encodeRecordBatch([])),
        'INVALID_RECORD',
      ),
    ).toBe(true);
    const bad = (timestamp: number) => () => encodeRecordBatch([{ key: null, value: null, headers: [], timestamp }]);
    expect(isKafkaError(thrown(bad(1.5)), 'INVALID_RECORD')).toBe(true);
    expect(isKafkaError(thrown(bad(Number.NaN)), 'INVALID_RECORD')).toBe(true);
  });

  it('rejects out-of-range options with RangeError', () => {
    const one: LogRecord[] = [{ key: null, value: null, headers: [], timestamp: 0 }];
    expect(() => encodeRecordBatch(one, { producerEpoch: 40_000 })).toThrow(RangeError);
    expect(() => encodeRecordBatch(one, { baseOffset: 2 ** 53 })).toThrow(RangeError);
    expect(() => encodeRecordBatch(one, { partitionLeaderEpoch: 2 ** 31 })).toThrow(RangeError);
  });
});
