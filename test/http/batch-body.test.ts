import { describe, expect, it } from 'vitest';
import { readBatchBody } from '../../src/http/batch-body.js';
import { entryRecord } from '../../src/http/record-encoding.js';
import { batchSchema } from '../../src/http/record-routes.js';

/** What the general path makes of a body: JSON.parse and the schema, then each entry's record. */
function general(body: Buffer) {
  const parsed = batchSchema.parse(JSON.parse(body.toString('utf8')));
  return { ...parsed, entries: parsed.entries.map(encoded) };
}

/** An entry as it reaches the log (or the error it gets), comparable across both paths. */
function encoded(entry: Parameters<typeof entryRecord>[0] & { id: string }) {
  try {
    const { record, keyType, valueType } = entryRecord(entry, 1_000);
    const hex = (b: Uint8Array | null) => (b === null ? null : Buffer.from(b).toString('hex'));
    return {
      id: entry.id,
      partition: entry.partition_id,
      key: hex(record.key),
      value: hex(record.value),
      headers: record.headers.map((h) => [h.key, hex(h.value)]),
      timestamp: record.timestamp,
      keyType,
      valueType,
    };
  } catch (e) {
    return { id: entry.id, error: (e as Error).message };
  }
}

function fast(body: Buffer) {
  const read = readBatchBody(body);
  if (!read) return undefined;
  return { ...batchSchema.omit({ entries: true }).parse(read.rest), entries: read.entries.map(encoded) };
}

const read: string[] = [
  '{"entries":[{"id":"a","value":{"type":"STRING","data":"hello"}}]}',
  ' \n{ "entries" : [ { "value" : { "data" : "x" , "type" : "STRING" } , "id" : 7 } ,\n\t{"id":"b","key":null,"value":null} ] }\r\n',
  '{"entries":[{"id":"e","value":{"type":"STRING","data":"quote \\" slash \\\\ nl \\n \\u00e9 \\ud83d\\ude00 lone \\ud800"}}]}',
  '{"entries":[{"id":"u","key":{"type":"STRING","data":"clé"},"value":{"type":"STRING","data":"日本語 😀 \u2028"}}]}',
  '{"entries":[{"id":"j","value":{"type":"JSON","data":{"a":[1,2.5e3,{"b":null,"c":"}]"}],"d":true}}},{"id":"k","value":{"data":"text"}},{"id":"l","value":{"type":"json","data":-0.5}}]}',
  '{"entries":[{"id":"bin","key":{"type":"BINARY","data":"AAEC/w=="},"value":{"type":"BINARY","data":"not base64!"}}]}',
  '{"entries":[{"id":"h","headers":[{"name":"a","value":"AQI="},{"name":"n","value":null},{"name":"m"}],"value":{"type":"STRING","data":""}}]}',
  '{"entries":[{"id":"p","partition_id":3,"timestamp":"2024-01-02T03:04:05.678Z","value":{"type":"STRING","data":"v"}},{"id":"q","partition_id":null,"timestamp":null}]}',
  '{"producer_id":5,"producer_epoch":1,"sequences":[{"partition_id":0,"base_sequence":9}],"transactional_id":"t","entries":[{"id":"x","partition_id":0}]}',
  '{"entries":[{"id":"s","value":{"type":"AVRO","data":"x"}},{"id":"t","value":{"type":"STRING","data":5}},{"id":"u","timestamp":"yesterday"}],"ignored":{"x":[1]}}',
  '{"entries":[{"id":1e2},{"id":-0},{"id":12.50}]}',
  '{"entries":[{"id":"STRING","value":{"type":"BINARY","data":"AA=="}},{"id":"JSON","value":{"type":"JSON","data":"JSON"}}],"x":"STRING"}',
  // ids: non-ASCII, escaped, empty, at and past the length read in place
  '{"entries":[{"id":"é"},{"id":"\\u0041"},{"id":""},{"id":"0123456789abcdef"},{"id":"0123456789abcdefg"},{"id":"abcdefghijklmnoé"}]}',
  '{"entries":[{"id":"a","value":{"type":"string","data":"x"},"key":{"data":null,"type":"STRING"}},{"id":"b","key":{}}]}',
  // compact entries (read in one loop), and entries that start so and are not
  '{"entries":[{"id":"c1","partition_id":0,"key":{"type":"STRING","data":"k"},"value":{"type":"BINARY","data":"AAEC"}},{"id":"c2","key":null,"value":null,"partition_id":null},{"id":"c3","value":{"type":"JSON","data":"{\\"a\\":1}"}}]}',
  `{"entries":[{"id":"long","value":{"type":"STRING","data":"${'x'.repeat(40)}"}},{"id":"esc","value":{"type":"STRING","data":"${'x'.repeat(40)}\\n"}}]}`,
  '{"entries":[{"id":"p15","partition_id":123456789012345},{"id":"p16","partition_id":1234567890123456},{"id":"v","value":{"type":"STRING","data":"x"}, "partition_id":2}]}',
  '{"entries":[{"value":{"type":"STRING","data":"x"},"id":"late"},{"id":"t","value":{"data":"x","type":"STRING"}},{"id":"w","value":{"type":"WORD","data":"x"}}]}',
  // as Python's json.dumps and pretty printers lay entries out
  '{"entries": [{"id": "py", "partition_id": 1, "value": {"type": "STRING", "data": "x"}}, {"id": "k", "key": {"type": "BINARY", "data": "AA=="}, "value": null}]}',
  '{\n  "entries": [\n    {\n      "id" : "pretty" ,\n\t"value" : { "type" : "STRING" , "data" : "y" } \r\n    }\n  ]\n}',
  // "Aa" and "BB" share a hash: each id is its own text
  '{"entries":[{"id":"Aa"},{"id":"BB"},{"id":"Aa","partition_id":0}]}',
  // entries laid out as the one before (read by comparing their bytes with it), and ones that differ in a hole or a literal
  `{"entries":[${[
    '{"id":"1","partition_id":0,"key":{"type":"STRING","data":"k"},"value":{"type":"STRING","data":"v"}}',
    `{"id":"22","partition_id":10,"key":{"type":"STRING","data":"${'k'.repeat(40)}"},"value":{"type":"STRING","data":""}}`,
    '{"id":"\\u0041","partition_id":1,"key":{"type":"STRING","data":"k"},"value":{"type":"STRING","data":"v"}}',
    '{"id":"é","partition_id":1,"key":{"type":"STRING","data":"k"},"value":{"type":"STRING","data":"v"}}',
    '{"id":"0123456789abcdefg","partition_id":1,"key":{"type":"STRING","data":"k"},"value":{"type":"STRING","data":"v"}}',
    '{"id":"4","partition_id":null,"key":{"type":"STRING","data":"k"},"value":{"type":"STRING","data":"v"}}',
    '{"id":"5","partition_id":null,"key":{"type":"STRING","data":"k\\n"},"value":{"type":"STRING","data":"v"}}',
    '{"id":"6","partition_id":null,"key":{"type":"STRING","data":"k"},"value":{"type":"BINARY","data":"AA=="}}',
    '{"id":"7","partition_id":null,"key":{"type":"STRING","data":"k"},"value":{"type":"STRING","data":"v"}}',
    '{"id":"8","partition_id":null,"key":{"type":"STRING","data":"k"},"value":null}',
    '{"id":"9","partition_id":null,"key":{"type":"STRING","data":"k"},"value":null}',
    '{"id":"10","partition_id":null,"key":{"type":"STRING","data":"k"},"value":null }',
    '{"id":"11","partition_id":2,"key":{"type":"STRING","data":"日本"},"value":{"type":"STRING","data":"v"}}',
    '{"id":"12","partition_id":3,"key":{"type":"STRING","data":"k"},"value":{"type":"STRING","data":"v"},"timestamp":null}',
    '{"id":"13","partition_id":123456789012345,"key":{"type":"STRING","data":"k"},"value":{"type":"STRING","data":"v"}}',
    '{"id":"14","partition_id":1234567890123456,"key":{"type":"STRING","data":"k"},"value":{"type":"STRING","data":"v"}}',
  ].join(',')}]}`,
  `{"entries":[{"id":"a","value":{"type":"STRING","data":"${'x'.repeat(50)}"}},{"id":"b","value":{"type":"STRING","data":"${'y'.repeat(33)}"}},{"id":"c","value":{"type":"STRING","data":"z"}},{"id":"d","value":{"type":"STRING","data":"${'w'.repeat(40)}\\"q"}}]}`,
];

const refused: string[] = [
  '{"entries":[]}',
  '{}',
  '',
  '   ',
  '\ufeff{"entries":[{"id":"a"}]}',
  '{"entries":[{"id":"a"}]} x',
  '{"entries":[{"id":"a"}],}',
  '{"entries":[{"id":"a",}]}',
  '{"entries":[{"id":"a" "value":null}]}',
  '{"entries":[{"id":"a","value":{"type":"STRING","data":"raw\u0001control"}}]}',
  // a raw control byte in a long value, ASCII (the word-wise check) and not
  `{"entries":[{"id":"a","value":{"type":"STRING","data":"${'x'.repeat(41)}\u001f${'y'.repeat(40)}"}}]}`,
  `{"entries":[{"id":"a","value":{"type":"STRING","data":"é${'x'.repeat(40)}\n${'y'.repeat(40)}"}}]}`,
  '{"entries":[{"id":"a","value":{"type":"STRING","data":"unterminated}]}',
  // a raw control byte, or a partition_id that is no integer, in an entry laid out as the one before
  `{"entries":[{"id":"a","value":{"type":"STRING","data":"${'x'.repeat(40)}"}},{"id":"b","value":{"type":"STRING","data":"${'x'.repeat(40)}\u0001"}}]}`,
  '{"entries":[{"id":"a","value":{"type":"STRING","data":"x"}},{"id":"b","value":{"type":"STRING","data":"\u0001"}}]}',
  '{"entries":[{"id":"a","partition_id":1},{"id":"b","partition_id":-1}]}',
  '{"entries":[{"id":"a","partition_id":1},{"id":"b","partition_id":1.5}]}',
  '{"entries":[{"id":"a","partition_id":1},{"id":"b","partition_id":1e2}]}',
  '{"entries":[{"id":"a","partition_id":1},{"id":"b","partition_id":01}]}',
  '{"entries":[{"id":"a","value":{"type":"STRING","data":"x"}},{"id":"b","value":{"type":"STRING","data":"x}}]}',
  '{"entries":[{"id":"a","value":{"type":"STRING","data":"x"}},{"id":"b","value":{"type":"STRING","data":"x"}}',
  '{"entries":[{"id":"a","id":"b"}]}',
  '{"entries":[{"id":"a"}],"entries":[{"id":"b"}]}',
  '{"x":1,"x":2,"entries":[{"id":"a"}]}',
  '{"entries":[{"id":"a","ids":"b"}]}',
  '{"entries":[{"id":"a","extra":1}]}',
  '{"entries":[{"id":"a","value":{"type":"STRING","data":"x","schema_id":1}}]}',
  '{"entries":[{"id":"a","value":{"type":null,"data":"x"}}]}',
  '{"entries":[{"id":"a","partition_id":-1}]}',
  '{"entries":[{"id":"a","partition_id":1.5}]}',
  '{"entries":[{"id":"a","partition_id":01}]}',
  '{"entries":[{"id":"a","headers":null}]}',
  '{"entries":[{"id":"a","headers":[{"value":"AA=="}]}]}',
  '{"entries":[{"id":"a","headers":[{"name":"x","name":"y"}]}]}',
  '{"entries":[{"id":"a","headers":[{"name":"x","id":"y"}]}]}',
  '{"entries":[{"id":"a","value":{"data":"x","data":"y"}}]}',
  '{"entries":[{"id":"a","value":{"type":"STRING","id":"y"}}]}',
  '{"entries":[{"id":1e999}]}',
  '{"entries":[{"id":true}]}',
  '{"entries":[{"value":null}]}',
  '{"entries":{"id":"a"}}',
  '{"producer_id":tru,"entries":[{"id":"a"}]}',
  '{"__proto__":{"x":1},"entries":[{"id":"a"}]}',
  '[{"entries":[{"id":"a"}]}]',
  '{"entries":[{"id":"a","value":{"type":"STRING","data":"x"},"value":null}]}',
  '{"entries":[{"id":"a","partition_id":1e2}]}',
  '{"entries":[{"id":"a","partition_id":nul}]}',
  '{"entries":[{"id":"a","value":{"type":"STRING","data":"x"}]}',
  '{"entries":[{"id":"a","value":{"type":"STRING","data":"x"}}',
  `{"entries":[{"id":"ctl","value":{"type":"STRING","data":"${'x'.repeat(40)}\t"}}]}`,
];

describe('the batch body read from its bytes', () => {
  for (const text of read)
    it(`reads what JSON.parse and the schema read: ${text.slice(0, 60)}`, () => {
      const body = Buffer.from(text, 'utf8');
      expect(fast(body)).toEqual(general(body));
    });

  for (const text of refused)
    it(`leaves to the general path: ${JSON.stringify(text.slice(0, 60))}`, () => {
      expect(readBatchBody(Buffer.from(text, 'utf8'))).toBeUndefined();
    });

  it('leaves a body that is not UTF-8 to the general path', () => {
    const body = Buffer.concat([
      Buffer.from('{"entries":[{"id":"a","value":{"type":"STRING","data":"'),
      Buffer.from([0xff]),
      Buffer.from('"}}]}'),
    ]);
    expect(readBatchBody(body)).toBeUndefined();
  });

  it('keeps a STRING value without escapes as the bytes of the body', () => {
    const body = Buffer.from('{"entries":[{"id":"a","value":{"type":"STRING","data":"hello"}}]}');
    const { record } = entryRecord(readBatchBody(body)!.entries[0]!, 0);
    expect(record.value!.buffer).toBe(body.buffer);
  });
});

describe('bodies of alike entries, some changed in one byte (seeded)', () => {
  // A small seeded generator: the same bodies every run.
  let seed = 12345;
  const next = (n: number) => {
    seed = (Math.imul(seed, 1103515245) + 12345) & 0x7fffffff;
    return seed % n;
  };
  const pick = <T>(xs: readonly T[]): T => xs[next(xs.length)]!;
  const data = () =>
    pick(['', 'v', 'x'.repeat(40), 'é日', 'a\\"b', 'tab\\t', `${'y'.repeat(33)}\\\\`, 'z'.repeat(next(70))]);
  const id = (i: number) => pick([`${i}`, `id-${i}`, `${'n'.repeat(16)}${i}`, `\\u00${40 + (i % 10)}`, `é${i}`]);
  const layouts = [
    (i: number) => `{"id":"${id(i)}","value":{"type":"STRING","data":"${data()}"}}`,
    (i: number) =>
      `{"id":"${id(i)}","partition_id":${pick(['0', '7', 'null', '12'])},"key":{"type":"STRING","data":"${data()}"},"value":{"type":"STRING","data":"${data()}"}}`,
    (i: number) => `{"id": "${id(i)}", "key": null, "value": {"type": "STRING", "data": "${data()}"}}`,
  ];
  const bytes = [0x22, 0x5c, 0x01, 0x0a, 0x20, 0x30, 0x35, 0x2c, 0x7d, 0x7b, 0x3a, 0x61, 0x6e];

  for (let round = 0; round < 200; round++) {
    const layout = pick(layouts);
    const entries = Array.from({ length: 1 + next(6) }, (_, i) => layout(i));
    const body = Buffer.from(`{"entries":[${entries.join(pick([',', ', ']))}]}`, 'utf8');
    if (round % 2 === 1) body[next(body.length)] = pick(bytes);
    it(`body ${round}: as JSON.parse and the schema read it, or left to them`, () => {
      let expected: ReturnType<typeof general> | undefined;
      try {
        expected = general(body);
      } catch {
        expected = undefined;
      }
      let read: ReturnType<typeof fast> | 'refused';
      try {
        read = fast(body);
      } catch {
        read = 'refused';
      }
      if (expected === undefined) expect(read === undefined || read === 'refused').toBe(true);
      else if (read !== undefined) expect(read).toEqual(expected);
    });
  }
});
