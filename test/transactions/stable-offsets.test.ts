/**
 * KIP-447's require_stable: while a transaction holds offsets of a group, a consumer asking for
 * stable offsets (read_committed) is answered UNSTABLE_OFFSET_COMMIT for those partitions, not the
 * offset the transaction is about to move, which would have it process again what the
 * transaction commits as processed.
 */
import { describe, expect, it } from 'vitest';
import { pendingOffsetsPk } from '../../src/storage/key-layout.js';
import { MemoryMetadataStore } from '../../src/storage/memory-metadata-store.js';
import { clearPendingOffsets, markPendingOffsets, unstableOffsets } from '../../src/transactions/pending-offsets.js';
import { setup } from './helpers.js';

describe('stable offsets (KIP-447)', () => {
  it('answers UNSTABLE_OFFSET_COMMIT for a partition whose offset waits in an open transaction, until it ends', async () => {
    const t = await setup();
    const stable = (query: string) => t.call('GET', `consumer-groups/g/offsets?topic_name=out&${query}`);
    expect(
      (
        await t.call('POST', 'consumer-groups/g/offsets:commit', {
          offsets: [{ topic_name: 'out', partition_id: 0, offset: 3 }],
        })
      ).status,
    ).toBe(200);
    const p = await t.init('tx');
    const txnOffsets = (offset: number) =>
      t.call('POST', 'transactions/tx/offsets', {
        ...p,
        group_id: 'g',
        offsets: [{ topic_name: 'out', partition_id: 0, offset }],
      });
    expect((await txnOffsets(7)).status).toBe(200);

    const refused = await stable('require_stable=true');
    expect(refused.status).toBe(409);
    expect(refused.body.error).toBe('UNSTABLE_OFFSET_COMMIT');
    expect(refused.body.message).toContain('out#0');
    // Without require_stable, or for another partition, the committed offset as it stands.
    expect(
      (await stable('require_stable=false')).body.data.map((o: { committed_offset: number }) => o.committed_offset),
    ).toEqual([3]);
    expect((await stable('require_stable=true&partition_id=1')).status).toBe(200);
    // The positions a read_committed consumer starts from are refused the same way.
    expect((await stable('require_stable=true&auto_offset_reset=earliest&isolation_level=read_committed')).status).toBe(
      409,
    );

    expect((await t.call('POST', 'transactions/tx/commit', p)).status).toBe(200);
    const after = await stable('require_stable=true');
    expect(after.status).toBe(200);
    expect(after.body.data.map((o: { committed_offset: number }) => o.committed_offset)).toEqual([7]);
    expect(await t.storage.metadata.query(pendingOffsetsPk('g'))).toEqual([]); // tidied

    // An aborted transaction's offsets are pending until it ends, then dropped.
    expect((await txnOffsets(9)).status).toBe(200);
    expect((await stable('require_stable=true')).status).toBe(409);
    expect((await t.call('POST', 'transactions/tx/abort', p)).status).toBe(200);
    expect(
      (await stable('require_stable=true')).body.data.map((o: { committed_offset: number }) => o.committed_offset),
    ).toEqual([7]);
    expect(await t.storage.metadata.query(pendingOffsetsPk('g'))).toEqual([]);
    expect((await stable('require_stable=yes')).status).toBe(400);
  });

  it('keeps the marker of the next transaction when the previous one completes', async () => {
    const metadata = new MemoryMetadataStore();
    // A marker put for a write over item version 5 (the id's next transaction), then the previous
    // transaction's completion at version 5 tidies up: the marker is not older, so it stays.
    await markPendingOffsets(metadata, ['g'], 'tx', 5);
    await clearPendingOffsets(metadata, ['g'], 'tx', 5);
    expect(await metadata.query(pendingOffsetsPk('g'))).toHaveLength(1);
    // The transaction that wrote over version 5 completes at 8: now it goes.
    await clearPendingOffsets(metadata, ['g'], 'tx', 8);
    expect(await metadata.query(pendingOffsetsPk('g'))).toEqual([]);
  });

  it('answers from the transaction item, not the marker, and a reader deletes a stale marker', async () => {
    const t = await setup();
    const p = await t.init('tx');
    const metadata = t.storage.metadata;
    // Left by a process that died after the marker, before the offsets reached the item: nothing
    // is pending (the item is the truth), and the reader tidies the marker away.
    await markPendingOffsets(metadata, ['g'], 'tx', 0);
    expect(await unstableOffsets(metadata, 'g')).toEqual(new Set());
    expect(await metadata.query(pendingOffsetsPk('g'))).toEqual([]);
    // Left by a process that died after its transaction completed: the same.
    await t.call('POST', 'transactions/tx/offsets', {
      ...p,
      group_id: 'g',
      offsets: [{ topic_name: 'out', partition_id: 1, offset: 5 }],
    });
    const marker = (await metadata.query<{ afterVersion: number }>(pendingOffsetsPk('g')))[0]!;
    expect(await unstableOffsets(metadata, 'g')).toEqual(new Set(['out#1']));
    expect((await t.call('POST', 'transactions/tx/commit', p)).status).toBe(200);
    await metadata.put(marker.pk, marker.sk, marker.value); // as if the coordinator's tidying was lost
    expect(await unstableOffsets(metadata, 'g')).toEqual(new Set());
    expect(await metadata.query(pendingOffsetsPk('g'))).toEqual([]);
  });

  it("a group whose offsets came only from a transaction exists, as Kafka's Empty group", async () => {
    const t = await setup();
    expect((await t.call('POST', 'topics', { topic_name: 'other', partitions_count: 1 })).status).toBe(201);
    const p = await t.init('tx');
    await t.call('POST', 'transactions/tx/offsets', {
      ...p,
      group_id: 'tg',
      offsets: [{ topic_name: 'out', partition_id: 1, offset: 4 }],
    });
    expect((await t.call('POST', 'transactions/tx/commit', p)).status).toBe(200);
    const list = await t.call('GET', 'consumer-groups/tg/offsets');
    expect(list.status).toBe(200);
    expect(list.body.data.map((o: { committed_offset: number }) => o.committed_offset)).toEqual([4]);
    expect((await t.call('GET', 'consumer-groups/tg/offsets/out/partitions/1')).body.committed_offset).toBe(4);
    const elsewhere = await t.call('GET', 'consumer-groups/tg/offsets?topic_name=other');
    expect([elsewhere.status, elsewhere.body.data]).toEqual([200, []]);
    expect((await t.call('GET', 'consumer-groups/nobody/offsets')).body.error).toBe('GROUP_ID_NOT_FOUND');
  });
});
