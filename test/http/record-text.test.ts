import { describe, expect, it } from 'vitest';
import { isoTimestamps, showRecord, showRecordText, type OutputFormat } from '../../src/http/record-text.js';
import type { DecodedRecord } from '../../src/wire/record-batch.js';

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
