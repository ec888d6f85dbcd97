import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { compareKeys } from '../../src/storage/key-order.js';

const utf8Order = (a: string, b: string) => Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'));
const sign = (n: number) => Math.sign(n);

describe('compareKeys (S3 key order)', () => {
  it('orders as UTF-8 bytes do, unlike JavaScript for characters above U+FFFF', () => {
    expect('\u{1F600}' < '\uFFFD').toBe(true); // UTF-16 order
    expect(compareKeys('\u{1F600}', '\uFFFD')).toBeGreaterThan(0);
    expect(compareKeys('\uFFFD', '\u{1F600}')).toBeLessThan(0);
    expect(compareKeys('a', 'a')).toBe(0);
    expect(compareKeys('a', 'a/b')).toBeLessThan(0);
    expect(['a0', 'a/b', 'a-b', 'a'].sort(compareKeys)).toEqual(['a', 'a-b', 'a/b', 'a0']);
  });

  it('agrees with a byte comparison of the UTF-8 encodings on any well-formed strings', () => {
    // Characters from every range that matters: ASCII, below and above the surrogates, astral.
    const char = fc.oneof(
      fc.constantFrom('a', '/', '-', '\u00e9', '\ud7ff', '\ue000', '\uffff', '\u{10000}', '\u{1F600}', '\u{10FFFF}'),
      fc.string({ unit: 'grapheme', maxLength: 1 }),
    );
    const key = fc.array(char, { maxLength: 6 }).map((cs) => cs.join(''));
    fc.assert(
      fc.property(key, key, (a, b) => sign(compareKeys(a, b)) === sign(utf8Order(a, b))),
      { numRuns: 2000 },
    );
  });
});
