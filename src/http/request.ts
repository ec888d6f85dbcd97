import { isAscii } from 'node:buffer';
import type { IncomingMessage } from 'node:http';
import type { Context, MiddlewareHandler } from 'hono';
import * as z from 'zod';
import { KafkaError } from '../wire/errors.js';
import type { IsolationLevel } from '../log/partition-log.js';
import type { AppEnv } from './app-env.js';
import { incomingOf, requestHeader } from './incoming-header.js';

/**
 * Bounds request bodies: a declared Content-Length over the limit is refused before anything is
 * read; {@link readBody} enforces the same limit on bodies without one. (Hono's bodyLimit would
 * open the web Request's body stream, which starts draining the socket before a handler reads it.)
 */
export function bodySizeLimit(maxBytes: number): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    c.set('maxRequestBytes', maxBytes);
    if (Number(requestHeader(c, 'content-length')) > maxBytes) throw tooLarge(maxBytes);
    await next();
  };
}

const tooLarge = (maxBytes: number) =>
  new KafkaError('PAYLOAD_TOO_LARGE', `The request body exceeds ${maxBytes} bytes`);

/**
 * The request body as one Buffer. On the node server it is read straight from the socket: into a
 * buffer of the declared Content-Length, or chunk by chunk up to the limit. The web Request's body
 * stream would copy every chunk through a ReadableStream and then again. Elsewhere (Lambda, where
 * the body is in the event already) the web Request reads it.
 */
export async function readBody(c: Context<AppEnv>): Promise<Buffer> {
  const maxBytes = c.get('maxRequestBytes') ?? Number.MAX_SAFE_INTEGER;
  const incoming = incomingOf(c.env);
  const body =
    incoming && typeof incoming.on === 'function' && !incoming.readableDidRead
      ? await readIncoming(incoming, Number(requestHeader(c, 'content-length') ?? NaN), maxBytes)
      : Buffer.from(await c.req.arrayBuffer());
  if (body.byteLength > maxBytes) throw tooLarge(maxBytes);
  c.set('bodyBytes', body.byteLength);
  return body;
}

function readIncoming(incoming: IncomingMessage, declared: number, maxBytes: number): Promise<Buffer> {
  const sized = Number.isSafeInteger(declared) && declared >= 0;
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    // Allocated at the first chunk, unless that chunk is the whole body: then it is the body, uncopied
    // (a small request's body arrives in one chunk).
    let body: Buffer | undefined;
    let at = 0;
    const fail = (e: KafkaError) => {
      incoming.removeAllListeners('data');
      reject(e);
    };
    incoming.on('data', (chunk: Buffer) => {
      if (at + chunk.length > (sized ? declared : maxBytes))
        return fail(
          sized
            ? new KafkaError('BAD_REQUEST', 'The request body is longer than its Content-Length')
            : tooLarge(maxBytes),
        );
      if (!sized) chunks.push(chunk);
      else if (at === 0 && chunk.length === declared) body = chunk;
      else {
        body ??= Buffer.allocUnsafe(declared);
        chunk.copy(body, at);
      }
      at += chunk.length;
    });
    incoming.once('end', () => {
      if (!sized) return resolve(Buffer.concat(chunks, at));
      return at === declared
        ? resolve(body ?? Buffer.alloc(0))
        : fail(new KafkaError('BAD_REQUEST', 'The request body is shorter than its Content-Length'));
    });
    // The client went away mid-body: nobody will read the answer, and it is not our failure.
    const gone = () =>
      fail(new KafkaError('BAD_REQUEST', 'The client closed the connection before the body was complete'));
    incoming.once('error', gone);
    incoming.once('close', () => incoming.readableEnded || gone());
  });
}

/** The media type of a Content-Type or Accept value, without its parameters, lower-cased. */
export const mediaType = (header: string | undefined) => header?.split(';')[0]?.trim().toLowerCase();

/**
 * A body sent as something other than JSON is refused with 415, as Confluent's REST Proxy does. A
 * request without a Content-Type is taken as JSON (curl without -H, and API Gateway test calls).
 */
export function requireJsonBody(c: Context<AppEnv>): void {
  const media = mediaType(requestHeader(c, 'content-type'));
  if (media === undefined) return;
  if (media === 'application/json' || media.endsWith('+json')) return;
  throw new KafkaError('UNSUPPORTED_MEDIA_TYPE', `Content-Type ${media} is not supported here; send application/json`);
}

/** A JSON body's bytes (415 for another media type), for a route that reads them itself before parsing. */
export async function readJsonBytes(c: Context<AppEnv>): Promise<Buffer> {
  requireJsonBody(c);
  return readBody(c);
}

function textOf(body: Buffer): string {
  // Plain ASCII (the common case) decodes several times faster as 'ascii' than as UTF-8, with the same result.
  const text = body.toString(isAscii(body) ? 'ascii' : 'utf8');
  return text.charCodeAt(0) === 0xfeff ? text.slice(1) : text; // a UTF-8 byte order mark, as TextDecoder drops it
}

async function bodyText(c: Context<AppEnv>): Promise<string> {
  return textOf(await readJsonBytes(c));
}

/**
 * The JSON values of a body that holds one or more of them back to back (Confluent's streaming
 * produce: records concatenated in one request body, whitespace between them optional).
 */
export async function readJsonValues(c: Context<AppEnv>): Promise<unknown[]> {
  const text = await bodyText(c);
  const values: unknown[] = [];
  let depth = 0;
  let start = -1;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text.charCodeAt(i);
    if (inString) {
      if (ch === 0x5c)
        i++; // backslash: skip the escaped character
      else if (ch === 0x22) inString = false;
      continue;
    }
    if (ch === 0x22) {
      if (depth === 0) throw new KafkaError('BAD_REQUEST', 'The request body is not a JSON object or a stream of them');
      inString = true;
    } else if (ch === 0x7b || ch === 0x5b) {
      if (depth++ === 0) start = i;
    } else if (ch === 0x7d || ch === 0x5d) {
      if (--depth < 0) break;
      if (depth === 0) values.push(parseJson(text.slice(start, i + 1)));
    } else if (depth === 0 && ch > 0x20)
      throw new KafkaError('BAD_REQUEST', 'The request body is not a JSON object or a stream of them');
  }
  if (depth !== 0 || inString) throw new KafkaError('BAD_REQUEST', 'The request body is not valid JSON');
  if (values.length === 0) throw new KafkaError('BAD_REQUEST', 'The request body is empty; a JSON body is required');
  return values;
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    throw new KafkaError('BAD_REQUEST', 'The request body is not valid JSON');
  }
}

/** Parses a JSON body; malformed JSON is the caller's fault (400), never a 500. */
export async function readJson(c: Context<AppEnv>, options: { optional?: boolean } = {}): Promise<unknown> {
  return parseJsonBytes(await readJsonBytes(c), options);
}

/** {@link readJson} of a body already read ({@link readJsonBytes}). */
export function parseJsonBytes(body: Buffer, options: { optional?: boolean } = {}): unknown {
  const text = textOf(body);
  if (text.trim() === '') {
    if (options.optional) return {};
    throw new KafkaError('BAD_REQUEST', 'The request body is empty; a JSON body is required');
  }
  return parseJson(text);
}

export const partitionParam = (raw: string): number => {
  if (!/^\d+$/.test(raw) || !Number.isSafeInteger(Number(raw)))
    throw new KafkaError('BAD_REQUEST', 'partition_id must be a non-negative integer');
  return Number(raw);
};

/** Kafka's isolation levels, as the fetch, list-offsets and offsets query parameters name them. */
export const ISOLATION_LEVELS = ['read_uncommitted', 'read_committed'] as const satisfies readonly IsolationLevel[];

/**
 * An integer query parameter: digits are its number, anything else stays text and fails the
 * schema. The OpenAPI document shows the schema (an integer and its bounds).
 */
export const intQuery = <S extends z.ZodType<number>>(schema: S) =>
  z.preprocess((v) => (typeof v === 'string' && /^\d+$/.test(v) ? Number(v) : v), schema);

/** True for an array schema, optional or with a default: a repeatable query parameter. */
function repeatable(schema: z.ZodType): boolean {
  const def = schema._zod.def as { type: string; innerType?: z.ZodType };
  if (def.type === 'array') return true;
  return def.innerType !== undefined && ['optional', 'default', 'nullable'].includes(def.type)
    ? repeatable(def.innerType)
    : false;
}

/**
 * The request's query parameters, parsed by the route's schema (the one its OpenAPI operation
 * lists): each of the schema's fields, a repeatable one (an array) as every value given. A bad
 * value is BAD_REQUEST (400, error-mapping.ts), naming the parameter.
 */
export function parseQuery<S extends z.ZodObject>(c: Context, schema: S): z.output<S> {
  const raw: Record<string, unknown> = {};
  for (const [key, field] of Object.entries(schema.shape as Record<string, z.ZodType>))
    raw[key] = repeatable(field) ? c.req.queries(key) : c.req.query(key);
  return schema.parse(raw);
}
