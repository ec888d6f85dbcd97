/**
 * JSON written and read as bytes, for the record routes' hot paths: a growing answer buffer, and
 * the checks that let text pass as the bytes it is (UTF-8 JSON strings with nothing to escape),
 * four bytes at a time over a buffer's 32-bit words (`wordsOf`).
 */
import { isUtf8 } from 'node:buffer';

/** A growing buffer written in place. */
export class JsonBytes {
  private buf: Buffer<ArrayBuffer>;
  length = 0;

  constructor(capacity: number) {
    this.buf = Buffer.allocUnsafe(Math.max(capacity, 1024));
  }

  private room(n: number): void {
    if (this.length + n <= this.buf.length) return;
    const next = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.length + n));
    this.buf.copy(next, 0, 0, this.length);
    this.buf = next;
  }

  /** Text of one-byte characters (ASCII: JSON punctuation, numbers, base64, escaped JSON). */
  ascii(s: string): void {
    const n = s.length;
    this.room(n);
    if (n > 64) {
      this.length += this.buf.write(s, this.length, 'latin1');
      return;
    }
    const buf = this.buf;
    let at = this.length;
    for (let i = 0; i < n; i++) buf[at++] = s.charCodeAt(i);
    this.length = at;
  }

  /**
   * Writes `s` when JSON.stringify quotes it as it is (printable ASCII, no quote or backslash),
   * else writes nothing and returns false: the check and the copy in one pass.
   */
  plainAscii(s: string): boolean {
    const n = s.length;
    this.room(n);
    const buf = this.buf;
    const at = this.length;
    for (let i = 0; i < n; i++) {
      const c = s.charCodeAt(i);
      if (c < 0x20 || c > 0x7e || c === 0x22 || c === 0x5c) return false;
      buf[at + i] = c;
    }
    this.length = at + n;
    return true;
  }

  utf8(s: string): void {
    this.room(s.length * 3);
    this.length += this.buf.write(s, this.length, 'utf8');
  }

  /**
   * Bytes of JSON text kept as bytes (a record's fixed parts, 2-90 bytes): copied by set(), which
   * for these took less than a loop a byte at a time (a fetch of 1000 records: the writer's CPU
   * 770-838 µs against 1015-1053), and no string whose form (flat, joined, a slice) varies.
   */
  chunk(src: Uint8Array): void {
    const n = src.length;
    this.room(n);
    this.buf.set(src, this.length);
    this.length += n;
  }

  /** A whole number's digits, as String(n) writes them (no string: a fetch writes one per record). */
  int(n: number): void {
    if (!(n >= 0 && n <= 0x7fffffff) || n !== (n | 0)) return this.ascii(String(n));
    let digits = 1;
    for (let x = n; x >= 10; x = (x / 10) | 0) digits++;
    this.room(digits);
    const buf = this.buf;
    let at = this.length + digits;
    this.length = at;
    let x = n;
    do {
      buf[--at] = 0x30 + (x % 10);
      x = (x / 10) | 0;
    } while (x > 0);
  }

  /** Bytes as they are (a short run: set() copies it in place, without a native call's cost). */
  raw(src: Uint8Array): void {
    this.room(src.length);
    this.buf.set(src, this.length);
    this.length += src.length;
  }

  bytes(src: Buffer, start: number, end: number): void {
    this.room(end - start);
    this.length += src.copy(this.buf, this.length, start, end);
  }

  /** Forgets what was written after `length`. */
  truncate(length: number): void {
    this.length = length;
  }

  /** Quotes and backslashes in [start, length): what an envelope that holds the answer as a JSON string escapes. */
  escapesSince(start: number): number {
    const buf = this.buf;
    let n = 0;
    for (let i = start; i < this.length; i++) {
      const c = buf[i];
      if (c === 0x22 || c === 0x5c) n++;
    }
    return n;
  }

  done(): Buffer<ArrayBuffer> {
    return this.buf.subarray(0, this.length);
  }
}

/** `bytes`' whole underlying buffer as 32-bit words (native byte order), for the word-wise checks. */
export const wordsOf = (bytes: Uint8Array): Int32Array => new Int32Array(bytes.buffer, 0, bytes.buffer.byteLength >> 2);

/** A byte of `bytes` JSON.stringify would escape (a control character, quote, backslash), or not ASCII. */
function special(c: number): boolean {
  return c < 0x20 || c === 0x22 || c === 0x5c || c >= 0x80;
}

/**
 * True when bytes [start, end) are UTF-8 text that JSON.stringify leaves as it is: no control
 * character, quote or backslash (UTF-8 holds no lone surrogate, the one other thing it escapes).
 * ASCII is checked four bytes at a time (`words` is `bytes`' whole buffer as 32-bit words), eight
 * words a step, their flags tested once at the end (a fetched value is mostly plain, so checked
 * whole anyway): a word's own top bits flag a byte at or over 0x80, and in a word of ASCII bytes
 * a subtraction sets a byte's top bit only where a byte (the lowest such, whose borrow then runs
 * up) is below what is subtracted: minus 0x20 flags a control byte, and minus 0x01 after an xor
 * with a quote or a backslash in each byte flags that byte. Any flag sends the range to the byte
 * by byte check, which also takes UTF-8 beyond ASCII.
 */
export function plainText(bytes: Buffer, words: Int32Array, start: number, end: number): boolean {
  const base = bytes.byteOffset;
  let i = start;
  for (; i < end && ((base + i) & 3) !== 0; i++) if (special(bytes[i]!)) return plainBytes(bytes, start, end);
  const wordsEnd = (base + end) >> 2;
  let w = (base + i) >> 2;
  let flags = 0;
  for (; w + 8 <= wordsEnd; w += 8) {
    const a = words[w]!;
    const b = words[w + 1]!;
    const c = words[w + 2]!;
    const d = words[w + 3]!;
    const e = words[w + 4]!;
    const f = words[w + 5]!;
    const g = words[w + 6]!;
    const h = words[w + 7]!;
    flags |=
      a |
      (a - 0x20202020) |
      ((a ^ 0x22222222) - 0x01010101) |
      ((a ^ 0x5c5c5c5c) - 0x01010101) |
      b |
      (b - 0x20202020) |
      ((b ^ 0x22222222) - 0x01010101) |
      ((b ^ 0x5c5c5c5c) - 0x01010101) |
      c |
      (c - 0x20202020) |
      ((c ^ 0x22222222) - 0x01010101) |
      ((c ^ 0x5c5c5c5c) - 0x01010101) |
      d |
      (d - 0x20202020) |
      ((d ^ 0x22222222) - 0x01010101) |
      ((d ^ 0x5c5c5c5c) - 0x01010101) |
      e |
      (e - 0x20202020) |
      ((e ^ 0x22222222) - 0x01010101) |
      ((e ^ 0x5c5c5c5c) - 0x01010101) |
      f |
      (f - 0x20202020) |
      ((f ^ 0x22222222) - 0x01010101) |
      ((f ^ 0x5c5c5c5c) - 0x01010101) |
      g |
      (g - 0x20202020) |
      ((g ^ 0x22222222) - 0x01010101) |
      ((g ^ 0x5c5c5c5c) - 0x01010101) |
      h |
      (h - 0x20202020) |
      ((h ^ 0x22222222) - 0x01010101) |
      ((h ^ 0x5c5c5c5c) - 0x01010101);
  }
  for (; w < wordsEnd; w++) {
    const a = words[w]!;
    flags |= a | (a - 0x20202020) | ((a ^ 0x22222222) - 0x01010101) | ((a ^ 0x5c5c5c5c) - 0x01010101);
  }
  if ((flags & 0x80808080) !== 0) return plainBytes(bytes, start, end);
  for (i = Math.max(i, (wordsEnd << 2) - base); i < end; i++)
    if (special(bytes[i]!)) return plainBytes(bytes, start, end);
  return true;
}

/**
 * True when bytes [start, end) are printable ASCII or DEL (0x20-0x7f): with no byte at 0x80 or
 * over (a word's own top bits), a word minus 0x20 in each byte sets a byte's top bit only where a
 * byte is below 0x20, as in {@link asciiControlFree}. Quotes and backslashes are the caller's to
 * find (a native search over the whole walk: record-json-writer.ts), so this is three operations
 * a word where {@link plainText} takes nine.
 */
export function printableAscii(bytes: Uint8Array, words: Int32Array, start: number, end: number): boolean {
  const base = bytes.byteOffset;
  let i = start;
  for (; i < end && ((base + i) & 3) !== 0; i++) if (((bytes[i]! - 0x20) & 0xff) >= 0x60) return false;
  const wordsEnd = (base + end) >> 2;
  let w = (base + i) >> 2;
  let flags = 0;
  for (; w + 8 <= wordsEnd; w += 8) {
    const a = words[w]!;
    const b = words[w + 1]!;
    const c = words[w + 2]!;
    const d = words[w + 3]!;
    const e = words[w + 4]!;
    const f = words[w + 5]!;
    const g = words[w + 6]!;
    const h = words[w + 7]!;
    flags |=
      a |
      (a - 0x20202020) |
      b |
      (b - 0x20202020) |
      c |
      (c - 0x20202020) |
      d |
      (d - 0x20202020) |
      e |
      (e - 0x20202020) |
      f |
      (f - 0x20202020) |
      g |
      (g - 0x20202020) |
      h |
      (h - 0x20202020);
  }
  for (; w < wordsEnd; w++) flags |= words[w]! | (words[w]! - 0x20202020);
  if ((flags & 0x80808080) !== 0) return false;
  for (i = Math.max(i, (wordsEnd << 2) - base); i < end; i++) if (((bytes[i]! - 0x20) & 0xff) >= 0x60) return false;
  return true;
}

function plainBytes(bytes: Buffer, start: number, end: number): boolean {
  let ascii = true;
  for (let i = start; i < end; i++) {
    const c = bytes[i]!;
    if (c < 0x20 || c === 0x22 || c === 0x5c) return false;
    if (c >= 0x80) ascii = false;
  }
  return ascii || isUtf8(bytes.subarray(start, end));
}

/** True when bytes [start, end) hold no control character (below 0x20), which a JSON string may not hold raw. */
export function controlFree(bytes: Uint8Array, words: Int32Array, start: number, end: number): boolean {
  const base = bytes.byteOffset;
  let i = start;
  for (; i < end && ((base + i) & 3) !== 0; i++) if (bytes[i]! < 0x20) return false;
  const wordsEnd = (base + end) >> 2;
  let w = (base + i) >> 2;
  // The flags of four words at a time, tested once at the end: a value is checked whole anyway.
  let flags = 0;
  for (; w + 4 <= wordsEnd; w += 4) {
    const a = words[w]!;
    const b = words[w + 1]!;
    const c = words[w + 2]!;
    const d = words[w + 3]!;
    flags |= ((a - 0x20202020) & ~a) | ((b - 0x20202020) & ~b) | ((c - 0x20202020) & ~c) | ((d - 0x20202020) & ~d);
  }
  for (; w < wordsEnd; w++) flags |= (words[w]! - 0x20202020) & ~words[w]!;
  if ((flags & 0x80808080) !== 0) return false;
  for (i = Math.max(i, (wordsEnd << 2) - base); i < end; i++) if (bytes[i]! < 0x20) return false;
  return true;
}

/**
 * {@link controlFree} of bytes known to be ASCII (isAscii of the body), cheaper: with no byte at
 * 0x80 or over, a word minus 0x20 in each byte sets a byte's top bit only where a byte (the
 * lowest such, whose borrow then runs up) is below 0x20. Eight words a step; a function of its
 * own, as V8 compiles a lone loop of this kind better than one of two behind a flag.
 */
export function asciiControlFree(bytes: Uint8Array, words: Int32Array, start: number, end: number): boolean {
  const base = bytes.byteOffset;
  let i = start;
  for (; i < end && ((base + i) & 3) !== 0; i++) if (bytes[i]! < 0x20) return false;
  const wordsEnd = (base + end) >> 2;
  let w = (base + i) >> 2;
  let flags = 0;
  for (; w + 8 <= wordsEnd; w += 8)
    flags |=
      (words[w]! - 0x20202020) |
      (words[w + 1]! - 0x20202020) |
      (words[w + 2]! - 0x20202020) |
      (words[w + 3]! - 0x20202020) |
      (words[w + 4]! - 0x20202020) |
      (words[w + 5]! - 0x20202020) |
      (words[w + 6]! - 0x20202020) |
      (words[w + 7]! - 0x20202020);
  for (; w < wordsEnd; w++) flags |= words[w]! - 0x20202020;
  if ((flags & 0x80808080) !== 0) return false;
  for (i = Math.max(i, (wordsEnd << 2) - base); i < end; i++) if (bytes[i]! < 0x20) return false;
  return true;
}
