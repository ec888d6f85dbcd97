/**
 * Finding 3 of issue 12: a departed member's slow offset commit was accepted over the new owner's.
 * The commit was validated against the group item and then written unconditionally; here its write
 * is held (SDK back-off, a frozen Lambda) while the member leaves and the new owner commits.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { isKafkaError } from '../../src/wire/errors.js';
import { createGroups, type GroupServices } from '../../src/groups/index.js';
import { PartitionLog } from '../../src/log/partition-log.js';
import { ReplicaManager } from '../../src/replication/replica-manager.js';
import { SystemTimer } from '../../src/timer/system-timer.js';
import { TopicRegistry } from '../../src/topics/topics.js';
import { allBackends } from '../support/backends.js';
import { FaultyMetadataStore } from '../support/fault-injection.js';
import { manualClock } from './helpers.js';

describe.each(allBackends)('an offset commit that lands after its member lost the partition, on $name', (backend) => {
  let stop: () => Promise<void>;
  let metadata: FaultyMetadataStore;
  let groups: GroupServices;

  beforeEach(async () => {
    const started = await backend.start();
    stop = started.stop;
    metadata = new FaultyMetadataStore(started.storage.metadata);
    const clock = manualClock();
    const topics = new TopicRegistry(metadata, clock, 1);
    await topics.create({ name: 't', partitionCount: 1, replicationFactor: 1 });
    const stores = started.storage.stores;
    const log = new PartitionLog({
      metadata,
      stores,
      clock,
      leadership: new ReplicaManager({ metadata, stores, clock }),
    });
    const timer = new SystemTimer();
    timer.startRealTime(); // as createServices does: the consumer-poll purgatory runs on it
    groups = createGroups({ metadata, clock, topics, log, timer });
  });
  afterEach(() => stop());

  it('is refused, and the new owner commit stays', async () => {
    const { coordinator, offsets } = groups;
    const a = await coordinator.heartbeat('g', { memberId: '', memberEpoch: 0, subscribedTopics: ['t'] });
    expect(a.assignment).toEqual({ t: [0] });
    // A's commit is validated, then its write is held.
    const held = metadata.faults.gate('put', (k) => k === 'group#g|off#t#0');
    const stale = offsets.commit('g', {
      memberId: a.memberId,
      generation: a.memberEpoch,
      offsets: [{ topic: 't', partition: 0, offset: 100 }],
    });
    await held.reached;
    await coordinator.leave('g', a.memberId);
    const b = await coordinator.heartbeat('g', { memberId: '', memberEpoch: 0, subscribedTopics: ['t'] });
    expect(b.assignment).toEqual({ t: [0] });
    await offsets.commit('g', {
      memberId: b.memberId,
      generation: b.memberEpoch,
      offsets: [{ topic: 't', partition: 0, offset: 7 }],
    });
    held.release();
    await expect(stale).rejects.toSatisfy(
      (e) => isKafkaError(e, 'UNKNOWN_MEMBER_ID') || isKafkaError(e, 'ILLEGAL_GENERATION'),
    );
    expect((await offsets.committed('g')).map((r) => [r.partition, r.offset, r.generation])).toEqual([
      [0, 7, b.memberEpoch],
    ]);
  });

  it('is refused when it lands before the new owner commits anything', async () => {
    const { coordinator, offsets } = groups;
    const a = await coordinator.heartbeat('g', { memberId: '', memberEpoch: 0, subscribedTopics: ['t'] });
    await offsets.commit('g', {
      memberId: a.memberId,
      generation: a.memberEpoch,
      offsets: [{ topic: 't', partition: 0, offset: 5 }],
    });
    const held = metadata.faults.gate('put', (k) => k === 'group#g|off#t#0');
    const stale = offsets.commit('g', {
      memberId: a.memberId,
      generation: a.memberEpoch,
      offsets: [{ topic: 't', partition: 0, offset: 100 }],
    });
    await held.reached;
    await coordinator.leave('g', a.memberId);
    await coordinator.heartbeat('g', { memberId: '', memberEpoch: 0, subscribedTopics: ['t'] });
    held.release();
    await expect(stale).rejects.toSatisfy((e) => isKafkaError(e, 'UNKNOWN_MEMBER_ID'));
    expect((await offsets.committed('g')).map((r) => r.offset)).toEqual([5]);
  });
});
