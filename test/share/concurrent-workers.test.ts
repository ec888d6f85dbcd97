/**
 * The share group's promise under concurrency and faults: many HTTP workers receive and
 * acknowledge at once while conditional writes of the share-partitions have ambiguous outcomes
 * (applied, then reported failed; or applied and sent again, as the SDK retries). A checker sees
 * every answer and asserts that a record is never held by two workers at once, never accepted
 * twice, and that in the end every record was acknowledged or archived.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { allBackends } from '../support/backends.js';
import { FaultyMetadataStore } from '../support/fault-injection.js';
import { testApp } from '../support/test-app.js';
import { manualClock } from './support.js';

const WORKERS = 12;
const PARTITIONS = 3;
const PER_PARTITION = 60;

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
      const held = new Map<string, { worker: string; until: number }>();
      const accepted = new Map<string, number>();
      const deliveries = new Map<string, number>();
      const violations: string[] = [];
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
          const got = res.body.data as {
            partition_id: number;
            offset: number;
            delivery_count: number;
            lock_expires_at: string;
          }[];
          if (got.length === 0) {
            idle++;
            continue;
          }
          idle = 0;
          const now = clock.now();
          const acks: { topic_name: string; partition_id: number; offset: number; type: string; until: number }[] = [];
          for (const r of got) {
            const key = `${r.partition_id}/${r.offset}`;
            const prev = held.get(key);
            if (prev && prev.until > now) violations.push(`${key} given to ${name} while ${prev.worker} held it`);
            const until = Date.parse(r.lock_expires_at);
            deliveries.set(key, Math.max(deliveries.get(key) ?? 0, r.delivery_count));
            const release = random() < 0.15;
            // Given up before it is sent: whoever gets it next after the release is right to.
            held.set(key, { worker: name, until: release ? -Infinity : Infinity });
            acks.push({
              topic_name: 'work',
              partition_id: r.partition_id,
              offset: r.offset,
              type: release ? 'release' : 'accept',
              until,
            });
          }
          const ack = await call('POST', 'share-groups/workers/records:acknowledge', {
            member_id: name,
            acknowledgements: acks.map(({ until: _, ...a }) => a),
          });
          if (ack.status !== 200) continue; // applied, answer lost (the injected 'after')
          (ack.body.data as { error: string | null }[]).forEach((d, i) => {
            const a = acks[i]!;
            const key = `${a.partition_id}/${a.offset}`;
            if (d.error === null && a.type === 'accept') accepted.set(key, (accepted.get(key) ?? 0) + 1);
            // Not applied (contended): the record stays locked by this worker until its lock ends.
            if (d.error !== null && d.error !== 'INVALID_RECORD_STATE') held.set(key, { worker: name, until: a.until });
          });
        }
      };

      for (let round = 0; round < 12; round++) {
        await Promise.all(Array.from({ length: WORKERS }, (_, i) => worker(`w${i}`)));
        const d = (await call('GET', 'share-groups/workers')).body;
        if (d.lag === 0 && d.partitions.length === PARTITIONS) break;
        // Workers are idle with records left: locks taken by answers that were lost. Let them end.
        clock.advance(30_001);
      }
      metadata.faults.clear();

      expect(violations).toEqual([]);
      expect(metadata.faults.injected).toBeGreaterThan(10);
      expect([...accepted.values()].filter((n) => n > 1)).toEqual([]);
      const d = (await call('GET', 'share-groups/workers')).body;
      expect(d.lag).toBe(0);
      for (const p of d.partitions) {
        expect(p).toMatchObject({
          start_offset: PER_PARTITION,
          end_offset: PER_PARTITION,
          high_watermark: PER_PARTITION,
        });
      }
      // Every record was delivered, none more often than share.delivery.count.limit.
      expect(deliveries.size).toBe(PARTITIONS * PER_PARTITION);
      expect([...deliveries].filter(([, n]) => n > 10)).toEqual([]);
    }, 120_000);
  });
}
