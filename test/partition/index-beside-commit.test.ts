/**
 * Step 4 of the commit protocol beside step 3 (docs/architecture.md): where the metadata store
 * writes one item at a time (DynamoDB; the memory store models it), a commit's index entry is
 * written IF absent at the same time as the partition state's conditional write. Each case stops
 * a writer between the two writes, or makes the state write fail or lose its race after the entry
 * landed, and checks what a reader sees and that the next commit leaves the index right.
 */
import { describe, expect, it } from 'vitest';
import type { PartitionLog } from '../../src/log/partition-log.js';
import type { CommitRecord } from '../../src/partition/partition-state.js';
import { initializeFeatureLevel } from '../../src/storage/feature-level.js';
import { COMMIT_LOG_LEVEL, INDEX_BESIDE_COMMIT_LEVEL } from '../../src/storage/formats.js';
import { indexSk, partitionPk, STATE_SK } from '../../src/storage/key-layout.js';
import { MemoryMetadataStore } from '../../src/storage/memory-metadata-store.js';
import { MemoryObjectStore } from '../../src/storage/memory-object-store.js';
import { TopicRegistry, type Topic } from '../../src/topics/topics.js';
import { FaultyMetadataStore } from '../support/fault-injection.js';
import { clock, newLog, rec } from '../support/partition-logs.js';
import { readRecords } from '../support/read-records.js';

const isState = (k: string) => k.startsWith('part#') && k.endsWith(`|${STATE_SK}`);
const isIndex = (k: string) => k.startsWith('part#') && k.includes('|idx#');

async function setup() {
  const inner = new MemoryMetadataStore();
  const stores = [new MemoryObjectStore()];
  // A new cluster: at the newest level, which writes the entry beside the state.
  expect(await initializeFeatureLevel(inner, Date.now())).toBeGreaterThanOrEqual(INDEX_BESIDE_COMMIT_LEVEL);
  // A topic of the per-partition commit (below COMMIT_LOG_LEVEL): this is its protocol.
  const topic = await new TopicRegistry(inner, clock, 1, { featureLevel: async () => COMMIT_LOG_LEVEL - 1 }).create({
    name: `t-${Math.random().toString(36).slice(2)}`,
    partitionCount: 1,
    replicationFactor: 1,
  });
  /** A process: its own log over the shared table, its faults its own. */
  const process = () => {
    const metadata = new FaultyMetadataStore(inner);
    return { metadata, log: newLog(metadata, stores) };
  };
  const append = async (log: PartitionLog, value: string) =>
    (await log.append(topic, [{ partition: 0, records: [rec(value)] }])).get(0)!;
  const read = async (from = 0) => {
    const r = await readRecords(newLog(inner, stores), topic, 0, from, 1 << 20);
    return {
      hw: r.highWatermark,
      records: r.records.map((x) => [x.offset, Buffer.from(x.value!).toString()] as const),
    };
  };
  const entryAt = async (offset: number) =>
    (await inner.get<CommitRecord>(partitionPk(topic.name, 0), indexSk(offset)))?.value;
  const objectOf = async (offset: number) =>
    (await inner.get<{ lastCommit?: CommitRecord }>(partitionPk(topic.name, 0), STATE_SK))?.value.lastCommit
      ?.baseOffset === offset
      ? (await inner.get<{ lastCommit: CommitRecord }>(partitionPk(topic.name, 0), STATE_SK))!.value.lastCommit
          .objectKey
      : undefined;
  return { inner, topic: topic as Topic, process, append, read, entryAt, objectOf };
}

describe('the index entry written beside the state write', () => {
  it('lands before the commit: a reader sees nothing past the high watermark until the commit does', async () => {
    const t = await setup();
    const a = t.process();
    expect(await t.append(a.log, 'first')).toMatchObject({ ok: true, info: { baseOffset: 0 } });
    const held = a.metadata.faults.gate('put', isState);
    const pending = t.append(a.log, 'second');
    await held.reached;
    // The entry for offset 1 is in the table, the state still ends at 1.
    for (let i = 0; i < 50 && !(await t.entryAt(1)); i++) await new Promise((r) => setTimeout(r, 2));
    expect(await t.entryAt(1)).toMatchObject({ baseOffset: 1 });
    expect(await t.read()).toEqual({ hw: 1, records: [[0, 'first']] });
    expect((await t.read(1)).records).toEqual([]);
    held.release();
    expect(await pending).toMatchObject({ ok: true, info: { baseOffset: 1 } });
    expect(await t.read()).toEqual({
      hw: 2,
      records: [
        [0, 'first'],
        [1, 'second'],
      ],
    });
  });

  it('of a state write that failed: the offset stays free, and the next commit there replaces the entry', async () => {
    const t = await setup();
    const a = t.process();
    a.metadata.faults.fail('put', { match: isState });
    const failed = await t.append(a.log, 'lost');
    expect(failed.ok).toBe(false);
    // The failed writer's entry is at the log end, where nothing is committed: no reader takes it.
    expect(await t.entryAt(0)).toMatchObject({ baseOffset: 0 });
    expect(await t.read()).toEqual({ hw: 0, records: [] });
    const b = t.process();
    expect(await t.append(b.log, 'kept')).toMatchObject({ ok: true, info: { baseOffset: 0 } });
    expect(await t.read()).toEqual({ hw: 1, records: [[0, 'kept']] });
    expect((await t.entryAt(0))?.objectKey).toBe(await t.objectOf(0));
  });

  it("of a writer that lost its race sits at the winner's offset: readers take the winner, who dies before replacing it, and the next commit repairs it", async () => {
    const t = await setup();
    const loser = t.process();
    const winner = t.process();
    // The loser's entry lands and its state write waits; the winner commits at the same offset
    // and dies before its own entry is written (its index write fails, not applied).
    const held = loser.metadata.faults.gate('put', isState);
    const losing = t.append(loser.log, 'loser');
    await held.reached;
    for (let i = 0; i < 50 && !(await t.entryAt(0)); i++) await new Promise((r) => setTimeout(r, 2));
    winner.metadata.faults.fail('put', { match: isIndex, times: 2 });
    expect(await t.append(winner.log, 'winner')).toMatchObject({ ok: true, info: { baseOffset: 0 } });
    const stray = await t.entryAt(0);
    expect(stray?.objectKey).not.toBe(await t.objectOf(0));
    // The stray entry at the last commit's offset is not the log: the reader takes the last commit.
    expect(await t.read()).toEqual({ hw: 1, records: [[0, 'winner']] });
    // The loser's state write now loses its condition; it commits after the winner, repairing first.
    held.release();
    expect(await losing).toMatchObject({ ok: true, info: { baseOffset: 1 } });
    const repaired = await t.entryAt(0);
    expect(repaired?.objectKey).not.toBe(stray?.objectKey);
    expect(await t.read()).toEqual({
      hw: 2,
      records: [
        [0, 'winner'],
        [1, 'loser'],
      ],
    });
    expect((await t.entryAt(1))?.objectKey).toBe(await t.objectOf(1));
  });

  it('with an ambiguous state write (applied, answer lost, sent again): committed once, its entry in place', async () => {
    const t = await setup();
    const a = t.process();
    expect(await t.append(a.log, 'first')).toMatchObject({ ok: true });
    a.metadata.faults.fail('put', { when: 'retried', match: isState });
    expect(await t.append(a.log, 'second')).toMatchObject({ ok: true, info: { baseOffset: 1 } });
    expect(a.metadata.faults.injected).toBe(1);
    expect(await t.read()).toEqual({
      hw: 2,
      records: [
        [0, 'first'],
        [1, 'second'],
      ],
    });
    expect((await t.entryAt(1))?.objectKey).toBe(await t.objectOf(1));
  });
});
