/**
 * Kafka's compact (flexible-version) encodings written by hand, independent of the codec: a test
 * builds the bytes a message definition says and checks the codec against them.
 */
import { decodeMessage, encodeMessage, Reader, Writer } from '../../../src/kafka/protocol/codec.js';
import type { MessageSpec } from '../../../src/kafka/protocol/schema.js';

export class Bytes {
  private parts: Buffer[] = [];
  uvarint(n: number) {
    const out: number[] = [];
    let v = n;
    while (v >= 0x80) {
      out.push((v & 0x7f) | 0x80);
      v >>>= 7;
    }
    out.push(v);
    this.parts.push(Buffer.from(out));
    return this;
  }
  int8(n: number) {
    const b = Buffer.alloc(1);
    b.writeInt8(n);
    this.parts.push(b);
    return this;
  }
  int16(n: number) {
    const b = Buffer.alloc(2);
    b.writeInt16BE(n);
    this.parts.push(b);
    return this;
  }
  int32(n: number) {
    const b = Buffer.alloc(4);
    b.writeInt32BE(n);
    this.parts.push(b);
    return this;
  }
  int64(n: number) {
    const b = Buffer.alloc(8);
    b.writeBigInt64BE(BigInt(n));
    this.parts.push(b);
    return this;
  }
  bool(v: boolean) {
    return this.int8(v ? 1 : 0);
  }
  /** COMPACT_NULLABLE_STRING / COMPACT_STRING. */
  str(s: string | null) {
    if (s === null) return this.uvarint(0);
    const b = Buffer.from(s, 'utf8');
    this.uvarint(b.byteLength + 1);
    this.parts.push(b);
    return this;
  }
  /** Bytes as they are (a UUID, a record batch). */
  raw(b: Buffer) {
    this.parts.push(b);
    return this;
  }
  /** COMPACT_ARRAY length (null: 0). */
  array(n: number | null) {
    return this.uvarint(n === null ? 0 : n + 1);
  }
  /** An empty tagged-field section. */
  tags() {
    return this.uvarint(0);
  }
  done() {
    return Buffer.concat(this.parts);
  }
}

export const encode = (spec: MessageSpec, version: number, value: Record<string, unknown>) => {
  const w = new Writer();
  encodeMessage(spec, version, value as never, w);
  return w.toBuffer();
};

export const decode = (spec: MessageSpec, version: number, bytes: Buffer) =>
  decodeMessage(spec, version, new Reader(bytes)) as Record<string, any>;
