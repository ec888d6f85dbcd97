import { isAscii } from 'node:buffer';
import type { IncomingMessage } from 'node:http';
import type { Context } from 'hono';
import { KafkaError } from '../errors.js';

/**
 * The request body as one Buffer. On the node server a body with a Content-Length (which the
 * bodyLimit middleware has checked) is read straight from the socket into a buffer of that size:
 * the web Request's body stream would copy every chunk through a ReadableStream and then again.
 * Elsewhere (Lambda, chunked bodies) the web Request reads it.
 */
export async function readBody(c: Context): Promise<Buffer> {
  const incoming = (c.env as { incoming?: IncomingMessage } | undefined)?.incoming;
  const length = Number(c.req.header('content-length'));
  if (incoming && typeof incoming.on === 'function' && Number.isSafeInteger(length) && length >= 0 && !incoming.readableDidRead) {
    return readExactly(incoming, length);
  }
  return Buffer.from(await c.req.arrayBuffer());
}

function readExactly(incoming: IncomingMessage, length: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const body = Buffer.allocUnsafe(length);
    let at = 0;
    incoming.on('data', (chunk: Buffer) => {
      // node's parser never delivers more than Content-Length; the check keeps a bug from overrunning.
      if (at + chunk.length > length) return reject(new KafkaError('BAD_REQUEST', 'The request body is longer than its Content-Length'));
      chunk.copy(body, at);
      at += chunk.length;
    });
    incoming.once('end', () => (at === length ? resolve(body) : reject(new KafkaError('BAD_REQUEST', 'The request body is shorter than its Content-Length'))));
    incoming.once('error', reject);
    incoming.once('close', () => at === length || reject(new KafkaError('BAD_REQUEST', 'The client closed the connection before the body was complete')));
  });
}

/** Parses a JSON body; malformed JSON is the caller's fault (400), never a 500. */
export async function readJson(c: Context, options: { optional?: boolean } = {}): Promise<unknown> {
  const body = await readBody(c);
  // Plain ASCII (the common case) decodes several times faster as 'ascii' than as UTF-8, with the same result.
  let text = body.toString(isAscii(body) ? 'ascii' : 'utf8');
  if (text.charCodeAt(0) === 0xfeff) text = text.slice(1); // a UTF-8 byte order mark, as TextDecoder drops it
  if (text.trim() === '' && options.optional) return {};
  if (text.trim() === '') throw new KafkaError('BAD_REQUEST', 'The request body is empty; a JSON body is required');
  try {
    return JSON.parse(text);
  } catch {
    throw new KafkaError('BAD_REQUEST', 'The request body is not valid JSON');
  }
}

const nonNegativeInt = (raw: string | undefined, what: string): number | undefined => {
  if (raw === undefined) return undefined;
  if (!/^\d+$/.test(raw) || !Number.isSafeInteger(Number(raw))) throw new KafkaError('BAD_REQUEST', `${what} must be a non-negative integer`);
  return Number(raw);
};

export const partitionParam = (raw: string): number => nonNegativeInt(raw, 'partition_id')!;
export const queryInt = nonNegativeInt;
