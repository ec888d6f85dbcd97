import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Storage } from '../../src/compose.js';
import type { MetadataStore } from '../../src/storage/ports.js';
import { DurableTimers, type DurableTimer } from '../../src/timer/durable-timers.js';
import { allBackends } from '../support/backends.js';

const MIN = 60_000;
const T0 = 1_700_000_000_000 - (1_700_000_000_000 % MIN); // a slot boundary

describe.each(allBackends)('durable timers on $name', (backend) => {
  let storage: Storage;
  let stop: () => Promise<void>;
  let timers: DurableTimers;
  beforeEach(async () => {
    ({ storage, stop } = await backend.start());
    timers = new DurableTimers(storage.metadata);
  });
  afterEach(() => stop());

  const collect = () => {
    const fired: DurableTimer[] = [];
    return { fired, handlers: { test: async (t: DurableTimer) => void fired.push(t) } };
  };

  it('fires each due timer once, in expiry order, never early, and removes it', async () => {
    for (const [id, at] of [
      ['c', 3 * MIN + 5],
      ['a', 10],
      ['b', MIN + 1],
      ['later', 10 * MIN],
    ] as const) {
      await timers.schedule({ kind: 'test', id, expiry: T0 + at, payload: { id } }, T0);
    }
    const { fired, handlers } = collect();
    expect(await timers.fireDue(T0 + 9, handlers)).toMatchObject({ fired: 0 });
    expect(await timers.fireDue(T0 + 3 * MIN + 5, handlers)).toMatchObject({
      fired: 3,
      byKind: { test: 3 },
      incomplete: false,
    });
    expect(fired.map((t) => t.id)).toEqual(['a', 'b', 'c']);
    expect(await timers.fireDue(T0 + 9 * MIN, handlers)).toMatchObject({ fired: 0 });
    expect(await timers.fireDue(T0 + 10 * MIN, handlers)).toMatchObject({ fired: 1 });
    expect(fired.map((t) => t.id)).toEqual(['a', 'b', 'c', 'later']);
    expect(await timers.pending(T0, T0 + 11 * MIN)).toEqual([]);
  });

  it('fires at least once: a tick that dies after the handler fires it again, and scheduling is idempotent', async () => {
    await timers.schedule({ kind: 'test', id: 'x', expiry: T0 + 100, payload: 1 }, T0);
    await timers.schedule({ kind: 'test', id: 'x', expiry: T0 + 100, payload: 1 }, T0);
    // The first tick's delete fails (the process died right after the handler).
    const failing: MetadataStore = {
      ...storage.metadata,
      get: storage.metadata.get.bind(storage.metadata),
      query: storage.metadata.query.bind(storage.metadata),
      put: storage.metadata.put.bind(storage.metadata),
      delete: async () => {
        throw new Error('crash');
      },
    };
    const { fired, handlers } = collect();
    await expect(new DurableTimers(failing).fireDue(T0 + 200, handlers)).rejects.toThrow('crash');
    expect(await timers.fireDue(T0 + 200, handlers)).toMatchObject({ fired: 1 });
    expect(fired.map((t) => t.id)).toEqual(['x', 'x']);
    expect(await timers.fireDue(T0 + 300, handlers)).toMatchObject({ fired: 0 });
  });

  it('moves a failing timer on with back-off instead of holding the slots back', async () => {
    const t = new DurableTimers(storage.metadata, { retryBaseMs: 1000 });
    await t.schedule({ kind: 'test', id: 'bad', expiry: T0 + 1, payload: null }, T0);
    await t.schedule({ kind: 'test', id: 'good', expiry: T0 + 2, payload: null }, T0);
    let attempts = 0;
    const handlers = {
      test: async (timer: DurableTimer) => {
        if (timer.id === 'bad' && attempts++ < 2) throw new Error('store down');
      },
    };
    expect(await t.fireDue(T0 + 10, handlers)).toMatchObject({ fired: 1, failed: 1 });
    expect((await t.pending(T0, T0 + MIN)).map((x) => [x.id, x.expiry, x.attempts])).toEqual([['bad', T0 + 1010, 1]]);
    expect(await t.fireDue(T0 + 1010, handlers)).toMatchObject({ fired: 0, failed: 1 }); // next retry after 2 s
    expect(await t.fireDue(T0 + 3010, handlers)).toMatchObject({ fired: 1, failed: 0 });
    expect(await t.pending(T0, T0 + MIN)).toEqual([]);
  });

  it('sees a timer scheduled already due, resumes from its checkpoint, stops at its deadline', async () => {
    const { fired, handlers } = collect();
    await timers.fireDue(T0 + 5 * MIN, handlers); // checkpoint at slot T0+5min
    // Scheduled by a process that learned late: due in a slot the checkpoint already passed.
    await timers.schedule({ kind: 'test', id: 'late', expiry: T0 + MIN, payload: null }, T0 + 5 * MIN + 1);
    expect(await timers.fireDue(T0 + 5 * MIN + 2, handlers)).toMatchObject({ fired: 1 });
    // Many due timers, a deadline that passes after two of them.
    for (let i = 0; i < 5; i++)
      await timers.schedule({ kind: 'test', id: `d${i}`, expiry: T0 + 6 * MIN + i, payload: null }, T0);
    let clock = T0 + 7 * MIN;
    const slow = {
      test: async (t: DurableTimer) => {
        fired.push(t);
        clock += 1000;
      },
    };
    expect(
      await timers.fireDue(T0 + 7 * MIN, slow, { deadline: T0 + 7 * MIN + 2000, clock: { now: () => clock } }),
    ).toMatchObject({ fired: 2, incomplete: true });
    expect(await timers.fireDue(T0 + 8 * MIN, handlers)).toMatchObject({ fired: 3 });
    expect(fired.map((t) => t.id)).toEqual(['late', 'd0', 'd1', 'd2', 'd3', 'd4']);
  });

  it('leaves the kinds it has no handler for; a scan with checkpoint false leaves the checkpoint', async () => {
    await timers.schedule({ kind: 'other', id: 'theirs', expiry: T0 + 100, payload: null }, T0);
    await timers.schedule({ kind: 'test', id: 'mine', expiry: T0 + 100, payload: null }, T0);
    const { fired, handlers } = collect();
    // Ten slots later, a scan of one kind only: had it moved the checkpoint, the next scan would
    // start nine slots past the other kind's timer.
    expect(await timers.fireDue(T0 + 10 * MIN, handlers, { checkpoint: false })).toMatchObject({ fired: 1 });
    expect(fired.map((t) => t.id)).toEqual(['mine']);
    expect((await timers.pending(T0, T0 + MIN)).map((t) => t.id)).toEqual(['theirs']);
    const every = {
      ...handlers,
      other: async (t: DurableTimer, count: (name: string, n: number) => void) => {
        fired.push(t);
        count('othersSeen', 1);
      },
    };
    expect(await timers.fireDue(T0 + 10 * MIN, every)).toMatchObject({ fired: 1, counts: { othersSeen: 1 } });
    expect(fired.map((t) => t.id)).toEqual(['mine', 'theirs']);
  });
});
