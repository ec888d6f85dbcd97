/**
 * The share group's promise under concurrency and faults: many HTTP workers receive and
 * acknowledge at once while conditional writes of the share-partitions have ambiguous outcomes
 * (applied, then reported failed; or applied and sent again, as the SDK retries). A checker
 * (ShareChecker, ./support.ts) sees every answer and asserts that a record is never held by two workers at once, never accepted
 * twice, and that in the end every record was acknowledged or archived.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { allBackends } from '../support/backends.js';
import { FaultyMetadataStore } from '../support/fault-injection.js';
import { testApp } from '../support/test-app.js';
import { type DeliveryAnswer, expectFinished, manualClock, ShareChecker } from './support.js';

const WORKERS = 12;
const PARTITIONS = 3;
const PER_PARTITION = 60;
/** share.record.lock.duration.ms's default: the clock moves past it to end the locks of lost answers. */
const LOCK_MS = 30_000;

for (const backend of allBackends) {
  describe(`share group workers on ${backend.name}`, () => {
    let stop: () => Promise<void>;
    let metadata: FaultyMetadataStore;
    let call: ReturnType<typeof testApp>['call'];
    const clock = manualClock();

    beforeAll(async () => {
      const started = await backend.start();
      stop = started.stop;
      metadata = new FaultyMetadataStore(started.storage.metadata);
      ({ call } = testApp({ storage: { ...started.storage, metadata }, clock }));
      expect((await call('POST', 'topics', { topic_name: 'work', partitions_count: PARTITIONS })).status).toBe(201);
      for (let p = 0; p < PARTITIONS; p++) {
        const res = await call('POST', 'topics/work/records:batch', {
          entries: Array.from({ length: PER_PARTITION }, (_, i) => ({
            id: i,
            partition_id: p,
            value: { type: 'STRING', data: `${p}-${i}` },
          })),
        });
        expect(res.body.failures).toEqual([]);
      }
      expect(
        (await call('PUT', 'share-groups/workers/configs/share.auto.offset.reset', { value: 'earliest' })).status,
      ).toBe(204);
      // Kafka's highest limit: a record whose deliveries all had their answers lost (the checker never
      // saw it) is archived only after 10 of them.
      expect(
        (await call('PUT', 'share-groups/workers/configs/share.delivery.count.limit', { value: '10' })).status,
      ).toBe(204);
    }, 60_000);
    afterAll(() => stop?.());

    it('never gives a locked record to two workers, accepts each once, and finishes every record', async () => {
      const checker = new ShareChecker(LOCK_MS);
      let seed = 42;
      const random = () => {
        seed = (seed * 1103515245 + 12345) % 2 ** 31;
        return seed / 2 ** 31;
      };
      const spWrite = (key: string) => key.includes('|sp#');
      let lostAnswers = 0;
      let armed = 0;
      let sinceArmed = 0;

      const worker = async (name: string) => {
        let idle = 0;
        while (idle < 3) {
          // Ambiguous outcomes on the share-partition writes, now and then: one pending at a time
          // (idle workers must not pile them up for the next write), replaced once used or stale (a
          // write that lost its race takes the rule without an injection).
          if ((metadata.faults.injected >= armed || ++sinceArmed > 3) && random() < 0.75) {
            metadata.faults.clear();
            armed = metadata.faults.injected + 1;
            sinceArmed = 0;
            const lost = random() < 0.5 && lostAnswers < 20;
            if (lost) lostAnswers++;
            metadata.faults.fail('put', { when: lost ? 'after' : 'retried', match: spWrite });
          }
          const res = await call('POST', 'share-groups/workers/records:receive', {
            topics: ['work'],
            member_id: name,
            max_records: 7,
          });
          if (res.status !== 200) continue; // the write applied but its answer was lost: locked until expiry
          const got = res.body.data as DeliveryAnswer[];
          if (got.length === 0) {
            idle++;
            continue;
          }
          idle = 0;
          const acks = got.map((r) => {
            const d = checker.received(name, r);
            const type = random() < 0.15 ? 'release' : 'accept';
            // Given up before it is sent: whoever gets it next after the release is right to.
            if (type === 'release') checker.givenUp(d, clock.now());
            return { d, type };
          });
          const ack = await call('POST', 'share-groups/workers/records:acknowledge', {
            member_id: name,
            acknowledgements: acks.map(({ d, type }) => ({
              topic_name: 'work',
              partition_id: Number(d.key.split('/')[0]),
              offset: Number(d.key.split('/')[1]),
              type,
            })),
          });
          // The injected faults apply the write before failing: a lost answer is an acknowledgement applied.
          if (ack.status !== 200) {
            for (const { d, type } of acks) checker.applied(d, type);
            continue;
          }
          (ack.body.data as { error: string | null }[]).forEach((r, i) => {
            const { d, type } = acks[i]!;
            if (r.error === null) checker.applied(d, type);
          });
        }
      };

      for (let round = 0; round < 12; round++) {
        await Promise.all(Array.from({ length: WORKERS }, (_, i) => worker(`w${i}`)));
        const d = (await call('GET', 'share-groups/workers')).body;
        if (d.lag === 0 && d.partitions.length === PARTITIONS) break;
        // Workers are idle with records left: locks taken by answers that were lost. Let them end.
        clock.advance(LOCK_MS + 1);
      }
      metadata.faults.clear();

      expect(checker.violations()).toEqual([]);
      expect(metadata.faults.injected).toBeGreaterThan(10);
      expect(expectFinished((await call('GET', 'share-groups/workers')).body, PARTITIONS)).toBe(
        PARTITIONS * PER_PARTITION,
      );
      // Every record was delivered, none more often than share.delivery.count.limit.
      expect(checker.deliveries.size).toBe(PARTITIONS * PER_PARTITION);
      expect(checker.over(10)).toEqual([]);
    }, 120_000);
  });
}
