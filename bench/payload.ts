/**
 * Request bodies for the benchmark. Every record is a keyless 1 KiB value sent as a STRING of 1024
 * ASCII characters (UTF-8 = 1024 bytes, no base64 inflation), the closest the REST API gets to
 * kafka-producer-perf-test's --record-size 1024. Bodies are built once per batch size and reused,
 * so the load generator spends its CPU on HTTP, not on JSON.
 */
export const RECORD_BYTES = 1024;

/** A fixed pseudo-random ASCII string, so values are not one repeated byte. */
const FILLER = (() => {
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
  let seed = 42;
  let s = '';
  for (let i = 0; i < RECORD_BYTES; i++) {
    seed = (seed * 1103515245 + 12345) & 0x7fffffff;
    s += alphabet[seed % alphabet.length];
  }
  return s;
})();

const entry = (id: number, data: string) => `{"id":"${id}","value":{"type":"STRING","data":"${data}"}}`;

/** A produce body of `batch` records, all 1 KiB. */
export function produceBody(batch: number): Buffer {
  const entries: string[] = [];
  for (let i = 0; i < batch; i++) entries.push(entry(i, FILLER));
  return Buffer.from(`{"entries":[${entries.join(',')}]}`);
}

/**
 * A produce body whose first record carries its send time, for end-to-end latency: the value
 * starts with `T` and the time in microseconds since the epoch (16 digits), then filler to 1 KiB.
 * Only the first entry changes per request, so the rest is built once.
 */
export class StampedBodies {
  private readonly rest: Buffer;

  constructor(readonly batch: number) {
    const entries: string[] = [];
    for (let i = 1; i < batch; i++) entries.push(entry(i, FILLER));
    this.rest = Buffer.from(batch > 1 ? `,${entries.join(',')}]}` : ']}');
  }

  body(stampMicros: number): Buffer {
    const stamp = `T${String(Math.round(stampMicros)).padStart(16, '0')}`;
    const head = Buffer.from(`{"entries":[${entry(0, stamp + FILLER.slice(stamp.length))}`);
    return Buffer.concat([head, this.rest]);
  }
}

const STAMP_MARKER = Buffer.from('"data":"T');

/** Send times (µs) found in a fetch response (format=string), in order. */
export function findStamps(body: Buffer): number[] {
  const out: number[] = [];
  for (let at = body.indexOf(STAMP_MARKER); at >= 0; at = body.indexOf(STAMP_MARKER, at + STAMP_MARKER.length)) {
    const start = at + STAMP_MARKER.length;
    out.push(Number(body.toString('latin1', start, start + 16)));
  }
  return out;
}

/** Reads an integer field of a JSON response without parsing the whole body (the last occurrence). */
export function lastIntField(body: Buffer, name: string): number | undefined {
  const key = `"${name}":`;
  const at = body.lastIndexOf(key);
  if (at < 0) return undefined;
  let end = at + key.length;
  while (end < body.length && ((body[end]! >= 0x30 && body[end]! <= 0x39) || body[end] === 0x2d)) end++;
  const n = Number(body.toString('latin1', at + key.length, end));
  return Number.isFinite(n) ? n : undefined;
}
