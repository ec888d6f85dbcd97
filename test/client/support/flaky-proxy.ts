import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** Whether a request is a produce request, in either format (records:batch, or a partition's record batch). */
export const isProduce = (req: IncomingMessage): boolean =>
  req.method === 'POST' && (req.url!.includes('/records:batch') || /\/partitions\/\d+\/records(\?|$)/.test(req.url!));

/**
 * A proxy in front of the server that lets chosen requests reach it and then cuts the connection
 * instead of answering: the write happened, the client never hears of it, as when a response is
 * lost on the network. `dropResponse(req, body)` picks them. Bodies (JSON or RecordBatch bytes) and
 * answers pass through byte for byte, with their content type and the Kafka-* headers.
 */
export async function flakyProxy(upstream: string, dropResponse: (req: IncomingMessage, body: Buffer) => boolean): Promise<{ origin: string; dropped: () => number; close: () => Promise<void> }> {
  let dropped = 0;
  const server: Server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const body = Buffer.concat(chunks);
    try {
      const headers: Record<string, string> = {};
      for (const [k, v] of Object.entries(req.headers)) if (typeof v === 'string' && !['host', 'content-length', 'connection'].includes(k)) headers[k] = v;
      const up = await fetch(`${upstream}${req.url}`, { method: req.method, headers, body: body.length === 0 ? undefined : body });
      const answer = Buffer.from(await up.arrayBuffer());
      if (dropResponse(req, body)) {
        dropped++;
        req.socket.destroy();
        return;
      }
      const out: Record<string, string> = { 'content-type': up.headers.get('content-type') ?? 'application/json' };
      up.headers.forEach((v, k) => {
        if (k.startsWith('kafka-')) out[k] = v;
      });
      res.writeHead(up.status, out);
      res.end(answer);
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
