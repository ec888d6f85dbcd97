/**
 * Share group workers over server processes that are SIGKILLed (./killed-servers.ts), on the S3 and
 * DynamoDB adapters: three servers on the aws backend against s3rver and dynalite in this process,
 * each reaching DynamoDB through its own fault proxy (test/chaos/fault-proxy.ts). The proxy loses
 * the answer of one share-partition conditional write in eight after it applied (the SDK retries it,
 * and the store recognises its own write), and every other kill waits until the victim's proxy holds
 * the answer of a conditional write that applied: the server dies between the write and its answer.
 */
import { createRng } from '../chaos/rng.js';
import { type FaultProxy, NO_FAULTS, startFaultProxy } from '../chaos/fault-proxy.js';
import { awsServerEnv, startDynalite, startS3rver } from '../support/emulators.js';
import { startServer, tempDir } from '../support/local-server.js';
import { until } from '../support/until.js';
import { describeKilledServers } from './killed-servers.js';
import { expect } from 'vitest';

/** A share-partition's conditional write, as the DynamoDB adapter's UpdateItem body holds it. */
const SHARE_PARTITION_WRITE = ['"sp#work#', 'ConditionExpression'];

let dir: Awaited<ReturnType<typeof tempDir>> | undefined;
let s3: Awaited<ReturnType<typeof startS3rver>> | undefined;
let ddb: Awaited<ReturnType<typeof startDynalite>> | undefined;
const proxies: FaultProxy[] = [];
const BUCKET = 'share-killed';

const dropped = () => proxies.reduce((n, p) => n + p.stats.applyThenDrop, 0);

describeKilledServers({
  name: 'S3 + DynamoDB adapters',
  setup: async () => {
    dir = await tempDir('share-killed-aws-');
    s3 = await startS3rver({ buckets: [BUCKET] });
    ddb = await startDynalite();
    const rng = createRng(38);
    for (let i = 0; i < 3; i++)
      proxies.push(
        await startFaultProxy(ddb.endpoint, rng.fork(`ddb-${i}`), {
          ...NO_FAULTS,
          applyThenDrop: 0.125,
          only: SHARE_PARTITION_WRITE,
        }),
      );
  },
  start: (index, port) =>
    startServer(dir!.path, port, {
      ...awsServerEnv({
        table: ddb!.table,
        buckets: [BUCKET],
        dynamoDbEndpoint: proxies[index]!.endpoint,
        s3Endpoint: s3!.endpoint,
      }),
      SCHEDULER_INTERVAL_MS: '0',
    }),
  holdWrite: (index) => {
    const hold = proxies[index]!.holdNext(SHARE_PARTITION_WRITE);
    let held = false;
    void hold.held.then(() => (held = true));
    return {
      // A bound only: a busy server writes a share-partition within moments.
      held: until('a held share-partition write', () => held, 5_000).then(
        () => true,
        () => false,
      ),
      release: hold.release,
    };
  },
  injected: () => `${dropped()} share-partition write answers lost after they applied`,
  expectInjected: () => expect(dropped()).toBeGreaterThan(0),
  teardown: async () => {
    await Promise.all(proxies.map((p) => p.close()));
    await Promise.all([s3?.stop(), ddb?.stop()]);
    await dir?.remove();
  },
});
