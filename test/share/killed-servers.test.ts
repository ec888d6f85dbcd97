/**
 * Share group workers over server processes that are SIGKILLed (./killed-servers.ts), on the
 * embedded backend: three servers over one local data dir (files + SQLite, which several processes
 * share), so a process dies between any two steps of its own store's work.
 * concurrent-workers.test.ts covers ambiguous conditional writes in one process;
 * killed-servers-aws.test.ts the same kills on the S3 and DynamoDB adapters.
 */
import { startServer, tempDir } from '../support/local-server.js';
import { describeKilledServers } from './killed-servers.js';

let dir: Awaited<ReturnType<typeof tempDir>> | undefined;

describeKilledServers({
  name: 'files + SQLite',
  setup: async () => {
    dir = await tempDir('share-killed-');
  },
  start: (_index, port) => startServer(dir!.path, port, { SCHEDULER_INTERVAL_MS: '0' }),
  teardown: async () => dir?.remove(),
});
