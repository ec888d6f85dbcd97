import { describe, expect, it } from 'vitest';
import { SessionTimers, slotOf } from '../../src/groups/session-timers.js';
import { MemoryMetadataStore } from '../../src/storage/memory-metadata-store.js';
import { timerPk } from '../../src/storage/key-layout.js';

const T0 = Date.UTC(2024, 0, 1);

describe('durable session timers', () => {
  it('fires due timers once, across slots the scheduler missed, and leaves future ones', async () => {
    const metadata = new MemoryMetadataStore();
    const timers = new SessionTimers(metadata);
    await timers.register('g1', T0 + 10_000);
    await timers.register('g1', T0 + 12_000); // a second timer of one group: one firing
    await timers.register('g2', T0 + 5 * 60_000);
    await timers.register('g3', T0 + 2 * 3_600_000);
    // Another kind of timer in the same slot is left alone.
    await metadata.put(timerPk(slotOf(T0 + 10_000)), `${String(T0 + 1).padStart(13, '0')}#other`, {
      kind: 'segment-delete',
    });

    const fired: string[] = [];
    const fire = async (g: string) => void fired.push(g);
    expect(await timers.fireDue(T0 + 20_000, fire)).toMatchObject({ fired: 2, groups: ['g1'] });
    expect(fired).toEqual(['g1']);
    expect(await timers.fireDue(T0 + 20_000, fire)).toMatchObject({ fired: 0 });

    // The scheduler was down for three hours: the next tick still finds everything due since.
    fired.length = 0;
    expect(await timers.fireDue(T0 + 3 * 3_600_000, fire)).toMatchObject({ fired: 2 });
    expect(fired).toEqual(['g2', 'g3']);
    expect((await metadata.query(timerPk(slotOf(T0 + 10_000)))).map((i) => i.sk)).toEqual([
      `${String(T0 + 1).padStart(13, '0')}#other`,
    ]);
  });

  it('keeps the timers of a group whose expiry failed, and retries them on the next tick', async () => {
    const metadata = new MemoryMetadataStore();
    const timers = new SessionTimers(metadata);
    await timers.register('bad', T0 + 1_000);
    const failing = await timers.fireDue(T0 + 2_000, async () => {
      throw new Error('storage down');
    });
    expect(failing).toMatchObject({ fired: 0, failed: [expect.any(Error)] });
    // Minutes later the cursor has not skipped it.
    const fired: string[] = [];
    await timers.fireDue(T0 + 10 * 60_000, async (g) => void fired.push(g));
    expect(fired).toEqual(['bad']);
  });
});
