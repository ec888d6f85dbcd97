/**
 * An idle share group costs only its receivers' long polls (issue 38's target): while receivers
 * wait on a group with nothing to deliver, every storage call is made inside one of their
 * receives, none is a write, and a receive looks at the share-partitions only on the fetch
 * purgatory's back-off (no polling loop, no timer of its own, nothing after it answers). Counted
 * through the storage decorator the functions' counts use (observed-stores.ts), on the three
 * backends.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { observeStorage, type StorageCall } from '../../src/storage/observed-stores.js';
import { DEFAULT_RECHECK_BACKOFF_MS } from '../../src/timer/await-condition.js';
import { allBackends } from '../support/backends.js';
import { testApp } from '../support/test-app.js';
import { shareClient } from './support.js';

const PARTITIONS = 12;
const RECEIVERS = 3;
const WAIT_MS = 1200;

/**
 * The most looks a wait of `ms` can make: the first, then one per back-off step that fits (each
 * step starts when the look before it ended, so a slow machine makes fewer, never more).
 */
function mostLooks(ms: number): number {
  let looks = 1;
  let at = 0;
  for (let delay = DEFAULT_RECHECK_BACKOFF_MS.initial; ; delay = Math.min(delay * 2, DEFAULT_RECHECK_BACKOFF_MS.max)) {
    at += delay;
    if (at > ms) return looks;
    looks++;
  }
}

for (const backend of allBackends) {
  describe(`an idle share group on ${backend.name}`, () => {
    let stop: () => Promise<void>;
    let call: ReturnType<typeof testApp>['call'];
    const calls: StorageCall[] = [];
    const outside: StorageCall[] = [];
    let counting = false;
    let receiving = 0;

    beforeAll(async () => {
      const started = await backend.start();
      stop = started.stop;
      const storage = observeStorage(started.storage, (c) => {
        if (!counting) return;
        calls.push(c);
        if (receiving === 0) outside.push(c);
      });
      ({ call } = testApp({ storage }));
      const api = shareClient(call);
      expect((await call('POST', 'topics', { topic_name: 'idle', partitions_count: PARTITIONS })).status).toBe(201);
      await api.earliest('quiet');
      // The group was used: every share-partition has state, and everything was acknowledged.
      for (let p = 0; p < PARTITIONS; p++) await api.produce('idle', [`r${p}`], p);
      const got = await api.receive('quiet', ['idle'], 'w', 100);
      expect(got).toHaveLength(PARTITIONS);
      expect(
        await api.ack(
          'quiet',
          'w',
          got.map((r) => ({ topic: 'idle', partition: r.partition_id, offset: r.offset, type: 'accept' })),
        ),
      ).toEqual(got.map(() => null));
    }, 60_000);
    afterAll(() => stop?.());

    it('makes no storage call beyond its receivers long polls, and those only read', async () => {
      const receive = async (member: string) => {
        receiving++;
        try {
          return await call('POST', 'share-groups/quiet/records:receive', {
            topics: ['idle'],
            member_id: member,
            max_records: 100,
            max_wait_ms: WAIT_MS,
          });
        } finally {
          receiving--;
        }
      };
      counting = true;
      for (let round = 0; round < 2; round++) {
        const answers = await Promise.all(Array.from({ length: RECEIVERS }, (_, i) => receive(`idle-${i}`)));
        for (const a of answers) expect(a).toMatchObject({ status: 200, body: { data: [] } });
      }
      // After the last answer nothing more is looked at.
      await new Promise((r) => setTimeout(r, 2 * DEFAULT_RECHECK_BACKOFF_MS.max));
      counting = false;

      expect(outside).toEqual([]);
      const writes = calls.filter((c) => !['GetItem', 'Query', 'GetObject', 'HeadObject'].includes(c.op));
      expect(writes).toEqual([]);
      // Nothing to take: the log itself is never read, only the partitions' states.
      expect(calls.filter((c) => c.port === 'object')).toEqual([]);
      // A look reads per partition its share-partition and its state, unless a look of this process
      // found it empty moments ago (empty-looks.ts; receive-visits.test.ts counts that); the group's
      // configs at most once a look (a process keeps them for SHARE_CONFIG_CACHE_MS).
      const isItem = (c: StorageCall, sk: (s: string) => boolean) => c.op === 'GetItem' && sk(c.sk);
      const receives = 2 * RECEIVERS;
      const looks = receives * mostLooks(WAIT_MS);
      const spReads = new Map<string, number>();
      for (const c of calls)
        if (c.op === 'GetItem' && c.sk.startsWith('sp#')) spReads.set(c.sk, (spReads.get(c.sk) ?? 0) + 1);
      expect(spReads.size).toBe(PARTITIONS);
      for (const reads of spReads.values()) expect(reads).toBeLessThanOrEqual(looks);
      const configReads = calls.filter((c) => isItem(c, (sk) => sk === 'config')).length;
      expect(configReads).toBeLessThanOrEqual(looks);
      expect(calls.length).toBeLessThanOrEqual(looks * (1 + 2 * PARTITIONS) + receives * 4);
    }, 60_000);
  });
}
