/**
 * Request and response headers. Request header v1 (api key, version, correlation id, client id)
 * is used by non-flexible request versions, v2 (v1 + tagged fields) by flexible ones; responses
 * have v0 (correlation id) or v1 (+ tagged fields). ApiVersions answers always use header v0, so a
 * client that does not know the broker's versions yet can read the answer.
 */
import { isFlexible, ProtocolError, type Reader, type Writer } from './codec.js';
import type { ApiSpec } from './schema.js';

export const API_VERSIONS_KEY = 18;

export interface RequestHeader {
  apiKey: number;
  apiVersion: number;
  correlationId: number;
  clientId: string | null;
}

/** Reads the fixed part of a request header (key, version, correlation id, client id). */
export function readRequestHeader(r: Reader): RequestHeader {
  const apiKey = r.int16();
  const apiVersion = r.int16();
  const correlationId = r.int32();
  // The client id is a non-compact nullable string even in header v2.
  const n = r.int16();
  if (n < -1) throw new ProtocolError(`Bad client id length ${n}`);
  const clientId = n < 0 ? null : r.bytesOf(n).toString('utf8');
  return { apiKey, apiVersion, correlationId, clientId };
}

/** Skips header v2's tagged fields when the request version is flexible. */
export function finishRequestHeader(api: ApiSpec, version: number, r: Reader): void {
  if (!isFlexible(api.request, version)) return;
  const count = r.uvarint();
  for (let i = 0; i < count; i++) {
    r.uvarint();
    r.bytesOf(r.uvarint());
  }
}

export function responseHeaderVersion(api: ApiSpec, version: number): 0 | 1 {
  if (api.apiKey === API_VERSIONS_KEY) return 0;
  return isFlexible(api.response, version) ? 1 : 0;
}

export function writeResponseHeader(w: Writer, correlationId: number, headerVersion: 0 | 1): void {
  w.int32(correlationId);
  if (headerVersion === 1) w.uvarint(0);
}

export function writeRequestHeader(w: Writer, api: ApiSpec, header: RequestHeader): void {
  w.int16(header.apiKey);
  w.int16(header.apiVersion);
  w.int32(header.correlationId);
  if (header.clientId === null) w.int16(-1);
  else {
    const b = Buffer.from(header.clientId, 'utf8');
    w.int16(b.byteLength);
    w.raw(b);
  }
  if (isFlexible(api.request, header.apiVersion)) w.uvarint(0);
}
