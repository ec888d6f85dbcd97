/**
 * A JSON fetch answer written straight into bytes: each record as `showRecordText` (record-text.ts)
 * shows it, byte for byte, but from where the record lies in the fetched batches (no record
 * objects, no text per record, no joined string encoded again). A STRING key or value that is
 * UTF-8 with nothing JSON escapes (the common case) is copied as it is.
 */
import { isAscii } from 'node:buffer';
import type { FetchedRecordVisitor } from '../log/fetched-records.js';
import type { RecordFields } from '../wire/record-batch.js';
import { type JsonBytes, plainText, wordsOf } from './json-bytes.js';
import { isoTimestamps, jsonString, showData, type OutputFormat } from './record-text.js';

/** How header keys are decoded (as the record decoder does: wire/record-batch.ts). */
const headerKeys = new TextDecoder('utf-8', { ignoreBOM: true });

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
      this.words = wordsOf(f.bytes);
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
