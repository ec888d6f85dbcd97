import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** Whether a request is a produce request, in any format (records:batch, a partition's record batch, or many partitions' topic_data). */
export const isProduce = (req: { method?: string | undefined; url?: string | undefined }): boolean =>
  req.method === 'POST' &&
  (req.url!.includes('/records:batch') ||
    /\/partitions\/\d+\/records(\?|$)/.test(req.url!) ||
    isMultiPartitionProduce(req.url!));

/** `POST /v3/clusters/{c}/records`: the batches of many partitions in Kafka's topic_data. */
export const isMultiPartitionProduce = (url: string): boolean => /\/v3\/clusters\/[^/]+\/records(\?|$)/.test(url);

/** One request that went through the proxy. */
export interface ProxiedRequest {
  method: string;
  url: string;
  contentType: string | undefined;
  accept: string | undefined;
  body: Buffer;
  status: number | undefined;
  /** The answer's content type. */
  answerType: string | null;
  /** The server's answer (also when the proxy dropped it). */
  answer?: Buffer;
  startedAt: number;
  endedAt: number;
  dropped: boolean;
}

export interface ProxyOptions {
  /** Let the request reach the server, then cut the connection instead of answering. */
  dropResponse?: (req: IncomingMessage, body: Buffer) => boolean;
  /** Hold matching requests this long before forwarding them (to observe concurrency). */
  delayMs?: (req: IncomingMessage) => number;
  /** Hold the answer of matching requests this long before passing it on (answers out of order). */
  answerDelayMs?: (req: IncomingMessage) => number;
  /**
   * Stands for an older server: answer the request itself (a status and a JSON body) instead of
   * forwarding it, or forward it with some headers removed.
   */
  legacy?: (
    req: IncomingMessage,
  ) => { answer: { status: number; body: unknown } } | { dropHeaders: string[] } | undefined;
}

/**
 * A proxy in front of the real server. It can lose answers (the write happened, the client never
 * hears of it, as when a response is lost on the network), delay requests, and play an older server
 * that lacks an API. Bodies (JSON or RecordBatch bytes) and answers pass through byte for byte, with
 * their content type and the Kafka-* headers. Every request is logged.
 */
export async function proxy(
  upstream: string,
  options: ProxyOptions = {},
): Promise<{ origin: string; log: ProxiedRequest[]; dropped: () => number; close: () => Promise<void> }> {
  const log: ProxiedRequest[] = [];
  const server: Server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const body = Buffer.concat(chunks);
    const entry: ProxiedRequest = {
      method: req.method!,
      url: req.url!,
      contentType: req.headers['content-type'],
      accept: req.headers.accept,
      body,
      status: undefined,
      answerType: null,
      startedAt: Date.now(),
      endedAt: 0,
      dropped: false,
    };
    log.push(entry);
    try {
      const delay = options.delayMs?.(req) ?? 0;
      const answerDelay = options.answerDelayMs?.(req) ?? 0;
      if (delay > 0) await new Promise((r) => setTimeout(r, delay));
      const legacy = options.legacy?.(req);
      if (legacy && 'answer' in legacy) {
        entry.status = legacy.answer.status;
        entry.answerType = 'application/json';
        entry.endedAt = Date.now();
        res.writeHead(legacy.answer.status, { 'content-type': 'application/json' });
        res.end(JSON.stringify(legacy.answer.body));
        return;
      }
      const headers: Record<string, string> = {};
      for (const [k, v] of Object.entries(req.headers)) {
        if (
          typeof v === 'string' &&
          !['host', 'content-length', 'connection'].includes(k) &&
          !legacy?.dropHeaders.includes(k)
        )
          headers[k] = v;
      }
      const up = await fetch(`${upstream}${req.url}`, {
        method: req.method,
        headers,
        body: body.length === 0 ? undefined : body,
      });
      const answer = Buffer.from(await up.arrayBuffer());
      if (answerDelay > 0) await new Promise((r) => setTimeout(r, answerDelay));
      entry.status = up.status;
      entry.answer = answer;
      entry.answerType = up.headers.get('content-type');
      entry.endedAt = Date.now();
      if (options.dropResponse?.(req, body)) {
        entry.dropped = true;
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
    log,
    dropped: () => log.filter((e) => e.dropped).length,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

/** A proxy that loses the answers of the requests `dropResponse` picks. */
export function flakyProxy(upstream: string, dropResponse: (req: IncomingMessage, body: Buffer) => boolean) {
  return proxy(upstream, { dropResponse });
}
