/**
 * A group's committed offsets share its DynamoDB partition key (`group#{id}`), which takes 1,000
 * write units a second. An OffsetCommit of 300 offsets with 4 KB of metadata (Kafka's most: 5
 * units each) wrote 1,500 units at once there, throttled; a commit's writes are now paced on the
 * key as an EndTxn's are (storage/write-pace.ts), for a KIP-848 member's commit (the HTTP API's
 * and Kafka's OffsetCommit v9+) and a classic or memberless one (GroupOffsets.write), and every
 * offset is still committed once, also when a write's answer was lost and the SDK retried it.
 *
 * Time is simulated (test/support/paced-writes.ts): the figures are the pace, not this machine.
 */
import { describe, expect, it } from 'vitest';
import type { Storage } from '../../src/compose.js';
import { createGroups } from '../../src/groups/index.js';
import { PartitionLog } from '../../src/log/partition-log.js';
import { ReplicaManager } from '../../src/replication/replica-manager.js';
import { OFFSET_REFRESH_MS } from '../../src/groups/offset-record.js';
import { groupPk, OFFSET_PREFIX, offsetSk } from '../../src/storage/key-layout.js';
import { PACED_WRITE_BURST, PACED_WRITE_RATE } from '../../src/storage/write-pace.js';
import { SystemTimer } from '../../src/timer/system-timer.js';
import { TopicRegistry } from '../../src/topics/topics.js';
import { memoryBackend } from '../support/backends.js';
import { SimulatedTime, WriteUnitsPerKey } from '../support/paced-writes.js';

const PARTITIONS = 300;
const METADATA = 'm'.repeat(4096);
/** 300 offsets of 5 units, past the first PACED_WRITE_BURST: 3.5 s at PACED_WRITE_RATE. */
const PACED_MS = ((5 * PARTITIONS - PACED_WRITE_BURST) * 1000) / PACED_WRITE_RATE;

async function setUp() {
  const { storage } = (await memoryBackend.start()) as { storage: Storage };
  const time = new SimulatedTime();
  const metadata = new WriteUnitsPerKey(storage.metadata, time);
  const clock = { now: time.now };
  const topics = new TopicRegistry(metadata, clock, 1);
  await topics.create({ name: 'input', partitionCount: PARTITIONS, replicationFactor: 1 });
  const stores = storage.stores;
  const log = new PartitionLog({
    metadata,
    stores,
    clock,
    leadership: new ReplicaManager({ metadata, stores, clock }),
  });
  const groups = createGroups({ metadata, clock, topics, log, timer: new SystemTimer(), sleep: time.sleep });
  const offsets = (base: number) =>
    Array.from({ length: PARTITIONS }, (_, p) => ({
      topic: 'input',
      partition: p,
      offset: base + p,
      metadata: METADATA,
    }));
  const committed = async () =>
    (await metadata.query<{ offset: number }>(groupPk('g'), { beginsWith: OFFSET_PREFIX }))
      .map((i) => i.value.offset)
      .sort((a, b) => a - b);
  const offsetPuts = (sk?: string) =>
    metadata.puts.filter(
      (p) => p.pk === groupPk('g') && (sk === undefined ? p.sk.startsWith(OFFSET_PREFIX) : p.sk === sk),
    ).length;
  return { time, metadata, groups, offsets, committed, offsetPuts };
}

describe('OffsetCommit writes paced on the group key (memory)', () => {
  it("a member's commit of 300 offsets with 4 KB of metadata keeps under 1,000 write units a second on the key, and all commit", async () => {
    const { time, metadata, groups, offsets, committed, offsetPuts } = await setUp();
    const member = await groups.coordinator.heartbeat('g', {
      memberId: '',
      memberEpoch: 0,
      subscribedTopics: ['input'],
    });
    expect(member.assignment?.input).toHaveLength(PARTITIONS);
    const started = time.now();
    const records = await time.run(
      groups.offsets.commit('g', { memberId: member.memberId, generation: member.memberEpoch, offsets: offsets(1000) }),
    );
    expect(time.now() - started).toBeGreaterThanOrEqual(PACED_MS);
    expect(records).toHaveLength(PARTITIONS);
    expect(await committed()).toEqual(Array.from({ length: PARTITIONS }, (_, p) => 1000 + p));
    expect(offsetPuts()).toBe(PARTITIONS);
    // They were 1,500 units at once on the key.
    expect(metadata.peak(groupPk('g'))).toBeLessThanOrEqual(PACED_WRITE_RATE + PACED_WRITE_BURST + 10);
  });

  it('a classic or memberless commit (GroupOffsets.write) of as many is paced the same way', async () => {
    const { time, metadata, groups, offsets, committed } = await setUp();
    const started = time.now();
    await time.run(groups.offsets.commit('g', { offsets: offsets(5000) }));
    expect(time.now() - started).toBeGreaterThanOrEqual(PACED_MS);
    expect(await committed()).toEqual(Array.from({ length: PARTITIONS }, (_, p) => 5000 + p));
    expect(metadata.peak(groupPk('g'))).toBeLessThanOrEqual(PACED_WRITE_RATE + PACED_WRITE_BURST + 10);
  });

  it('a paced write whose answer was lost and retried by the SDK is recognised, not written again', async () => {
    const { time, metadata, groups, offsets, committed, offsetPuts } = await setUp();
    const member = await groups.coordinator.heartbeat('g', {
      memberId: '',
      memberEpoch: 0,
      subscribedTopics: ['input'],
    });
    // Every tenth partition's write applies and answers as the SDK's retry of it would.
    const ambiguous = new Set(Array.from({ length: PARTITIONS / 10 }, (_, i) => offsetSk('input', i * 10)));
    metadata.loseAnswer = (pk, sk) => pk === groupPk('g') && ambiguous.has(sk);
    const records = await time.run(
      groups.offsets.commit('g', { memberId: member.memberId, generation: member.memberEpoch, offsets: offsets(7000) }),
    );
    expect(records.map((r) => r.offset)).toEqual(Array.from({ length: PARTITIONS }, (_, p) => 7000 + p));
    expect(await committed()).toEqual(Array.from({ length: PARTITIONS }, (_, p) => 7000 + p));
    // Each written once, the ambiguous ones too.
    expect(offsetPuts()).toBe(PARTITIONS);
    expect(offsetPuts(offsetSk('input', 0))).toBe(1);
  });

  it('a commit cut off part way (its request timed out) and sent again writes only what the first try did not', async () => {
    const { time, metadata, groups, offsets, committed, offsetPuts } = await setUp();
    const started = time.now();
    // The first try's writes stop 2 s in, of the 3.5 s it needs: its request's time ran out.
    metadata.refuse = (pk) => pk === groupPk('g') && time.now() - started >= 2000;
    await expect(time.run(groups.offsets.commit('g', { offsets: offsets(9000) }))).rejects.toThrow();
    const first = offsetPuts();
    expect(first).toBeGreaterThan(0);
    expect(first).toBeLessThan(PARTITIONS);
    metadata.refuse = () => false;
    // The client sends the same commit again (another request: another commit id).
    const retried = time.now();
    await time.run(groups.offsets.commit('g', { offsets: offsets(9000) }));
    expect(await committed()).toEqual(Array.from({ length: PARTITIONS }, (_, p) => 9000 + p));
    expect(offsetPuts()).toBe(PARTITIONS);
    // Only the rest was paced: the first try's writes took none of the retry's pace.
    expect(time.now() - retried).toBeLessThan(PACED_MS);
  });

  it("a member's re-commit of the offsets held is a read, answered with what is held", async () => {
    const { time, groups, offsets, offsetPuts } = await setUp();
    const member = await groups.coordinator.heartbeat('g', {
      memberId: '',
      memberEpoch: 0,
      subscribedTopics: ['input'],
    });
    const commit = () =>
      time.run(
        groups.offsets.commit('g', {
          memberId: member.memberId,
          generation: member.memberEpoch,
          offsets: offsets(100),
        }),
      );
    await commit();
    const at = (await groups.offsets.committed('g'))[0]!.commitTimestamp;
    expect(offsetPuts()).toBe(PARTITIONS);
    time.t += 1000;
    const answered = await commit();
    expect(offsetPuts()).toBe(PARTITIONS);
    expect(answered[0]).toMatchObject({ offset: 100, commitTimestamp: at });
  });

  it('a re-commit of the offsets held is a read within OFFSET_REFRESH_MS, and a write refreshing the commit time after', async () => {
    const { time, groups, offsets, offsetPuts } = await setUp();
    const commit = () => time.run(groups.offsets.commit('g', { offsets: offsets(100) }));
    await commit();
    const at = (await groups.offsets.committed('g'))[0]!.commitTimestamp;
    expect(offsetPuts()).toBe(PARTITIONS);
    time.t = at + OFFSET_REFRESH_MS - 1;
    await commit();
    expect(offsetPuts()).toBe(PARTITIONS);
    time.t = at + OFFSET_REFRESH_MS;
    await commit();
    expect(offsetPuts()).toBe(2 * PARTITIONS);
    expect((await groups.offsets.committed('g')).map((r) => r.commitTimestamp)).toEqual(
      Array.from({ length: PARTITIONS }, () => at + OFFSET_REFRESH_MS),
    );
  });
});
