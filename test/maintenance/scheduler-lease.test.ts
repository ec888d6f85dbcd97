/**
 * Finding 5 of issue 12: the maintenance lease stalled for about two minutes after a run died holding
 * it or got an ambiguous answer for its lease write (each run took a new random holder id, and a
 * lease lasted until the run's deadline + 2 minutes).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createStorage, type Storage } from '../../src/compose.js';
import { createDynamoDbClient, DynamoDbMetadataStore } from '../../src/storage/dynamodb-metadata-store.js';
import { MemoryObjectStore } from '../../src/storage/memory-object-store.js';
import { installAnswerDropper } from '../support/dynamodb-faults.js';
import { dynamoDbClientOptions, startDynalite, type DynaliteHandle } from '../support/emulators.js';
import { FaultyMetadataStore } from '../support/fault-injection.js';
import { harness, SHARD_0, TestClock } from './helpers.js';

const T0 = 1_700_000_000_000;
const LEASE = `${SHARD_0.pk}|${SHARD_0.sk}`;

describe('the scheduler lease', () => {
  let ddb: DynaliteHandle;
  beforeAll(async () => {
    ddb = await startDynalite();
  });
  afterAll(() => ddb.stop());

  it('is taken by a run whose lease write applied but whose answer was lost (DynamoDB adapter, SDK retry)', async () => {
    const client = createDynamoDbClient(dynamoDbClientOptions(ddb.endpoint));
    const dropper = installAnswerDropper(client);
    try {
      const storage: Storage = {
        metadata: new DynamoDbMetadataStore({ table: ddb.table, client }),
        stores: [new MemoryObjectStore()],
        close: () => {},
      };
      const h = harness(storage, new TestClock(T0));
      await h.topic();
      dropper.drop({ command: 'UpdateItemCommand', match: (k) => k.pk === SHARD_0.pk && k.sk === SHARD_0.sk });
      expect(await h.run()).toMatchObject({ unitsDone: 2, roundsCompleted: 1 });
      expect(dropper.dropped).toBe(1);
      // And it was released: the next run (another process) needs no wait.
      expect(await h.run({ runId: 'another-process' })).not.toHaveProperty('leaseHeld');
    } finally {
      client.destroy();
    }
  });

  it("is taken over at once by this process's next run when a run's release was lost", async () => {
    const metadata = new FaultyMetadataStore(createStorage({ kind: 'memory', replicaStores: 1 }).metadata);
    const h = harness({ metadata, stores: [new MemoryObjectStore()], close: () => {} }, new TestClock(T0));
    await h.topic();
    // The run takes the lease, does one unit, writes its cursor; its release write fails.
    let writes = 0;
    metadata.faults.fail('put', { match: (k) => k === LEASE && ++writes === 3 });
    expect(await h.run({ maxUnits: 1 })).toMatchObject({ unitsDone: 1, incomplete: 1 });
    expect(h.events).toContainEqual(expect.objectContaining({ msg: 'scheduler lease release failed; it lapses' }));
    expect((await metadata.get<{ leaseUntil: number }>(SHARD_0.pk, SHARD_0.sk))!.value.leaseUntil).toBeGreaterThan(T0);
    expect(await h.run()).toMatchObject({ roundsCompleted: 1 });
  });

  it("of a run that died ends within a short bound, not at the run's deadline plus minutes", async () => {
    const storage = createStorage({ kind: 'memory', replicaStores: 1 });
    const clock = new TestClock(T0);
    const h = harness(storage, clock);
    await h.topic();
    // A run in another process took the lease for a 15-minute budget and died right after.
    const dead = new FaultyMetadataStore(storage.metadata);
    const dying = harness({ ...storage, metadata: dead }, clock);
    let writes = 0;
    dead.faults.fail('put', { match: (k) => k === LEASE && ++writes >= 2, times: 2 }); // its cursor write and its release are lost
    await dying.run({ runId: 'dead-process', maxUnits: 1, deadline: T0 + 15 * 60_000 }).catch(() => {});
    expect(await h.run({ runId: 'live-process' })).toEqual({ leaseHeld: 1 });
    clock.advance(30_001);
    expect(await h.run({ runId: 'live-process' })).toMatchObject({ roundsCompleted: 1 });
  });
});
