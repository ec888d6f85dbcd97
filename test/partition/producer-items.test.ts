/**
 * Producer state that does not grow the partition state item (src/partition/producer-items.ts):
 * from feature level 5 the state keeps PRODUCER_CACHE_SIZE recent producers and the others are
 * items of their own, written as they leave the cache. With 500 idempotent producers on one
 * partition a commit writes at most 3 DynamoDB write units (6 with the whole table in the state, for ids this small),
 * and a producer outside the cache is checked as before: a retry answered with its offsets (or
 * DUPLICATE_SEQUENCE_NUMBER past the index's look-back), a gap refused, an older epoch fenced.
 */
import { describe, expect, it } from 'vitest';
import { createStorage, type Storage } from '../../src/compose.js';
import type { AppendOutcome } from '../../src/log/partition-log.js';
import { PRODUCER_CACHE_SIZE, PRODUCER_ID_EXPIRATION_MS, unpackProducers } from '../../src/partition/producer-state.js';
import { FEATURE_LEVEL_MAX_AGE_MS, raiseFeatureLevel } from '../../src/storage/feature-level.js';
import {
  PRODUCER_ENTRY_PREFIX,
  PRODUCER_META_SK,
  partitionPk,
  producerPk,
  STATE_SK,
} from '../../src/storage/key-layout.js';
import { observeStorage, type StorageCall } from '../../src/storage/observed-stores.js';
import { FaultyMetadataStore } from '../support/fault-injection.js';
import { harness, rec, TestClock } from '../maintenance/helpers.js';

const PRODUCERS = 500;
const T0 = 1_700_000_000_000;
const wru = (bytes: number) => Math.max(1, Math.ceil(bytes / 1024));

function setup() {
  const calls: StorageCall[] = [];
  const inner = createStorage({ kind: 'memory', replicaStores: 1 });
  const faulty = new FaultyMetadataStore(inner.metadata);
  const storage: Storage = observeStorage({ ...inner, metadata: faulty }, (c) => calls.push(c));
  const clock = new TestClock(T0);
  const h = harness(storage, clock);
  const send = async (
    topic: Awaited<ReturnType<typeof h.topic>>,
    producerId: number,
    baseSequence: number,
    producerEpoch = 0,
  ): Promise<AppendOutcome> => {
    clock.advance(1);
    const out = await h.log.append(
      topic,
      [{ partition: 0, records: [rec(null, `${producerId}:${baseSequence}`, clock.now())] }],
      {
        producer: { producerId, producerEpoch, baseSequences: new Map([[0, baseSequence]]) },
      },
    );
    return out.get(0)!;
  };
  /** A round of one batch per producer; the largest write of the partition state in it, in write units. */
  const round = async (topic: Awaited<ReturnType<typeof h.topic>>, sequence: number) => {
    calls.length = 0;
    for (let id = 1; id <= PRODUCERS; id++) {
      const out = await send(topic, id, sequence);
      if (!out.ok) throw out.error;
    }
    const stateWrites = calls.filter(
      (c): c is Extract<StorageCall, { op: 'UpdateItem' }> =>
        c.op === 'UpdateItem' && c.pk === partitionPk(topic.name, 0) && c.sk === STATE_SK,
    );
    const producerWrites = calls.filter(
      (c) => c.op === 'UpdateItem' && c.pk === partitionPk(topic.name, 0) && c.sk.startsWith(PRODUCER_ENTRY_PREFIX),
    );
    return {
      maxStateWru: Math.max(...stateWrites.map((c) => wru(c.itemBytes))),
      commits: stateWrites.length,
      producerWrites: producerWrites.length,
    };
  };
  return { inner, faulty, storage, clock, h, send, round };
}

describe('producer state outside the partition state item', () => {
  it('500 idempotent producers on one partition: a commit writes 6 units with the whole table, at most 3 from level 5', async () => {
    const { inner, clock, h, send, round } = setup();
    for (let id = 1; id <= PRODUCERS; id++) await inner.metadata.put(producerPk(id), PRODUCER_META_SK, { epoch: 0 });
    const topic = await h.topic();
    const pk = partitionPk(topic.name, 0);

    // Level 1 (partition-state version 1): every producer in the state item.
    await round(topic, 0);
    const before = await round(topic, 1);
    expect(before.maxStateWru).toBeGreaterThan(3);
    expect(before.producerWrites).toBe(0);
    console.log(`state write at ${PRODUCERS} producers, level 1: ${before.maxStateWru} WRU`);

    await raiseFeatureLevel(inner.metadata, 5, clock.now(), 'test');
    clock.advance(FEATURE_LEVEL_MAX_AGE_MS);
    // The table of 500 shrinks to the cache a few producers per commit, each written to its item first.
    await round(topic, 2);
    const after = await round(topic, 3);
    expect(after.commits).toBe(PRODUCERS);
    expect(after.maxStateWru).toBeLessThanOrEqual(3);
    // Round-robin over more producers than the cache holds: each commit lets one go.
    expect(after.producerWrites).toBe(PRODUCERS);
    console.log(`state write at ${PRODUCERS} producers, level 5: ${after.maxStateWru} WRU`);
    const state = (await inner.metadata.get<{ pids: string; fv: number }>(pk, STATE_SK))!.value;
    expect(state.fv).toBe(2);
    expect(unpackProducers(state.pids)).toHaveLength(PRODUCER_CACHE_SIZE);
    expect(unpackProducers(state.pids)[0]!.producerId).toBe(PRODUCERS);

    // Producer 400 left the cache 100 commits ago: its retry is answered with the offsets it got
    // (from the offset index), not appended again.
    const hw = (await h.log.state(topic, 0)).highWatermark;
    const last = (await h.readAll(topic, 0, { jsonOnly: true })).filter((r) => r.value === '400:3');
    expect(last).toHaveLength(1);
    expect(await send(topic, 400, 3)).toMatchObject({
      ok: true,
      info: { baseOffset: last[0]!.offset, duplicate: true },
    });
    // Producer 1's last batch is further back than the index is searched: refused as a duplicate
    // (as Kafka does past the batches it keeps), never appended twice.
    expect(await send(topic, 1, 3)).toMatchObject({ ok: false, error: { errorName: 'DUPLICATE_SEQUENCE_NUMBER' } });
    // A gap is refused; the next sequence appends.
    expect(await send(topic, 1, 5)).toMatchObject({ ok: false, error: { errorName: 'OUT_OF_ORDER_SEQUENCE_NUMBER' } });
    expect(await send(topic, 1, 4)).toMatchObject({ ok: true, info: { baseOffset: hw } });
    expect((await h.log.state(topic, 0)).highWatermark).toBe(hw + 1);
  }, 120_000);

  it('appends each batch once when the writes of producer items and states apply but their answers are lost', async () => {
    const { inner, faulty, clock, h, send } = setup();
    await raiseFeatureLevel(inner.metadata, 4, clock.now(), 'test');
    const producers = PRODUCER_CACHE_SIZE + 16;
    for (let id = 1; id <= producers; id++) await inner.metadata.put(producerPk(id), PRODUCER_META_SK, { epoch: 0 });
    const topic = await h.topic();
    const pk = partitionPk(topic.name, 0);
    const isItem = (k: string) => k.startsWith(`${pk}|${PRODUCER_ENTRY_PREFIX}`);
    const isState = (k: string) => k === `${pk}|${STATE_SK}`;
    let errors = 0;
    for (let sequence = 0; sequence < 4; sequence++) {
      for (let id = 1; id <= producers; id++) {
        // Every few commits: an item's or the state's write applied with its answer lost (the
        // caller sees an error), or applied and sent again (the SDK's retry meets its own write).
        if (id % 7 === 0) faulty.faults.fail('put', { when: 'after', match: isItem });
        if (id % 11 === 0) faulty.faults.fail('put', { when: 'retried', match: isItem });
        if (id % 13 === 0) faulty.faults.fail('put', { when: 'after', match: isState });
        if (id % 17 === 0) faulty.faults.fail('put', { when: 'retried', match: isState });
        // The producer resends the same batch until it is answered, as a client does.
        for (let attempt = 0; ; attempt++) {
          const out = await send(topic, id, sequence);
          if (out.ok) break;
          errors++;
          if (attempt > 3) throw out.error;
        }
      }
    }
    expect(errors).toBeGreaterThan(0);
    const values = (await h.readAll(topic, 0, { jsonOnly: true })).map((r) => r.value);
    expect(values).toHaveLength(producers * 4);
    expect(new Set(values).size).toBe(producers * 4);
  });

  it('fences an older epoch of a producer whose entry left the cache, and a deleted topic leaves no producer items', async () => {
    const { inner, clock, h, send } = setup();
    await raiseFeatureLevel(inner.metadata, 5, clock.now(), 'test');
    for (let id = 1; id <= PRODUCER_CACHE_SIZE + 10; id++)
      await inner.metadata.put(producerPk(id), PRODUCER_META_SK, { epoch: id === 1 ? 1 : 0 });
    const topic = await h.topic();
    const pk = partitionPk(topic.name, 0);
    expect(await send(topic, 1, 0, 1)).toMatchObject({ ok: true });
    for (let id = 2; id <= PRODUCER_CACHE_SIZE + 10; id++) expect(await send(topic, id, 0)).toMatchObject({ ok: true });
    const state = (await inner.metadata.get<{ pids: string }>(pk, STATE_SK))!.value;
    expect(unpackProducers(state.pids).map((e) => e.producerId)).not.toContain(1);
    expect(await inner.metadata.get(pk, `${PRODUCER_ENTRY_PREFIX}1`)).toMatchObject({
      value: { producerEpoch: 1, lastSequence: 0, topicId: topic.id },
    });
    // Only the partition's own entry knows epoch 1 here (the producer item is set back to 0, so the
    // log's check of the producer's current epoch lets the batch through to the partition's).
    await inner.metadata.put(producerPk(1), PRODUCER_META_SK, { epoch: 0 });
    expect(await send(topic, 1, 0, 0)).toMatchObject({ ok: false, error: { errorName: 'INVALID_PRODUCER_EPOCH' } });
    // Epoch 1 goes on where it left off, and is back in the cache.
    expect(await send(topic, 1, 1, 1)).toMatchObject({ ok: true });
    const again = (await inner.metadata.get<{ pids: string }>(pk, STATE_SK))!.value;
    expect(unpackProducers(again.pids)[0]).toMatchObject({ producerId: 1, producerEpoch: 1, lastSequence: 1 });

    await h.topics.delete(topic.name);
    clock.advance(5000);
    await h.run();
    expect(await inner.metadata.query(pk, { beginsWith: PRODUCER_ENTRY_PREFIX })).toEqual([]);
  });

  it("an idle producer's item expires after producer.id.expiration.ms; the producer then starts again at sequence 0 of a new epoch", async () => {
    const { inner, clock, h, send } = setup();
    await raiseFeatureLevel(inner.metadata, 5, clock.now(), 'test');
    // What the items are written with: their expiry, for the store to drop them (DynamoDB's TTL).
    const expiries = new Map<string, number | undefined>();
    const put = inner.metadata.put.bind(inner.metadata);
    inner.metadata.put = (pk, sk, value, condition, options) => {
      if (sk.startsWith(PRODUCER_ENTRY_PREFIX)) expiries.set(sk, options?.expiresAt);
      return put(pk, sk, value, condition, options);
    };
    for (let id = 1; id <= PRODUCER_CACHE_SIZE + 1; id++)
      await inner.metadata.put(producerPk(id), PRODUCER_META_SK, { epoch: 0 });
    const topic = await h.topic();
    const pk = partitionPk(topic.name, 0);
    for (let sequence = 0; sequence < 3; sequence++) expect(await send(topic, 1, sequence)).toMatchObject({ ok: true });
    const lastSend = clock.now();
    // The others' commits let producer 1 go from the cache into its item.
    for (let id = 2; id <= PRODUCER_CACHE_SIZE + 1; id++) expect(await send(topic, id, 0)).toMatchObject({ ok: true });
    const item = await inner.metadata.get<{ updatedAt: number }>(pk, `${PRODUCER_ENTRY_PREFIX}1`);
    // The state keeps a producer's last send to the second.
    expect(lastSend - item!.value.updatedAt).toBeLessThan(1000);
    expect(expiries.get(`${PRODUCER_ENTRY_PREFIX}1`)).toBe(item!.value.updatedAt + PRODUCER_ID_EXPIRATION_MS);
    // Within the expiration the producer is known: a gap is refused.
    expect(await send(topic, 1, 7)).toMatchObject({ ok: false, error: { errorName: 'OUT_OF_ORDER_SEQUENCE_NUMBER' } });
    // Past it, the partition knows nothing of the producer (its item is read as no entry, and may be
    // gone): a batch that goes on from its old sequence is refused, nothing appended, and the
    // producer starts again at sequence 0 under a bumped epoch (KIP-360), as the client does.
    clock.advance(PRODUCER_ID_EXPIRATION_MS);
    const hw = (await h.log.state(topic, 0)).highWatermark;
    expect(await send(topic, 1, 3)).toMatchObject({ ok: false, error: { errorName: 'OUT_OF_ORDER_SEQUENCE_NUMBER' } });
    expect((await h.log.state(topic, 0)).highWatermark).toBe(hw);
    await inner.metadata.put(producerPk(1), PRODUCER_META_SK, { epoch: 1 });
    expect(await send(topic, 1, 0, 1)).toMatchObject({ ok: true, info: { baseOffset: hw } });
    expect(await send(topic, 1, 1, 1)).toMatchObject({ ok: true, info: { baseOffset: hw + 1 } });
  });
});
