/**
 * A JSON fetch answer written straight into bytes: each record as `showRecordText` (record-text.ts)
 * shows it, byte for byte, but from where the record lies in the fetched batches (no record
 * objects, no text per record, no joined string encoded again). A STRING key or value that is
 * UTF-8 with nothing JSON escapes (the common case) is copied as it is.
 */
import { isAscii } from 'node:buffer';
import type { FetchedRecordVisitor } from '../log/fetched-records.js';
import type { RecordFields } from '../wire/record-batch.js';
import { type JsonBytes, plainText, printableAscii, wordsOf } from './json-bytes.js';
import { isoTimestamps, jsonString, showData, type OutputFormat } from './record-text.js';

/** How header keys are decoded (as the record decoder does: wire/record-batch.ts). */
const headerKeys = new TextDecoder('utf-8', { ignoreBOM: true });

const bytesOf = (s: string): Uint8Array => new Uint8Array(Buffer.from(s, 'latin1'));
const NULL = bytesOf('null');
const VALUE = bytesOf(',"value":');
const NO_HEADERS = bytesOf(',"headers":[]}');
const HEADERS = bytesOf(',"headers":[');
const HEADERS_END = bytesOf(']}');
const STRING = bytesOf('{"type":"STRING","data":');
const STRING_PLAIN = bytesOf('{"type":"STRING","data":"');
const BINARY = bytesOf('{"type":"BINARY","data":"');
const QUOTE_BRACE = bytesOf('"}');
const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/**
 * Writes the records a fetch answer shows, comma separated, into `out`, while each fits
 * `limitBytes` (each record counts its bytes, its quotes and backslashes, and a comma:
 * answer-limit.ts's `jsonAnswerBytes`). `stoppedAt` is the offset of the first record left out.
 * A record's fixed text is written from bytes kept for the answer: its start (with the comma
 * before it or not), and what lies between its offset and its key for the last timestamp seen
 * (a fetch's records mostly share a few).
 */
export class RecordJsonWriter implements FetchedRecordVisitor {
  private readonly first: Uint8Array;
  private readonly next: Uint8Array;
  private readonly iso = isoTimestamps();
  private lastTimestamp = Number.NaN;
  /** `,"timestamp":"…","key":` of lastTimestamp, and the same with a null key and `,"value":` (a keyless record's). */
  private timestampBytes: Uint8Array = NULL;
  private timestampNullKey: Uint8Array = NULL;
  private room: number;
  /** The walked bytes (a batch, or its records inflated) as a Buffer and as words, kept while the walk stays in them. */
  private walked: Uint8Array | undefined;
  private bytes: Buffer = Buffer.alloc(0);
  private words: Int32Array = new Int32Array(0);
  /** The next quote and backslash in `bytes` at or after the last string checked (-1: none left). */
  private quote = -2;
  private backslash = -2;
  shown = 0;
  stoppedAt: number | undefined;

  constructor(
    private readonly out: JsonBytes,
    partition: number,
    private readonly format: OutputFormat,
    limitBytes: number,
  ) {
    this.first = bytesOf(`{"partition_id":${partition},"offset":`);
    this.next = bytesOf(`,{"partition_id":${partition},"offset":`);
    this.room = limitBytes;
  }

  record(f: RecordFields, offset: number, timestamp: number, headers: readonly number[]): boolean {
    const out = this.out;
    const start = out.length;
    if (f.bytes !== this.walked) {
      const { buffer, byteOffset, byteLength } = f.bytes;
      this.walked = f.bytes;
      this.bytes = Buffer.from(buffer, byteOffset, byteLength);
      this.words = wordsOf(f.bytes);
      this.quote = -2;
      this.backslash = -2;
    }
    if (timestamp !== this.lastTimestamp) {
      this.lastTimestamp = timestamp;
      const iso = this.iso(timestamp);
      this.timestampBytes = bytesOf(`,"timestamp":"${iso}","key":`);
      this.timestampNullKey = bytesOf(`,"timestamp":"${iso}","key":null,"value":`);
    }
    const bytes = this.bytes;
    out.chunk(this.shown > 0 ? this.next : this.first);
    out.int(offset);
    if (f.keyLength === -1) out.chunk(this.timestampNullKey);
    else {
      out.chunk(this.timestampBytes);
      this.data(bytes, f.keyStart, f.keyLength);
      out.chunk(VALUE);
    }
    this.data(bytes, f.valueStart, f.valueLength);
    if (headers.length === 0) out.chunk(NO_HEADERS);
    else {
      out.chunk(HEADERS);
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
      out.chunk(HEADERS_END);
    }
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

  /**
   * True when bytes [start, end) of `bytes` are UTF-8 that JSON.stringify leaves as it is
   * (json-bytes.ts, `plainText`). Quotes and backslashes are found by a native search, each kept
   * until the walk passes it (the strings are checked in the order they lie), so each is searched
   * for over the walked bytes about once; the rest is the cheaper printable ASCII check, and text
   * beyond ASCII goes to the whole check.
   */
  private plain(bytes: Buffer, start: number, end: number): boolean {
    if (this.quote !== -1 && this.quote < start) this.quote = bytes.indexOf(QUOTE, start);
    if (this.quote !== -1 && this.quote < end) return false;
    if (this.backslash !== -1 && this.backslash < start) this.backslash = bytes.indexOf(BACKSLASH, start);
    if (this.backslash !== -1 && this.backslash < end) return false;
    return printableAscii(bytes, this.words, start, end) || plainText(bytes, this.words, start, end);
  }

  private data(bytes: Buffer, start: number, length: number): void {
    const out = this.out;
    if (length === -1) return out.chunk(NULL);
    const end = start + length;
    if (this.format === 'string') {
      if (this.plain(bytes, start, end)) {
        out.chunk(STRING_PLAIN);
        out.bytes(bytes, start, end);
        out.chunk(QUOTE_BRACE);
      } else {
        out.chunk(STRING);
        out.utf8(jsonString(bytes.toString('utf8', start, end)));
        out.ascii('}');
      }
    } else if (this.format === 'binary') {
      out.chunk(BINARY);
      out.ascii(bytes.toString('base64', start, end));
      out.chunk(QUOTE_BRACE);
    } else out.utf8(JSON.stringify(showData(bytes.subarray(start, end), this.format)));
  }
}
