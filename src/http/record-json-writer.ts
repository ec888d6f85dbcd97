/**
 * A JSON fetch answer written straight into bytes: each record as `showRecordText` (record-text.ts)
 * shows it, byte for byte, but from where the record lies in the fetched batches (no record
 * objects, no text per record, no joined string encoded again). A STRING key or value that is
 * UTF-8 with nothing JSON escapes (the common case) is copied as it is.
 */
import { isAscii, isUtf8 } from 'node:buffer';
import type { FetchedRecordVisitor } from '../log/fetched-records.js';
import type { RecordFields } from '../wire/record-batch.js';
import { isoTimestamps, jsonString, showData, type OutputFormat } from './record-text.js';

/** How header keys are decoded (as the record decoder does: wire/record-batch.ts). */
const headerKeys = new TextDecoder('utf-8');

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

  utf8(s: string): void {
    this.room(s.length * 3);
    this.length += this.buf.write(s, this.length, 'utf8');
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

/** A byte of `bytes` JSON.stringify would escape (a control character, quote, backslash), or not ASCII. */
function special(c: number): boolean {
  return c < 0x20 || c === 0x22 || c === 0x5c || c >= 0x80;
}

/**
 * True when bytes [start, end) are UTF-8 text that JSON.stringify leaves as it is: no control
 * character, quote or backslash (UTF-8 holds no lone surrogate, the one other thing it escapes).
 * ASCII is checked four bytes at a time (`words` is `bytes`' whole buffer as 32-bit words): a
 * word with any byte under 0x20, at or over 0x80, or equal to 0x22 or 0x5c sends the range to
 * the byte by byte check.
 */
function plainText(bytes: Buffer, words: Int32Array, start: number, end: number): boolean {
  const base = bytes.byteOffset;
  let i = start;
  for (; i < end && ((base + i) & 3) !== 0; i++) if (special(bytes[i]!)) return plainBytes(bytes, start, end);
  const wordsEnd = (base + end) >> 2;
  for (let w = (base + i) >> 2; w < wordsEnd; w++) {
    const x = words[w]!;
    const quote = x ^ 0x22222222;
    const backslash = x ^ 0x5c5c5c5c;
    // Per byte: below 0x20, or 0x80 and over, or zero after the xor (Hacker's Delight's "has less than").
    const flags =
      ((x - 0x20202020) & ~x) | x | ((quote - 0x01010101) & ~quote) | ((backslash - 0x01010101) & ~backslash);
    if ((flags & 0x80808080) !== 0) return plainBytes(bytes, start, end);
  }
  for (i = Math.max(i, (wordsEnd << 2) - base); i < end; i++)
    if (special(bytes[i]!)) return plainBytes(bytes, start, end);
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

/**
 * Writes the records a fetch answer shows, comma separated, into `out`, while each fits
 * `limitBytes` (each record counts its bytes, its quotes and backslashes, and a comma:
 * answer-limit.ts's `jsonAnswerBytes`). `stoppedAt` is the offset of the first record left out.
 */
export class RecordJsonWriter implements FetchedRecordVisitor {
  private readonly prefix: string;
  private readonly iso = isoTimestamps();
  private room: number;
  /** The walked bytes (a batch, or its records inflated) as a Buffer and as words, kept while the walk stays in them. */
  private walked: Uint8Array | undefined;
  private bytes: Buffer = Buffer.alloc(0);
  private words: Int32Array = new Int32Array(0);
  shown = 0;
  stoppedAt: number | undefined;

  constructor(
    private readonly out: JsonBytes,
    partition: number,
    private readonly format: OutputFormat,
    limitBytes: number,
  ) {
    this.prefix = `{"partition_id":${partition},"offset":`;
    this.room = limitBytes;
  }

  record(f: RecordFields, offset: number, timestamp: number, headers: readonly number[]): boolean {
    const out = this.out;
    const start = out.length;
    if (f.bytes !== this.walked) {
      const { buffer, byteOffset, byteLength } = f.bytes;
      this.walked = f.bytes;
      this.bytes = Buffer.from(buffer, byteOffset, byteLength);
      this.words = new Int32Array(buffer, 0, buffer.byteLength >> 2);
    }
    const bytes = this.bytes;
    if (this.shown > 0) out.ascii(',');
    out.ascii(this.prefix);
    out.ascii(String(offset));
    out.ascii(',"timestamp":"');
    out.ascii(this.iso(timestamp));
    out.ascii('","key":');
    this.data(bytes, f.keyStart, f.keyLength);
    out.ascii(',"value":');
    this.data(bytes, f.valueStart, f.valueLength);
    out.ascii(',"headers":[');
    for (let h = 0; h < headers.length; h += 4) {
      const keyStart = headers[h]!;
      const keyEnd = keyStart + headers[h + 1]!;
      const key = bytes.subarray(keyStart, keyEnd);
      out.ascii(h === 0 ? '{"name":' : ',{"name":');
      out.utf8(jsonString(isAscii(key) ? bytes.toString('latin1', keyStart, keyEnd) : headerKeys.decode(key)));
      const valueLength = headers[h + 3]!;
      if (valueLength === -1) out.ascii(',"value":null}');
      else {
        out.ascii(',"value":"');
        out.ascii(bytes.toString('base64', headers[h + 2]!, headers[h + 2]! + valueLength));
        out.ascii('"}');
      }
    }
    out.ascii(']}');
    if (this.room !== Infinity) {
      // The comma before a record counts as the one after the previous: the same total.
      const cost = out.length - start + (this.shown > 0 ? 0 : 1) + out.escapesSince(start);
      if (cost > this.room) {
        out.truncate(start);
        this.stoppedAt = offset;
        return false;
      }
      this.room -= cost;
    }
    this.shown++;
    return true;
  }

  private data(bytes: Buffer, start: number, length: number): void {
    const out = this.out;
    if (length === -1) return out.ascii('null');
    const end = start + length;
    if (this.format === 'string') {
      out.ascii('{"type":"STRING","data":');
      if (plainText(bytes, this.words, start, end)) {
        out.ascii('"');
        out.bytes(bytes, start, end);
        out.ascii('"}');
      } else {
        out.utf8(jsonString(bytes.toString('utf8', start, end)));
        out.ascii('}');
      }
    } else if (this.format === 'binary') {
      out.ascii('{"type":"BINARY","data":"');
      out.ascii(bytes.toString('base64', start, end));
      out.ascii('"}');
    } else out.utf8(JSON.stringify(showData(bytes.subarray(start, end), this.format)));
  }
}
