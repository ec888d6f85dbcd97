/**
 * The one encoder and decoder of every message, driven by the definitions (schema.ts): Kafka's
 * primitive types, nullable fields, and in flexible versions compact strings, bytes and arrays
 * (unsigned varint lengths + 1) and tagged fields at the end of every struct.
 *
 * int64 fields are read as JS numbers: offsets, timestamps and producer ids stay far below 2^53.
 */
import { inVersions, type Field, type FieldType, type MessageSpec, type Primitive } from './schema.js';

/** A frame that does not parse: the listener answers it by closing the connection (as Kafka does). */
export class ProtocolError extends Error {
  override name = 'ProtocolError';
}

const ZERO_UUID = Buffer.alloc(16);

export class Reader {
  pos: number;
  constructor(
    readonly buf: Buffer,
    pos = 0,
    readonly end = buf.byteLength,
  ) {
    this.pos = pos;
  }

  get remaining(): number {
    return this.end - this.pos;
  }

  private need(n: number): number {
    const at = this.pos;
    if (n < 0 || at + n > this.end)
      throw new ProtocolError(`Truncated message: needs ${n} bytes at ${at}, ${this.end - at} left`);
    this.pos += n;
    return at;
  }

  int8 = () => this.buf.readInt8(this.need(1));
  int16 = () => this.buf.readInt16BE(this.need(2));
  uint16 = () => this.buf.readUInt16BE(this.need(2));
  int32 = () => this.buf.readInt32BE(this.need(4));
  int64 = () => Number(this.buf.readBigInt64BE(this.need(8)));
  float64 = () => this.buf.readDoubleBE(this.need(8));
  bytesOf = (n: number) => {
    const at = this.need(n);
    return this.buf.subarray(at, at + n);
  };

  uvarint(): number {
    let value = 0;
    for (let shift = 0; shift < 35; shift += 7) {
      const b = this.buf[this.need(1)]!;
      value += (b & 0x7f) * 2 ** shift;
      if ((b & 0x80) === 0) return value;
    }
    throw new ProtocolError('Malformed unsigned varint');
  }
}

export class Writer {
  private buf = Buffer.allocUnsafe(256);
  private at = 0;
  /** Finished chunks; large byte fields are kept as views, not copied. */
  private readonly parts: Buffer[] = [];
  private size = 0;

  private room(n: number): number {
    if (this.at + n > this.buf.byteLength) {
      const next = Buffer.allocUnsafe(Math.max(this.buf.byteLength * 2, this.at + n));
      this.buf.copy(next, 0, 0, this.at);
      this.buf = next;
    }
    const at = this.at;
    this.at += n;
    return at;
  }

  // room() may replace the buffer: take the offset first, then write to the current buffer.
  int8 = (v: number) => {
    const at = this.room(1);
    this.buf.writeInt8(v, at);
  };
  int16 = (v: number) => {
    const at = this.room(2);
    this.buf.writeInt16BE(v, at);
  };
  uint16 = (v: number) => {
    const at = this.room(2);
    this.buf.writeUInt16BE(v, at);
  };
  int32 = (v: number) => {
    const at = this.room(4);
    this.buf.writeInt32BE(v, at);
  };
  int64 = (v: number) => {
    const at = this.room(8);
    this.buf.writeBigInt64BE(BigInt(v), at);
  };
  float64 = (v: number) => {
    const at = this.room(8);
    this.buf.writeDoubleBE(v, at);
  };

  uvarint(v: number): void {
    while (v >= 0x80) {
      const at = this.room(1);
      this.buf[at] = (v % 0x80) | 0x80;
      v = Math.floor(v / 0x80);
    }
    const at = this.room(1);
    this.buf[at] = v;
  }

  raw(bytes: Uint8Array): void {
    if (bytes.byteLength >= 4096) {
      this.flush();
      const b = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
      this.parts.push(b);
      this.size += b.byteLength;
      return;
    }
    const at = this.room(bytes.byteLength);
    this.buf.set(bytes, at);
  }

  private flush(): void {
    if (this.at === 0) return;
    const chunk = this.buf.subarray(0, this.at);
    this.parts.push(chunk);
    this.size += chunk.byteLength;
    this.buf = Buffer.allocUnsafe(256);
    this.at = 0;
  }

  get length(): number {
    return this.size + this.at;
  }

  /** The written bytes as chunks (to write to a socket without joining them). */
  chunks(): Buffer[] {
    this.flush();
    return this.parts;
  }

  toBuffer(): Buffer {
    const chunks = this.chunks();
    return chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks);
  }
}

export function isFlexible(spec: MessageSpec, version: number): boolean {
  return inVersions(spec.flexibleVersions, version);
}

export function supports(spec: MessageSpec, version: number): boolean {
  return inVersions(spec.validVersions, version);
}

// biome-ignore lint/suspicious/noExplicitAny: a field's value is typed by its definition at run time
type Value = any;

/** The value of a field absent from a version: its declared default, else the type's zero. */
export function defaultOf(field: Field, version: number): Value {
  if (field.default !== undefined) return field.default;
  return zeroOf(field.type, version);
}

function zeroOf(type: FieldType, version: number): Value {
  if (typeof type === 'string') {
    switch (type) {
      case 'bool':
        return false;
      case 'string':
        return '';
      case 'bytes':
        return Buffer.alloc(0);
      case 'records':
        return null;
      case 'uuid':
        return ZERO_UUID;
      default:
        return 0;
    }
  }
  if ('array' in type) return [];
  return defaultsOf(type.struct, version);
}

function defaultsOf(fields: Field[], version: number): Record<string, Value> {
  const out: Record<string, Value> = {};
  for (const f of fields) out[f.name] = defaultOf(f, version);
  return out;
}

const isTagged = (f: Field, version: number) =>
  f.tag !== undefined && inVersions(f.taggedVersions ?? f.versions, version);

export function decodeMessage(spec: MessageSpec, version: number, r: Reader): Record<string, Value> {
  return readStruct(spec.fields, version, isFlexible(spec, version), r);
}

export function encodeMessage(spec: MessageSpec, version: number, value: Record<string, Value>, w: Writer): void {
  writeStruct(spec.fields, version, isFlexible(spec, version), value, w);
}

function readStruct(fields: Field[], version: number, flexible: boolean, r: Reader): Record<string, Value> {
  const out: Record<string, Value> = {};
  for (const f of fields) {
    if (!inVersions(f.versions, version) || (flexible && isTagged(f, version))) out[f.name] = defaultOf(f, version);
    else out[f.name] = readField(f, f.type, version, flexible, r);
  }
  if (flexible) {
    const count = r.uvarint();
    for (let i = 0; i < count; i++) {
      const tag = r.uvarint();
      const size = r.uvarint();
      const field = fields.find((x) => x.tag === tag && isTagged(x, version));
      if (!field) {
        r.bytesOf(size); // unknown tags are skipped, as Kafka does
        continue;
      }
      const sub = new Reader(r.buf, r.pos, r.pos + size);
      if (sub.end > r.end) throw new ProtocolError(`Tagged field ${tag} overruns its struct`);
      out[field.name] = readField(field, field.type, version, true, sub);
      r.pos += size;
    }
  }
  return out;
}

function writeStruct(
  fields: Field[],
  version: number,
  flexible: boolean,
  value: Record<string, Value>,
  w: Writer,
): void {
  const tagged: Field[] = [];
  for (const f of fields) {
    if (!inVersions(f.versions, version)) continue;
    if (flexible && isTagged(f, version)) {
      if (!isDefault(f, value[f.name], version)) tagged.push(f);
      continue;
    }
    const v = value[f.name];
    writeField(f, f.type, version, flexible, v === undefined ? defaultOf(f, version) : v, w);
  }
  if (flexible) {
    tagged.sort((a, b) => a.tag! - b.tag!);
    w.uvarint(tagged.length);
    for (const f of tagged) {
      const sub = new Writer();
      writeField(f, f.type, version, true, value[f.name], sub);
      w.uvarint(f.tag!);
      w.uvarint(sub.length);
      for (const c of sub.chunks()) w.raw(c);
    }
  }
}

function isDefault(f: Field, v: Value, version: number): boolean {
  if (v === undefined) return true;
  const d = defaultOf(f, version);
  if (v === null || d === null) return v === d;
  if (Array.isArray(v)) return v.length === 0;
  if (typeof v === 'object' && !(v instanceof Uint8Array)) return JSON.stringify(v) === JSON.stringify(d);
  if (v instanceof Uint8Array) return d instanceof Uint8Array && Buffer.compare(v, d) === 0;
  return v === d;
}

function nullable(f: Field, version: number): boolean {
  return inVersions(f.nullableVersions, version);
}

function length(r: Reader, flexible: boolean, wide: boolean): number {
  if (flexible) return r.uvarint() - 1;
  return wide ? r.int32() : r.int16();
}

function readField(f: Field, type: FieldType, version: number, flexible: boolean, r: Reader): Value {
  if (typeof type === 'string') return readPrimitive(f, type, version, flexible, r);
  if ('struct' in type) {
    if (nullable(f, version) && r.int8() < 0) return null;
    return readStruct(type.struct, version, flexible, r);
  }
  const n = length(r, flexible, true);
  if (n < 0) {
    if (!nullable(f, version)) throw new ProtocolError(`Field ${f.name} is not nullable in version ${version}`);
    return null;
  }
  // Every element takes at least one byte: a count above what is left is garbage, not an allocation.
  if (n > r.remaining) throw new ProtocolError(`Array ${f.name} claims ${n} elements with ${r.remaining} bytes left`);
  const out: Value[] = new Array(n);
  const item = type.array;
  for (let i = 0; i < n; i++)
    out[i] =
      typeof item === 'string'
        ? readPrimitive(f, item, version, flexible, r, false)
        : readStruct(item, version, flexible, r);
  return out;
}

function readPrimitive(
  f: Field,
  type: Primitive,
  version: number,
  flexible: boolean,
  r: Reader,
  mayBeNull = true,
): Value {
  switch (type) {
    case 'int8':
      return r.int8();
    case 'int16':
      return r.int16();
    case 'uint16':
      return r.uint16();
    case 'int32':
      return r.int32();
    case 'int64':
      return r.int64();
    case 'float64':
      return r.float64();
    case 'bool':
      return r.int8() !== 0;
    case 'uuid':
      return r.bytesOf(16);
    case 'string': {
      const n = length(r, flexible, false);
      if (n < 0) {
        if (!mayBeNull || !nullable(f, version))
          throw new ProtocolError(`Field ${f.name} is not nullable in version ${version}`);
        return null;
      }
      return r.bytesOf(n).toString('utf8');
    }
    case 'bytes':
    case 'records': {
      const n = length(r, flexible, true);
      if (n < 0) {
        if (!mayBeNull || !nullable(f, version))
          throw new ProtocolError(`Field ${f.name} is not nullable in version ${version}`);
        return null;
      }
      return r.bytesOf(n);
    }
  }
}

function writeLength(w: Writer, n: number, flexible: boolean, wide: boolean): void {
  if (flexible) w.uvarint(n + 1);
  else if (wide) w.int32(n);
  else w.int16(n);
}

function writeField(f: Field, type: FieldType, version: number, flexible: boolean, v: Value, w: Writer): void {
  if (typeof type === 'string') return writePrimitive(f, type, version, flexible, v, w);
  if ('struct' in type) {
    if (nullable(f, version)) {
      w.int8(v === null ? -1 : 1);
      if (v === null) return;
    }
    return writeStruct(type.struct, version, flexible, v ?? {}, w);
  }
  if (v === null) {
    if (!nullable(f, version)) throw new Error(`Field ${f.name} is not nullable in version ${version}`);
    return writeLength(w, -1, flexible, true);
  }
  const items = v as Value[];
  writeLength(w, items.length, flexible, true);
  const item = type.array;
  for (const x of items) {
    if (typeof item === 'string') writePrimitive(f, item, version, flexible, x, w, false);
    else writeStruct(item, version, flexible, x, w);
  }
}

function writePrimitive(
  f: Field,
  type: Primitive,
  version: number,
  flexible: boolean,
  v: Value,
  w: Writer,
  mayBeNull = true,
): void {
  switch (type) {
    case 'int8':
      return w.int8(v);
    case 'int16':
      return w.int16(v);
    case 'uint16':
      return w.uint16(v);
    case 'int32':
      return w.int32(v);
    case 'int64':
      return w.int64(v);
    case 'float64':
      return w.float64(v);
    case 'bool':
      return w.int8(v ? 1 : 0);
    case 'uuid':
      return w.raw(v ?? ZERO_UUID);
    case 'string':
    case 'bytes':
    case 'records': {
      if (v === null || v === undefined) {
        if (!mayBeNull || !nullable(f, version))
          throw new Error(`Field ${f.name} is not nullable in version ${version}`);
        return writeLength(w, -1, flexible, type !== 'string');
      }
      const bytes = type === 'string' ? Buffer.from(v as string, 'utf8') : (v as Uint8Array);
      writeLength(w, bytes.byteLength, flexible, type !== 'string');
      return w.raw(bytes);
    }
  }
}
