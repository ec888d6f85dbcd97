import { describe, expect, it } from 'vitest';
import { JsonBytes } from '../../src/http/json-bytes.js';
import { RecordJsonWriter } from '../../src/http/record-json-writer.js';
import { isoTimestamps, showRecord, showRecordText, type OutputFormat } from '../../src/http/record-text.js';
import { walkFetchedRecords } from '../../src/log/fetched-records.js';
import { encodeRecordBatch, type DecodedRecord } from '../../src/wire/record-batch.js';

const bytes = (s: string) => new Uint8Array(Buffer.from(s, 'utf8'));
const record = (over: Partial<DecodedRecord>): DecodedRecord => ({
  offset: 7,
  timestamp: 1_700_000_000_123,
  key: null,
  value: null,
  headers: [],
  ...over,
});

// The fetch answers' text must be exactly what JSON.stringify made of the answer's objects.
const cases: [string, DecodedRecord][] = [
  ['nulls', record({})],
  ['plain ASCII', record({ key: bytes('alice'), value: bytes('hello world') })],
  ['quotes and backslashes', record({ key: bytes('"k"'), value: bytes('a\\b"c') })],
  ['control characters', record({ value: bytes('line\nnext\ttab\u0000nul\u001f') })],
  ['unicode', record({ key: bytes('clé'), value: bytes('日本語 😀 \u2028 \u2029') })],
  ['JSON text', record({ key: bytes('{"a":[1,2,{"b":null}]}'), value: bytes('"a string"') })],
  ['not UTF-8', record({ key: new Uint8Array([0xff, 0xfe, 0x00]), value: new Uint8Array([0xc3, 0x28, 0x22]) })],
  ['empty', record({ key: new Uint8Array(0), value: new Uint8Array(0) })],
  ['big key and value', record({ key: bytes('k'.repeat(100_000)), value: bytes(`${'v'.repeat(1_000_000)}"`) })],
  [
    'headers',
    record({
      value: bytes('x'),
      headers: [
        { key: 'plain', value: bytes('v') },
        { key: 'nul "quoted" \n é', value: null },
        { key: '', value: new Uint8Array([0, 255]) },
      ],
    }),
  ],
  ['epoch', record({ timestamp: 0 })],
  // Long text with one character to escape at each place within a 4-byte word, and valid UTF-8 in long text.
  ...['\u0001', '"', '\\', '\u007f', 'é'].flatMap((c): [string, DecodedRecord][] =>
    [37, 38, 39, 40].map((at) => [
      `${JSON.stringify(c)} at ${at}`,
      record({ value: bytes(`${'a'.repeat(at)}${c}${'b'.repeat(50)}`) }),
    ]),
  ),
];

describe('a fetched record as JSON text', () => {
  for (const format of ['binary', 'string', 'json'] as OutputFormat[])
    for (const [name, r] of cases)
      it(`is JSON.stringify of the record object (${format}, ${name})`, () => {
        expect(showRecordText(r, 3, format)).toBe(JSON.stringify(showRecord(r, 3, format)));
      });

  it('keeps each timestamp when records do not share one', () => {
    const iso = isoTimestamps();
    const texts = [1, 2, 1].map((ms) => JSON.parse(showRecordText(record({ timestamp: ms }), 0, 'string', iso)));
    expect(texts.map((t) => t.timestamp)).toEqual([
      '1970-01-01T00:00:00.001Z',
      '1970-01-01T00:00:00.002Z',
      '1970-01-01T00:00:00.001Z',
    ]);
  });
});

/** The cases as one fetch answer's batches: one batch each, at offsets 0, 1, ... */
function fetched(records: DecodedRecord[]) {
  const batches = Buffer.concat(
    records.map((r, i) => encodeRecordBatch([{ ...r, key: r.key, value: r.value }], { baseOffset: i })),
  );
  const end = records.length;
  return { batches, recordCount: end, nextOffset: end, highWatermark: end, logStartOffset: 0, lastStableOffset: end };
}

describe('a fetched record list written as bytes', () => {
  const records = cases.map(([, r], i) => ({ ...r, offset: i }));
  for (const format of ['binary', 'string', 'json'] as OutputFormat[])
    it(`is the records' JSON texts, comma separated (${format})`, () => {
      const out = new JsonBytes(16);
      const writer = new RecordJsonWriter(out, 3, format, Infinity);
      expect(walkFetchedRecords(fetched(records), 0, 'read_uncommitted', writer)).toBe(true);
      expect(out.done().toString('utf8')).toBe(records.map((r) => showRecordText(r, 3, format)).join(','));
      expect(writer.shown).toBe(records.length);
    });

  it('finds quotes and backslashes in each batch it walks (compressed batches: records inflated apart)', () => {
    // The first batch's values hold no quote or backslash; the later ones' do, at their start.
    const values = ['plain '.repeat(20), '"quoted" '.repeat(20), '\\slash '.repeat(20), 'plain again '.repeat(20)];
    const records = values.map((v, i) => record({ value: bytes(v), offset: i }));
    const batches = Buffer.concat(
      records.map((r, i) => encodeRecordBatch([r], { baseOffset: i, compression: 'gzip' })),
    );
    const out = new JsonBytes(16);
    const writer = new RecordJsonWriter(out, 0, 'string', Infinity);
    const end = records.length;
    const result = {
      batches,
      recordCount: end,
      nextOffset: end,
      highWatermark: end,
      logStartOffset: 0,
      lastStableOffset: end,
    };
    expect(walkFetchedRecords(result, 0, 'read_uncommitted', writer)).toBe(true);
    expect(out.done().toString('utf8')).toBe(records.map((r) => showRecordText(r, 0, 'string')).join(','));
  });

  it('starts at the offset asked for and stops before the record that does not fit', () => {
    const small = records.slice(0, 4);
    const texts = small.map((r) => showRecordText(r, 0, 'string'));
    // Room for records 1 and 2 (their text, escapes and a comma each), not 3.
    const cost = (t: string) => Buffer.byteLength(t) + (t.match(/["\\]/g)?.length ?? 0) + 1;
    const out = new JsonBytes(16);
    const writer = new RecordJsonWriter(out, 0, 'string', cost(texts[1]!) + cost(texts[2]!) + cost(texts[3]!) - 1);
    expect(walkFetchedRecords(fetched(small), 1, 'read_uncommitted', writer)).toBe(false);
    expect(out.done().toString('utf8')).toBe(`${texts[1]},${texts[2]}`);
    expect(writer.stoppedAt).toBe(3);
  });
});

describe('JSON written as bytes', () => {
  it('writes text and raw bytes as they are, growing past its first capacity', () => {
    const parts = ['0', 'é', 'x'.repeat(2000), '[1,2]', '😀'];
    const out = new JsonBytes(1);
    parts.forEach((p, i) => {
      if (i > 0) out.raw(Buffer.from(','));
      if (Buffer.byteLength(p) === p.length) out.ascii(p);
      else out.utf8(p);
    });
    expect(out.done().toString()).toBe(parts.join(','));
  });
});
