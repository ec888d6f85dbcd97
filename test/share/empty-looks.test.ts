/**
 * The memory of looks that found nothing (empty-looks.ts): passed by until the first lock's end or
 * SHARE_EMPTY_SKIP_MS, whichever comes first; forgotten on a change this process hears of, and not
 * kept at all by a look under way across one.
 */
import { describe, expect, it } from 'vitest';
import { EmptyLooks, SHARE_EMPTY_SKIP_MS } from '../../src/share/empty-looks.js';
import { manualClock } from './support.js';

describe('looks that found nothing', () => {
  it('are passed by until the first lock ends or SHARE_EMPTY_SKIP_MS passes', () => {
    const clock = manualClock();
    const looks = new EmptyLooks(clock.now);
    looks.nothing('g', 't', 0, looks.begin('t', 0), clock.now() + 100);
    looks.nothing('g', 't', 1, looks.begin('t', 1), Number.POSITIVE_INFINITY);
    expect([looks.skip('g', 't', 0), looks.skip('g', 't', 1), looks.skip('other', 't', 0)]).toEqual([
      true,
      true,
      false,
    ]);
    clock.advance(100);
    expect([looks.skip('g', 't', 0), looks.skip('g', 't', 1)]).toEqual([false, true]);
    clock.advance(SHARE_EMPTY_SKIP_MS - 100);
    expect(looks.skip('g', 't', 1)).toBe(false);
    // Still visited after the others for a while.
    expect(looks.seemsEmpty('g', 't', 1, clock.now())).toBe(true);
  });

  it("are forgotten on an append (every group's) or a freeing write (one group's)", () => {
    const looks = new EmptyLooks(manualClock().now);
    const empty = (group: string) => looks.nothing(group, 't', 0, looks.begin('t', 0), Number.POSITIVE_INFINITY);
    empty('g');
    empty('h');
    looks.changed('t', 0, 'g');
    expect([looks.skip('g', 't', 0), looks.skip('h', 't', 0)]).toEqual([false, true]);
    empty('g');
    looks.changed('t', 0);
    expect([looks.skip('g', 't', 0), looks.skip('h', 't', 0)]).toEqual([false, false]);
    empty('g');
    looks.forgetGroup('g');
    expect(looks.skip('g', 't', 0)).toBe(false);
  });

  it('keep nothing of a look under way across a change', () => {
    const looks = new EmptyLooks(manualClock().now);
    const look = looks.begin('t', 0);
    const elsewhere = looks.begin('t', 1);
    looks.changed('t', 0);
    looks.nothing('g', 't', 0, look, Number.POSITIVE_INFINITY);
    looks.nothing('g', 't', 1, elsewhere, Number.POSITIVE_INFINITY);
    expect([looks.skip('g', 't', 0), looks.skip('g', 't', 1)]).toEqual([false, true]);
  });
});
