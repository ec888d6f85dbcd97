/**
 * A zombie's produce that is slow between its verification and its commit (a worker SIGKILLed
 * with its produce in flight: the server goes on with it) while the next incarnation's init
 * aborts the transaction. The abort's marker finds no open transaction in the partition yet; the
 * zombie's append lands after it. It must not land (the partition knows the new epoch), or the
 * next transaction's COMMIT would commit the zombie's records with its own: the exactly-once
 * pipeline's outputs twice (test/transactions/exactly-once.test.ts).
 */
import { describe, expect, it } from 'vitest';
import { createStorage } from '../../src/compose.js';
import { COMMIT_LOG_LEVEL } from '../../src/storage/formats.js';
import { CLUSTER_PK, FEATURE_LEVEL_SK } from '../../src/storage/key-layout.js';
import { FaultyMetadataStore } from '../support/fault-injection.js';
import { testApp } from '../support/test-app.js';
import { setup } from './helpers.js';

/** Both commit layouts: the partition's state item (below COMMIT_LOG_LEVEL) or its shard's log. */
const LAYOUTS = [
  { name: 'a commit per partition', level: COMMIT_LOG_LEVEL - 1, commitPoint: (k: string) => k === 'part#out#1|state' },
  { name: 'a commit log', level: COMMIT_LOG_LEVEL, commitPoint: (k: string) => k.startsWith('clog#out#') },
];

describe.each(LAYOUTS)('a zombie append held past the abort of its transaction, $name', ({ level, commitPoint }) => {
  it('is fenced, and the next transaction commits only its own records', async () => {
    const storage = createStorage({ kind: 'memory', replicaStores: 1 });
    await storage.metadata.put(CLUSTER_PK, FEATURE_LEVEL_SK, { level, raisedAt: 0, raisedBy: 'test' });
    const metadata = new FaultyMetadataStore(storage.metadata);
    // The zombie's server, and another process that serves the next incarnation.
    const zombieSide = await setup({ storage: { ...storage, metadata } });
    const next = testApp({ storage });

    const old = await zombieSide.init('tx-late');
    const held = metadata.faults.gate('put', commitPoint);
    const zombie = zombieSide.produce('tx-late', old, 1, ['zombie']);
    await held.reached;

    const init = await next.call('POST', 'transactions/tx-late/init', { transaction_timeout_ms: 60_000 });
    expect(init.status).toBe(200);
    const fresh = { producer_id: init.body.producer_id as number, producer_epoch: init.body.producer_epoch as number };
    expect(fresh.producer_epoch).toBeGreaterThan(old.producer_epoch);
    held.release();
    const late = await zombie;
    expect(late.body.failures).toMatchObject([{ error: 'INVALID_PRODUCER_EPOCH' }]);

    const produced = await next.call('POST', 'topics/out/records:batch', {
      transactional_id: 'tx-late',
      ...fresh,
      sequences: [{ partition_id: 1, base_sequence: 0 }],
      entries: [{ id: '0', partition_id: 1, value: { type: 'STRING', data: 'fresh' } }],
    });
    expect(produced.body.successes).toHaveLength(1);
    expect((await next.call('POST', 'transactions/tx-late/commit', fresh)).status).toBe(200);
    expect((await zombieSide.fetchValues(1, 'read_committed')).values).toEqual(['fresh']);
  });
});
