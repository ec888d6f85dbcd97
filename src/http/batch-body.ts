/**
 * A records:batch body read from its bytes, without JSON.parse and the schema's walk of every
 * entry: the fast path of the batch produce. It takes only bodies it can read exactly as
 * JSON.parse and `batchSchema` would (a UTF-8 body; entries of the fields the schema names, each
 * once, with the types it allows) and gives up (undefined) on anything else, which then takes
 * the general path, so every error is the general path's. A JSON string without escapes is left
 * as the bytes it is (a view, record-encoding.ts's `rawText`): a STRING value's bytes go into the
 * record batch uncopied until then.
 */
import { isAscii, isUtf8 } from 'node:buffer';
import { asciiControlFree, controlFree, wordsOf } from './json-bytes.js';
import { rawText, ReadRecord, type ProduceRecordBody } from './record-encoding.js';
import type { DataType } from './record-text.js';

/** An entry as `batchSchema` answers it. */
export type BatchEntry = ProduceRecordBody & { id: string };

/** Gives up on the fast path. */
class NotFast extends Error {}
const notFast = new NotFast();
const giveUp = (): never => {
  throw notFast;
};

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const isSpace = (c: number | undefined) => c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;
/** An integer as JSON writes it and the schema takes it: no sign, fraction or exponent. */
const INTEGER = /^(?:0|[1-9][0-9]*)$/;
/** A JSON number. */
const NUMBER = /^-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?$/;

/** The member names of a batch body. */
const NAMES = [
  'id',
  'value',
  'type',
  'data',
  'key',
  'partition_id',
  'headers',
  'name',
  'timestamp',
  'entries',
  'producer_id',
  'producer_epoch',
  'sequences',
  'transactional_id',
];

/** The bits of the names an entry and its key, value and headers hold (1 << index in NAMES). */
const ID = 1 << 0;
const VALUE = 1 << 1;
const TYPE = 1 << 2;
const DATA = 1 << 3;
const KEY = 1 << 4;
const PARTITION_ID = 1 << 5;
const HEADERS = 1 << 6;
const NAME = 1 << 7;
const TIMESTAMP = 1 << 8;

/** The data types, which every entry names. */
const WORDS = ['STRING', 'BINARY', 'JSON'];

/** The one of `words` that bytes [start, end) spell, if any. */
function known(b: Buffer, start: number, end: number, words: readonly string[]): string | undefined {
  for (const word of words) {
    if (word.length !== end - start) continue;
    let i = 0;
    while (i < word.length && b[start + i] === word.charCodeAt(i)) i++;
    if (i === word.length) return word;
  }
  return undefined;
}

/** True when bytes at `at` spell `word` and a closing quote. */
function spells(b: Buffer, at: number, word: string): boolean {
  const n = word.length;
  if (b[at + n] !== QUOTE) return false;
  for (let i = 0; i < n; i++) if (b[at + i] !== word.charCodeAt(i)) return false;
  return true;
}

/** A compact entry's key or value type as encodeData gives it: STRING, or BINARY for an absent or null one. */
const typeOf = (type: string | null | undefined) => (type === 'STRING' ? 'STRING' : 'BINARY');

/** The first byte at or after `p` that is not whitespace. */
function gap(b: Buffer, p: number): number {
  while (isSpace(b[p])) p++;
  return p;
}

/** The member name `word` after whitespace at `p`, its colon and whitespace: the position after, else -1. */
function memberAt(b: Buffer, p: number, word: string): number {
  p = gap(b, p);
  if (b[p] !== QUOTE || !spells(b, p + 1, word)) return -1;
  p = gap(b, p + word.length + 2);
  return b[p] === 0x3a ? gap(b, p + 1) : -1;
}

/** The length of the member names a compact entry holds, by their bit. */
const NAME_LENGTH: Record<number, number> = { [ID]: 2, [VALUE]: 5, [KEY]: 3, [PARTITION_ID]: 12 };

/** The ids of recent bodies by a hash of their bytes: clients number entries the same from body to body. */
const ID_CACHE_SIZE = 4096;
const idCache: (string | undefined)[] = new Array<string | undefined>(ID_CACHE_SIZE).fill(undefined);

/**
 * Bytes [start, end) as text when they are a few ASCII characters (an entry's id, mostly), else
 * undefined: the string an earlier body spelt the same when there is one (no new string, and its
 * hash already known to the ids' Set), else built in place, cheaper than a native call.
 */
function shortAscii(b: Buffer, start: number, end: number): string | undefined {
  const n = end - start;
  if (n > 16) return undefined;
  let hash = 0;
  for (let i = start; i < end; i++) {
    const c = b[i]!;
    if (c >= 0x80) return undefined;
    hash = (Math.imul(hash, 31) + c) | 0;
  }
  const slot = hash & (ID_CACHE_SIZE - 1);
  const seen = idCache[slot];
  if (seen !== undefined && seen.length === n) {
    let i = 0;
    while (i < n && seen.charCodeAt(i) === b[start + i]) i++;
    if (i === n) return seen;
  }
  let text = '';
  for (let i = start; i < end; i++) text += String.fromCharCode(b[i]!);
  idCache[slot] = text;
  return text;
}

/** Strings up to this long are looked through byte by byte (a native search costs more for them). */
const SHORT = 32;

class Reader {
  pos = 0;
  private readonly words: Int32Array;
  private readonly view: DataView;
  /** The bit of the name `name()` last read in NAMES (1 << its index), 0 for another name. */
  private nameBit = 0;
  /** The next backslash at or after `pos` as last looked up (-1: none left). */
  private backslash = -2;

  constructor(
    private readonly b: Buffer,
    /** The body is ASCII (the cheaper control-byte check holds). */
    private readonly ascii: boolean,
  ) {
    this.words = wordsOf(b);
    this.view = new DataView(b.buffer, b.byteOffset, b.byteLength);
  }

  /** The next byte that is not whitespace. */
  peek(): number | undefined {
    const b = this.b;
    while (isSpace(b[this.pos])) this.pos++;
    return b[this.pos];
  }

  expect(c: number): void {
    if (this.peek() !== c) giveUp();
    this.pos++;
  }

  /** After a member or element: true for a comma (another follows), false for `close`. */
  more(close: number): boolean {
    const c = this.peek();
    this.pos++;
    if (c === 0x2c) return true;
    if (c !== close) giveUp();
    return false;
  }

  /** The closing quote of the string that opens at `at`. */
  private stringEnd(at: number): number {
    const b = this.b;
    let end = b.indexOf(QUOTE, at + 1);
    for (;;) {
      if (end < 0) giveUp();
      let slashes = 0;
      while (b[end - 1 - slashes] === BACKSLASH) slashes++;
      if (slashes % 2 === 0) return end;
      end = b.indexOf(QUOTE, end + 1);
    }
  }

  /**
   * The closing quote of a short string opening at `at` that holds no escape or control byte,
   * else -1 (a long string, or one of those: the general reading).
   */
  private plainEnd(at: number): number {
    const b = this.b;
    const limit = Math.min(at + 1 + SHORT, b.length);
    for (let i = at + 1; i < limit; i++) {
      const c = b[i]!;
      if (c === QUOTE) return i;
      if (c === BACKSLASH || c < 0x20) return -1;
    }
    return -1;
  }

  /** True when the `n` bytes at `at` are those at `from`: four at a time, at any alignment. */
  private sameBytes(at: number, from: number, n: number): boolean {
    if (at + n > this.b.length) return false;
    const view = this.view;
    let i = 0;
    for (; i + 4 <= n; i += 4) if (view.getInt32(at + i) !== view.getInt32(from + i)) return false;
    const b = this.b;
    for (; i < n; i++) if (b[at + i] !== b[from + i]) return false;
    return true;
  }

  /** True when bytes [start, end) hold no raw control byte. */
  private controlFree(start: number, end: number): boolean {
    return this.ascii ? asciiControlFree(this.b, this.words, start, end) : controlFree(this.b, this.words, start, end);
  }

  /** True when the string between the quotes at `start` and `end` holds a backslash (an escape). */
  private escaped(start: number, end: number): boolean {
    if (this.backslash !== -1 && this.backslash < start) this.backslash = this.b.indexOf(BACKSLASH, start);
    return this.backslash !== -1 && this.backslash < end;
  }

  /** Where the string `span` last read opens (its opening quote). */
  private spanStart = 0;
  /** The text of the string `span` last read, when it held an escape (JSON.parse's). */
  private unescaped = '';

  /**
   * The string at the next token, read past: the position of its closing quote, or -1 when it
   * holds an escape (its text is then in `unescaped`). A raw control byte gives up.
   */
  private span(): number {
    if (this.peek() !== QUOTE) giveUp();
    const start = this.pos;
    this.spanStart = start;
    let end = this.plainEnd(start);
    if (end < 0) {
      end = this.stringEnd(start);
      if (this.escaped(start, end)) {
        this.pos = end + 1;
        this.unescaped = this.parsed(start, end + 1) as string;
        return -1;
      }
      if (!this.controlFree(start + 1, end)) giveUp();
    }
    this.pos = end + 1;
    return end;
  }

  /** A string: its bytes as they are when it has no escapes, else its text. */
  string(): Uint8Array | string {
    const end = this.span();
    if (end < 0) return this.unescaped;
    const start = this.spanStart + 1;
    // A plain view, not Buffer#subarray: a thousand a body, and a Buffer costs several times more to make.
    return new Uint8Array(this.b.buffer, this.b.byteOffset + start, end - start);
  }

  /**
   * A string's text: one of WORDS as that constant, else decoded from the body directly, without
   * a view and Buffer between (ids and types are short, and a body holds thousands).
   */
  text(): string {
    const end = this.span();
    if (end < 0) return this.unescaped;
    const start = this.spanStart + 1;
    return known(this.b, start, end, WORDS) ?? shortAscii(this.b, start, end) ?? this.b.toString('utf8', start, end);
  }

  /**
   * A member's name, and the colon after it: one of NAMES, matched in the body (no string made,
   * no search for its end), else its text.
   */
  name(): string {
    if (this.peek() !== QUOTE) giveUp();
    const b = this.b;
    const start = this.pos + 1;
    for (let k = 0; k < NAMES.length; k++) {
      const known = NAMES[k]!;
      const n = known.length;
      if (b[start + n] !== QUOTE) continue;
      let i = 0;
      while (i < n && b[start + i] === known.charCodeAt(i)) i++;
      if (i < n) continue;
      this.pos = start + n + 1;
      this.expect(0x3a);
      this.nameBit = 1 << k;
      return known;
    }
    const name = this.text();
    this.expect(0x3a);
    this.nameBit = 0;
    return name;
  }

  /**
   * The closing quote of the string opening at `at` when it holds no escape and no raw control
   * byte (its bytes are then its text), else -1. `long`: the string is likely longer than SHORT
   * (the same hole of the last entry was), so its end is searched for at once.
   */
  private plainStringEnd(at: number, long = false): number {
    const end = long ? -1 : this.plainEnd(at);
    if (end >= 0) return end;
    const close = this.stringEnd(at);
    return this.escaped(at, close) || !this.controlFree(at + 1, close) ? -1 : close;
  }

  /**
   * The layout of the last entry `compactEntry` read as a ReadRecord, for `sameLayout`: where it
   * lies in the body, and its holes (the id, an integer partition_id, a key's and a value's data)
   * as [field bit, start, end] in body order; its other bytes are literal.
   */
  private layoutStart = -1;
  private layoutEnd = 0;
  private layoutHoles = new Int32Array(12);
  private layoutHoleCount = 0;
  /** The holes of the entry `compactEntry` is reading, made the layout when it is read whole. */
  private nextHoles = new Int32Array(12);
  /** The layout's partition_id, key and value when they are literal (absent or null). */
  private layoutPartition: null | undefined = undefined;
  private layoutKeyType: DataType = 'BINARY';
  private layoutValueType: DataType = 'BINARY';

  /**
   * An entry laid out byte for byte as the last one `compactEntry` read, but for its holes (a
   * client writes a body's entries alike): its literal bytes compared with that entry's, each hole
   * read as `compactEntry` reads it (a short ASCII id, an integer, a string without escapes or
   * raw control bytes; the literal after a hole starts where such a token ends). Equal literals
   * hold the same members, types and nulls, so the entry is read as that one was. Anything else
   * returns false with nothing read.
   */
  sameLayout(entries: (BatchEntry | ReadRecord)[]): boolean {
    const from = this.layoutStart;
    if (from < 0) return false;
    const b = this.b;
    const holes = this.layoutHoles;
    let p = this.pos;
    let literal = from;
    let id: string | undefined;
    let partition: number | null | undefined = this.layoutPartition;
    let keyData: Uint8Array | null = null;
    let valueData: Uint8Array | null = null;
    for (let h = 0; h < this.layoutHoleCount * 3; h += 3) {
      const holeStart = holes[h + 1]!;
      if (!this.sameBytes(p, literal, holeStart - literal)) return false;
      p += holeStart - literal;
      const bit = holes[h]!;
      if (bit === ID) {
        const end = this.plainEnd(p - 1);
        id = end < 0 ? undefined : shortAscii(b, p, end);
        if (id === undefined) return false;
        p = end;
      } else if (bit === PARTITION_ID) {
        const start = p;
        let n = 0;
        for (let c = b[p]; c !== undefined && c >= 0x30 && c <= 0x39; c = b[++p]) n = n * 10 + (c - 0x30);
        if (p === start || p - start > 15 || (b[start] === 0x30 && p - start > 1)) return false;
        partition = n;
      } else {
        const end = this.plainStringEnd(p - 1, holes[h + 2]! - holeStart > SHORT);
        if (end < 0) return false;
        const data = new Uint8Array(b.buffer, b.byteOffset + p, end - p);
        if (bit === VALUE) valueData = data;
        else keyData = data;
        p = end;
      }
      literal = holes[h + 2]!;
    }
    if (!this.sameBytes(p, literal, this.layoutEnd - literal)) return false;
    p += this.layoutEnd - literal;
    this.pos = p;
    entries.push(new ReadRecord(id!, partition, keyData, valueData, this.layoutKeyType, this.layoutValueType));
    return true;
  }

  /**
   * An entry as JSON writers lay it out, read in one loop over a local position (a body holds
   * thousands, and the general reading's calls per token cost more than the token): members id
   * (a short string), partition_id (an integer or null), key and value (null, or a type of WORDS
   * then data, a string), each once, whitespace between tokens. Anything else returns false with
   * nothing read, and the general reading (`entry`) reads the entry from the same place.
   */
  compactEntry(entries: (BatchEntry | ReadRecord)[]): boolean {
    const b = this.b;
    let p = this.pos;
    if (b[p] !== 0x7b) return false;
    let id: string | undefined;
    let partition: number | null | undefined;
    // A key's and a value's type (null: the data is null; undefined: absent) and data.
    let keyType: string | null | undefined;
    let keyData: Uint8Array | null = null;
    let valueType: string | null | undefined;
    let valueData: Uint8Array | null = null;
    let seen = 0;
    const holes = this.nextHoles;
    let holeCount = 0;
    do {
      // p is at the '{' or ',' before a member.
      p = gap(b, p + 1);
      if (b[p] !== QUOTE) return false;
      const name = p + 1;
      const bit = spells(b, name, 'id')
        ? ID
        : spells(b, name, 'value')
          ? VALUE
          : spells(b, name, 'key')
            ? KEY
            : spells(b, name, 'partition_id')
              ? PARTITION_ID
              : 0;
      if (bit === 0 || (seen & bit) !== 0) return false;
      seen |= bit;
      p = gap(b, name + NAME_LENGTH[bit]! + 1);
      if (b[p] !== 0x3a) return false;
      p = gap(b, p + 1);
      if (bit === ID) {
        const end = b[p] === QUOTE ? this.plainEnd(p) : -1;
        id = end < 0 ? undefined : shortAscii(b, p + 1, end);
        if (id === undefined) return false;
        holes[holeCount * 3] = ID;
        holes[holeCount * 3 + 1] = p + 1;
        holes[holeCount++ * 3 + 2] = end;
        p = end + 1;
      } else if (bit === PARTITION_ID) {
        if (b[p] === 0x6e) {
          if (b[p + 1] !== 0x75 || b[p + 2] !== 0x6c || b[p + 3] !== 0x6c) return false;
          partition = null;
          p += 4;
        } else {
          // A non-negative integer of up to 15 digits, without a leading zero: a safe integer.
          const start = p;
          let n = 0;
          for (let c = b[p]; c !== undefined && c >= 0x30 && c <= 0x39; c = b[++p]) n = n * 10 + (c - 0x30);
          if (p === start || p - start > 15 || (b[start] === 0x30 && p - start > 1)) return false;
          partition = n;
          holes[holeCount * 3] = PARTITION_ID;
          holes[holeCount * 3 + 1] = start;
          holes[holeCount++ * 3 + 2] = p;
        }
      } else {
        let type: string | null = null;
        let data: Uint8Array | null = null;
        if (b[p] === 0x6e) {
          if (b[p + 1] !== 0x75 || b[p + 2] !== 0x6c || b[p + 3] !== 0x6c) return false;
          p += 4;
        } else {
          // {"type":"<word>","data":"<string>"}
          p = b[p] === 0x7b ? memberAt(b, p + 1, 'type') : -1;
          if (p < 0) return false;
          const typeEnd = b[p] === QUOTE ? this.plainEnd(p) : -1;
          const word = typeEnd < 0 ? undefined : known(b, p + 1, typeEnd, WORDS);
          if (word === undefined) return false;
          type = word;
          p = gap(b, typeEnd + 1);
          p = b[p] === 0x2c ? memberAt(b, p + 1, 'data') : -1;
          if (p < 0 || b[p] !== QUOTE) return false;
          const end = this.plainStringEnd(p);
          if (end < 0) return false;
          data = new Uint8Array(b.buffer, b.byteOffset + p + 1, end - p - 1);
          holes[holeCount * 3] = bit;
          holes[holeCount * 3 + 1] = p + 1;
          holes[holeCount++ * 3 + 2] = end;
          p = gap(b, end + 1);
          if (b[p] !== 0x7d) return false;
          p++;
        }
        if (bit === VALUE) {
          valueType = type;
          valueData = data;
        } else {
          keyType = type;
          keyData = data;
        }
      }
      p = gap(b, p);
    } while (b[p] === 0x2c);
    if (b[p] !== 0x7d || id === undefined) return false;
    const start = this.pos;
    this.pos = p + 1;
    if ((keyType ?? 'STRING') === 'STRING' && (valueType ?? 'STRING') === 'STRING') {
      const record = new ReadRecord(id, partition, keyData, valueData, typeOf(keyType), typeOf(valueType));
      entries.push(record);
      // The next entries are compared with this one (sameLayout).
      this.nextHoles = this.layoutHoles;
      this.layoutHoles = holes;
      this.layoutHoleCount = holeCount;
      this.layoutStart = start;
      this.layoutEnd = p + 1;
      this.layoutPartition = partition === null ? null : undefined;
      this.layoutKeyType = record.keyType;
      this.layoutValueType = record.valueType;
      return true;
    }
    const e: BatchEntry = { id };
    if (partition !== undefined) e.partition_id = partition;
    if (keyType !== undefined) e.key = keyType === null ? null : { type: keyType, data: keyData };
    if (valueType !== undefined) e.value = valueType === null ? null : { type: valueType, data: valueData };
    entries.push(e);
    return true;
  }

  /** Opens an object: false when it is empty (and closed). */
  open(): boolean {
    this.expect(0x7b);
    if (this.peek() !== 0x7d) return true;
    this.pos++;
    return false;
  }

  /**
   * A member of an entry, its key or value, or a header: its name's bit, one of `allowed` and not
   * in `seen` (a name repeated: JSON.parse keeps the last), else gives up (a name the schema
   * passes through, Schema Registry fields: the general path reads it).
   */
  member(allowed: number, seen: number): number {
    this.name();
    const bit = this.nameBit;
    if ((bit & allowed) === 0 || (bit & seen) !== 0) giveUp();
    return bit;
  }

  /** A null, read, or false. */
  null(): boolean {
    if (this.peek() !== 0x6e) return false;
    this.literal('null');
    return true;
  }

  private literal(word: string): void {
    for (let i = 0; i < word.length; i++) if (this.b[this.pos + i] !== word.charCodeAt(i)) giveUp();
    this.pos += word.length;
  }

  /** A number's text (its grammar checked). */
  number(): string {
    const start = this.pos;
    const b = this.b;
    let c = b[this.pos];
    while (
      c !== undefined &&
      ((c >= 0x30 && c <= 0x39) || c === 0x2d || c === 0x2b || c === 0x2e || c === 0x45 || c === 0x65)
    )
      c = b[++this.pos];
    const text = b.toString('latin1', start, this.pos);
    if (!NUMBER.test(text)) giveUp();
    return text;
  }

  /** A non-negative safe integer. */
  integer(): number {
    const text = this.number();
    const n = Number(text);
    if (!INTEGER.test(text) || !Number.isSafeInteger(n)) giveUp();
    return n;
  }

  /** Any JSON value, by JSON.parse of its text. */
  value(): unknown {
    const c = this.peek();
    const start = this.pos;
    if (c === QUOTE) {
      const s = this.string();
      return s instanceof Uint8Array ? rawText(s) : s;
    }
    if (c === 0x7b || c === 0x5b) {
      let depth = 0;
      for (;;) {
        const d = this.b[this.pos];
        if (d === undefined) giveUp();
        if (d === QUOTE) this.pos = this.stringEnd(this.pos);
        else if (d === 0x7b || d === 0x5b) depth++;
        else if ((d === 0x7d || d === 0x5d) && --depth === 0) break;
        this.pos++;
      }
      this.pos++;
    } else {
      const b = this.b;
      let d = b[this.pos];
      while (d !== undefined && d !== 0x2c && d !== 0x7d && d !== 0x5d && !isSpace(d)) d = b[++this.pos];
    }
    return this.parsed(start, this.pos);
  }

  private parsed(start: number, end: number): unknown {
    try {
      return JSON.parse(this.b.toString('utf8', start, end));
    } catch {
      return giveUp();
    }
  }

  /** The members of an object, each name once (a repeated one gives up: JSON.parse keeps the last). */
  object(member: (name: string) => void): void {
    this.expect(0x7b);
    if (this.peek() === 0x7d) {
      this.pos++;
      return;
    }
    let seenBits = 0; // the NAMES seen, as bits
    let seen: string[] | undefined; // the other names seen
    do {
      const name = this.name();
      const bit = this.nameBit;
      if (bit !== 0) {
        if (seenBits & bit) giveUp();
        seenBits |= bit;
      } else {
        seen ??= [];
        if (seen.includes(name)) giveUp();
        seen.push(name);
      }
      member(name);
    } while (this.more(0x7d));
  }

  /** The elements of an array. */
  array(element: () => void): void {
    this.expect(0x5b);
    if (this.peek() === 0x5d) {
      this.pos++;
      return;
    }
    do element();
    while (this.more(0x5d));
  }

  end(): void {
    if (this.peek() !== undefined) giveUp();
  }
}

type Data = { type?: string; data?: unknown } | null;

function data(r: Reader): Data {
  if (r.null()) return null;
  const d: { type?: string; data?: unknown } = {};
  if (!r.open()) return d;
  let seen = 0;
  do {
    const bit = r.member(TYPE | DATA, seen);
    seen |= bit;
    if (bit === TYPE) d.type = r.text();
    else d.data = r.peek() === QUOTE ? r.string() : r.value();
  } while (r.more(0x7d));
  return d;
}

function headers(r: Reader): { name: string; value?: string | null }[] {
  const list: { name: string; value?: string | null }[] = [];
  r.array(() => {
    let name: string | undefined;
    let value: string | null | undefined;
    let seen = 0;
    if (r.open()) {
      do {
        const bit = r.member(NAME | VALUE, seen);
        seen |= bit;
        if (bit === NAME) name = r.text();
        else value = r.null() ? null : r.text();
      } while (r.more(0x7d));
    }
    if (name === undefined) giveUp();
    list.push(seen & VALUE ? { name: name!, value } : { name: name! });
  });
  return list;
}

/** One entry, its members read in a loop of their own (no closure per entry: a body holds thousands). */
function entry(r: Reader): BatchEntry {
  const e: Partial<BatchEntry> = {};
  let seen = 0;
  if (r.open()) {
    do {
      const bit = r.member(ID | PARTITION_ID | TIMESTAMP | KEY | VALUE | HEADERS, seen);
      seen |= bit;
      switch (bit) {
        case ID:
          if (r.peek() === QUOTE) e.id = r.text();
          else {
            const n = Number(r.number());
            if (!Number.isFinite(n)) giveUp();
            e.id = String(n);
          }
          break;
        case PARTITION_ID:
          e.partition_id = r.null() ? null : r.integer();
          break;
        case TIMESTAMP:
          e.timestamp = r.null() ? null : r.text();
          break;
        case KEY:
          e.key = data(r);
          break;
        case VALUE:
          e.value = data(r);
          break;
        default:
          e.headers = headers(r);
      }
    } while (r.more(0x7d));
  }
  if (e.id === undefined) giveUp();
  return e as BatchEntry;
}

/**
 * The body's entries (an entry of STRING or absent key and value and nothing else as its record,
 * a ReadRecord), and its other members as JSON.parse reads them (for the schema to check), or
 * undefined: read it the general way.
 */
export function readBatchBody(
  body: Buffer,
): { entries: (BatchEntry | ReadRecord)[]; rest: Record<string, unknown> } | undefined {
  if (body.length === 0 || body[0] === 0xef) return undefined; // empty, or a byte order mark
  const ascii = isAscii(body);
  if (!ascii && !isUtf8(body)) return undefined;
  const r = new Reader(body, ascii);
  const entries: (BatchEntry | ReadRecord)[] = [];
  const rest: Record<string, unknown> = {};
  try {
    r.object((name) => {
      if (name === 'entries')
        r.array(() => {
          r.peek(); // past whitespace: Python's json.dumps writes ", " between entries
          if (!r.sameLayout(entries) && !r.compactEntry(entries)) entries.push(entry(r));
        });
      else if (name === '__proto__') giveUp();
      else rest[name] = r.value();
    });
    r.end();
  } catch (e) {
    if (e === notFast) return undefined;
    throw e;
  }
  return entries.length > 0 ? { entries, rest } : undefined;
}
