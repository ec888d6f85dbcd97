import { describe, expect, it } from 'vitest';
import {
  asciiControlFree,
  controlFree,
  JsonBytes,
  plainText,
  printableAscii,
  wordsOf,
} from '../../src/http/json-bytes.js';

/** The rule itself, a byte at a time. */
const byByte = (b: Uint8Array, start: number, end: number) => b.subarray(start, end).every((c) => c >= 0x20);

describe('controlFree and asciiControlFree', () => {
  // Every alignment of start and end, a control byte (or none) at every place, and bytes around
  // 0x20 whose borrows would run into the next byte: the word-wise check agrees with the rule.
  const text = 'ab !~\x7f0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ '.repeat(2); // past two steps of eight words
  for (const ascii of [false, true]) {
    it(`agrees with the byte-by-byte rule${ascii ? ' on ASCII bytes (the cheaper check)' : ''}`, () => {
      const base = Buffer.from(ascii ? text : `${text}é日`);
      for (const control of [-1, 0x00, 0x09, 0x0a, 0x1f]) {
        for (let at = 0; at < base.length; at++) {
          const b = Buffer.from(base);
          if (control >= 0) b[at] = control;
          const words = wordsOf(b);
          for (let start = 0; start < 5; start++)
            for (let end = b.length - 5; end <= b.length; end++)
              expect((ascii ? asciiControlFree : controlFree)(b, words, start, end)).toBe(byByte(b, start, end));
        }
      }
    });
  }

  it('reads a view at an offset in its buffer by the buffer’s words', () => {
    const whole = Buffer.from(`xyz${'a'.repeat(40)}\x01${'b'.repeat(40)}`);
    const view = whole.subarray(3);
    const words = wordsOf(view);
    for (const check of [controlFree, asciiControlFree]) {
      expect(check(view, words, 0, 40)).toBe(true);
      expect(check(view, words, 0, 41)).toBe(false);
      expect(check(view, words, 41, view.length)).toBe(true);
    }
  });
});

describe('plainText', () => {
  /** The rule itself: UTF-8 that JSON.stringify quotes as it is. */
  const plain = (b: Buffer, start: number, end: number) => {
    const text = b.subarray(start, end);
    if (!Buffer.from(text.toString('utf8')).equals(text)) return false;
    const s = text.toString('utf8');
    return JSON.stringify(s) === `"${s}"`;
  };
  // Every alignment of start and end, a byte JSON escapes (or one beyond ASCII, or none) at every
  // place of a text past two steps of eight words, and bytes next to each special one (whose
  // borrows would run into the next byte): the word-wise check agrees with the rule.
  const text = 'ab !#[]^_`{|}~\x7f0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ!#$%&()*+,-./:;<=>?@'.repeat(2);
  it('agrees with JSON.stringify on every byte it escapes, at every place and alignment', () => {
    const base = Buffer.from(text, 'latin1');
    for (const special of [-1, 0x00, 0x09, 0x1f, 0x22, 0x5c, 0x80, 0xe9]) {
      for (let at = 0; at < base.length; at += special === -1 ? base.length : 1) {
        const b = Buffer.from(base);
        if (special >= 0) b[at] = special;
        const words = wordsOf(b);
        for (let start = 0; start < 5; start++)
          for (let end = b.length - 5; end <= b.length; end++)
            expect(plainText(b, words, start, end)).toBe(plain(b, start, end));
      }
    }
  });

  it('passes UTF-8 beyond ASCII and refuses bytes that are not UTF-8', () => {
    const utf8 = Buffer.from(`${'x'.repeat(40)}clé 日本 😀${'y'.repeat(40)}`);
    expect(plainText(utf8, wordsOf(utf8), 0, utf8.length)).toBe(true);
    const broken = Buffer.from(utf8);
    broken[broken.indexOf(0xc3)] = 0xff;
    expect(plainText(broken, wordsOf(broken), 0, broken.length)).toBe(false);
  });
});

describe('printableAscii', () => {
  it('is true exactly when every byte is 0x20-0x7f, at every place and alignment', () => {
    const base = Buffer.from('ab !~\x7f0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ '.repeat(2), 'latin1');
    for (const odd of [-1, 0x00, 0x1f, 0x20, 0x7f, 0x80, 0xa0, 0xff]) {
      for (let at = 0; at < base.length; at += odd === -1 ? base.length : 1) {
        const b = Buffer.from(base);
        if (odd >= 0) b[at] = odd;
        const words = wordsOf(b);
        for (let start = 0; start < 5; start++)
          for (let end = b.length - 5; end <= b.length; end++)
            expect(printableAscii(b, words, start, end)).toBe(
              b.subarray(start, end).every((c) => c >= 0x20 && c < 0x80),
            );
      }
    }
  });
});

describe('JsonBytes.plainAscii', () => {
  it('writes a string JSON.stringify quotes as it is, and nothing of any other', () => {
    for (const s of ['', 'id-7', ' !#[]~', 'quo"te', 'back\\slash', 'new\nline', '\x7f', 'clé', '😀']) {
      const out = new JsonBytes(16);
      out.ascii('[');
      const plain = out.plainAscii(s);
      expect(plain).toBe(JSON.stringify(s) === `"${s}"` && /^[\x20-\x7e]*$/.test(s));
      expect(out.done().toString('latin1')).toBe(plain ? `[${s}` : '[');
    }
  });
});

describe('JsonBytes.int', () => {
  it('writes a whole number as String() does, past 32 bits too', () => {
    const numbers = [0, 1, 9, 10, 99, 100, 123456789, 2 ** 31 - 1, 2 ** 31, 2 ** 32 + 5, Number.MAX_SAFE_INTEGER];
    const out = new JsonBytes(4);
    for (const n of numbers) {
      out.int(n);
      out.ascii(',');
    }
    expect(out.done().toString('latin1')).toBe(numbers.map((n) => `${n},`).join(''));
  });
});
