import { describe, expect, it } from 'vitest';
import { decodeMarker } from '../../src/wire/control-batch.js';
import { decodeRecordBatches, encodeRecordBatch, readBatchHeader, LOG_OVERHEAD } from '../../src/wire/record-batch.js';
import { runMaintenance } from '../../src/maintenance/scheduler.js';
import { BASE } from '../support/test-app.js';
import { manualClock, setup } from './helpers.js';

describe('transactions over HTTP', () => {
  it('shows a transaction to read_committed only once committed, never an aborted one; LSO in describe and list-offsets', async () => {
    const t = await setup();
    const p = await t.init('tx-a');
    expect(
      (await t.call('POST', 'topics/out/records', { partition_id: 0, value: { type: 'STRING', data: 'plain-0' } }))
        .status,
    ).toBe(200);
    expect((await t.produce('tx-a', p, 0, ['a1', 'a2'])).body.successes).toHaveLength(2);
    expect(
      (await t.call('POST', 'topics/out/records', { partition_id: 0, value: { type: 'STRING', data: 'plain-1' } }))
        .status,
    ).toBe(200);

    // Open: read_committed stops at the LSO (the transaction's first offset), read_uncommitted does not.
    expect((await t.fetchValues(0, 'read_committed')).values).toEqual(['plain-0']);
    expect((await t.fetchValues(0, 'read_uncommitted')).values).toEqual(['plain-0', 'a1', 'a2', 'plain-1']);
    const part = await t.call('GET', 'topics/out/partitions/0');
    expect(part.body).toMatchObject({ high_watermark: 4, last_stable_offset: 1 });
    expect(
      (await t.call('GET', 'topics/out/partitions/0/offset?offset_type=latest&isolation_level=read_committed')).body
        .offset,
    ).toBe(1);
    expect((await t.call('GET', 'topics/out/partitions/0/offset?offset_type=latest')).body.offset).toBe(4);
    expect((await t.call('GET', 'transactions/tx-a')).body).toMatchObject({
      state: 'Ongoing',
      partitions: [{ topic_name: 'out', partition_id: 0 }],
    });

    const c = await t.call('POST', 'transactions/tx-a/commit', p);
    expect(c.status).toBe(200);
    expect(c.body.state).toBe('CompleteCommit');
    // The marker takes offset 4; nobody sees it as a record.
    expect((await t.fetchValues(0, 'read_committed')).values).toEqual(['plain-0', 'a1', 'a2', 'plain-1']);
    expect((await t.fetchValues(0, 'read_uncommitted')).values).toEqual(['plain-0', 'a1', 'a2', 'plain-1']);
    expect((await t.call('GET', 'topics/out/partitions/0')).body).toMatchObject({
      high_watermark: 5,
      last_stable_offset: 5,
    });
    // A retried commit (its answer lost) is answered again, not refused.
    expect((await t.call('POST', 'transactions/tx-a/commit', p)).status).toBe(200);

    // An aborted transaction: read_uncommitted shows its records, read_committed never does.
    expect((await t.produce('tx-a', p, 0, ['b1'])).body.successes).toHaveLength(1);
    expect((await t.call('POST', 'transactions/tx-a/abort', p)).body.state).toBe('CompleteAbort');
    expect((await t.produce('tx-a', p, 0, ['c1'])).body.successes).toHaveLength(1);
    expect((await t.call('POST', 'transactions/tx-a/commit', p)).body.state).toBe('CompleteCommit');
    expect((await t.fetchValues(0, 'read_committed')).values).toEqual(['plain-0', 'a1', 'a2', 'plain-1', 'c1']);
    expect((await t.fetchValues(0, 'read_uncommitted')).values).toEqual(['plain-0', 'a1', 'a2', 'plain-1', 'b1', 'c1']);
    expect(
      (await t.call('GET', 'transactions?state=CompleteCommit')).body.data.map(
        (x: { transactional_id: string }) => x.transactional_id,
      ),
    ).toEqual(['tx-a']);
    // A transactional produce waits for every in-sync replica, as Kafka requires.
    const acks1 = await t.call('POST', 'topics/out/records:batch?acks=1', {
      transactional_id: 'tx-a',
      ...p,
      sequences: [{ partition_id: 0, base_sequence: 3 }],
      entries: [{ id: '0', partition_id: 0, value: { type: 'STRING', data: 'x' } }],
    });
    expect(acks1.status).toBe(400);
    expect(acks1.body.error).toBe('INVALID_REQUIRED_ACKS');
  });

  it('fences a zombie: its produce and commit fail, and its open transaction is aborted', async () => {
    const t = await setup();
    const old = await t.init('tx-z');
    expect((await t.produce('tx-z', old, 1, ['zombie'])).body.successes).toHaveLength(1);
    const fresh = await t.init('tx-z');
    expect(fresh.producer_id).toBe(old.producer_id);
    expect(fresh.producer_epoch).toBeGreaterThan(old.producer_epoch);
    const late = await t.produce('tx-z', old, 1, ['late']);
    expect(late.status).toBe(409);
    expect(late.body.error).toBe('INVALID_PRODUCER_EPOCH');
    const commit = await t.call('POST', 'transactions/tx-z/commit', old);
    expect(commit.status).toBe(409);
    expect(commit.body.error).toBe('PRODUCER_FENCED');
    expect((await t.fetchValues(1, 'read_committed')).values).toEqual([]);
    expect((await t.call('GET', 'topics/out/partitions/1')).body.last_stable_offset).toBe(2); // record + abort marker
    expect((await t.produce('tx-z', fresh, 1, ['fresh'])).body.successes).toHaveLength(1);
    expect((await t.call('POST', 'transactions/tx-z/commit', fresh)).status).toBe(200);
    expect((await t.fetchValues(1, 'read_committed')).values).toEqual(['fresh']);
  });

  it('refuses a timeout above transaction.max.timeout.ms and unknown ids', async () => {
    const t = await setup({ env: { TRANSACTION_MAX_TIMEOUT_MS: '5000' } });
    const r = await t.call('POST', 'transactions/x/init', { transaction_timeout_ms: 6000 });
    expect(r.status).toBe(400);
    expect(r.body.error).toBe('INVALID_TRANSACTION_TIMEOUT');
    expect((await t.call('GET', 'transactions/nope')).body.error).toBe('TRANSACTIONAL_ID_NOT_FOUND');
    // A producer's call with an id that maps to no transaction: Kafka's INVALID_PRODUCER_ID_MAPPING.
    const ended = await t.call('POST', 'transactions/nope/commit', { producer_id: 1, producer_epoch: 0 });
    expect(ended.status).toBe(409);
    expect(ended.body.error).toBe('INVALID_PRODUCER_ID_MAPPING');
  });

  it('aborts a transaction open past transaction.timeout.ms from the scheduler alone; the LSO moves', async () => {
    const clock = manualClock();
    const t = await setup({ clock });
    const p = await t.init('tx-t', 1000);
    await t.produce('tx-t', p, 0, ['hanging']);
    expect((await t.call('GET', 'topics/out/partitions/0')).body.last_stable_offset).toBe(0);
    clock.advance(1500);
    const report = await runMaintenance({
      storage: t.storage,
      clock,
      deadline: clock.now() + 10_000,
      partitionLog: t.services.log,
      topics: t.services.topics,
      timerHandlers: t.services.transactions.timerHandlers(),
    });
    expect(report.timersFired).toBeGreaterThanOrEqual(1);
    expect((await t.call('GET', 'topics/out/partitions/0')).body).toMatchObject({
      high_watermark: 2,
      last_stable_offset: 2,
    });
    expect((await t.fetchValues(0, 'read_committed')).values).toEqual([]);
    const d = (await t.call('GET', 'transactions/tx-t')).body;
    expect(d.state).toBe('CompleteAbort');
    expect(d.producer_epoch).toBe(p.producer_epoch + 1); // fenced
    expect((await t.call('POST', 'transactions/tx-t/commit', p)).body.error).toBe('PRODUCER_FENCED');
  });

  it('completes a PrepareCommit left by a process that died before its markers (scheduler, then the producer)', async () => {
    const clock = manualClock();
    const t = await setup({ clock });
    const p = await t.init('tx-d', 1000);
    await t.produce('tx-d', p, 0, ['d1']);
    await t.produce('tx-d', p, 1, ['d2']);
    await t.call('POST', 'transactions/tx-d/offsets', {
      ...p,
      group_id: 'g',
      offsets: [{ topic_name: 'out', partition_id: 0, offset: 7 }],
    });
    const log = t.services.log;
    const original = log.writeMarker.bind(log);
    let calls = 0;
    log.writeMarker = async (...args) => {
      if (calls++ === 1) throw new Error('process died');
      return original(...args);
    };
    expect((await t.call('POST', 'transactions/tx-d/commit', p)).status).toBe(500);
    log.writeMarker = original;
    expect((await t.call('GET', 'transactions/tx-d')).body.state).toBe('PrepareCommit');
    // Offsets are not visible before the commit completes.
    expect(await t.services.groups.offsets.committed('g')).toEqual([]);
    clock.advance(1500);
    await runMaintenance({
      storage: t.storage,
      clock,
      deadline: clock.now() + 10_000,
      partitionLog: log,
      topics: t.services.topics,
      timerHandlers: t.services.transactions.timerHandlers(),
    });
    expect((await t.call('GET', 'transactions/tx-d')).body.state).toBe('CompleteCommit');
    expect((await t.fetchValues(0, 'read_committed')).values).toEqual(['d1']);
    expect((await t.fetchValues(1, 'read_committed')).values).toEqual(['d2']);
    const committed = await t.services.groups.offsets.committed('g');
    expect(committed.map((o) => [o.topic, o.partition, o.offset])).toEqual([['out', 0, 7]]);
    // The producer's retry of its commit is answered as done.
    expect((await t.call('POST', 'transactions/tx-d/commit', p)).body.state).toBe('CompleteCommit');
  });

  it('takes transactional record batches and answers read_committed batch fetches with the aborted transactions', async () => {
    const t = await setup();
    const p = await t.init('tx-b');
    const batch = (values: string[], baseSequence: number) =>
      encodeRecordBatch(
        values.map((v) => ({ key: null, value: Buffer.from(v), headers: [], timestamp: Date.now() })),
        {
          producerId: p.producer_id,
          producerEpoch: p.producer_epoch,
          baseSequence,
          transactional: true,
          partitionLeaderEpoch: -1,
        },
      );
    const post = (bytes: Uint8Array, query = '?transactional_id=tx-b') =>
      t.app.request(`${BASE}/topics/out/partitions/0/records${query}`, {
        method: 'POST',
        headers: { 'content-type': 'application/vnd.kafka.record-batch.v2' },
        body: bytes,
      });
    expect((await post(batch(['x'], 0), '')).status).toBe(400); // transactional batches need the id
    expect((await post(batch(['x1', 'x2'], 0))).status).toBe(200);
    expect((await t.call('POST', 'transactions/tx-b/abort', p)).status).toBe(200);
    expect((await post(batch(['y1'], 2))).status).toBe(200);
    expect((await t.call('POST', 'transactions/tx-b/commit', p)).status).toBe(200);
    const res = await t.app.request(`${BASE}/topics/out/partitions/0/records?offset=0&isolation_level=read_committed`, {
      headers: { accept: 'application/vnd.kafka.record-batch.v2' },
    });
    expect(res.headers.get('kafka-aborted-transactions')).toBe(`${p.producer_id}:0:2`);
    expect(res.headers.get('kafka-last-stable-offset')).toBe('5');
    const body = new Uint8Array(await res.arrayBuffer());
    const kinds: string[] = [];
    for (let at = 0; at < body.byteLength; ) {
      const h = readBatchHeader(body, at);
      kinds.push(`${h.baseOffset}:${h.attributes & 0x20 ? 'control' : 'data'}`);
      at += LOG_OVERHEAD + h.batchLength;
    }
    expect(kinds).toEqual(['0:data', '2:control', '3:data', '4:control']);
    // Kafka's markers: key (version 0, type ABORT 0 / COMMIT 1), value (version 0, coordinator epoch).
    const markers = decodeRecordBatches(body)
      .filter((b) => b.header.attributes & 0x20)
      .map(decodeMarker);
    expect(markers).toEqual([
      { type: 'ABORT', producerId: p.producer_id, producerEpoch: p.producer_epoch, coordinatorEpoch: 0 },
      { type: 'COMMIT', producerId: p.producer_id, producerEpoch: p.producer_epoch, coordinatorEpoch: 0 },
    ]);
    const [abortBatch] = decodeRecordBatches(body).filter((b) => b.header.attributes & 0x20);
    expect(Buffer.from(abortBatch!.records[0]!.key!).toString('hex')).toBe('00000000');
    expect(Buffer.from(abortBatch!.records[0]!.value!).toString('hex')).toBe('000000000000');
    expect((await t.fetchValues(0, 'read_committed')).values).toEqual(['y1']);
  });
});
