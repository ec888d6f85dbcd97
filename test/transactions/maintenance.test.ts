import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Storage } from '../../src/compose.js';
import { CONTROL_FLAG_MASK, decodeRecordBatches } from '../../src/wire/record-batch.js';
import { runMaintenance } from '../../src/maintenance/scheduler.js';
import { allBackends } from '../support/backends.js';
import { ABORT_PREFIX, abortSk, CLEANER_SK, partitionPk } from '../../src/storage/key-layout.js';
import { manualClock, setup } from './helpers.js';
import { readBatches } from '../support/read-records.js';

const OPTIONS = { orphanGraceMs: 0, sweepIntervalMs: 0, roundIntervalMs: 0, mergeMinEntries: 2 };

type Harness = Awaited<ReturnType<typeof setup>>;

async function maintain(t: Harness, clock: { now(): number }) {
  return runMaintenance({
    storage: t.storage,
    clock,
    deadline: clock.now() + 60_000,
    partitionLog: t.services.log,
    topics: t.services.topics,
    timerHandlers: t.services.transactions.timerHandlers(),
    options: OPTIONS,
  });
}

/** read_committed from the log start, as (offset, key, value). */
async function committedView(t: Harness) {
  const state = await t.services.log.state(await t.services.topics.get('out'), 0);
  const r = await t.call(
    'GET',
    `topics/out/partitions/0/records?offset=${state.logStartOffset}&format=string&isolation_level=read_committed&max_bytes=8388608`,
  );
  return (r.body.records as { offset: number; key: { data: string } | null; value: { data: string } }[]).map(
    (x) => `${x.offset}:${x.key?.data ?? ''}=${x.value.data}`,
  );
}

/** Committed and aborted transactions interleaved with plain records, each its own entry. */
async function fill(t: Harness, clock: { advance(ms: number): number }, keys: (i: number, kind: string) => string) {
  const p = await t.init('m');
  for (let i = 0; i < 6; i++) {
    clock.advance(10);
    expect((await t.produce('m', p, 0, [`c${i}a`, `c${i}b`], [keys(i, 'ca'), keys(i, 'cb')])).status).toBe(207);
    clock.advance(1);
    expect((await t.call('POST', 'transactions/m/commit', p)).status).toBe(200);
    clock.advance(1);
    expect((await t.produce('m', p, 0, [`a${i}`], [keys(i, 'a')])).status).toBe(207);
    clock.advance(1);
    expect((await t.call('POST', 'transactions/m/abort', p)).status).toBe(200);
    clock.advance(1);
    expect(
      (
        await t.call('POST', 'topics/out/records', {
          partition_id: 0,
          key: { type: 'STRING', data: keys(i, 'p') },
          value: { type: 'STRING', data: `p${i}` },
        })
      ).status,
    ).toBe(200);
  }
}

describe('maintenance keeps read_committed answers', () => {
  it('segment merge and retention', async () => {
    const clock = manualClock(1_700_000_000_000);
    const t = await setup({ clock, topicConfigs: { configs: [{ name: 'retention.ms', value: '100000' }] } });
    await fill(t, clock, (i, k) => `${k}${i}`);
    const before = await committedView(t);
    expect(before.filter((r) => r.includes('=a'))).toEqual([]);
    expect(before).toHaveLength(18);

    // Retention first: the first entries expire (by their records' time); what remains reads as it did.
    clock.advance(100_000 - 30);
    const first = await maintain(t, clock);
    const start = (await t.services.log.state(await t.services.topics.get('out'), 0)).logStartOffset;
    expect(start).toBeGreaterThan(0);
    const retained = before.filter((r) => Number(r.split(':')[0]) >= start);
    expect(retained.length).toBeGreaterThan(0);
    expect(await committedView(t)).toEqual(retained);
    expect(first.abortedTransactionsRemoved).toBeGreaterThan(0); // abort items below the log start go too

    // The same run merged what is left into segments: the same answer, again after another run.
    expect(first.segmentsWritten).toBeGreaterThan(0);
    await maintain(t, clock);
    expect(await committedView(t)).toEqual(retained);
  });

  it('compaction removes aborted records (which never shadow a committed value) and markers after delete.retention.ms', async () => {
    const clock = manualClock(1_700_000_000_000);
    const configs = [
      { name: 'cleanup.policy', value: 'compact' },
      { name: 'min.cleanable.dirty.ratio', value: '0' },
      { name: 'delete.retention.ms', value: '1000' },
    ];
    const t = await setup({ clock, topicConfigs: { configs } });
    // Every aborted record reuses the key of the committed record just before it.
    await fill(t, clock, (i, k) => (k === 'a' ? `cb${i}` : `${k}${i}`));
    const before = await committedView(t);
    expect(before).toHaveLength(18);

    const c = await maintain(t, clock);
    expect(c.compactions).toBe(1);
    expect(c.recordsCompactedAway).toBeGreaterThanOrEqual(5);
    expect(await committedView(t)).toEqual(before);
    const markers = async () => {
      const topic = await t.services.topics.get('out');
      const r = await readBatches(t.services.log, topic, 0, 0, 8 << 20);
      const batches = decodeRecordBatches(r.batches);
      const aborted = batches
        .flatMap((b) => b.records.map((x) => Buffer.from(x.value ?? []).toString()))
        .filter((v) => v.startsWith('a'));
      return { markers: batches.filter((b) => b.header.attributes & CONTROL_FLAG_MASK).length, aborted };
    };
    const kept = await markers();
    expect(kept.aborted).toEqual([]); // read_uncommitted no longer sees them either
    expect(kept.markers).toBeGreaterThan(0); // markers stay for delete.retention.ms

    const topic = await t.services.topics.get('out');
    const pk = partitionPk(topic.name, 0);
    const abortItems = async (below: number) =>
      (await t.storage.metadata.query(pk, { gte: ABORT_PREFIX, lt: abortSk(below) })).length;
    const cleanedTo = (await t.storage.metadata.get<{ cleanedTo: number }>(pk, CLEANER_SK))!.value.cleanedTo;
    const cleanedAway = await abortItems(cleanedTo); // aborted transactions this cleaning removed
    expect(cleanedAway).toBeGreaterThanOrEqual(5);

    clock.advance(2000);
    const again = await maintain(t, clock);
    expect(again.compactions).toBe(1);
    expect(await committedView(t)).toEqual(before);
    expect((await markers()).markers).toBeLessThanOrEqual(1); // only the last commit (never cleaned) may keep its marker
    // The first cleaning removed the aborted records: their abort items go with the next one (a
    // compact-only topic has no retention to take them), and no aborted record comes back.
    expect(again.abortedTransactionsRemoved).toBe(cleanedAway);
    expect(await abortItems(cleanedTo)).toBe(0);
    expect((await markers()).aborted).toEqual([]);
  });
});

/** Every record of partition 0 from its log start on, as `offset:key=value`, following next_offset to the end. */
async function readWhole(t: Harness, isolation: 'read_committed' | 'read_uncommitted') {
  const out: string[] = [];
  const state = await t.services.log.state(await t.services.topics.get('out'), 0);
  for (let offset = state.logStartOffset; ; ) {
    const r = await t.call(
      'GET',
      `topics/out/partitions/0/records?offset=${offset}&format=string&isolation_level=${isolation}&max_bytes=8388608`,
    );
    expect(r.status).toBe(200);
    const records = r.body.records as { offset: number; key: { data: string } | null; value: { data: string } }[];
    out.push(...records.map((x) => `${x.offset}:${x.key?.data ?? ''}=${x.value.data}`));
    const end = isolation === 'read_committed' ? r.body.last_stable_offset : r.body.high_watermark;
    if (r.body.next_offset >= end) return out;
    expect(r.body.next_offset).toBeGreaterThan(offset);
    offset = r.body.next_offset;
  }
}

/** Past the 1,000 aborted transactions one read of the aborted-transactions index returns. */
const TRANSACTIONS = 1260;
/** Every sixth transaction commits: 1,050 abort. */
const committedAt = (n: number) => n % 6 === 5;

describe.each(allBackends)('compaction past 1,000 aborted transactions on $name', (backend) => {
  let storage: Storage;
  let stop: () => Promise<void>;
  beforeEach(async () => {
    ({ storage, stop } = await backend.start());
  });
  afterEach(() => stop());

  it('leaves the latest committed record per key and no aborted record', { timeout: 300_000 }, async () => {
    const clock = manualClock(1_700_000_000_000);
    const configs = [
      { name: 'cleanup.policy', value: 'compact' },
      { name: 'min.cleanable.dirty.ratio', value: '0' },
      { name: 'delete.retention.ms', value: '1000' },
    ];
    const t = await setup({ clock, storage, topicConfigs: { configs } });
    // Four transactional producers, their transactions open at once (the aborted transactions'
    // ranges overlap, as many producers' do). The 1,284 transactions are some 16,000 storage
    // requests, ~10 ms each on dynalite and s3rver under load: four chains of them overlap their
    // waits, where one chain took the whole 300 s.
    const writers = await Promise.all(['m0', 'm1', 'm2', 'm3'].map(async (id) => ({ id, p: await t.init(id) })));
    // Seven keys shared by committed and aborted transactions (an aborted value must never shadow a
    // committed one), and keys only aborted transactions ever wrote (they must vanish).
    const transactions = async (from: number, to: number) => {
      await Promise.all(
        writers.map(async ({ id, p }, w) => {
          for (let n = from + w; n < to; n += writers.length) {
            clock.advance(1);
            const committed = committedAt(n);
            const values = committed ? [`c${n}`] : [`a${n}`, `a${n}-only`];
            const keys = committed ? [`k${n % 7}`] : [`k${n % 7}`, `only-${n}`];
            expect((await t.produce(id, p, 0, values, keys)).status).toBe(207);
            clock.advance(1);
            expect((await t.call('POST', `transactions/${id}/${committed ? 'commit' : 'abort'}`, p)).status).toBe(200);
          }
        }),
      );
      clock.advance(1);
    };
    /** Kafka's cleaner: the latest committed record of each key; aborted records gone. */
    const latestPerKey = (committed: string[]) => {
      const keyOf = (r: string) => r.slice(r.indexOf(':') + 1, r.indexOf('='));
      const latest = new Map(committed.map((r) => [keyOf(r), r]));
      return committed.filter((r) => latest.get(keyOf(r)) === r);
    };

    await transactions(0, TRANSACTIONS);
    const committedBefore = await readWhole(t, 'read_committed');
    expect(committedBefore).toHaveLength(TRANSACTIONS / 6);
    expect(committedBefore.every((r) => r.includes('=c'))).toBe(true);
    const expected = latestPerKey(committedBefore);
    expect(expected).toHaveLength(7);

    expect((await maintain(t, clock)).compactions).toBe(1);
    expect(await readWhole(t, 'read_committed')).toEqual(expected);
    expect(await readWhole(t, 'read_uncommitted')).toEqual(expected);

    // More transactions after a clean head that holds the 1,050 aborts: cleaned as well.
    await transactions(TRANSACTIONS, TRANSACTIONS + 24);
    const committedAfter = await readWhole(t, 'read_committed');
    expect(committedAfter).toHaveLength(7 + 4);
    const expectedAfter = latestPerKey(committedAfter);
    expect((await maintain(t, clock)).compactions).toBe(1);
    expect(await readWhole(t, 'read_committed')).toEqual(expectedAfter);
    expect(await readWhole(t, 'read_uncommitted')).toEqual(expectedAfter);

    // A further pass (delete.retention.ms later: the markers go) changes nothing readers see.
    clock.advance(2000);
    await maintain(t, clock);
    expect(await readWhole(t, 'read_committed')).toEqual(expectedAfter);
    expect(await readWhole(t, 'read_uncommitted')).toEqual(expectedAfter);
  });
});

describe('retention past 1,000 aborted transactions (memory)', () => {
  // Over a thousand transactions through the HTTP app: 39 s at load average 15, past the default 30 s.
  it('removes every abort item below the log start, however few entries held them', { timeout: 120_000 }, async () => {
    const clock = manualClock(1_700_000_000_000);
    const t = await setup({ clock });
    const p = await t.init('m');
    for (let n = 0; n < TRANSACTIONS; n++) {
      clock.advance(1);
      expect((await t.produce('m', p, 0, [`v${n}`])).status).toBe(207);
      clock.advance(1);
      expect((await t.call('POST', `transactions/m/${committedAt(n) ? 'commit' : 'abort'}`, p)).status).toBe(200);
    }
    clock.advance(1);
    // Segment merge packs the 2,520 entries into a few: 1,050 ABORT markers among them.
    expect((await maintain(t, clock)).segmentsWritten).toBeGreaterThan(0);
    const topic = await t.services.topics.get('out');
    const pk = partitionPk(topic.name, 0);
    const abortItems = async (below: number) =>
      (await t.storage.metadata.query(pk, { gte: ABORT_PREFIX, lt: abortSk(below) })).length;
    const { highWatermark } = await t.services.log.state(topic, 0);
    expect(await abortItems(highWatermark)).toBe(TRANSACTIONS - TRANSACTIONS / 6);

    const deleted = await t.call('POST', 'topics/out/partitions/0/records:delete', { before_offset: -1 });
    expect(deleted.body.low_watermark).toBe(highWatermark);
    clock.advance(1);
    await maintain(t, clock);
    await maintain(t, clock);
    expect(await abortItems(highWatermark)).toBe(0);
  });
});
