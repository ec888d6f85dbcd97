/**
 * Finding 4 of issue 12: a ghost member from one join whose answer was lost. The group write of a
 * join applied, its answer was lost and the SDK sent it again; the retry failed its condition against
 * the join's own write, and the coordinator ran the join again on top of it, minting a second member.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GroupCoordinator } from '../../src/groups/coordinator.js';
import { TopicRegistry } from '../../src/topics/topics.js';
import { createDynamoDbClient, DynamoDbMetadataStore } from '../../src/storage/dynamodb-metadata-store.js';
import type { MetadataStore } from '../../src/storage/ports.js';
import { localBackend, memoryBackend } from '../support/backends.js';
import { installAnswerDropper } from '../support/dynamodb-faults.js';
import { dynamoDbClientOptions, startDynalite, type DynaliteHandle } from '../support/emulators.js';
import { FaultyMetadataStore } from '../support/fault-injection.js';
import { manualClock } from './helpers.js';

async function joinTwiceThroughLostAnswers(metadata: MetadataStore, loseNextGroupAnswer: () => void) {
  const clock = manualClock();
  const topics = new TopicRegistry(metadata, clock, 1);
  await topics.create({ name: 't', partitionCount: 2, replicationFactor: 1 });
  const coordinator = new GroupCoordinator({ metadata, clock, topics });
  loseNextGroupAnswer();
  const a = await coordinator.heartbeat('g', { memberId: '', memberEpoch: 0, subscribedTopics: ['t'] });
  loseNextGroupAnswer();
  const b = await coordinator.heartbeat('g', { memberId: '', memberEpoch: 0, subscribedTopics: ['t'] });
  const group = await coordinator.get('g');
  expect(Object.keys(group.members).sort()).toEqual([a.memberId, b.memberId].sort());
  // A heartbeat and a leave whose answers are lost are answered as what they did, too.
  loseNextGroupAnswer();
  clock.advance(15_000); // a third of the session: a heartbeat that is written
  const beat = await coordinator.heartbeat('g', { memberId: b.memberId, memberEpoch: b.memberEpoch });
  expect(beat).toMatchObject({ memberId: b.memberId });
  expect(beat.memberEpoch).toBeGreaterThan(0);
  loseNextGroupAnswer();
  await coordinator.leave('g', a.memberId);
  expect(Object.keys((await coordinator.get('g')).members)).toEqual([b.memberId]);
}

describe('a group write whose answer was lost and which the SDK retried', () => {
  let ddb: DynaliteHandle;
  beforeAll(async () => {
    ddb = await startDynalite();
  });
  afterAll(() => ddb.stop());

  it('joins one member per join on the DynamoDB adapter (dynalite, answer dropped under the SDK retry)', async () => {
    const client = createDynamoDbClient(dynamoDbClientOptions(ddb.endpoint));
    const dropper = installAnswerDropper(client);
    try {
      await joinTwiceThroughLostAnswers(new DynamoDbMetadataStore({ table: ddb.table, client }), () =>
        dropper.drop({ command: 'UpdateItemCommand', match: (k) => k.pk === 'group#g' && k.sk === 'meta' }),
      );
      expect(dropper.dropped).toBe(4);
    } finally {
      client.destroy();
    }
  });

  for (const backend of [memoryBackend, localBackend]) {
    it(`joins one member per join on ${backend.name} (the write applied, then sent again)`, async () => {
      const { storage, stop } = await backend.start();
      try {
        const metadata = new FaultyMetadataStore(storage.metadata);
        await joinTwiceThroughLostAnswers(metadata, () =>
          metadata.faults.fail('put', { when: 'retried', match: (k) => k === 'group#g|meta' }),
        );
        expect(metadata.faults.injected).toBe(4);
      } finally {
        await stop();
      }
    });
  }
});
