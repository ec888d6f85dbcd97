/**
 * Ambiguous outcomes on the transaction path: every write of a produce, an offset commit and a
 * commit may take effect and still fail (the answer lost), or fail before it lands; the caller
 * retries, as a client does. The outcome must be as if nothing failed: the records once, one
 * marker, the offset committed, the transaction CompleteCommit.
 */
import { describe, expect, it } from 'vitest';
import { createStorage } from '../../src/compose.js';
import { CONTROL_FLAG_MASK, decodeRecordBatches } from '../../src/wire/record-batch.js';
import { FaultyMetadataStore, FaultyObjectStore } from '../support/fault-injection.js';
import { setup } from './helpers.js';
import { COMMIT_LOG_LEVEL } from '../../src/storage/formats.js';
import { CLUSTER_PK, FEATURE_LEVEL_SK } from '../../src/storage/key-layout.js';
import { readBatches } from '../support/read-records.js';

const FAULT = {
  txn: { name: 'the transaction item write', op: 'put', match: (k: string) => k.startsWith('txn#') },
  offset: { name: 'the offset write', op: 'put', match: (k: string) => k.includes('|off#') },
  timer: { name: 'the timeout timer', op: 'put', match: (k: string) => k.startsWith('timer#') },
} as const;

type Fault = { name: string; op: 'put' | 'get'; match: (key: string) => boolean };

/**
 * Both commit layouts: a topic made below COMMIT_LOG_LEVEL commits each partition with its state
 * and index writes; a topic with a commit log commits (records and the marker alike) with an entry
 * of its shard's log, and its fold writes the state and index later.
 */
const LAYOUTS: { name: string; level?: number; faults: Fault[] }[] = [
  {
    name: 'a commit per partition',
    level: COMMIT_LOG_LEVEL - 1,
    faults: [
      FAULT.txn,
      {
        name: "the marker's partition state write",
        op: 'put',
        match: (k) => k.endsWith('|state') && k.startsWith('part#'),
      },
      { name: "the marker's index entry", op: 'put', match: (k) => k.includes('|idx#') },
      FAULT.offset,
      FAULT.timer,
    ],
  },
  {
    name: 'a commit log',
    faults: [
      FAULT.txn,
      {
        name: "the marker's commit log entry",
        op: 'put',
        match: (k) => k.startsWith('clog#') && k.includes('|e#'),
      },
      FAULT.offset,
      FAULT.timer,
    ],
  },
];

async function retried(call: () => Promise<{ status: number; body: any }>) {
  for (let attempt = 0; ; attempt++) {
    const r = await call();
    const failed = r.status >= 500 || (r.status === 207 && r.body.failures.length > 0);
    if (!failed || attempt >= 5) return r;
  }
}

describe.each(LAYOUTS)('transactions under ambiguous storage outcomes, $name', ({ level, faults }) => {
  for (const fault of faults) {
    for (const when of ['before', 'after'] as const) {
      it(`${fault.name} fails ${when} it takes effect`, async () => {
        const inner = createStorage({ kind: 'memory', replicaStores: 1 });
        if (level !== undefined)
          await inner.metadata.put(CLUSTER_PK, FEATURE_LEVEL_SK, { level, raisedAt: 0, raisedBy: 'test' });
        const metadata = new FaultyMetadataStore(inner.metadata);
        const storage = { metadata, stores: inner.stores.map((s) => new FaultyObjectStore(s)), close: () => {} };
        const t = await setup({ storage });
        expect((await t.call('POST', 'topics', { topic_name: 'in', partitions_count: 1 })).status).toBe(201);
        const p = await t.init('f');
        // Every matching write of the whole transaction fails once, in turn.
        metadata.faults.fail(fault.op, { when, times: 1, match: fault.match });
        const produced = await retried(() => t.produce('f', p, 0, ['r1', 'r2']));
        expect(produced.status).toBe(207);
        metadata.faults.fail(fault.op, { when, times: 1, match: fault.match });
        const offsets = await retried(() =>
          t.call('POST', 'transactions/f/offsets', {
            ...p,
            group_id: 'g',
            offsets: [{ topic_name: 'in', partition_id: 0, offset: 2 }],
          }),
        );
        expect(offsets.status).toBe(200);
        metadata.faults.fail(fault.op, { when, times: 1, match: fault.match });
        const commit = await retried(() => t.call('POST', 'transactions/f/commit', p));
        expect(commit.status).toBe(200);
        expect(metadata.faults.injected).toBeGreaterThan(0);
        metadata.faults.clear();
        expect((await t.services.topics.get('out')).clog).toBe(level === undefined ? true : undefined);

        expect(commit.body.state).toBe('CompleteCommit');
        expect((await t.fetchValues(0, 'read_committed')).values).toEqual(['r1', 'r2']);
        const topic = await t.services.topics.get('out');
        const batches = decodeRecordBatches((await readBatches(t.services.log, topic, 0, 0, 1 << 20)).batches);
        expect(batches.filter((b) => b.header.attributes & CONTROL_FLAG_MASK)).toHaveLength(1);
        expect((await t.call('GET', 'topics/out/partitions/0')).body).toMatchObject({
          high_watermark: 3,
          last_stable_offset: 3,
        });
        expect((await t.services.groups.offsets.committed('g')).map((o) => o.offset)).toEqual([2]);
      });
    }
  }

  it('every transaction item write repeated by the store after it applied is answered once: no second epoch bump, one transaction', async () => {
    const inner = createStorage({ kind: 'memory', replicaStores: 1 });
    if (level !== undefined)
      await inner.metadata.put(CLUSTER_PK, FEATURE_LEVEL_SK, { level, raisedAt: 0, raisedBy: 'test' });
    const metadata = new FaultyMetadataStore(inner.metadata);
    const t = await setup({ storage: { metadata, stores: inner.stores, close: () => {} } });
    const txnWrite = (k: string) => k.startsWith('txn#');
    // The create: the repeat of an applied put-if-absent finds the item it wrote.
    metadata.faults.fail('put', { when: 'retried', match: txnWrite });
    const p = await t.init('r');
    expect(p.producer_epoch).toBe(0);
    // An epoch bump, a join, the Prepare and the Complete writes, each repeated once.
    metadata.faults.fail('put', { when: 'retried', match: txnWrite });
    const bumped = await t.init('r');
    expect(bumped).toEqual({ producer_id: p.producer_id, producer_epoch: 1 });
    metadata.faults.fail('put', { when: 'retried', match: txnWrite, times: 3 });
    expect((await t.produce('r', bumped, 0, ['x'])).body.failures).toEqual([]);
    const commit = await t.call('POST', 'transactions/r/commit', bumped);
    expect(commit).toMatchObject({ status: 200, body: { state: 'CompleteCommit', producer_epoch: 1 } });
    expect(metadata.faults.injected).toBe(5);
    expect((await t.fetchValues(0, 'read_committed')).values).toEqual(['x']);
  });
});
