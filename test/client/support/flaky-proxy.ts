import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A proxy in front of the server that lets chosen requests reach it and then cuts the connection
 * instead of answering: the write happened, the client never hears of it, as when a response is
 * lost on the network. `dropResponse(req, n)` picks them (n counts matching requests from 1).
 */
export async function flakyProxy(upstream: string, dropResponse: (req: IncomingMessage, body: string) => boolean): Promise<{ origin: string; dropped: () => number; close: () => Promise<void> }> {
  let dropped = 0;
  const server: Server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const body = Buffer.concat(chunks).toString('utf8');
    try {
      const headers: Record<string, string> = {};
      for (const [k, v] of Object.entries(req.headers)) if (typeof v === 'string' && !['host', 'content-length', 'connection'].includes(k)) headers[k] = v;
      const up = await fetch(`${upstream}${req.url}`, { method: req.method, headers, body: body === '' ? undefined : body });
      const text = await up.text();
      if (dropResponse(req, body)) {
        dropped++;
        req.socket.destroy();
        return;
      }
      res.writeHead(up.status, { 'content-type': up.headers.get('content-type') ?? 'application/json' });
      res.end(text);
    } catch {
      req.socket.destroy();
    }
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    origin: `http://127.0.0.1:${port}`,
    dropped: () => dropped,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}
