/**
 * A TCP proxy on 127.0.0.1 in front of an emulator that can stall connections, as a socket does
 * that a frozen-then-thawed Lambda kept while the other end forgot it. Each new connection takes
 * the next planned fault, if any:
 *
 *  - `silent`: the request is read and never answered (no forwarding, no reset).
 *  - `body`: forwarded, but the answer stops a few bytes into its body and nothing more comes.
 *
 * Other connections are piped through. A stalled connection stays open until the client gives up
 * or the proxy closes.
 */
import net, { type AddressInfo } from 'node:net';

export type Stall = 'silent' | 'body';

export interface StallProxy {
  /** `http://127.0.0.1:<port>`. */
  endpoint: string;
  /** Stalls the next connections opened, one planned fault each, in order. */
  stallNext(...stalls: Stall[]): void;
  /** Connections opened, and those stalled. */
  stats: { connections: number; stalled: number };
  close(): Promise<void>;
}

const HEADER_END = Buffer.from('\r\n\r\n');

export async function startStallProxy(target: string): Promise<StallProxy> {
  const upstream = new URL(target);
  const plan: Stall[] = [];
  const sockets = new Set<net.Socket>();
  const stats = { connections: 0, stalled: 0 };
  const track = (s: net.Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
    s.on('error', () => {});
  };

  const server = net.createServer((client) => {
    track(client);
    stats.connections++;
    const stall = plan.shift();
    if (stall) stats.stalled++;
    if (stall === 'silent') {
      client.resume(); // reads the request, answers nothing
      return;
    }
    const up = net.connect(Number(upstream.port), upstream.hostname);
    track(up);
    client.pipe(up);
    if (stall !== 'body') {
      up.pipe(client);
      up.on('close', () => client.destroy());
      client.on('close', () => up.destroy());
      return;
    }
    // Passes the status line, the headers and 8 bytes of the body, then nothing.
    let seen = Buffer.alloc(0);
    let cut = false;
    up.on('data', (chunk: Buffer) => {
      if (cut) return;
      seen = Buffer.concat([seen, chunk]);
      const end = seen.indexOf(HEADER_END);
      if (end < 0) return;
      cut = true;
      client.write(seen.subarray(0, end + HEADER_END.length + 8));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    stallNext: (...stalls) => plan.push(...stalls),
    stats,
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}
