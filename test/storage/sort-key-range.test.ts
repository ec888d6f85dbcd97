import { describe, expect, it } from 'vitest';
import { compareUtf8, sortKeyInterval } from '../../src/storage/sort-key-range.js';

/** A deterministic generator (mulberry32), so a failure names the strings it failed on every run. */
function random(seed: number): () => number {
  let t = seed;
  return () => {
    t = (t + 0x6d2b79f5) | 0;
    let r = Math.imul(t ^ (t >>> 15), 1 | t);
    r = (r + Math.imul(r ^ (r >>> 7), 61 | r)) ^ r;
    return ((r ^ (r >>> 14)) >>> 0) / 4294967296;
  };
}

/** Code points from the ranges where UTF-16 and UTF-8 orders part: ASCII, below and above the surrogates, astral. */
const RANGES = [
  [0x20, 0x7e],
  [0x80, 0x7ff],
  [0xd000, 0xd7ff],
  [0xe000, 0xffff],
  [0x10000, 0x10ffff],
] as const;

describe('compareUtf8', () => {
  it('orders strings as their UTF-8 bytes do, surrogate pairs after U+E000..U+FFFF', () => {
    const next = random(13);
    const word = () => {
      let s = '';
      for (let n = Math.floor(next() * 4); n >= 0; n--) {
        const [lo, hi] = RANGES[Math.floor(next() * RANGES.length)]!;
        s += String.fromCodePoint(lo + Math.floor(next() * (hi - lo + 1)));
      }
      return s;
    };
    const sign = (n: number) => (n < 0 ? -1 : n > 0 ? 1 : 0);
    for (let i = 0; i < 20_000; i++) {
      const a = word();
      // Half the pairs share a prefix, so the difference is often past the first character.
      const b = next() < 0.5 ? a.slice(0, Math.floor(next() * (a.length + 1))) + word() : word();
      const bytes = Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'));
      if (sign(compareUtf8(a, b)) !== bytes) expect({ a, b, got: compareUtf8(a, b) }).toEqual({ a, b, got: bytes });
    }
    expect(compareUtf8('\u{10000}', '\uffff')).toBe(1); // UTF-16 says otherwise: 0xd800 < 0xffff
    expect(compareUtf8('\uffff', '\u{10000}')).toBe(-1);
    expect(compareUtf8('ab', 'abc')).toBe(-1);
    expect(compareUtf8('abc', 'abc')).toBe(0);
  });

  it('folds bounds by that order: an astral prefix end is above a U+FFFF key', () => {
    expect(sortKeyInterval({ gt: '\uffff', lt: '\u{10000}' }).empty).toBe(false);
    expect(sortKeyInterval({ gt: '\u{10000}', lt: '\uffff' }).empty).toBe(true);
  });
});
