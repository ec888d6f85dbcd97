import { createServer, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { PushChannel } from '../../src/client/consumer/push-channel.js';
import { Transport } from '../../src/client/transport.js';

describe('push channel', () => {
  it('closed while its socket is still handshaking, it ends the socket without an uncaught error', async () => {
    // A server that takes the connection and never answers the upgrade: the socket stays CONNECTING.
    const sockets: Socket[] = [];
    const server = createServer((s) => sockets.push(s));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const { port } = server.address() as AddressInfo;
    const uncaught: unknown[] = [];
    const onUncaught = (e: unknown) => uncaught.push(e);
    process.prependListener('uncaughtException', onUncaught);
    try {
      const transport = new Transport({ url: `http://127.0.0.1:${port}/v3/clusters/c` });
      const channel = new PushChannel(transport, `ws://127.0.0.1:${port}/push`, 60_000, {
        onReady: () => {},
        onRecords: () => false,
        onCommitted: () => {},
        onConnectionChange: () => {},
        log: () => {},
      });
      channel.arm('t', 0, 0); // starts connecting
      channel.close(); // before the socket exists: it is made, then ended at once
      await new Promise((r) => setTimeout(r, 200));
      expect(uncaught).toEqual([]);
      expect(channel.connected).toBe(false);
    } finally {
      process.removeListener('uncaughtException', onUncaught);
      for (const s of sockets) s.destroy();
      await new Promise((r) => server.close(r));
    }
  });
});
