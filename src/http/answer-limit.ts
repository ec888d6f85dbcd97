/**
 * What a platform lets a function answer. Lambda's bound (6 MB of invocation response) covers the
 * envelope API Gateway reads: a binary body travels in it base64-encoded (4 bytes per 3), a JSON
 * body as a JSON string (each `"` and `\` escaped once more). MAX_RESPONSE_BYTES names the bound;
 * unset (the local server), answers are bounded by max_bytes alone.
 */

/** Room for the status, the headers and the envelope's own fields. */
const ENVELOPE_HEADROOM = 16 * 1024;

export interface AnswerLimit {
  /** Bytes of record batches one answer may carry. */
  binaryBytes: number;
  /** Bytes of JSON text one answer may carry, as {@link jsonAnswerBytes} counts them. */
  jsonBytes: number;
}

export function answerLimit(maxResponseBytes: number | undefined): AnswerLimit {
  if (maxResponseBytes === undefined) return { binaryBytes: Infinity, jsonBytes: Infinity };
  const room = Math.max(maxResponseBytes - ENVELOPE_HEADROOM, 0);
  return { binaryBytes: Math.floor((room * 3) / 4), jsonBytes: room };
}

/**
 * Room for a record-batch fetch's Kafka-Aborted-Transactions header, on every deployment. API
 * Gateway bounds headers at 10,240 bytes (the HTTP API's "total combined size of request line and
 * header values", the REST API's "total combined size of all header values"; AWS lists them as
 * request quotas and names no larger bound for the answer, so the answer keeps to them too), and
 * Node's HTTP client refuses more than 16 KiB of headers. The answer's other headers (its type,
 * four offsets, and those API Gateway adds) take well under 2 KiB.
 */
export const ABORTED_HEADER_BYTES = 8 * 1024;

/** What JSON text costs inside the envelope: its UTF-8 bytes, plus one escape per quote and backslash. */
export function jsonAnswerBytes(text: string): number {
  let escapes = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 34 || c === 92) escapes++;
  }
  return Buffer.byteLength(text) + escapes;
}
