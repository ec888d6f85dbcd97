/**
 * Finding 4 of issue 12: a ghost member from one join whose answer was lost. The group write of a
 * join applied, its answer was lost and the SDK sent it again; the retry failed its condition against
 * the join's own write, and the coordinator ran the join again on top of it, minting a second member.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GroupCoordinator } from '../../src/groups/coordinator.js';
import { TopicRegistry } from '../../src/topics/topics.js';
import { groupMemberSk } from '../../src/storage/key-layout.js';
import { createDynamoDbClient, DynamoDbMetadataStore } from '../../src/storage/dynamodb-metadata-store.js';
import type { MetadataStore } from '../../src/storage/ports.js';
import { localBackend, memoryBackend } from '../support/backends.js';
import { installAnswerDropper } from '../support/dynamodb-faults.js';
import { dynamoDbClientOptions, startDynalite, type DynaliteHandle } from '../support/emulators.js';
import { FaultyMetadataStore } from '../support/fault-injection.js';
import { manualClock } from './helpers.js';

/** `loseNextAnswer(sk)`: the next write of the group's item `sk` applies and its answer is lost. */
async function joinTwiceThroughLostAnswers(metadata: MetadataStore, loseNextAnswer: (sk: string) => void) {
  const loseNextGroupAnswer = () => loseNextAnswer('meta');
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
  // A written heartbeat (a third of the session on) of a member waiting for a partition the other
  // holds: it writes its own member item only, and reads the holder's.
  loseNextAnswer(groupMemberSk(b.memberId));
  clock.advance(15_000);
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
      await joinTwiceThroughLostAnswers(new DynamoDbMetadataStore({ table: ddb.table, client }), (sk) =>
        dropper.drop({ command: 'UpdateItemCommand', match: (k) => k.pk === 'group#g' && k.sk === sk }),
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
        await joinTwiceThroughLostAnswers(metadata, (sk) =>
          metadata.faults.fail('put', { when: 'retried', match: (k) => k === `group#g|${sk}` }),
        );
        expect(metadata.faults.injected).toBe(4);
      } finally {
        await stop();
      }
    });
  }
});
