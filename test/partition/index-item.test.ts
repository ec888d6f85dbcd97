import { describe, expect, it } from 'vitest';
import { expandIndexItems, isPacked, packCommits, unpackCommits } from '../../src/partition/index-item.js';
import type { CommitRecord } from '../../src/partition/partition-state.js';
import { indexSk, newRequestObjectKey, partitionPk } from '../../src/storage/key-layout.js';
import { itemBytes } from '../../src/storage/observed-stores.js';

const topicId = 'Zm9sZC10b3BpYy1pZA';

/** Commits of a partition as a producer spreading ~1 MB requests over many partitions makes them (`varied`: counts and places that change every time). */
function commits(n: number, producer = false, varied = false): CommitRecord[] {
  const out: CommitRecord[] = [];
  let offset = 0;
  let now = 1_765_000_000_000;
  for (let i = 0; i < n; i++) {
    const count = varied ? 10 + (i % 3) : 10;
    now += 7;
    const start = varied ? 10_000 * (i % 5) : 30_000;
    out.push({
      topicId,
      baseOffset: offset,
      lastOffset: offset + count - 1,
      recordCount: count,
      maxTimestamp: now - 2,
      leaderEpoch: i < n / 2 ? 0 : 1,
      objectKey: newRequestObjectKey(topicId, now, 2),
      start,
      end: start + 10_240 + (varied ? i : Math.floor(i / 4)),
      stores: i < n / 2 ? [0, 1, 2] : [0, 2],
      ...(producer && {
        producer: {
          producerId: i < n / 2 ? 7 : 8,
          producerEpoch: 0,
          baseSequence: offset,
          lastSequence: offset + count - 1,
          ...(i >= n / 2 && { transactional: true as const }),
        },
      }),
    });
    offset += count;
  }
  return out;
}

describe('a packed index item', () => {
  it('holds a fold of 64 commits in under 1 KB and gives them back as they were', () => {
    for (const producer of [false, true]) {
      const all = commits(64, producer);
      const packed = packCommits(topicId, all);
      expect(isPacked(packed)).toBe(true);
      expect(unpackCommits(packed)).toEqual(all);
      // One write unit as DynamoDB bills it, keys included.
      expect(itemBytes(partitionPk('a-topic', 99), indexSk(0), 12, packed)).toBeLessThanOrEqual(1024);
      const varied = commits(64, producer, true);
      expect(unpackCommits(packCommits(topicId, varied))).toEqual(varied);
    }
  });

  it('keeps what it cannot pack (markers, other keys, other incarnations) whole', () => {
    const [a, b, c] = commits(3, true);
    const marker: CommitRecord = {
      ...b!,
      recordCount: 1,
      lastOffset: b!.baseOffset,
      objectKey: `segments/${topicId}/0/00000000000000000010-1765000000000-abcdef123456`,
      control: { type: 'ABORT', producerId: 7, producerEpoch: 0, firstOffset: 0, lastStableOffset: 11 },
    };
    const other = {
      ...c!,
      baseOffset: 11,
      lastOffset: 22,
      topicId: 'older',
      producer: { ...c!.producer!, baseSequence: 5, lastSequence: 99 },
    };
    const all = [a!, marker, other];
    expect(unpackCommits(packCommits(topicId, all))).toEqual(all);
  });

  it('expands into entries that name the item they are stored in', () => {
    const all = commits(4);
    const packed = packCommits(topicId, all);
    const item = { pk: 'p', sk: 'idx#0', version: 3, value: packed };
    const single = { pk: 'p', sk: 'idx#9', version: 1, value: all[0]! };
    const forward = expandIndexItems([item, single]);
    expect(forward.map((e) => e.value)).toEqual([...all, all[0]]);
    expect(forward[2]).toMatchObject({ sk: 'idx#0', version: 3, itemFirst: 0, itemLast: all[3]!.lastOffset });
    expect(expandIndexItems([item], true).map((e) => e.value.baseOffset)).toEqual(
      all.map((c) => c.baseOffset).reverse(),
    );
  });
});
