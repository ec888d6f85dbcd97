/**
 * A request header read from node's raw header list, as the web `Headers.get` answers it: the
 * name matched without regard to case, repeated fields joined with ", ", the value without
 * surrounding whitespace. On the node server a request's `headers` is built on first use as a
 * web Headers object from that list (a few µs per request, more than the rest of the routing);
 * the few fields the request path reads are taken from the list instead. Elsewhere (Lambda, tests
 * through `app.request`) the request carries a Headers object already: `requestHeader` reads it.
 */
import type { IncomingMessage } from 'node:http';
import type { Context } from 'hono';

/** `name` in lower case. */
export function incomingHeader(rawHeaders: readonly string[], name: string): string | undefined {
  let value: string | undefined;
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const key = rawHeaders[i]!;
    if (key.length !== name.length || key.toLowerCase() !== name) continue;
    const v = trimHttpWhitespace(rawHeaders[i + 1] ?? '');
    value = value === undefined ? v : `${value}, ${v}`;
  }
  return value;
}

/** The node request behind a Hono context's request, when there is one (the node server's bindings). */
export const incomingOf = (env: unknown): IncomingMessage | undefined => {
  const incoming = (env as { incoming?: IncomingMessage } | undefined)?.incoming;
  return incoming && Array.isArray(incoming.rawHeaders) ? incoming : undefined;
};

/** A request header (`name` in lower case): from node's raw headers on the node server, else the request's Headers. */
export function requestHeader(c: Context, name: string): string | undefined {
  const incoming = incomingOf(c.env);
  return incoming ? incomingHeader(incoming.rawHeaders, name) : c.req.header(name);
}

const ws = (c: number) => c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d;

/** Headers' normalisation: leading and trailing tabs, spaces, CRs and LFs go (not other whitespace). */
function trimHttpWhitespace(v: string): string {
  if (v.length === 0 || (!ws(v.charCodeAt(0)) && !ws(v.charCodeAt(v.length - 1)))) return v;
  let start = 0;
  let end = v.length;
  while (start < end && ws(v.charCodeAt(start))) start++;
  while (end > start && ws(v.charCodeAt(end - 1))) end--;
  return v.slice(start, end);
}
