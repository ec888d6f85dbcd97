import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isKafkaError } from '../../src/wire/errors.js';
import { OffsetIndex } from '../../src/partition/offset-index.js';
import { initialPartitionState, type CommitRecord, type PartitionState } from '../../src/partition/partition-state.js';
import { withinEpoch } from '../../src/partition/epoch-history.js';
import { CountingMetadataStore } from '../../src/storage/counting-stores.js';
import { MemoryMetadataStore } from '../../src/storage/memory-metadata-store.js';
import type { MetadataStore } from '../../src/storage/ports.js';
import { indexSk, partitionPk } from '../../src/storage/key-layout.js';
import { packCommits, packedRowsDecoded } from '../../src/partition/index-item.js';

const TOPIC = 't';
const TOPIC_ID = 'id-1';
const KiB = 1024;
const MiB = 1024 * KiB;

const commit = (
  baseOffset: number,
  recordCount: number,
  bytes: number,
  extra: Partial<CommitRecord> = {},
): CommitRecord => ({
  topicId: TOPIC_ID,
  baseOffset,
  lastOffset: baseOffset + recordCount - 1,
  recordCount,
  maxTimestamp: 1_700_000_000_000 + baseOffset,
  leaderEpoch: 0,
  objectKey: `objects/${baseOffset}`,
  start: 0,
  end: bytes,
  stores: [0],
  ...extra,
});

/** A partition of `sizes.length` commits of 10 records each, in `store`; its state has the last one. */
async function partition(store: MetadataStore, sizes: number[]): Promise<PartitionState> {
  const index = new OffsetIndex(store);
  const commits = sizes.map((bytes, i) => commit(i * 10, 10, bytes));
  for (const c of commits) await index.put(TOPIC, 0, c);
  const state = initialPartitionState(TOPIC_ID, 0, 1, 1);
  const end = commits.length * 10;
  return {
    ...state,
    highWatermark: end,
    replicaLeo: { '0': end },
    ...(commits.length > 0 && { lastCommit: commits.at(-1)! }),
  };
}

/**
 * entriesFrom as it was with fixed 64-entry pages: the reference the sized pages must agree with.
 * Where it answers nothing below `to`, entriesFrom now fails (KAFKA_STORAGE_ERROR) instead.
 */
async function referenceEntriesFrom(
  store: MetadataStore,
  state: PartitionState,
  from: number,
  to: number,
  maxBytes: number,
): Promise<CommitRecord[]> {
  const pk = partitionPk(TOPIC, 0);
  const own = (e: CommitRecord) => e.topicId === state.topicId && withinEpoch(state.epochHistory, e);
  const all: CommitRecord[] = [];
  const floor = (await store.query<CommitRecord>(pk, { lte: indexSk(from), gte: 'idx#', reverse: true, limit: 4 }))
    .map((i) => i.value)
    .find(own);
  if (floor && floor.lastOffset >= from) all.push(floor);
  all.push(
    ...(await store.query<CommitRecord>(pk, { gt: indexSk(from), lt: indexSk(to) })).map((i) => i.value).filter(own),
  );
  const out: CommitRecord[] = [];
  let next = from;
  let bytes = 0;
  for (const e of all) {
    if (e.lastOffset < next) continue;
    if (e.baseOffset > next) break;
    if (out.length > 0 && bytes + e.end - e.start > maxBytes) return out;
    out.push(e);
    bytes += e.end - e.start;
    next = e.lastOffset + 1;
    if (next >= to || bytes >= maxBytes) return out;
  }
  const last = state.lastCommit;
  if (
    next < to &&
    last &&
    last.topicId === state.topicId &&
    last.baseOffset <= next &&
    last.lastOffset >= next &&
    (out.length === 0 || bytes + last.end - last.start <= maxBytes)
  )
    out.push(last);
  return out;
}

describe('OffsetIndex.entriesFrom paging', () => {
  it('reads a handful of index entries for a 1 MiB fetch over a long partition, not 64', async () => {
    const inner = new MemoryMetadataStore();
    const state = await partition(
      inner,
      Array.from({ length: 2000 }, () => 512 * KiB),
    );
    const counting = new CountingMetadataStore(inner);
    const entries = await new OffsetIndex(counting).entriesFrom(TOPIC, 0, state, 10_005, state.highWatermark, MiB);
    expect(entries.map((e) => e.baseOffset)).toEqual([10_000, 10_010]);
    // The floor lookup (the nearest entry, its own here) and one first page of 2: before, that
    // page was 64 entries, and the floor lookup read 4.
    expect(counting.counts.query).toBe(2);
    expect(counting.counts.queryItems).toBe(3);
    expect(counting.counts.readUnits).toBe(2);
  });

  it('keeps the number of queries small when entries are far smaller than the last commit', async () => {
    const inner = new MemoryMetadataStore();
    // 3000 commits of 1 KiB, then one of 4 MiB (a merged segment, say): the guess is 1 entry per MiB.
    const state = await partition(inner, [...Array.from({ length: 3000 }, () => KiB), 4 * MiB]);
    const counting = new CountingMetadataStore(inner);
    const entries = await new OffsetIndex(counting).entriesFrom(TOPIC, 0, state, 0, state.highWatermark, MiB);
    expect(entries).toHaveLength(1024);
    expect(entries).toEqual(await referenceEntriesFrom(inner, state, 0, state.highWatermark, MiB));
    // Pages grow from the estimate of the entries read (and at least double): 2, then 256 each.
    expect(counting.counts.query).toBeLessThanOrEqual(7);
    expect(counting.counts.queryItems).toBeLessThanOrEqual(1024 + 256 + 4);
  });

  it('pages by 64 when the scan has no byte budget, as before', async () => {
    const inner = new MemoryMetadataStore();
    const state = await partition(
      inner,
      Array.from({ length: 200 }, () => KiB),
    );
    const counting = new CountingMetadataStore(inner);
    const seen: number[] = [];
    for await (const e of new OffsetIndex(counting).scan(TOPIC, 0, TOPIC_ID, 0, state.highWatermark))
      seen.push(e.baseOffset);
    expect(seen).toEqual(Array.from({ length: 200 }, (_, i) => i * 10));
    expect(counting.counts.query).toBe(1 + Math.ceil(199 / 64)); // the floor, then pages of 64
  });

  it('returns what fixed 64-entry pages returned, for any sizes, with stale, foreign, truncated and missing entries', async () => {
    const entry = fc.record({
      recordCount: fc.integer({ min: 1, max: 20 }),
      bytes: fc.oneof(
        fc.integer({ min: 1, max: 4 * KiB }),
        fc.integer({ min: 64 * KiB, max: 2 * MiB }),
        fc.constant(0),
      ),
      kind: fc.constantFrom('own', 'own', 'own', 'foreign', 'stale', 'truncated'),
    });
    await fc.assert(
      fc.asyncProperty(
        fc.array(entry, { minLength: 1, maxLength: 300 }),
        fc.double({ min: 0, max: 1, noNaN: true }),
        fc.constantFrom(1, 4 * KiB, 100 * KiB, MiB, 8 * MiB),
        fc.boolean(),
        fc.boolean(),
        async (specs, at, maxBytes, withLastCommit, lastIndexed) => {
          const store = new MemoryMetadataStore();
          const index = new OffsetIndex(store);
          let offset = 0;
          let last: CommitRecord | undefined;
          for (const [i, s] of specs.entries()) {
            const c = commit(offset, s.recordCount, s.bytes, { leaderEpoch: s.kind === 'truncated' ? 0 : 1 });
            // Inside this commit's offsets (no other entry starts there), written before it:
            // a deleted topic's leftover entry, or one that a covering entry replaced (segment merge).
            // A one-record commit has no offset inside it: offset + 1 is where the next commit starts.
            const inside = s.recordCount > 1;
            if (inside && s.kind === 'foreign')
              await index.put(TOPIC, 0, commit(offset + 1, 1, s.bytes, { topicId: 'id-0' }));
            if (inside && s.kind === 'stale')
              await index.put(TOPIC, 0, commit(offset + 1, 1, s.bytes, { leaderEpoch: 1 }));
            // The last commit's index write may not have landed (entriesFrom repairs it from the state).
            if (i < specs.length - 1 || lastIndexed) await index.put(TOPIC, 0, c);
            last = c;
            offset += s.recordCount;
          }
          const state: PartitionState = {
            ...initialPartitionState(TOPIC_ID, 0, 1, 1),
            // Epoch 1 started at 0; epoch 0's entries are a truncated tail.
            epochHistory: [
              { epoch: 0, startOffset: 0 },
              { epoch: 1, startOffset: 0 },
            ],
            highWatermark: offset,
            replicaLeo: { '0': offset },
            ...(withLastCommit && last && { lastCommit: last }),
          };
          const from = Math.min(Math.floor(at * offset), Math.max(offset - 1, 0));
          const expected = await referenceEntriesFrom(store, state, from, offset, maxBytes);
          const actual = new OffsetIndex(store).entriesFrom(TOPIC, 0, state, from, offset, maxBytes);
          if (expected.length === 0 && from < offset)
            await expect(actual).rejects.toSatisfy((e) => isKafkaError(e, 'KAFKA_STORAGE_ERROR'));
          else expect(await actual).toEqual(expected);
        },
      ),
      { numRuns: 150, ...(process.env.FC_SEED && { seed: Number(process.env.FC_SEED), path: process.env.FC_PATH }) },
    );
  });
});

describe('OffsetIndex reads of a packed item', () => {
  /** Commit `i` of 10 records, as a request object of the topic, packed as a row. */
  const packable = (i: number, extra: Partial<CommitRecord> = {}) =>
    commit(i * 10, 10, KiB, {
      objectKey: `data/${TOPIC_ID}/a/${String(1_700_000_000_000 + i).padStart(13, '0')}-a${i.toString(16).padStart(11, '0')}.v2`,
      start: i * KiB,
      end: (i + 1) * KiB,
      ...extra,
    });
  /** A partition whose index is one packed item of `commits` (a fold's) at offset 0. */
  async function packedPartition(store: MetadataStore, commits: CommitRecord[]): Promise<PartitionState> {
    await store.put(partitionPk(TOPIC, 0), indexSk(0), packCommits(TOPIC_ID, commits));
    const end = commits.at(-1)!.lastOffset + 1;
    return { ...initialPartitionState(TOPIC_ID, 0, 1, 1), highWatermark: end, replicaLeo: { '0': end } };
  }
  const fold = Array.from({ length: 64 }, (_, i) => packable(i));

  it('decodes each row once in a process over reads of one entry each, not the whole item per read', async () => {
    const store = new MemoryMetadataStore();
    const state = await packedPartition(store, fold);
    const before = packedRowsDecoded();
    // A consumer that reads one batch per fetch (max bytes 1), from the middle of each batch too.
    for (let i = 0; i < 64; i++)
      for (const from of [i * 10, i * 10 + 7])
        expect(await new OffsetIndex(store).entriesFrom(TOPIC, 0, state, from, state.highWatermark, 1)).toEqual([
          fold[i],
        ]);
    // Each read expanding the item would be 128 x 64 rows.
    expect(packedRowsDecoded() - before).toBe(64);
  });

  it('decodes a read from the middle of an item up to the entry it starts at', async () => {
    const store = new MemoryMetadataStore();
    const state = await packedPartition(store, fold);
    const before = packedRowsDecoded();
    const entries = await new OffsetIndex(store).entriesFrom(TOPIC, 0, state, 325, state.highWatermark, 2 * KiB);
    expect(entries).toEqual([fold[32], fold[33]]);
    expect(packedRowsDecoded() - before).toBe(34);
  });

  it('counts its pages in items: a fetch over packed items reads about the items it takes', async () => {
    const inner = new MemoryMetadataStore();
    // 40 folds of 64 commits of 1 KiB each; the partition of a topic with a commit log.
    const all = Array.from({ length: 40 * 64 }, (_, i) => packable(i));
    for (let f = 0; f < 40; f++)
      await inner.put(partitionPk(TOPIC, 0), indexSk(f * 640), packCommits(TOPIC_ID, all.slice(f * 64, (f + 1) * 64)));
    const end = all.length * 10;
    const state: PartitionState = {
      ...initialPartitionState(TOPIC_ID, 0, 1, 1),
      highWatermark: end,
      replicaLeo: { '0': end },
      clog: 0,
      lastCommit: all.at(-1)!,
    };
    for (const [maxBytes, taken, items] of [
      [64 * KiB, 64, 3], // the floor item holds them all; the first page (2 items) went with it
      [MiB, 1024, 1 + 2 + 13], // then one page sized by the commits per item read: the 16 it takes
    ] as const) {
      const counting = new CountingMetadataStore(inner);
      const entries = await new OffsetIndex(counting).entriesFrom(TOPIC, 0, state, 5, end, maxBytes);
      expect(entries).toEqual(all.slice(0, taken));
      // Counted in entries, the first page of a 64 KiB fetch was 64 items, of a 1 MiB one 256.
      expect(counting.counts.queryItems).toBe(items);
    }
  });

  it('reads an item written again at its key as it is now, not as this process decoded it', async () => {
    const store = new MemoryMetadataStore();
    const state = await packedPartition(store, fold);
    const index = new OffsetIndex(store);
    expect(await index.entriesFrom(TOPIC, 0, state, 100, state.highWatermark, 1)).toEqual([fold[10]]);
    // Deleted and written again (a purged incarnation's key taken by the next): the same key and
    // version, other commits.
    const again = fold.map((c, i) => packable(i, { start: c.start + 1, end: c.end + 1, leaderEpoch: 0 }));
    await store.delete(partitionPk(TOPIC, 0), indexSk(0));
    await store.put(partitionPk(TOPIC, 0), indexSk(0), packCommits(TOPIC_ID, again));
    expect(await index.entriesFrom(TOPIC, 0, state, 100, state.highWatermark, 1)).toEqual([again[10]]);
  });
});

describe('OffsetIndex aborted transactions', () => {
  const abort = (markerOffset: number, firstOffset: number, leaderEpoch: number): CommitRecord =>
    commit(markerOffset, 1, 100, {
      leaderEpoch,
      control: { type: 'ABORT', producerId: 7, producerEpoch: 0, firstOffset },
    });

  it("leaves out an abort whose marker its epoch's truncation removed, once the log has grown past it again", async () => {
    const store = new MemoryMetadataStore();
    const index = new OffsetIndex(store);
    // Epoch 0 aborted producer 7's transaction at 100; an election truncated epoch 0 at 95, and
    // epoch 1 wrote on to 200 (producer 7's next transaction among it). Epoch 1 aborts one at 150.
    await index.put(TOPIC, 0, abort(100, 90, 0));
    await index.put(TOPIC, 0, abort(150, 140, 1));
    const state: PartitionState = {
      ...initialPartitionState(TOPIC_ID, 0, 1, 1),
      epochHistory: [
        { epoch: 0, startOffset: 0 },
        { epoch: 1, startOffset: 95 },
      ],
      leaderEpoch: 1,
      highWatermark: 200,
      replicaLeo: { '0': 200 },
    };
    const aborted = await index.collectAbortedTransactions(TOPIC, 0, state, 0, 200);
    expect(aborted.map((a) => [a.firstOffset, a.lastOffset])).toEqual([[140, 150]]);
  });
});
