/**
 * The ConnectionPoster of the local server: POST {endpoint}/@connections/{id}, the path of API
 * Gateway's management API, answered by the local server that holds the socket (push-socket.ts).
 * So a produce in one process reaches a consumer connected to another, as on AWS.
 */
import type { ConnectionPoster } from './ports.js';

export function httpConnectionPoster(
  fetchImpl: typeof globalThis.fetch = globalThis.fetch,
  timeoutMs = 2000,
): ConnectionPoster {
  return {
    async post(endpoint, connectionId, message) {
      const res = await fetchImpl(`${endpoint.replace(/\/+$/, '')}/@connections/${encodeURIComponent(connectionId)}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: message,
        signal: AbortSignal.timeout(timeoutMs),
      });
      await res.arrayBuffer();
      if (res.status === 410) return 'gone';
      if (res.status >= 300) throw new Error(`POST @connections/${connectionId} at ${endpoint} answered ${res.status}`);
      return 'delivered';
    },
  };
}
